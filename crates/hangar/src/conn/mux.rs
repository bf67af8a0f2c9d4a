//! One SSH connection per host, shared by every connection this process
//! makes to that host's daemon: the TUI's control connection, each pane's
//! attach and history pages, the host probes, a command's requests.
//!
//! The link is `ssh ... hangar bridge --mux`; each connection is a channel
//! on it (`hangar_protocol::mux`). To its caller a channel is a Unix stream
//! like the local socket (our end of a socketpair), so `Client`, attach and
//! the TUI are unchanged: the link's reader hands each channel's bytes to
//! that stream, and a `Client` writes its frames onto the link itself
//! (`MuxLink::write`: a key waits for no relay thread); a thread per
//! channel relays what anything else writes to the stream, and its close. Without this, a TUI showing nine panes of one host opened
//! eleven SSH connections, each logging in again, and sshd's `MaxStartups`
//! (10 by default) refused some of them when they started together.
//!
//! A link lives while some connection uses it; when ssh ends (a dropped
//! network, a killed process) every channel on it ends, their owners
//! reconnect as before, and the first of them starts a new link.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use anyhow::Context;
use hangar_protocol::frame::{Decoder, MAX_CLIENT_FRAME};
use hangar_protocol::mux::{MAX_CHUNK, MuxFrame};

use super::link::{Host, Link, STDERR_KEPT, ssh_command};

/// Chunks a channel may have waiting for its reader before it is cut: a
/// connection whose owner stopped reading (up to 16 MiB behind) must not
/// stall the other panes sharing the link.
const CHANNEL_BACKLOG: usize = 256;

/// The links of this process, one per ssh command line (a host's name and
/// settings make one); a dead one is replaced on the next connect. Not a
/// target: which host a connection goes to is still its caller's.
static LINKS: Mutex<Vec<(LinkKey, Weak<MuxLink>)>> = Mutex::new(Vec::new());

/// What tells two links apart: the ssh arguments.
type LinkKey = Vec<String>;

/// One `ssh ... hangar bridge --mux` and its channels.
pub struct MuxLink {
    shared: Arc<Shared>,
    link: Mutex<Link>,
}

/// What the link's threads share.
struct Shared {
    /// Our end of ssh's stdin and stdout; frames are written whole under
    /// the lock.
    to_ssh: Mutex<UnixStream>,
    /// Each open channel's way to its owner's stream.
    channels: Mutex<HashMap<u32, ChannelOut>>,
    /// Why the bridge closed a channel, when it said (its daemon could not
    /// be reached).
    reasons: Mutex<HashMap<u32, String>>,
    next_channel: AtomicU32,
    /// ssh has ended: no channel can be opened on this link any more.
    dead: AtomicBool,
}

impl Shared {
    fn send(&self, frame: &MuxFrame) -> std::io::Result<()> {
        self.write_frames(&frame.encode())
    }

    /// Whole frames onto the link, under its lock (frames of two channels
    /// never interleave).
    fn write_frames(&self, frames: &[u8]) -> std::io::Result<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        let mut to_ssh = self.to_ssh.lock().unwrap_or_else(|e| e.into_inner());
        to_ssh.write_all(frames)
    }

    fn close_all(&self) {
        self.dead.store(true, Ordering::SeqCst);
        // Dropping the queues ends each channel's writer, which closes the
        // stream its owner reads: every connection sees the link go.
        self.channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// The bridge's bytes for one channel, on their way to its owner: written
/// straight to the owner's stream when it takes them at once (a key's echo
/// waits for no thread), else queued for the channel's writer thread, so an
/// owner that stopped reading never stalls the link.
struct ChannelOut {
    direct: UnixStream,
    queue: SyncSender<Vec<u8>>,
    /// Chunks queued and not yet written: while any is, later bytes queue
    /// behind them (order is kept).
    queued: Arc<AtomicUsize>,
}

impl ChannelOut {
    /// `false`: the channel must end (its owner is gone or fell too far
    /// behind).
    fn deliver(&self, bytes: Vec<u8>) -> bool {
        let rest = if self.queued.load(Ordering::SeqCst) == 0 {
            use nix::sys::socket::{MsgFlags, send};
            use std::os::fd::AsRawFd;
            match send(self.direct.as_raw_fd(), &bytes, MsgFlags::MSG_DONTWAIT) {
                Ok(n) if n == bytes.len() => return true,
                Ok(n) => bytes[n..].to_vec(),
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => bytes,
                Err(_) => return false,
            }
        } else {
            bytes
        };
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.queue.try_send(rest).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }
}

impl MuxLink {
    /// Whether ssh has ended under this link.
    pub fn is_dead(&self) -> bool {
        self.shared.dead.load(Ordering::SeqCst)
    }

    /// What went wrong for `channel`: the bridge's reason when it gave one,
    /// else what ssh printed once it has exited (waiting up to `wait`) and
    /// its exit code.
    pub(crate) fn failure(&self, channel: u32, wait: Duration) -> (String, Option<i32>) {
        let reason = self
            .shared
            .reasons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&channel)
            .cloned();
        if let Some(reason) = reason {
            return (reason, None);
        }
        self.link
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failure(wait)
    }

    /// Bytes of `channel`'s connection, onto the link from the caller's
    /// own thread (in frames of at most `MAX_CHUNK`). What a connection's
    /// owner writes to its stream instead is relayed by the channel's
    /// thread; one connection uses one of the two ways (`Client` this one),
    /// so its bytes stay in order.
    pub fn write(&self, channel: u32, bytes: &[u8]) -> std::io::Result<()> {
        // A channel the bridge closed (or that was cut) takes no more: its
        // owner hears of it as it would from a closed socket.
        let open = self
            .shared
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&channel);
        if !open {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        let mut frames = Vec::with_capacity(bytes.len() + 16);
        for chunk in bytes.chunks(MAX_CHUNK) {
            MuxFrame::Data(channel, chunk.to_vec()).encode_into(&mut frames);
        }
        self.shared.write_frames(&frames)
    }

    /// A new channel: a stream to the host's daemon (not greeted yet).
    pub(super) fn open_channel(&self) -> anyhow::Result<(u32, UnixStream)> {
        let (theirs, ours) = UnixStream::pair().context("cannot make a socketpair")?;
        let channel = self.shared.next_channel.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(CHANNEL_BACKLOG);
        let queued = Arc::new(AtomicUsize::new(0));
        self.shared
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                channel,
                ChannelOut {
                    direct: ours.try_clone()?,
                    queue: tx,
                    queued: queued.clone(),
                },
            );
        if self.shared.send(&MuxFrame::Open(channel)).is_err() {
            // ssh ended as this channel was opened (a host going down, two
            // connects racing on its dying link): the channel ends as every
            // other one on the link did, so its owner's handshake fails the
            // same way and says why with ssh's own words
            // (`ssh::handshake_error`), not "the link is gone".
            self.shared
                .channels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&channel);
        }
        // Link to owner: what the bridge sent for this channel.
        let mut writer = ours.try_clone()?;
        std::thread::spawn(move || {
            for chunk in rx {
                if writer.write_all(&chunk).is_err() {
                    break;
                }
                queued.fetch_sub(1, Ordering::SeqCst);
            }
            let _ = writer.shutdown(Shutdown::Both);
        });
        // Owner to link: what the connection's owner writes.
        let shared = self.shared.clone();
        let mut reader = ours;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; MAX_CHUNK];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if shared
                            .send(&MuxFrame::Data(channel, buf[..n].to_vec()))
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
            // The owner closed its connection: so does the daemon's side.
            shared
                .channels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&channel);
            let _ = shared.send(&MuxFrame::Close(channel, String::new()));
        });
        Ok((channel, theirs))
    }
}

impl Drop for MuxLink {
    fn drop(&mut self) {
        // The last connection is gone: ssh sees the end of its input and
        // exits (the `Link` reaps it), and the reader thread ends.
        if let Ok(s) = self.shared.to_ssh.lock() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// A connection to `host`'s daemon over this process's link to it (started
/// when there is none or the last one died): the stream, the link, and the
/// channel's number.
pub fn connect(host: &Host) -> anyhow::Result<(UnixStream, Arc<MuxLink>, u32)> {
    let link = {
        let mut links = LINKS.lock().unwrap_or_else(|e| e.into_inner());
        links.retain(|(_, weak)| weak.upgrade().is_some_and(|l| !l.is_dead()));
        let found = links
            .iter()
            .find(|(key, _)| *key == link_key(host))
            .and_then(|(_, weak)| weak.upgrade());
        match found {
            Some(link) => link,
            None => {
                // Started under the lock: two connections made at once
                // share one ssh.
                let link = start(host)?;
                links.push((link_key(host), Arc::downgrade(&link)));
                link
            }
        }
    };
    let (channel, stream) = link.open_channel()?;
    Ok((stream, link, channel))
}

fn link_key(host: &Host) -> LinkKey {
    let cmd = ssh_command(host, &[]);
    std::iter::once(host.name.clone())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect()
}

/// Start `ssh ... hangar bridge --mux` and the thread that hands what it
/// sends to each channel.
fn start(host: &Host) -> anyhow::Result<Arc<MuxLink>> {
    let (ours, theirs) = UnixStream::pair().context("cannot make a socketpair for ssh")?;
    let theirs_out = theirs.try_clone()?;
    let mut cmd = ssh_command(host, &["bridge".to_owned(), "--mux".to_owned()]);
    cmd.stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .context("cannot run `ssh`: install OpenSSH's client (the `ssh` on PATH is used)")?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = child.stderr.take() {
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                if let Ok(mut k) = kept.lock() {
                    let room = STDERR_KEPT.saturating_sub(k.len());
                    k.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        });
    }
    MuxLink::over(
        ours,
        Link {
            child: Some(child),
            stderr,
        },
    )
}

impl MuxLink {
    /// The link on `ours`, our end of the stream `link`'s ssh reads and
    /// writes, with the thread that hands what comes back to each channel.
    pub(super) fn over(ours: UnixStream, link: Link) -> anyhow::Result<Arc<MuxLink>> {
        let from_ssh = ours.try_clone()?;
        let shared = Arc::new(Shared {
            to_ssh: Mutex::new(ours),
            channels: Mutex::new(HashMap::new()),
            reasons: Mutex::new(HashMap::new()),
            next_channel: AtomicU32::new(1),
            dead: AtomicBool::new(false),
        });
        let demux = shared.clone();
        std::thread::spawn(move || read_link(from_ssh, &demux));
        Ok(Arc::new(MuxLink {
            shared,
            link: Mutex::new(link),
        }))
    }
}

/// Hand each frame from the bridge to its channel until ssh ends.
fn read_link(mut from_ssh: UnixStream, shared: &Shared) {
    let mut decoder = Decoder::new(MAX_CLIENT_FRAME);
    let mut buf = vec![0u8; 128 * 1024];
    'read: loop {
        let n = match from_ssh.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
        loop {
            let (tag, payload) = match decoder.next_raw() {
                Ok(Some(raw)) => raw,
                Ok(None) => break,
                // A stream out of step cannot be trusted for any channel.
                Err(_) => break 'read,
            };
            match MuxFrame::decode(tag, &payload) {
                Some(MuxFrame::Data(channel, bytes)) => {
                    let mut channels = shared.channels.lock().unwrap_or_else(|e| e.into_inner());
                    // Its owner stopped reading (the queue is full) or is
                    // gone: either way the channel ends.
                    let cut = channels
                        .get(&channel)
                        .is_some_and(|out| !out.deliver(bytes));
                    if cut {
                        channels.remove(&channel);
                        drop(channels);
                        let _ = shared.send(&MuxFrame::Close(channel, String::new()));
                    }
                }
                Some(MuxFrame::Close(channel, why)) => {
                    if !why.is_empty() {
                        shared
                            .reasons
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(channel, why);
                    }
                    shared
                        .channels
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&channel);
                }
                Some(MuxFrame::Ready(_) | MuxFrame::Open(_) | MuxFrame::Unknown(_)) => {}
                None => break 'read,
            }
        }
    }
    shared.close_all();
}
