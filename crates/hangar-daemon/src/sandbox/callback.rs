//! A sandboxed session's own way back to the daemon (issue 32): its Claude
//! hooks (`hangar hook`) and its orchestration MCP server (`hangar mcp`)
//! run inside the sandbox and must reach the daemon, but the control
//! socket must never enter a sandbox (it closes, attaches to and types into
//! every session). So each sandboxed session gets a socket of its own, in
//! its sandbox folder, bound in where the control socket is outside
//! (`HANGAR_HOME/run/hangar.sock`); the daemon serves it with
//! the control socket's protocol, confined to that one session: its own
//! hook events and its own MCP calls (which still carry its token), nothing
//! else. Which session a connection speaks for is the socket it came in
//! on, never anything the client says.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hangar_core::SessionId;
use hangar_protocol::message::Request;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

/// A connection accepted on a session's socket, for the server to serve.
pub type Accepted = (SessionId, UnixStream);

/// The channel from every session's socket to the server, made with the
/// daemon: sessions restored before the server runs queue their
/// connections until it does.
pub struct Callbacks {
    tx: mpsc::UnboundedSender<Accepted>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Accepted>>>,
}

impl Default for Callbacks {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Callbacks {
            tx,
            rx: Mutex::new(Some(rx)),
        }
    }
}

impl Callbacks {
    /// The server's end (taken once).
    pub fn take_receiver(&self) -> Option<mpsc::UnboundedReceiver<Accepted>> {
        self.rx.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Listen on `socket` (replacing a stale one) for `session`.
    pub fn listen(&self, socket: &Path, session: SessionId) -> std::io::Result<CallbackSocket> {
        match std::fs::remove_file(socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(socket)?;
        let tx = self.tx.clone();
        let task = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        if tx.send((session.clone(), stream)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(session = %session, "sandbox callback socket: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        });
        Ok(CallbackSocket {
            task,
            socket: socket.to_owned(),
        })
    }
}

/// One session's socket and its accept loop; both end when this is dropped
/// (when the session's process exits).
pub struct CallbackSocket {
    task: tokio::task::JoinHandle<()>,
    socket: PathBuf,
}

impl Drop for CallbackSocket {
    fn drop(&mut self) {
        self.task.abort();
        if let Err(e) = std::fs::remove_file(&self.socket)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!("cannot remove {}: {e}", self.socket.display());
        }
    }
}

/// Whether a request that came in on `session`'s socket may be served: its
/// own hook events and its own MCP tool calls. `None` when it may; else the
/// refusal.
pub fn refusal(session: &SessionId, request: &Request) -> Option<String> {
    let own = |named: &str| named == session.as_str();
    match request {
        Request::Hook(h) if own(&h.session) => None,
        Request::Agent(call) if own(&call.caller) => None,
        Request::Hook(_) | Request::Agent(_) => Some(format!(
            "refused: this socket belongs to session {} and carries only its own hooks and MCP calls",
            session.short()
        )),
        _ => Some(
            "refused: a sandboxed session's socket carries only its own hooks and MCP calls"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_protocol::message::{AgentCall, AgentTool, Hook};

    #[test]
    fn a_session_socket_carries_only_that_sessions_hooks_and_mcp_calls() {
        let me = SessionId::from("aaaa-1");
        let hook = |s: &str| {
            Request::Hook(Hook {
                session: s.into(),
                event: "stop".into(),
                ..Default::default()
            })
        };
        let call = |s: &str| {
            Request::Agent(AgentCall {
                tool: AgentTool::List,
                caller: s.into(),
                token: "t".into(),
                args: serde_json::Value::Null,
            })
        };
        assert_eq!(refusal(&me, &hook("aaaa-1")), None);
        assert_eq!(refusal(&me, &call("aaaa-1")), None);
        // Another session, or a prefix that could name another one.
        for other in ["bbbb-2", "aaaa", ""] {
            assert!(refusal(&me, &hook(other)).is_some(), "{other}");
            assert!(refusal(&me, &call(other)).is_some(), "{other}");
        }
        for r in [Request::Shutdown, Request::Export, Request::Workspace] {
            assert!(refusal(&me, &r).is_some());
        }
    }
}
