//! One session's process in a pseudo-terminal, and its server-side screen.
//!
//! Starting the process is the [`Pty`]'s (the OS's: `os::RealOs` opens a
//! real PTY, `os::FakeOs` runs a scripted program in memory; a container
//! engine could start it inside a container): it hands back a [`Spawned`],
//! the process's output and input, its signals and its exit. Everything
//! above that is [`LiveProcess`]'s, whatever started it.
//!
//! The child is started as the leader of a new session (so of a new process
//! group) with the PTY as its controlling terminal. Every byte it prints is
//! fed into its terminal model (`hangar_terminal`: the screen, the modes, a
//! history capped in bytes) and broadcast to attached clients; both happen
//! under the screen lock, so a client that snapshots the screen and
//! subscribes in one step never misses or repeats a byte. The
//! parent's copy of the PTY's slave side is closed right after the spawn: a
//! leaked slave fd would keep the reader from ever seeing EOF.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, watch};

/// Output chunks buffered per attached client before it is resynced from the
/// screen instead. With reads of at most `READ_CHUNK` bytes, a client that
/// stops reading costs the daemon at most 2 MiB per session.
const OUTPUT_CHANNEL: usize = 512;
/// A read from a PTY's master side returns at most 4095 bytes on Linux (the
/// line discipline's buffer), whatever the buffer offered: a bigger one only
/// cost every live session memory.
const READ_CHUNK: usize = 4 * 1024;

/// `[terminal]`: what each session's terminal keeps.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalConfig {
    /// History kept per session, in bytes (the oldest lines go first);
    /// it is also what a hibernated session keeps with its last screen.
    #[serde(default = "default_history_bytes")]
    pub history_bytes: usize,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        TerminalConfig {
            history_bytes: default_history_bytes(),
        }
    }
}

fn default_history_bytes() -> usize {
    hangar_terminal::DEFAULT_HISTORY_BYTES
}

impl TerminalConfig {
    /// The terminal model's own configuration.
    pub fn model(&self) -> hangar_terminal::Config {
        hangar_terminal::Config {
            history_bytes: self.history_bytes,
        }
    }
}

/// How long a write into a session's terminal may make no progress before
/// it fails (see [`LiveProcess::write`]).
pub const WRITE_STALL: std::time::Duration = std::time::Duration::from_secs(10);
/// How long an exit waits for the output the child printed before it to be
/// read from the terminal.
const OUTPUT_DRAIN: std::time::Duration = std::time::Duration::from_millis(500);

fn stalled() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "the program has not read its input for {} s (is it stopped or hung?)",
            WRITE_STALL.as_secs()
        ),
    )
}

pub const DEFAULT_ROWS: u16 = 40;
pub const DEFAULT_COLS: u16 = 120;

/// How a process ended: exit code, or 128 + signal number.
pub type ExitCode = i32;

pub struct SpawnRequest {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// A sandboxed launch (issue 32): `program` is bwrap. The environment
    /// starts empty (the launch names every variable it passes), and bwrap
    /// starts with the stop signals blocked: it would die of hangar's
    /// SIGTERM at once and take the agent down with it, while the relay
    /// inside unblocks them and lets the agent end in its own time.
    pub sandboxed: bool,
    pub rows: u16,
    pub cols: u16,
    /// `[terminal]`: the history kept.
    pub terminal: hangar_terminal::Config,
    /// The saved screen and history of the session being woken: kept as
    /// history above what the new process prints.
    pub resume: Option<Vec<u8>>,
}

/// Starting a program in a terminal of its own. The one seam between the
/// daemon and whatever runs a session's program: a real PTY, a scripted
/// fake in tests, or (for another kind of agent) a container's terminal.
pub trait Pty: Send + Sync {
    /// Start `req.program` with `req.args`, `req.env` and `req.cwd` as the
    /// leader of a new process group whose controlling terminal is
    /// `req.rows` x `req.cols`. `req.terminal` and `req.resume` are the
    /// daemon's own (its screen), not the program's.
    fn spawn_pty(&self, req: &SpawnRequest) -> std::io::Result<Spawned>;
}

/// What a [`Pty`] hands back for a started program.
pub struct Spawned {
    /// The leader's pid, which is also its process group's id.
    pub pid: u32,
    /// Everything the program prints on its terminal; ends (a read of 0 or
    /// an error) once no process holds the terminal any more.
    pub output: Box<dyn AsyncRead + Send + Unpin>,
    /// What is typed into the terminal, and its size.
    pub input: Box<dyn TerminalInput>,
    /// Send a signal to the program's whole process group; `false` when the
    /// group is gone. Signal 0 only asks whether it still exists.
    pub signal: Box<dyn Fn(i32) -> bool + Send + Sync>,
    /// Resolves once the leader has exited and been reaped, with its code.
    pub exit: Pin<Box<dyn Future<Output = ExitCode> + Send>>,
}

/// The writing side of a program's terminal.
pub trait TerminalInput: AsyncWrite + Send + Sync + Unpin {
    /// Set the terminal's size (the program gets SIGWINCH).
    fn resize(&self, rows: u16, cols: u16) -> std::io::Result<()>;
}

impl TerminalInput for pty_process::OwnedWritePty {
    fn resize(&self, rows: u16, cols: u16) -> std::io::Result<()> {
        pty_process::OwnedWritePty::resize(self, pty_process::Size::new(rows, cols))
            .map_err(std::io::Error::other)
    }
}

/// A real PTY (the `pty-process` crate): the child is the leader of a new
/// session, the parent keeps no copy of the terminal's slave side, and tokio
/// reaps the child through a pidfd (SIGCHLD where there is none), so the
/// exit is the kernel's word, never a poll. Signals go to the group through
/// `signal_group`.
///
/// A sandboxed launch (`req.sandboxed`) starts from an empty environment
/// and with SIGTERM, SIGHUP, SIGINT and SIGQUIT blocked (see
/// [`SpawnRequest::sandboxed`]): blocking them between fork and exec needs
/// `pre_exec`, the one unsafe call of this crate.
#[allow(unsafe_code)]
pub fn spawn_real_pty(
    req: &SpawnRequest,
    signal_group: impl Fn(u32, i32) -> bool + Send + Sync + 'static,
) -> std::io::Result<Spawned> {
    let (pty, pts) = pty_process::open().map_err(std::io::Error::other)?;
    pty.resize(pty_process::Size::new(req.rows.max(1), req.cols.max(1)))
        .map_err(std::io::Error::other)?;
    let mut cmd = pty_process::Command::new(&req.program)
        .args(&req.args)
        .current_dir(&req.cwd);
    if req.sandboxed {
        use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
        cmd = cmd.env_clear();
        let mut stop = SigSet::empty();
        for sig in [
            Signal::SIGTERM,
            Signal::SIGHUP,
            Signal::SIGINT,
            Signal::SIGQUIT,
        ] {
            stop.add(sig);
        }
        // SAFETY: the closure runs in the child between fork and exec, where
        // only async-signal-safe calls are allowed: it calls sigprocmask (a
        // thin wrapper over the system call) on a set built before the fork
        // and copied into the closure; it allocates nothing and takes no
        // lock.
        cmd = unsafe {
            cmd.pre_exec(move || {
                sigprocmask(SigmaskHow::SIG_BLOCK, Some(&stop), None).map_err(std::io::Error::from)
            })
        };
    }
    for (k, v) in &req.env {
        cmd = cmd.env(k, v);
    }
    // `pts` is moved in and dropped by spawn: the parent keeps no slave fd.
    let mut child = cmd.spawn(pts).map_err(std::io::Error::other)?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("child exited before its pid was known"))?;
    let (reader, writer) = pty.into_split();
    Ok(Spawned {
        pid,
        output: Box::new(reader),
        input: Box::new(writer),
        signal: Box::new(move |signal| signal_group(pid, signal)),
        exit: Box::pin(async move {
            match child.wait().await {
                Ok(status) => exit_code(status),
                Err(_) => -1,
            }
        }),
    })
}

/// A session's terminal model and the broadcast of its output to attached
/// clients, under one lock.
struct Screen {
    terminal: hangar_terminal::Terminal,
    /// Made when the first client subscribes and dropped when the output
    /// finds no client left: its slots (`OUTPUT_CHANNEL` of them, allocated
    /// at once) cost an unwatched session 32 KiB, and each read a copy.
    clients: Option<broadcast::Sender<Bytes>>,
}

pub struct LiveProcess {
    pub pid: u32,
    screen: Mutex<Screen>,
    writer: tokio::sync::Mutex<Box<dyn TerminalInput>>,
    /// Signals the process group (see [`Spawned::signal`]).
    signal: Box<dyn Fn(i32) -> bool + Send + Sync>,
    /// Held by one `send` from its text to its Enter: without it, two clients
    /// sending to one session at once typed `ab` then two Enters.
    typing: tokio::sync::Mutex<()>,
    /// `true` once the child printed anything.
    first_output: watch::Sender<bool>,
    /// Bumped on every read of output: what wakes a session's activity and
    /// identity watchers, so an idle session (no output) costs no look.
    output_seen: watch::Sender<u64>,
    /// `Some` once the child has exited and been reaped.
    exit: watch::Sender<Option<ExitCode>>,
    /// `true` once the terminal's reader has seen its end.
    output_ended: watch::Sender<bool>,
}

impl LiveProcess {
    /// Start the program through `pty`. The returned process is already
    /// being read from and waited for.
    pub fn spawn<P: Pty + ?Sized>(pty: &P, req: SpawnRequest) -> std::io::Result<Arc<LiveProcess>> {
        let Spawned {
            pid,
            output: reader,
            input: writer,
            signal,
            exit: exited,
        } = pty.spawn_pty(&req)?;
        let (first_output, _) = watch::channel(false);
        let (exit, _) = watch::channel(None);
        let (output_ended, _) = watch::channel(false);
        let (rows, cols) = (
            size_or(req.rows, DEFAULT_ROWS),
            size_or(req.cols, DEFAULT_COLS),
        );
        let parser = match &req.resume {
            Some(saved) => hangar_terminal::Terminal::resume(saved, rows, cols, req.terminal),
            None => hangar_terminal::Terminal::new(rows, cols, req.terminal),
        };
        let live = Arc::new(LiveProcess {
            pid,
            screen: Mutex::new(Screen {
                terminal: parser,
                clients: None,
            }),
            writer: tokio::sync::Mutex::new(writer),
            signal,
            typing: tokio::sync::Mutex::new(()),
            first_output,
            output_seen: watch::channel(0).0,
            exit,
            output_ended,
        });
        tokio::spawn(read_output(live.clone(), reader));
        let waiter = live.clone();
        tokio::spawn(async move {
            let code = exited.await;
            // What the child printed just before exiting may still be in the
            // terminal's buffer: without this wait, a failed start's reason
            // sometimes lacked the program's own last line ("Session not
            // found"). Bounded, because a grandchild may keep the terminal open.
            let mut ended = waiter.output_ended.subscribe();
            let _ = tokio::time::timeout(OUTPUT_DRAIN, ended.wait_for(|e| *e)).await;
            waiter.exit.send_replace(Some(code));
        });
        Ok(live)
    }

    pub fn exited(&self) -> Option<ExitCode> {
        *self.exit.borrow()
    }

    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitCode>> {
        self.exit.subscribe()
    }

    pub fn first_output_watch(&self) -> watch::Receiver<bool> {
        self.first_output.subscribe()
    }

    /// Changes whenever the child printed something.
    pub fn output_watch(&self) -> watch::Receiver<u64> {
        self.output_seen.subscribe()
    }

    /// The process group (the child is a session leader: pgid == pid).
    pub fn pgid(&self) -> u32 {
        self.pid
    }

    /// Send `signal` to the whole process group; `false` once it is gone.
    pub fn signal(&self, signal: i32) -> bool {
        (self.signal)(signal)
    }

    /// Exclusive typing: hold the guard across a text and its Enter.
    pub async fn typing(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.typing.lock().await
    }

    /// Types `bytes` into the terminal. Fails when the program has not read
    /// its input for [`WRITE_STALL`] (the terminal's input buffer stays full):
    /// an agent stopped with SIGSTOP, or wedged, must not hold the request,
    /// and with it the session's typing and writer locks, forever.
    pub async fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = tokio::time::timeout(WRITE_STALL, self.writer.lock())
            .await
            .map_err(|_| stalled())?;
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = tokio::time::timeout(WRITE_STALL, w.write(rest))
                .await
                .map_err(|_| stalled())??;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            rest = &rest[n..];
        }
        tokio::time::timeout(WRITE_STALL, w.flush())
            .await
            .map_err(|_| stalled())?
    }

    pub async fn resize(&self, rows: u16, cols: u16) -> std::io::Result<()> {
        let (rows, cols) = (rows.max(1), cols.max(1));
        {
            let mut screen = self.lock_screen();
            let end = screen.terminal.history_end();
            screen.terminal.resize(rows, cols);
            // The rewrap renumbered history: an empty chunk makes each
            // client's forwarder say where it ends now (its `history`
            // event), even if the program prints nothing after the resize.
            if screen.terminal.history_end() != end
                && let Some(clients) = &screen.clients
            {
                let _ = clients.send(Bytes::new());
            }
        }
        let w = tokio::time::timeout(WRITE_STALL, self.writer.lock())
            .await
            .map_err(|_| stalled())?;
        w.resize(rows, cols)
    }

    fn lock_screen(&self) -> std::sync::MutexGuard<'_, Screen> {
        // A panic while holding the lock leaves a parser that is still a
        // valid screen; keep using it rather than poisoning every client.
        self.screen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The screen as escape sequences that redraw it on a fresh terminal
    /// (contents, colours, every mode, title and cursor), after up to
    /// `history` lines of history for a client that keeps its own, and a
    /// receiver of every byte after it.
    /// Also the number of the history line just below the last one printed
    /// (what [`hangar_terminal::HistoryPage::end`] was at the redraw).
    pub fn snapshot_and_subscribe(
        &self,
        history: Option<usize>,
    ) -> (Vec<u8>, u64, broadcast::Receiver<Bytes>) {
        let mut screen = self.lock_screen();
        let rx = screen
            .clients
            .get_or_insert_with(|| broadcast::channel(OUTPUT_CHANNEL).0)
            .subscribe();
        let redraw = match history {
            Some(lines) => screen.terminal.redraw_with_history(lines),
            None => screen.terminal.redraw(),
        };
        (redraw, screen.terminal.history_end(), rx)
    }

    /// Run `take` (which takes what a client's receiver has queued) with the
    /// output stopped, and say where history ends after exactly that output:
    /// the PTY reader feeds the terminal and broadcasts under this same lock.
    pub fn take_with_history_end<T>(&self, take: impl FnOnce() -> T) -> (T, u64) {
        let screen = self.lock_screen();
        let taken = take();
        (taken, screen.terminal.history_end())
    }

    /// A page of history by line number ([`hangar_terminal::Terminal::history_page`]).
    pub fn history_page(&self, before: Option<u64>, lines: usize) -> hangar_terminal::HistoryPage {
        self.lock_screen().terminal.history_page(before, lines)
    }

    /// The visible screen as plain text.
    pub fn text(&self) -> String {
        self.lock_screen().terminal.screen_text()
    }

    /// The last `n` lines of history as plain text, oldest first.
    pub fn scrollback(&self, n: usize) -> Vec<String> {
        self.lock_screen().terminal.scrollback(n)
    }

    /// The screen, its history and modes in the saved form, for keeping as
    /// a hibernated session's last screen.
    pub fn formatted(&self) -> Vec<u8> {
        self.lock_screen().terminal.save()
    }

    pub fn bracketed_paste(&self) -> bool {
        self.lock_screen().terminal.bracketed_paste()
    }

    /// The last non-empty line of the screen, for failure reasons.
    pub fn last_line(&self) -> Option<String> {
        self.lock_screen().terminal.last_line()
    }
}

fn size_or(v: u16, default: u16) -> u16 {
    if v == 0 { default } else { v }
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

async fn read_output(live: Arc<LiveProcess>, mut reader: Box<dyn AsyncRead + Send + Unpin>) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => {
                live.output_ended.send_replace(true);
                break;
            }
            Ok(n) => {
                {
                    let mut screen = live.lock_screen();
                    let screen = &mut *screen;
                    screen.terminal.feed(&buf[..n]);
                    if let Some(clients) = &screen.clients {
                        if clients.receiver_count() == 0 {
                            // The last client went away.
                            screen.clients = None;
                        } else {
                            // A client may leave before this send: then the
                            // error only says nobody got it.
                            let _ = clients.send(Bytes::copy_from_slice(&buf[..n]));
                        }
                    }
                }
                if !*live.first_output.borrow() {
                    live.first_output.send_replace(true);
                }
                live.output_seen.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }
}
