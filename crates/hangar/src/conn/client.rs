//! The client side of the control socket, blocking: connect (starting the
//! daemon in the background when none answers), greet, send a request, read
//! its reply.

use std::io::{Read, Write};
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use hangar_protocol::frame::{self, Decoder, Frame, MAX_SERVER_FRAME};
use hangar_protocol::message::{ErrorBody, Hello, PROTOCOL_VERSION, Reply, Request, Welcome};
use hangar_protocol::paths::Paths;
use serde_json::Value;

use super::mux::MuxLink;

/// How long a freshly started daemon may take to answer.
const START_DEADLINE: Duration = Duration::from_secs(15);

pub struct Client {
    stream: UnixStream,
    decoder: Decoder,
    next_id: u64,
    /// The ssh link carrying this connection when it goes to another host
    /// (`--host`), and this connection's channel on it; declared after the
    /// stream so the stream closes first.
    link: Option<(Arc<MuxLink>, u32)>,
    /// What the daemon said of itself in the handshake.
    welcome: Option<Welcome>,
}

/// An error reply from the daemon, kept whole so the CLI can show its code.
#[derive(Debug)]
pub struct DaemonError(pub ErrorBody);

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for DaemonError {}

/// What `read_frame` returned while attached.
pub enum Incoming {
    Reply(Reply),
    Event(Value),
    Data(Vec<u8>),
}

/// Whether some process holds the home's daemon lock (a daemon is running
/// or starting), tested with a shared non-blocking `flock` that is released
/// at once.
fn home_lock_is_held(paths: &Paths) -> bool {
    let Ok(file) = std::fs::File::open(paths.lock()) else {
        return false;
    };
    // The shared lock, if taken, is released when `file` closes.
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

impl Client {
    pub fn connect_existing_local(paths: &Paths) -> anyhow::Result<Option<Client>> {
        match UnixStream::connect(paths.socket()) {
            Ok(stream) => {
                let mut c = Client {
                    stream,
                    decoder: Decoder::new(MAX_SERVER_FRAME),
                    next_id: 1,
                    link: None,
                    welcome: None,
                };
                match c.hello() {
                    Ok(()) => Ok(Some(c)),
                    // A daemon killed a moment ago still holds its socket
                    // while its last threads exit: the connect lands in the
                    // backlog and is reset unanswered. Nobody answers there.
                    Err(e) if connection_lost(&e) => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Err(_) => Ok(None),
        }
    }

    /// Connect to this machine's daemon, starting it if none answers,
    /// whatever host is selected (`hangar bridge` relays it).
    pub fn connect_local(paths: &Paths) -> anyhow::Result<Client> {
        if let Some(c) = Client::connect_existing_local(paths)? {
            return Ok(c);
        }
        // Where this start's own words begin in the shared log.
        let log_from = std::fs::metadata(paths.log()).map(|m| m.len()).unwrap_or(0);
        let mut child = start_daemon(paths)?;
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Some(c) = Client::connect_existing_local(paths)? {
                reap_in_background(child);
                return Ok(c);
            }
            // A daemon that refused to start (a newer store, a bad config)
            // has said why in its log: pass that on now instead of waiting
            // out the deadline. Another daemon winning the lock also exits,
            // so look once more for it before giving up.
            if let Ok(Some(_)) = child.try_wait() {
                if let Some(c) = Client::connect_existing_local(paths)? {
                    return Ok(c);
                }
                // Another command started a daemon at the same instant and
                // it won the home lock but has not bound its socket yet:
                // wait for that one rather than fail.
                if home_lock_is_held(paths) && Instant::now() <= deadline {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                bail!(
                    "the hangar daemon did not start: {}",
                    refusal(paths, log_from).unwrap_or_else(|| format!(
                        "it exited at once; see {}",
                        paths.log().display()
                    ))
                );
            }
            if Instant::now() > deadline {
                reap_in_background(child);
                bail!(
                    "started the hangar daemon but it did not answer within {}s; see {}",
                    START_DEADLINE.as_secs(),
                    paths.log().display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn hello(&mut self) -> anyhow::Result<()> {
        let asked = self.request(Request::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: format!("hangar-cli {}", env!("CARGO_PKG_VERSION")),
        }));
        match asked {
            Ok(body) => {
                self.welcome = serde_json::from_value(body).ok();
                Ok(())
            }
            Err(e) if e.downcast_ref::<DaemonError>().is_some() => {
                Err(e.context("the daemon refused the handshake"))
            }
            // A daemon that refuses a client (another user's) says why and
            // closes at once, maybe before our hello was written: what it
            // said is still waiting to be read, and is the reason to show,
            // not the broken pipe.
            Err(lost) => match self.read() {
                Ok(Incoming::Reply(r)) if !r.ok => {
                    Err(anyhow!(DaemonError(r.error.unwrap_or(ErrorBody {
                        code: "internal".into(),
                        message: "error without a message".into(),
                        detail: Value::Null,
                    })))
                    .context("the daemon refused the handshake"))
                }
                _ => Err(lost),
            },
        }
    }

    pub fn send_request(&mut self, req: &Request) -> anyhow::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&frame::encode(frame::TAG_MESSAGE, &req.encode(id)))?;
        Ok(id)
    }

    pub fn send_data(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.write(&frame::encode(frame::TAG_DATA, bytes))
    }

    /// Bytes for the daemon. Over a link they go onto it from this thread
    /// (a channel frame on ssh's socket): a key typed into a remote pane
    /// waits for no relay thread to wake and copy it.
    fn write(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        match &self.link {
            Some((link, channel)) => link.write(*channel, bytes),
            None => self.stream.write_all(bytes),
        }
        .context("lost the connection to the daemon")
    }

    /// Send a request and wait for its reply; an error reply is a
    /// `DaemonError`.
    pub fn request(&mut self, req: Request) -> anyhow::Result<Value> {
        let id = self.send_request(&req)?;
        loop {
            match self.read()? {
                Incoming::Reply(r) if r.id == id || r.id == 0 => {
                    return if r.ok {
                        Ok(r.body)
                    } else {
                        Err(anyhow!(DaemonError(r.error.unwrap_or(ErrorBody {
                            code: "internal".into(),
                            message: "error without a message".into(),
                            detail: Value::Null,
                        }))))
                    };
                }
                _ => continue,
            }
        }
    }

    pub fn read(&mut self) -> anyhow::Result<Incoming> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            match self.decoder.next_frame() {
                Ok(Some(Frame::Data(d))) => return Ok(Incoming::Data(d)),
                Ok(Some(Frame::Message(m))) => {
                    let v: Value = serde_json::from_slice(&m)
                        .context("the daemon sent a malformed message")?;
                    if v.get("event").is_some() {
                        return Ok(Incoming::Event(v));
                    }
                    let r: Reply =
                        serde_json::from_value(v).context("the daemon sent a malformed reply")?;
                    return Ok(Incoming::Reply(r));
                }
                Ok(Some(Frame::Unknown { .. })) => continue,
                Ok(None) => {}
                Err(e) => bail!("bad frame from the daemon: {e}"),
            }
            let n = self
                .stream
                .read(&mut buf)
                .context("lost the connection to the daemon")?;
            if n == 0 {
                let closed = std::io::ErrorKind::UnexpectedEof;
                return Err(std::io::Error::new(closed, "the daemon closed the connection").into());
            }
            self.decoder.push(&buf[..n]);
        }
    }

    /// A second handle on this connection for writing from another thread
    /// (attach and a TUI pane write input while one thread reads output):
    /// over a link, it writes onto the link as this one does.
    pub fn writer(&self) -> anyhow::Result<Client> {
        let mut w = Client::from_stream(self.try_clone_stream()?);
        w.link = self.link.clone();
        Ok(w)
    }

    /// A second handle on the same connection, to this machine's daemon.
    pub fn from_stream(stream: UnixStream) -> Client {
        Client {
            stream,
            decoder: Decoder::new(MAX_SERVER_FRAME),
            next_id: 1_000_000,
            link: None,
            welcome: None,
        }
    }

    /// A connection to another host's daemon: `stream` is our end of the
    /// socketpair whose other end is `link`'s ssh.
    pub(crate) fn over_link(stream: UnixStream, link: Arc<MuxLink>, channel: u32) -> Client {
        Client {
            stream,
            decoder: Decoder::new(MAX_SERVER_FRAME),
            next_id: 1,
            link: Some((link, channel)),
            welcome: None,
        }
    }

    /// When the daemon that answered is older than this hangar: what to
    /// say (a new TUI may ask it for what it does not know yet).
    pub fn older_daemon(&self) -> Option<String> {
        let w = self.welcome.as_ref()?;
        let ours = env!("CARGO_PKG_VERSION");
        let older = w.protocol_version < PROTOCOL_VERSION
            || version_numbers(&w.daemon_version) < version_numbers(ours);
        older.then(|| {
            format!(
                "the running hangar daemon ({}, pid {}) is older than this hangar ({ours}); restart it \
                 with `hangar shutdown` (sessions are kept and come back) and run this again",
                hangar_core::display::name(&w.daemon_version),
                w.pid
            )
        })
    }

    pub(crate) fn link(&self) -> Option<(&MuxLink, u32)> {
        self.link.as_ref().map(|(l, c)| (l.as_ref(), *c))
    }

    pub(crate) fn set_read_timeout(&self, timeout: Option<Duration>) -> anyhow::Result<()> {
        Ok(self.stream.set_read_timeout(timeout)?)
    }

    pub fn try_clone_stream(&self) -> anyhow::Result<UnixStream> {
        Ok(self.stream.try_clone()?)
    }

    /// Hand this machine's daemon `fds` (a terminal), when its reply asked
    /// for them; a connection to another host carries bytes only.
    pub fn send_descriptors(&self, fds: &[RawFd]) -> anyhow::Result<()> {
        if self.link.is_some() {
            bail!("descriptors cannot be handed to another host's daemon");
        }
        send_descriptors(&self.stream, fds)
    }
}

/// `fds` with one byte, in one message on a connection to this machine's
/// daemon (SCM_RIGHTS), which reads them after its reply asked for them.
pub fn send_descriptors(stream: &UnixStream, fds: &[RawFd]) -> anyhow::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    use std::os::fd::AsRawFd;
    sendmsg::<()>(
        stream.as_raw_fd(),
        &[std::io::IoSlice::new(b"D")],
        &[ControlMessage::ScmRights(fds)],
        MsgFlags::empty(),
        None,
    )
    .context("cannot hand descriptors to the daemon")?;
    Ok(())
}

/// Start `hangar daemon` detached from this terminal, logging to the home's
/// daemon.log.
/// Needs `unsafe`: `setsid` between fork and exec (`pre_exec`); a process
/// group alone (std's safe `process_group`) would leave the daemon in the
/// starter's session, tied to its terminal.
#[allow(unsafe_code)]
fn start_daemon(paths: &Paths) -> anyhow::Result<std::process::Child> {
    hangar_protocol::paths::ensure_private_dir(&paths.home)
        .with_context(|| format!("cannot create {}", paths.home.display()))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(paths.log())
        .with_context(|| format!("cannot open {}", paths.log().display()))?;
    let exe = std::env::current_exe().context("cannot find the hangar executable")?;
    let mut cmd = Command::new(exe);
    // The daemon and its agents belong to this machine: a shell in one of
    // its panes must not send `hangar ls` to the host the starter named.
    cmd.arg("daemon")
        .env("HANGAR_HOME", &paths.home)
        .env_remove("HANGAR_HOST")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our
    // terminal and process group so closing the shell does not end it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn().context("cannot start the hangar daemon")
}

/// Reap the started daemon if it exits while we still run, so no zombie is
/// left behind; a running daemon outlives us and is adopted.
fn reap_in_background(mut child: std::process::Child) {
    std::thread::spawn(move || {
        let _ = child.wait();
    });
}

/// The last line the daemon wrote to its log, without the timestamp and
/// level prefix when it has one: the reason a failed start gives.
/// `0.10.2` as numbers, for comparing (a pre-release tail is ignored).
fn version_numbers(v: &str) -> Vec<u64> {
    v.split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|n| n.parse().unwrap_or(0))
        .collect()
}

/// What a daemon that refused to start said, from its last `hangar: `
/// line in the log written since `from` to the end: a config's parse error
/// spans several lines (where, the unknown field, the allowed ones).
fn refusal(paths: &Paths, from: u64) -> Option<String> {
    let bytes = std::fs::read(paths.log()).ok()?;
    let text = String::from_utf8_lossy(bytes.get(from as usize..).unwrap_or(&bytes));
    let start = text
        .rfind("hangar: ")
        .map(|i| i + "hangar: ".len())
        .unwrap_or(0);
    let said = text[start..].trim();
    (!said.is_empty()).then(|| said.to_owned())
}

/// Whether `e` is the connection itself going away (reset, closed, a
/// broken pipe), not anything the daemon said.
fn connection_lost(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    e.downcast_ref::<DaemonError>().is_none()
        && e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    ConnectionReset | BrokenPipe | UnexpectedEof | ConnectionAborted
                )
            })
        })
}

#[cfg(test)]
mod local_tests {
    use super::*;

    /// A daemon SIGKILLed a moment ago: its socket still takes a connect,
    /// then the connection ends unanswered. Seen as no daemon, so a
    /// command starts one instead of failing with "connection reset".
    #[test]
    fn a_socket_that_ends_our_connection_unanswered_is_no_daemon() {
        let home = tempfile::TempDir::new().expect("home");
        let paths = Paths::new(home.path().to_owned());
        std::fs::create_dir_all(paths.socket().parent().expect("run dir")).expect("run dir");
        let listener = std::os::unix::net::UnixListener::bind(paths.socket()).expect("bind");
        let dying = std::thread::spawn(move || {
            let (conn, _) = listener.accept().expect("accept");
            drop(conn);
        });
        let found = Client::connect_existing_local(&paths).expect("no error");
        assert!(
            found.is_none(),
            "a dying daemon was taken for a running one"
        );
        dying.join().expect("the dying side");
    }
}

#[cfg(test)]
mod link_tests {
    use super::super::link::Link;
    use super::super::mux::MuxLink;
    use super::*;
    use hangar_protocol::frame::MAX_CLIENT_FRAME;
    use hangar_protocol::mux::MuxFrame;
    use std::sync::Mutex;

    /// A link whose "ssh" is the test: the other end of its stream.
    fn test_link() -> (Arc<MuxLink>, UnixStream) {
        let (ours, far) = UnixStream::pair().expect("socketpair");
        let link = MuxLink::over(
            ours,
            Link {
                child: None,
                stderr: Arc::new(Mutex::new(Vec::new())),
            },
        )
        .expect("link");
        (link, far)
    }

    /// Every mux frame on `far` now, without waiting for any.
    fn frames_now(far: &UnixStream) -> Vec<MuxFrame> {
        use nix::sys::socket::{MsgFlags, recv};
        use std::os::fd::AsRawFd;
        let mut decoder = Decoder::new(MAX_CLIENT_FRAME);
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = recv(far.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
            if n == 0 {
                break;
            }
            decoder.push(&buf[..n]);
        }
        let mut out = Vec::new();
        while let Ok(Some((tag, payload))) = decoder.next_raw() {
            out.extend(MuxFrame::decode(tag, &payload));
        }
        out
    }

    #[test]
    fn a_key_typed_on_a_remote_connection_is_on_the_link_when_its_write_returns() {
        // Regression: every key went through the channel's relay thread (a
        // wake-up and a copy more before ssh had it), which made key echo
        // over a host slower than ssh + tmux.
        let (link, far) = test_link();
        let (channel, stream) = link.open_channel().expect("channel");
        let client = Client::over_link(stream, link.clone(), channel);
        let mut writer = client.writer().expect("writer");
        assert_eq!(frames_now(&far), vec![MuxFrame::Open(channel)]);
        writer.send_data(b"k").expect("send");
        // Read at once, with no wait: the frame is already there.
        assert_eq!(
            frames_now(&far),
            vec![MuxFrame::Data(
                channel,
                frame::encode(frame::TAG_DATA, b"k")
            )]
        );
    }

    #[test]
    fn a_channel_opened_as_its_ssh_ends_fails_like_the_others_and_ssh_says_why() {
        // Regression: a connect on a link whose ssh had just ended (the
        // TUI's overview and its host probe both reaching a host whose sshd
        // was killed) failed with "the ssh link is gone: Broken pipe",
        // hiding ssh's "Connection refused".
        let (ours, far) = UnixStream::pair().expect("socketpair");
        let said = b"ssh: connect to host 127.0.0.1 port 9: Connection refused\r\n".to_vec();
        let link = MuxLink::over(
            ours,
            Link {
                child: None,
                stderr: Arc::new(Mutex::new(said)),
            },
        )
        .expect("link");
        drop(far);
        let (channel, stream) = link.open_channel().expect("a channel, ended at once");
        let mut client = Client::over_link(stream, link.clone(), channel);
        let hello = client.request(Request::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: "test".into(),
        }));
        assert!(hello.is_err(), "nothing can answer on an ended link");
        let (why, _) = link.failure(channel, Duration::from_millis(10));
        assert!(why.contains("Connection refused"), "{why}");
    }

    #[test]
    fn a_channel_the_bridge_closed_takes_no_more_input() {
        let (link, mut far) = test_link();
        let (channel, stream) = link.open_channel().expect("channel");
        let mut client = Client::over_link(stream, link.clone(), channel);
        far.write_all(&MuxFrame::Close(channel, "daemon gone".into()).encode())
            .expect("close");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while client.send_data(b"x").is_ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "the closed channel still took input"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(client.read().is_err(), "its reader sees the end too");
    }
}
