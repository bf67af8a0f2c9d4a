//! What a connection's tasks send its client through: the bounded outgoing
//! queue (connection.rs makes it, attach.rs streams into it).

use hangar_protocol::frame;
use hangar_protocol::message::Reply;
use serde_json::Value;
use tokio::sync::mpsc;

pub(super) struct Conn {
    pub(super) out: mpsc::Sender<Vec<u8>>,
}

impl Conn {
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
