//! `hangar bridge`: this machine's daemon socket over stdio, for a hangar on
//! another machine that reached this one with `ssh -T ... hangar bridge`.
//!
//! It starts the daemon when none runs (as every command does), then copies
//! bytes both ways without reading them: the far client speaks the daemon's
//! own versioned frames, handshake included. With `--mux` (what a hangar of
//! this release runs) stdio carries many daemon connections, one per
//! channel (`hangar_protocol::mux`): the far hangar's every pane and command
//! share one SSH connection. Then the bridge hands its stdin and stdout to
//! the daemon (`take_link`), which reads and writes the link itself, and
//! waits for the daemon to end it: a key and its echo cross no process but
//! ssh's and the daemon's, as with tmux's server (it relays the channels
//! itself only for a daemon too old to take them). Nothing is listened on; who
//! may run this is SSH's business. The bridge only ever talks to a socket
//! owned by its own user and served by its own user's process (the same
//! check the daemon makes of its clients), so a socket planted in a shared
//! `HANGAR_HOME` cannot capture someone's keystrokes.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use hangar_protocol::frame::{Decoder, MAX_CLIENT_FRAME};
use hangar_protocol::message::{Hello, PROTOCOL_VERSION, Request, codes};
use hangar_protocol::mux::{MAX_CHUNK, MUX_VERSION, MuxFrame};
use hangar_protocol::paths::Paths;
use hangar_protocol::reply::kind;

use crate::api;
use crate::conn::{self, Client, DaemonError};

pub fn run(paths: &Paths, mux: bool) -> anyhow::Result<ExitCode> {
    // Starts the daemon if need be and proves it answers the handshake;
    // then a fresh connection is relayed, for the far client to greet.
    drop(Client::connect_local(paths)?);
    if !mux {
        return relay(checked_stream(paths)?);
    }
    let out: Out = Arc::new(Mutex::new(unbuffered_stdout()?));
    if !send(&out, &MuxFrame::Ready(MUX_VERSION)) {
        return Ok(ExitCode::SUCCESS);
    }
    match hand_over_link(paths)? {
        Some(daemon) => {
            wait_until_closed(daemon);
            Ok(ExitCode::SUCCESS)
        }
        None => relay_channels(paths, out),
    }
}

/// Give this bridge's stdin and stdout to the daemon, which serves the
/// link's channels from then on. `None`: a daemon from before `take_link`,
/// for which this bridge relays them itself.
fn hand_over_link(paths: &Paths) -> anyhow::Result<Option<UnixStream>> {
    if !pipes_or_sockets() {
        return Ok(None);
    }
    let socket = checked_stream(paths)?;
    if !daemon_takes_link(socket.try_clone()?)? {
        return Ok(None);
    }
    send_link(&socket)?;
    Ok(Some(socket))
}

/// Greet the daemon on `stream` and ask it to take the link; `false` from
/// a daemon that does not know `take_link` (older than this bridge).
fn daemon_takes_link(stream: UnixStream) -> anyhow::Result<bool> {
    let mut daemon = Client::from_stream(stream);
    daemon
        .request(Request::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: format!("hangar-bridge {}", env!("CARGO_PKG_VERSION")),
        }))
        .context("the daemon refused the bridge's handshake")?;
    match api::ask::<kind::TakeLink>(&mut daemon, ()) {
        Ok(_) => Ok(true),
        Err(e)
            if e.downcast_ref::<DaemonError>()
                .is_some_and(|d| d.0.code == codes::UNKNOWN_KIND) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Whether stdin and stdout are what ssh gives a command without a
/// terminal (pipes, or sockets), which the daemon can serve; anything else
/// (a terminal, a file) this bridge relays itself.
fn pipes_or_sockets() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let kind = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        Some(kind.is_fifo() || kind.is_socket())
    };
    kind(std::io::stdin().as_fd()) == Some(true) && kind(std::io::stdout().as_fd()) == Some(true)
}

/// fd 0 and fd 1, with one byte, in one message on the daemon's socket.
fn send_link(socket: &UnixStream) -> anyhow::Result<()> {
    use std::os::fd::{AsRawFd, RawFd};
    let link: [RawFd; 2] = [std::io::stdin().as_raw_fd(), std::io::stdout().as_raw_fd()];
    conn::client::send_descriptors(socket, &link).context("cannot hand the link to the daemon")
}

/// The daemon closes the connection when the link ends (the far side left,
/// ssh died) or when it exits; until then this process keeps ssh's session.
fn wait_until_closed(mut daemon: UnixStream) {
    let mut byte = [0u8; 1];
    loop {
        match daemon.read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// A fresh connection to this user's own daemon, not greeted.
fn checked_stream(paths: &Paths) -> anyhow::Result<UnixStream> {
    check_owner(&paths.socket())?;
    let daemon = conn::local_stream(paths)?;
    check_peer(&daemon)?;
    Ok(daemon)
}

/// Like `checked_stream`, starting the daemon again when it is gone (a
/// restart there while the link stayed up), as a new bridge would.
fn open_daemon(paths: &Paths) -> anyhow::Result<UnixStream> {
    match checked_stream(paths) {
        Ok(s) => Ok(s),
        Err(first) => {
            if Client::connect_local(paths).is_err() {
                return Err(first);
            }
            checked_stream(paths)
        }
    }
}

/// Frames to stdout, written whole by whichever thread has one.
type Out = Arc<Mutex<std::fs::File>>;

fn send(out: &Out, frame: &MuxFrame) -> bool {
    let bytes = frame.encode();
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    out.write_all(&bytes).is_ok()
}

/// `--mux` for a daemon that does not take links: each channel the far
/// side opens is a connection to the daemon;
/// its bytes go both ways untouched. A channel's reader runs on its own
/// thread; this one reads stdin and writes to the daemon connections.
fn relay_channels(paths: &Paths, out: Out) -> anyhow::Result<ExitCode> {
    let mut daemons: HashMap<u32, UnixStream> = HashMap::new();
    let mut decoder = Decoder::new(MAX_CLIENT_FRAME);
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 128 * 1024];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => return Ok(ExitCode::SUCCESS),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("cannot read the link"),
        };
        decoder.push(&buf[..n]);
        loop {
            let (tag, payload) = match decoder.next_raw() {
                Ok(Some(raw)) => raw,
                Ok(None) => break,
                Err(e) => bail!("the far hangar sent a bad frame: {e}"),
            };
            match MuxFrame::decode(tag, &payload) {
                Some(MuxFrame::Open(channel)) => match open_daemon(paths) {
                    Ok(daemon) => {
                        let reader = daemon.try_clone()?;
                        daemons.insert(channel, daemon);
                        let out = out.clone();
                        std::thread::spawn(move || copy_to_link(reader, channel, &out));
                    }
                    Err(e) => {
                        if !send(&out, &MuxFrame::Close(channel, format!("{e:#}"))) {
                            return Ok(ExitCode::SUCCESS);
                        }
                    }
                },
                Some(MuxFrame::Data(channel, bytes)) => {
                    let failed = daemons
                        .get_mut(&channel)
                        .is_some_and(|d| d.write_all(&bytes).is_err());
                    if failed && let Some(d) = daemons.remove(&channel) {
                        let _ = d.shutdown(Shutdown::Both);
                    }
                }
                Some(MuxFrame::Close(channel, _)) => {
                    if let Some(d) = daemons.remove(&channel) {
                        let _ = d.shutdown(Shutdown::Both);
                    }
                }
                Some(MuxFrame::Ready(_) | MuxFrame::Unknown(_)) => {}
                None => bail!("the far hangar sent a short frame (tag {tag})"),
            }
        }
    }
}

/// One daemon connection's output, as channel frames, until it ends; then
/// the far side is told the channel closed.
fn copy_to_link(mut daemon: UnixStream, channel: u32, out: &Out) {
    let mut buf = vec![0u8; MAX_CHUNK];
    loop {
        match daemon.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if !send(out, &MuxFrame::Data(channel, buf[..n].to_vec())) {
                    // stdout is gone: so is the far side.
                    std::process::exit(0);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    let _ = send(out, &MuxFrame::Close(channel, String::new()));
}

fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// fd 1 without `Stdout`'s line buffering (which split every frame into
/// two writes): a second handle to the same open file.
fn unbuffered_stdout() -> std::io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    Ok(std::io::stdout().as_fd().try_clone_to_owned()?.into())
}

/// The socket file must be ours.
fn check_owner(socket: &std::path::Path) -> anyhow::Result<()> {
    let meta = std::fs::symlink_metadata(socket)
        .with_context(|| format!("cannot read {}", socket.display()))?;
    if meta.uid() != me() {
        bail!(
            "refusing to relay {}: it belongs to uid {}, not to this user (uid {})",
            socket.display(),
            meta.uid(),
            me()
        );
    }
    Ok(())
}

/// The process serving it must be ours too (a socket can be replaced
/// between the check and the connect).
fn check_peer(stream: &UnixStream) -> anyhow::Result<()> {
    let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(std::io::Error::from)
        .context("cannot tell who serves the hangar socket")?;
    if cred.uid() != me() {
        bail!(
            "refusing to relay the hangar socket: it is served by uid {}, not by this user (uid {})",
            cred.uid(),
            me()
        );
    }
    Ok(())
}

/// Copy stdin to the daemon and the daemon to stdout until either side
/// ends. Unbuffered both ways: every keystroke and every frame goes on at
/// once.
fn relay(daemon: UnixStream) -> anyhow::Result<ExitCode> {
    let mut to_daemon = daemon.try_clone()?;
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_daemon.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        // The far side is gone: so is this bridge (the daemon drops the
        // connection and detaches any attach it held).
        let _ = to_daemon.shutdown(Shutdown::Both);
        std::process::exit(0);
    });
    let mut stdout = unbuffered_stdout()?;
    let mut from_daemon = daemon;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from_daemon.read(&mut buf) {
            Ok(0) => return Ok(ExitCode::SUCCESS),
            Ok(n) => {
                if stdout.write_all(&buf[..n]).is_err() {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("lost the connection to the local daemon"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_protocol::frame::{self, Frame};
    use hangar_protocol::message::Reply;

    /// A daemon on the other end of `ours` that greets and then answers
    /// `take_link` with `answer`.
    fn fake_daemon(ours: UnixStream, answer: fn(u64) -> Reply) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let mut stream = ours;
            let mut decoder = Decoder::new(MAX_CLIENT_FRAME);
            let mut buf = [0u8; 4096];
            loop {
                let request = match decoder.next_frame().unwrap() {
                    Some(Frame::Message(m)) => Request::decode(&m).unwrap(),
                    Some(other) => panic!("unexpected frame {other:?}"),
                    None => {
                        let n = stream.read(&mut buf).unwrap();
                        if n == 0 {
                            return;
                        }
                        decoder.push(&buf[..n]);
                        continue;
                    }
                };
                let reply = match request {
                    (id, Request::Hello(_)) => Reply::ok(
                        id,
                        serde_json::json!({"protocol_version": PROTOCOL_VERSION}),
                    ),
                    (id, Request::TakeLink) => answer(id),
                    (id, other) => panic!("unexpected request {id} {other:?}"),
                };
                let bytes = frame::encode(frame::TAG_MESSAGE, &reply.encode());
                stream.write_all(&bytes).unwrap();
            }
        })
    }

    /// `daemon_takes_link` against a fake daemon answering `take_link` with
    /// `answer`.
    fn asked(answer: fn(u64) -> Reply) -> anyhow::Result<bool> {
        let (ours, theirs) = conn::stream_pair();
        let daemon = fake_daemon(theirs, answer);
        let taken = daemon_takes_link(ours);
        daemon.join().unwrap();
        taken
    }

    #[test]
    fn a_daemon_that_knows_take_link_is_handed_the_link() {
        let taken = asked(|id| Reply::ok(id, serde_json::json!({"send_descriptors": true})));
        assert!(taken.unwrap());
    }

    #[test]
    fn an_older_daemon_gets_a_relaying_bridge_and_a_refusal_is_an_error() {
        let older = asked(|id| {
            Reply::err(
                id,
                codes::UNKNOWN_KIND,
                "unknown request kind \"take_link\"",
            )
        });
        assert!(!older.unwrap(), "older: relay");
        let refused = asked(|id| {
            Reply::err(
                id,
                codes::BAD_REQUEST,
                "a link is handed over on the control socket only",
            )
        });
        let e = refused.unwrap_err();
        assert!(format!("{e:#}").contains("control socket only"), "{e:#}");
    }
}
