//! The sockets `hangar web` accepts browsers on: plain TCP, or TLS with the
//! person's own certificate (`--tls-cert/--tls-key`).
//!
//! TLS handshakes run on their own tasks with a deadline, so one slow or
//! silent client never holds up the accept loop for everyone else.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

/// One accepted connection, plain or TLS.
pub trait Conn: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Conn for T {}

/// The address a request came from (for the failed-login limit).
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub SocketAddr);

impl axum::extract::connect_info::Connected<IncomingStream<'_, WebListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, WebListener>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

pub struct WebListener {
    local: SocketAddr,
    accepted: mpsc::Receiver<(Box<dyn Conn>, SocketAddr)>,
}

impl WebListener {
    /// Start accepting on `tcp`, with TLS when `tls` is given.
    pub fn start(
        tcp: TcpListener,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, accepted) = mpsc::channel::<(Box<dyn Conn>, SocketAddr)>(64);
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of fds and the like: wait a little, as axum's
                        // own listener does, instead of spinning.
                        tracing::warn!("web: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                match &acceptor {
                    None => {
                        if tx.send((Box::new(stream), peer)).await.is_err() {
                            return;
                        }
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            match tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(stream))
                                .await
                            {
                                Ok(Ok(tls)) => {
                                    let _ = tx.send((Box::new(tls) as Box<dyn Conn>, peer)).await;
                                }
                                Ok(Err(e)) => tracing::debug!("web: TLS handshake failed: {e}"),
                                Err(_) => tracing::debug!("web: TLS handshake timed out"),
                            }
                        });
                    }
                }
            }
        });
        Ok(WebListener { local, accepted })
    }
}

impl Listener for WebListener {
    type Io = Box<dyn Conn>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(x) => x,
            // The acceptor task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// A TLS server configuration from PEM files.
pub fn tls_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read the TLS certificate {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} is not a PEM certificate chain", cert.display()))?;
    if certs.is_empty() {
        bail!("{} holds no certificate", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read a PEM private key from {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("no TLS protocol version available")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate and key do not go together")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
