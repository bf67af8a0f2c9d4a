//! The size of a session's PTY while several clients view it at once.
//!
//! Each attached client (a `hangar attach`, a TUI pane) has its own terminal
//! size. Like tmux, the session takes the smallest of them, columns and rows
//! separately, so every client sees the whole screen; when a client detaches
//! or disconnects the others' smallest size applies again. Without this the
//! last client to attach or resize won, and a big client that left kept the
//! PTY too large for the ones still watching.
//!
//! This only keeps the table and answers "what size now"; it never touches a
//! PTY itself (the server applies the answer), and it never keeps a session
//! alive: an entry is only a number pair per connection.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hangar_core::SessionId;

/// One attached connection, unique for the daemon's life.
pub type ClientId = u64;

/// (rows, cols) of a terminal.
pub type Size = (u16, u16);

/// Every attached client's size, per session.
#[derive(Debug, Default)]
pub struct ClientSizes {
    next: AtomicU64,
    by_session: Mutex<HashMap<SessionId, BTreeMap<ClientId, Size>>>,
}

impl ClientSizes {
    /// A fresh client id.
    pub fn new_client(&self) -> ClientId {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Record `client`'s size for `session` (`None` forgets it: detached, or
    /// a client that did not say its size) and answer the size the session's
    /// PTY should have now: the smallest of the clients still there, or
    /// `None` when no client has a size (the PTY then keeps its last one).
    pub fn set(&self, session: &SessionId, client: ClientId, size: Option<Size>) -> Option<Size> {
        let mut map = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        let clients = map.entry(session.clone()).or_default();
        match size.filter(|&(rows, cols)| rows > 0 && cols > 0) {
            Some(s) => {
                clients.insert(client, s);
            }
            None => {
                clients.remove(&client);
            }
        }
        let now = smallest(clients.values().copied());
        if clients.is_empty() {
            map.remove(session);
        }
        now
    }

    /// Sessions with at least one sized client (for tests and leak checks).
    pub fn sessions(&self) -> usize {
        self.by_session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

/// The smallest rows and the smallest columns, each taken on its own.
pub fn smallest(sizes: impl IntoIterator<Item = Size>) -> Option<Size> {
    sizes
        .into_iter()
        .reduce(|(r1, c1), (r2, c2)| (r1.min(r2), c1.min(c2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_columns_are_each_the_smallest_of_the_clients() {
        assert_eq!(smallest([(32, 126), (50, 200), (40, 100)]), Some((32, 100)));
        assert_eq!(smallest([]), None);
    }

    #[test]
    fn a_client_leaving_gives_the_session_back_the_size_of_those_still_there() {
        let sizes = ClientSizes::default();
        let s = SessionId::new("s");
        let tui = sizes.new_client();
        let big = sizes.new_client();
        assert_eq!(sizes.set(&s, tui, Some((32, 126))), Some((32, 126)));
        assert_eq!(sizes.set(&s, big, Some((50, 200))), Some((32, 126)));
        assert_eq!(sizes.set(&s, tui, None), Some((50, 200)));
        assert_eq!(sizes.set(&s, big, None), None);
        assert_eq!(sizes.sessions(), 0, "no entry outlives its clients");
    }

    #[test]
    fn a_client_without_a_size_does_not_shrink_the_session_to_nothing() {
        let sizes = ClientSizes::default();
        let s = SessionId::new("s");
        let a = sizes.new_client();
        let b = sizes.new_client();
        assert_eq!(sizes.set(&s, a, Some((24, 80))), Some((24, 80)));
        assert_eq!(sizes.set(&s, b, Some((0, 0))), Some((24, 80)));
    }
}
