//! A far hangar's link, served by the daemon itself.
//!
//! `hangar bridge --mux` is what ssh runs on this machine for a hangar on
//! another one. It hands the daemon its stdin and stdout (`take_link`, then
//! the two descriptors over the control socket) and waits; the daemon reads
//! the link's channels (`hangar_protocol::mux`) and serves each as a client
//! connection of its own. Until then every key and every screen update
//! crossed the bridge process as well, one more process to wake each way:
//! what kept key echo over ssh behind tmux's, whose server writes to the
//! ssh session's terminal itself (issue 31).
//!
//! The link lives as long as both ends do: it ends when the far side closes
//! it (or ssh dies: end of input, a broken pipe) and when the bridge's
//! control connection closes (the bridge was killed), so a dead link never
//! keeps an sshd session open.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use hangar_protocol::frame::{Decoder, MAX_CLIENT_FRAME};
use hangar_protocol::mux::{MAX_CHUNK, MuxFrame};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};

use super::attach_size::ClientSizes;
use super::conn::Conn;
use super::connection::{Ended, close, serve};
use super::descriptors;
use crate::Daemon;

/// The bridge's socket (its reading half), for its descriptors.
pub(super) type BridgeSocket = tokio::net::unix::OwnedReadHalf;

/// What a channel's connection may have unread before the link waits for
/// it (as a socket's buffer would hold).
const CHANNEL_INPUT: usize = 256 * 1024;

/// Receive the bridge's stdin and stdout and serve the link on them until
/// either end closes. The bridge's control connection stays open all the
/// while: its end (the bridge killed) ends the link.
pub(super) async fn take_link(daemon: Arc<Daemon>, sizes: Arc<ClientSizes>, bridge: BridgeSocket) {
    let [input, output] = match descriptors::receive(bridge.as_ref()).await {
        Ok(fds) => fds,
        Err(e) => {
            tracing::warn!("a bridge's link could not be taken: {e}");
            return;
        }
    };
    let mut link = match Link::new(input, output) {
        Ok(link) => link,
        Err(e) => {
            tracing::warn!("a bridge's link could not be served: {e}");
            return;
        }
    };
    tokio::select! {
        ended = link.serve(&daemon, &sizes) => {
            if let Err(e) = ended {
                tracing::info!("a far hangar's link ended: {e}");
            }
        }
        _ = bridge_gone(&bridge) => tracing::debug!("a bridge left; its link ends"),
    }
}

/// The bridge never writes after its descriptors: its socket turns
/// readable when it closes.
async fn bridge_gone(bridge: &BridgeSocket) {
    let socket: &tokio::net::UnixStream = bridge.as_ref();
    let mut byte = [0u8; 1];
    loop {
        if socket.readable().await.is_err() {
            return;
        }
        match socket.try_read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// The link's two ends: pipes (OpenSSH's sshd gives a command without a
/// terminal pipes) or Unix sockets.
struct Link {
    input: Box<dyn AsyncRead + Unpin + Send>,
    out: Arc<LinkOut>,
}

/// The link's output, shared by every channel: frames are written whole,
/// one writer at a time.
struct LinkOut(tokio::sync::Mutex<Box<dyn AsyncWrite + Unpin + Send>>);

impl LinkOut {
    async fn send(&self, frame: &MuxFrame) -> io::Result<()> {
        let bytes = frame.encode();
        let mut out = self.0.lock().await;
        out.write_all(&bytes).await?;
        out.flush().await
    }
}

/// What the bridge passed: a pipe or a socket, else refused.
fn is_pipe(fd: &OwnedFd) -> io::Result<bool> {
    use nix::sys::stat::{SFlag, fstat};
    let kind = SFlag::from_bits_truncate(fstat(fd.as_fd())?.st_mode) & SFlag::S_IFMT;
    if kind == SFlag::S_IFIFO {
        Ok(true)
    } else if kind == SFlag::S_IFSOCK {
        Ok(false)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the link is neither a pipe nor a socket",
        ))
    }
}

fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}

impl Link {
    fn new(input: OwnedFd, output: OwnedFd) -> io::Result<Link> {
        use tokio::net::unix::pipe;
        let input: Box<dyn AsyncRead + Unpin + Send> = if is_pipe(&input)? {
            Box::new(pipe::Receiver::from_owned_fd(input)?)
        } else {
            Box::new(socket(input)?)
        };
        let output: Box<dyn AsyncWrite + Unpin + Send> = if is_pipe(&output)? {
            Box::new(pipe::Sender::from_owned_fd(output)?)
        } else {
            Box::new(socket(output)?)
        };
        Ok(Link {
            input,
            out: Arc::new(LinkOut(tokio::sync::Mutex::new(output))),
        })
    }

    /// Read frames until the far side ends the link. Dropping the channels'
    /// inputs on the way out ends their connections (an attach released).
    async fn serve(&mut self, daemon: &Arc<Daemon>, sizes: &Arc<ClientSizes>) -> io::Result<()> {
        let mut channels: HashMap<u32, DuplexStream> = HashMap::new();
        let mut decoder = Decoder::new(MAX_CLIENT_FRAME);
        let mut buf = vec![0u8; 128 * 1024];
        loop {
            let n = self.input.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            decoder.push(&buf[..n]);
            loop {
                let (tag, payload) = match decoder.next_raw() {
                    Ok(Some(raw)) => raw,
                    Ok(None) => break,
                    Err(e) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("the far hangar sent a bad frame: {e}"),
                        ));
                    }
                };
                match MuxFrame::decode(tag, &payload) {
                    Some(MuxFrame::Open(channel)) => {
                        let input = self.open(daemon, sizes, channel);
                        channels.insert(channel, input);
                    }
                    Some(MuxFrame::Data(channel, bytes)) => {
                        let failed = match channels.get_mut(&channel) {
                            Some(input) => input.write_all(&bytes).await.is_err(),
                            None => false,
                        };
                        if failed {
                            channels.remove(&channel);
                        }
                    }
                    Some(MuxFrame::Close(channel, _)) => {
                        channels.remove(&channel);
                    }
                    Some(MuxFrame::Ready(_) | MuxFrame::Unknown(_)) => {}
                    None => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("the far hangar sent a short frame (tag {tag})"),
                        ));
                    }
                }
            }
        }
    }

    /// A new connection on `channel`: its requests come from the returned
    /// input, its frames go onto the link as the channel's data, and its
    /// end closes the channel.
    fn open(&self, daemon: &Arc<Daemon>, sizes: &Arc<ClientSizes>, channel: u32) -> DuplexStream {
        // Dropping `input` (the channel closed, the link ended) is the end
        // of `requests`: the connection ends and releases its attach.
        let (input, requests) = tokio::io::duplex(CHANNEL_INPUT);
        let (conn, mut out_rx) = Conn::new();
        let out = self.out.clone();
        let writer = tokio::spawn(async move {
            while let Some(bytes) = out_rx.recv().await {
                // A frame of the connection is most often one chunk: it
                // goes as it is, not copied.
                let frames = if bytes.len() <= MAX_CHUNK {
                    vec![bytes]
                } else {
                    bytes.chunks(MAX_CHUNK).map(<[u8]>::to_vec).collect()
                };
                for chunk in frames {
                    if out.send(&MuxFrame::Data(channel, chunk)).await.is_err() {
                        return;
                    }
                }
            }
            let _ = out.send(&MuxFrame::Close(channel, String::new())).await;
        });
        let (daemon, sizes) = (daemon.clone(), sizes.clone());
        tokio::spawn(async move {
            let ended = serve(daemon.clone(), sizes, requests, &conn, None, false).await;
            close(&daemon, conn, writer, matches!(ended, Ended::Shutdown)).await;
        });
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_protocol::frame::{self, Frame};
    use hangar_protocol::message::{Hello, PROTOCOL_VERSION, Request};
    use std::io::{Read, Write};

    use crate::on_a_fake_machine::with_sessions;

    /// The far hangar's end of a link served on two pipes: what it writes
    /// and what it reads, and the link's task.
    struct Far {
        to_daemon: std::io::PipeWriter,
        from_daemon: std::io::PipeReader,
        decoder: Decoder,
        served: tokio::task::JoinHandle<io::Result<()>>,
    }

    impl Far {
        fn start(daemon: Arc<Daemon>) -> Far {
            let (input, to_daemon) = std::io::pipe().unwrap();
            let (from_daemon, output) = std::io::pipe().unwrap();
            let mut link = Link::new(input.into(), output.into()).unwrap();
            let sizes = Arc::new(ClientSizes::default());
            let served = tokio::spawn(async move { link.serve(&daemon, &sizes).await });
            Far {
                to_daemon,
                from_daemon,
                decoder: Decoder::new(MAX_CLIENT_FRAME),
                served,
            }
        }

        fn send(&mut self, frame: &MuxFrame) {
            self.to_daemon.write_all(&frame.encode()).unwrap();
        }

        fn request(&mut self, channel: u32, id: u64, request: Request) {
            let bytes = frame::encode(frame::TAG_MESSAGE, &request.encode(id));
            self.send(&MuxFrame::Data(channel, bytes));
        }

        /// The next mux frame from the daemon (blocking: run off the runtime).
        fn next(&mut self) -> MuxFrame {
            let mut buf = [0u8; 64 * 1024];
            loop {
                if let Some((tag, payload)) = self.decoder.next_raw().unwrap() {
                    return MuxFrame::decode(tag, &payload).expect("a whole mux frame");
                }
                let n = self.from_daemon.read(&mut buf).unwrap();
                assert!(n > 0, "the daemon closed the link");
                self.decoder.push(&buf[..n]);
            }
        }

        /// The next reply on `channel`, as JSON.
        fn reply(&mut self, channel: u32) -> serde_json::Value {
            let mut inner = Decoder::new(MAX_CLIENT_FRAME);
            loop {
                match self.next() {
                    MuxFrame::Data(c, bytes) if c == channel => inner.push(&bytes),
                    other => panic!("expected data on channel {channel}, got {other:?}"),
                }
                if let Some(Frame::Message(m)) = inner.next_frame().unwrap() {
                    return serde_json::from_slice(&m).unwrap();
                }
            }
        }
    }

    fn hello() -> Request {
        Request::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: "test".into(),
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_channel_of_a_link_is_a_connection_of_its_own_and_its_close_is_answered() {
        let machine = with_sessions(&[], &[]);
        let mut far = Far::start(machine.daemon.clone());
        far = tokio::task::spawn_blocking(move || {
            far.send(&MuxFrame::Open(1));
            far.send(&MuxFrame::Open(2));
            // Channel 2 greets first: the channels do not wait on each other.
            far.request(2, 1, hello());
            assert_eq!(far.reply(2)["ok"], true);
            far.request(1, 1, hello());
            assert_eq!(far.reply(1)["ok"], true);
            far.request(1, 2, Request::List);
            let listed = far.reply(1);
            assert_eq!(listed["id"], 2);
            assert_eq!(listed["ok"], true, "{listed}");
            // A request before the handshake is refused on that channel
            // only, and its connection ends there.
            far.send(&MuxFrame::Open(3));
            far.request(3, 7, Request::List);
            assert_eq!(far.reply(3)["ok"], false);
            assert_eq!(far.next(), MuxFrame::Close(3, String::new()));
            // A link is handed over on the control socket only, never on
            // one of a link's own channels.
            far.request(1, 3, Request::TakeLink);
            let refused = far.reply(1);
            assert_eq!(refused["ok"], false);
            assert!(
                refused.to_string().contains("control socket only"),
                "{refused}"
            );
            // Closing a channel ends its connection: the daemon says so.
            far.send(&MuxFrame::Close(2, String::new()));
            assert_eq!(far.next(), MuxFrame::Close(2, String::new()));
            far
        })
        .await
        .unwrap();
        // The far side leaving ends the link, and the open channel with it.
        drop(far.to_daemon);
        far.served.await.unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bad_frame_ends_the_link_with_a_reason_and_the_daemon_stays_up() {
        let machine = with_sessions(&[], &[]);
        let daemon = machine.daemon.clone();
        let mut far = Far::start(daemon.clone());
        // A frame header (length, then tag) announcing more than any
        // client may send.
        far.to_daemon
            .write_all(&[0xff, 0xff, 0xff, 0xff, frame::TAG_MESSAGE])
            .unwrap();
        let ended = far.served.await.unwrap();
        let e = ended.expect_err("a bad frame ends the link");
        assert!(e.to_string().contains("bad frame"), "{e}");
        // Another link is served as before.
        let mut again = Far::start(daemon);
        let again = tokio::task::spawn_blocking(move || {
            again.send(&MuxFrame::Open(9));
            again.request(9, 1, hello());
            assert_eq!(again.reply(9)["ok"], true);
            again
        })
        .await
        .unwrap();
        drop(again.to_daemon);
        again.served.await.unwrap().unwrap();
    }
}
