//! The web server's connection to the daemon: the same socket protocol as
//! the CLI's blocking `Client`, on tokio, so one request or one attached
//! browser never holds a thread.
//!
//! One link per API request (a hello and one request: the daemon serves
//! each connection on its own task) and one per attached browser. A link
//! to another host's daemon is a channel of the process's ssh link to it
//! (`over_client`), made and greeted by the blocking `conn::ssh`.

use hangar_protocol::frame::{self, Decoder, Frame, MAX_SERVER_FRAME};
use hangar_protocol::message::{ErrorBody, Hello, PROTOCOL_VERSION, Reply, Request};
use hangar_protocol::paths::Paths;
use hangar_protocol::reply::Kind;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Why a daemon request did not give a body.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The daemon answered with an error (not found, ambiguous, ...).
    #[error("{}", .0.message)]
    Daemon(ErrorBody),
    /// The socket is gone or spoke nonsense.
    #[error("the hangar daemon is not reachable: {0}")]
    Lost(String),
}

/// What the daemon sent on a link.
pub enum Incoming {
    Reply(Reply),
    Event(Value),
    Data(Vec<u8>),
}

/// The reading side of a link.
pub struct LinkReader {
    read: OwnedReadHalf,
    decoder: Decoder,
}

/// The writing side of a link.
pub struct LinkWriter {
    write: OwnedWriteHalf,
    next_id: u64,
}

pub struct DaemonLink {
    pub reader: LinkReader,
    pub writer: LinkWriter,
    /// For another host's daemon: the greeted connection whose channel
    /// this is, holding the shared ssh link open while the link lives.
    pub far: Option<super::Client>,
}

impl DaemonLink {
    /// Connect and greet. Never starts a daemon: `hangar web` made sure one
    /// runs before it began serving, and a daemon that stopped since should
    /// not be restarted by a browser.
    pub async fn connect(paths: &Paths) -> Result<DaemonLink, LinkError> {
        let stream = UnixStream::connect(paths.socket())
            .await
            .map_err(|e| LinkError::Lost(format!("{}: {e}", paths.socket().display())))?;
        let (read, write) = stream.into_split();
        let mut link = DaemonLink {
            reader: LinkReader {
                read,
                decoder: Decoder::new(MAX_SERVER_FRAME),
            },
            writer: LinkWriter { write, next_id: 1 },
            far: None,
        };
        link.request(Request::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: format!("hangar-web {}", env!("CARGO_PKG_VERSION")),
        }))
        .await?;
        Ok(link)
    }

    /// The link of `client`, a connection to another host's daemon that
    /// `conn::ssh::connect` made and greeted (the next request id is past
    /// the hello's). Call on a tokio runtime.
    pub fn over_client(client: super::Client) -> Result<DaemonLink, LinkError> {
        let lost = |e: std::io::Error| LinkError::Lost(e.to_string());
        let stream = client
            .try_clone_stream()
            .map_err(|e| LinkError::Lost(e.to_string()))?;
        stream.set_read_timeout(None).map_err(lost)?;
        stream.set_nonblocking(true).map_err(lost)?;
        let (read, write) = UnixStream::from_std(stream).map_err(lost)?.into_split();
        Ok(DaemonLink {
            reader: LinkReader {
                read,
                decoder: Decoder::new(MAX_SERVER_FRAME),
            },
            writer: LinkWriter { write, next_id: 2 },
            far: Some(client),
        })
    }

    /// Send a request and wait for its reply.
    pub async fn request(&mut self, req: Request) -> Result<Value, LinkError> {
        let id = self.writer.send_request(&req).await?;
        loop {
            match self.reader.read().await? {
                Incoming::Reply(r) if r.id == id || r.id == 0 => {
                    return if r.ok {
                        Ok(r.body)
                    } else {
                        Err(LinkError::Daemon(r.error.unwrap_or(ErrorBody {
                            code: "internal".into(),
                            message: "error without a message".into(),
                            detail: Value::Null,
                        })))
                    };
                }
                _ => continue,
            }
        }
    }

    /// Request kind `K` with `body`: its reply as the kind's reply type
    /// (`hangar_protocol::reply`). A reply that does not fit it is `Lost`.
    pub async fn ask<K: Kind>(&mut self, body: K::Body) -> Result<K::Reply, LinkError> {
        let request = K::request(body);
        let kind = request.kind().to_owned();
        let v = self.request(request).await?;
        serde_json::from_value(v)
            .map_err(|e| LinkError::Lost(format!("a malformed {kind} reply: {e}")))
    }

    /// One request of kind `K` on a fresh link.
    pub async fn once<K: Kind>(paths: &Paths, body: K::Body) -> Result<K::Reply, LinkError> {
        DaemonLink::connect(paths).await?.ask::<K>(body).await
    }
}

impl LinkWriter {
    pub async fn send_request(&mut self, req: &Request) -> Result<u64, LinkError> {
        let id = self.next_id;
        self.next_id += 1;
        self.write
            .write_all(&frame::encode(frame::TAG_MESSAGE, &req.encode(id)))
            .await
            .map_err(|e| LinkError::Lost(e.to_string()))?;
        Ok(id)
    }

    pub async fn send_data(&mut self, bytes: &[u8]) -> Result<(), LinkError> {
        self.write
            .write_all(&frame::encode(frame::TAG_DATA, bytes))
            .await
            .map_err(|e| LinkError::Lost(e.to_string()))
    }
}

impl LinkReader {
    /// The next frame from the daemon. Cancel-safe: a partly read frame
    /// stays in the decoder.
    pub async fn read(&mut self) -> Result<Incoming, LinkError> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            match self.decoder.next_frame() {
                Ok(Some(Frame::Data(d))) => return Ok(Incoming::Data(d)),
                Ok(Some(Frame::Message(m))) => {
                    let v: Value = serde_json::from_slice(&m)
                        .map_err(|e| LinkError::Lost(format!("malformed message: {e}")))?;
                    if v.get("event").is_some() {
                        return Ok(Incoming::Event(v));
                    }
                    let r: Reply = serde_json::from_value(v)
                        .map_err(|e| LinkError::Lost(format!("malformed reply: {e}")))?;
                    return Ok(Incoming::Reply(r));
                }
                Ok(Some(Frame::Unknown { .. })) => continue,
                Ok(None) => {}
                Err(e) => return Err(LinkError::Lost(format!("bad frame: {e}"))),
            }
            let n = self
                .read
                .read(&mut buf)
                .await
                .map_err(|e| LinkError::Lost(e.to_string()))?;
            if n == 0 {
                return Err(LinkError::Lost("the daemon closed the connection".into()));
            }
            self.decoder.push(&buf[..n]);
        }
    }
}
