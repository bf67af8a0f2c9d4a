//! The proxy's door into a sandbox: a Unix socket in the session's sandbox
//! folder, bound into the sandbox, whose every connection is carried to the
//! recording proxy's loopback port. The sandbox has no other network; the
//! relay inside listens on the same port number on its own loopback.

use std::path::{Path, PathBuf};

use tokio::net::{TcpStream, UnixListener};

/// The socket and its accept loop; both end when this is dropped.
pub struct Forwarder {
    task: tokio::task::JoinHandle<()>,
    socket: PathBuf,
}

impl Forwarder {
    /// Listen on `socket` (replacing a stale one) and carry each connection
    /// to 127.0.0.1:`port`.
    pub fn start(socket: &Path, port: u16) -> std::io::Result<Forwarder> {
        match std::fs::remove_file(socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(socket)?;
        let task = tokio::spawn(async move {
            loop {
                let (mut inside, _) = match listener.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!("sandbox proxy socket: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                tokio::spawn(async move {
                    match TcpStream::connect(("127.0.0.1", port)).await {
                        Ok(mut proxy) => {
                            let _ = proxy.set_nodelay(true);
                            // Either side closing ends the copy; nothing to report.
                            let _ = tokio::io::copy_bidirectional(&mut inside, &mut proxy).await;
                        }
                        Err(e) => {
                            tracing::warn!("sandbox proxy socket: cannot reach the proxy: {e}")
                        }
                    }
                });
            }
        });
        Ok(Forwarder {
            task,
            socket: socket.to_owned(),
        })
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
        if let Err(e) = std::fs::remove_file(&self.socket)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!("cannot remove {}: {e}", self.socket.display());
        }
    }
}
