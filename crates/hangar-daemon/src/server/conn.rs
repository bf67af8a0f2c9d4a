//! What a connection's tasks send its client through: the bounded outgoing
//! queue (connection.rs makes it, attach.rs streams into it).

use hangar_protocol::frame;
use hangar_protocol::message::Reply;
use serde_json::Value;
use tokio::sync::mpsc;

/// Outgoing frames queued per connection before the writer pushes back.
/// Output frames are batched up to `MAX_BATCH`, so this bounds what a client
/// that stops reading costs (1 MiB); beyond it the session's own channel
/// lags and the client is resynced with a redraw.
const OUTGOING_QUEUE: usize = 16;

pub(super) struct Conn {
    pub(super) out: mpsc::Sender<Vec<u8>>,
}

impl Conn {
    /// A connection's way out, and the queue its writer takes from.
    pub(super) fn new() -> (Conn, mpsc::Receiver<Vec<u8>>) {
        let (out, rx) = mpsc::channel(OUTGOING_QUEUE);
        (Conn { out }, rx)
    }

    pub(super) async fn reply(&self, reply: Reply) -> bool {
        self.out
            .send(frame::encode(frame::TAG_MESSAGE, &reply.encode()))
            .await
            .is_ok()
    }

    pub(super) async fn data(&self, bytes: &[u8]) -> bool {
        self.out
            .send(frame::encode(frame::TAG_DATA, bytes))
            .await
            .is_ok()
    }

    pub(super) async fn event(&self, event: Value) -> bool {
        let bytes = serde_json::to_vec(&event).unwrap_or_default();
        self.out
            .send(frame::encode(frame::TAG_MESSAGE, &bytes))
            .await
            .is_ok()
    }
}
