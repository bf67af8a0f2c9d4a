//! Which session a proxied request belongs to: per-session credentials.
//!
//! Every live session that uses the proxy is given its own
//! `http://<session>:<token>@127.0.0.1:<port>`. The proxy answers 407 to any
//! request whose `Proxy-Authorization` does not name a live grant, so one
//! agent can never be recorded as another, and a token dies with the process
//! it was made for (`revoke` is called from the process's exit watch).
//!
//! It must never log or store a token anywhere but in this in-memory table
//! and the child's environment.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::confine::Confinement;

use base64::Engine;

/// One session's proxy credentials, valid while its process runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub session: String,
    pub token: String,
}

impl Credential {
    /// `http://<session>:<token>@127.0.0.1:<port>`: what the agent's
    /// `HTTPS_PROXY` is set to.
    pub fn proxy_url(&self, port: u16) -> String {
        format!("http://{}:{}@127.0.0.1:{port}", self.session, self.token)
    }
}

/// Live grants, keyed by session. A session has at most one grant: a new
/// process replaces the old process's token.
#[derive(Debug, Default)]
pub struct Grants {
    by_session: Mutex<HashMap<String, String>>,
    /// Sandboxed sessions' confinement, with the token it was set for (a
    /// newer process of the session replaces it).
    confined: Mutex<HashMap<String, (String, Arc<Confinement>)>>,
}

impl Grants {
    /// Mint a fresh token for `session`, replacing any earlier one.
    pub fn grant(&self, session: &str) -> Credential {
        let token = fresh_token();
        self.table().insert(session.to_owned(), token.clone());
        Credential {
            session: session.to_owned(),
            token,
        }
    }

    /// Withdraw `credential`, unless a newer process of the same session has
    /// already replaced it (its exit must not revoke its successor).
    pub fn revoke(&self, credential: &Credential) {
        let mut table = self.table();
        if table
            .get(&credential.session)
            .is_some_and(|t| *t == credential.token)
        {
            table.remove(&credential.session);
        }
        let mut confined = self.confined_table();
        if confined
            .get(&credential.session)
            .is_some_and(|(t, _)| *t == credential.token)
        {
            confined.remove(&credential.session);
        }
    }

    /// Confine `credential`'s session (a sandboxed process, issue 32).
    pub fn confine(&self, credential: &Credential, confinement: Confinement) {
        self.confined_table().insert(
            credential.session.clone(),
            (credential.token.clone(), Arc::new(confinement)),
        );
    }

    /// The confinement of `session`'s live process, if it is sandboxed.
    pub fn confinement(&self, session: &str) -> Option<Arc<Confinement>> {
        let token = self.table().get(session)?.clone();
        self.confined_table()
            .get(session)
            .filter(|(t, _)| *t == token)
            .map(|(_, c)| c.clone())
    }

    fn confined_table(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (String, Arc<Confinement>)>> {
        // Plain data, consistent between statements.
        self.confined.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session a `Proxy-Authorization` header value authenticates, if any.
    pub fn authenticate(&self, header: Option<&str>) -> Option<String> {
        let (session, token) = parse_basic(header?)?;
        let table = self.table();
        let expected = table.get(&session)?;
        constant_time_eq(expected.as_bytes(), token.as_bytes()).then_some(session)
    }

    /// How many sessions hold a live grant.
    pub fn len(&self) -> usize {
        self.table().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // The table is plain data, consistent between statements.
        self.by_session.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// 256 bits from two v4 uuids (the OS random source), as hex.
fn fresh_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// `Basic base64(user:password)` -> (user, password).
pub fn parse_basic(header: &str) -> Option<(String, String)> {
    let (scheme, rest) = header.trim().split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, pass) = text.split_once(':')?;
    Some((user.to_owned(), pass.to_owned()))
}

/// `Basic ...` for a user and password (tests and the fake agent's peers).
pub fn basic_header(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granted_credential_authenticates_its_session() {
        let grants = Grants::default();
        let c = grants.grant("s1");
        let h = basic_header(&c.session, &c.token);
        assert_eq!(grants.authenticate(Some(&h)).as_deref(), Some("s1"));
    }

    #[test]
    fn missing_wrong_or_malformed_credentials_authenticate_nobody() {
        let grants = Grants::default();
        let c = grants.grant("s1");
        assert_eq!(grants.authenticate(None), None);
        assert_eq!(grants.authenticate(Some(&basic_header("s1", "nope"))), None);
        assert_eq!(
            grants.authenticate(Some(&basic_header("s2", &c.token))),
            None
        );
        assert_eq!(grants.authenticate(Some("Bearer abc")), None);
        assert_eq!(grants.authenticate(Some("Basic !!!")), None);
    }

    #[test]
    fn a_revoked_credential_is_refused() {
        let grants = Grants::default();
        let c = grants.grant("s1");
        grants.revoke(&c);
        assert_eq!(
            grants.authenticate(Some(&basic_header("s1", &c.token))),
            None
        );
        assert!(grants.is_empty());
    }

    #[test]
    fn an_old_process_exit_does_not_revoke_its_successors_credential() {
        let grants = Grants::default();
        let old = grants.grant("s1");
        let new = grants.grant("s1");
        grants.revoke(&old);
        assert_eq!(
            grants.authenticate(Some(&basic_header("s1", &new.token))),
            Some("s1".to_owned())
        );
        assert_eq!(
            grants.authenticate(Some(&basic_header("s1", &old.token))),
            None
        );
    }

    #[test]
    fn the_proxy_url_carries_session_and_token() {
        let c = Credential {
            session: "abc".into(),
            token: "t0k".into(),
        };
        assert_eq!(c.proxy_url(4321), "http://abc:t0k@127.0.0.1:4321");
    }
}
