//! `hangar attach`: this terminal becomes one session's terminal.
//!
//! Raw mode in, bytes through unchanged (bracketed paste included), the
//! server's screen first and the live stream after. A detach key (default
//! `Ctrl-b d`) leaves with the terminal restored and the session running.
//!
//! On this machine the daemon takes the terminal itself (as tmux's server
//! does): it reads the keys and writes the output, and this process only
//! sends resizes and waits for the end. Elsewhere (another host, a daemon
//! that declines, stdin or stdout not the terminal) this process relays
//! the terminal's bytes over the connection.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use hangar_protocol::message as msg;

use crate::api;
use crate::conn::{Client, Incoming, Target};
use hangar_core::keys::{DetachFilter, DetachKey};

/// Modes a session may have switched on that must not leak into the shell.
pub(crate) const RESET_TERMINAL: &[u8] =
    b"\x1b[?1049l\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1l\x1b>\x1b[0m\x1b[?25h";

/// This terminal in raw mode until dropped; then cooked again, and with
/// `reset_modes` the session's modes switched off.
pub(crate) struct RawMode {
    reset_modes: bool,
}

impl RawMode {
    pub(crate) fn enable(reset_modes: bool) -> anyhow::Result<RawMode> {
        crossterm::terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        Ok(RawMode { reset_modes })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
        if self.reset_modes {
            let mut out = std::io::stdout();
            let _ = out.write_all(RESET_TERMINAL);
            let _ = out.flush();
        }
    }
}

pub fn attach(target: &Target, id: &str) -> anyhow::Result<ExitCode> {
    let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
    let offer_terminal = target.host.is_none() && stdin_and_stdout_are_one_terminal();
    let (mut client, reply) = open(target, id, (cols, rows), offer_terminal)?;
    let session = reply.id;
    let key = DetachKey::parse(&reply.detach_key);
    eprintln!(
        "[hangar] attached to {}; detach with {}\r",
        session.get(..8).unwrap_or(&session),
        key.describe()
    );
    // Raw before the terminal is handed over: the daemon writes the screen
    // the moment it has it.
    let raw = RawMode::enable(true)?;
    if reply.send_terminal && hand_over_terminal(&mut client)? {
        return attached_by_the_daemon(client, &session, (cols, rows), raw);
    }
    // The input thread's way to the daemon; None while a link to another
    // host is down, and then typing is dropped, never queued: a key sent
    // once is never sent again by a reconnect.
    let writer = Arc::new(Mutex::new(Some(client.writer()?)));
    let size = Arc::new(Mutex::new((cols, rows)));
    let done = Arc::new(AtomicBool::new(false));
    let detach_asked = Arc::new(AtomicBool::new(false));

    {
        let (writer, size, done, detach_asked) = (
            writer.clone(),
            size.clone(),
            done.clone(),
            detach_asked.clone(),
        );
        std::thread::spawn(move || {
            let send = |f: &mut dyn FnMut(&mut Client) -> anyhow::Result<()>| {
                let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(c) = w.as_mut()
                    && f(c).is_err()
                {
                    *w = None;
                }
            };
            let mut filter = DetachFilter::new(key);
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 4096];
            loop {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                // Bytes a read cut off wait the escape time for their rest.
                let wait = if filter.pending() {
                    hangar_core::keys::ESCAPE_TIME
                } else {
                    Duration::from_millis(100)
                };
                if !poll_stdin(wait) {
                    if filter.pending() {
                        let held = filter.flush();
                        send(&mut |c| c.send_data(&held));
                    }
                    if let Ok(now) = crossterm::terminal::size() {
                        let mut last = size.lock().unwrap_or_else(|e| e.into_inner());
                        if now != *last {
                            *last = now;
                            drop(last);
                            send(&mut |c| api::send_resize(c, now.0, now.1));
                        }
                    }
                    continue;
                }
                let n = match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => 0,
                    Ok(n) => n,
                };
                let (bytes, detach) = if n == 0 {
                    (Vec::new(), true)
                } else {
                    filter.feed(&buf[..n])
                };
                if !bytes.is_empty() {
                    send(&mut |c| c.send_data(&bytes));
                }
                if detach {
                    detach_asked.store(true, Ordering::Relaxed);
                    send(&mut api::send_detach);
                    return;
                }
            }
        });
    }

    // Straight to fd 1 (a second handle to it): `Stdout` is line-buffered,
    // which split every frame into two writes.
    let mut stdout: std::fs::File = {
        use std::os::fd::AsFd;
        std::io::stdout().as_fd().try_clone_to_owned()?.into()
    };
    let mut ended = None;
    loop {
        match client.read() {
            Ok(Incoming::Data(d)) => {
                stdout.write_all(&d)?;
                stdout.flush()?;
            }
            Ok(Incoming::Event(e)) if e["event"] == "exited" => {
                ended = Some(e["code"].as_i64().unwrap_or(-1));
                break;
            }
            Ok(Incoming::Event(_)) => {}
            Ok(Incoming::Reply(r)) => {
                if r.body.get("detached").is_some() {
                    break;
                }
            }
            Err(e) => {
                let Some(host) = target.host.as_deref() else {
                    ended = Some(-1);
                    break;
                };
                // Another machine's session runs on whatever happens to
                // the link: say so, and attach again when the host answers.
                *writer.lock().unwrap_or_else(|e| e.into_inner()) = None;
                eprint!(
                    "\r\n[hangar] lost the connection to host {:?} ({}); the session keeps running there; reconnecting ({} leaves)\r\n",
                    host.name,
                    hangar_core::display::name(&format!("{e:#}")),
                    key.describe()
                );
                match reconnect(target, &session, &size, &detach_asked) {
                    Reconnect::Attached(c) => {
                        *writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.writer()?);
                        client = c;
                        eprint!("[hangar] reconnected to host {:?}\r\n", host.name);
                        if detach_asked.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    Reconnect::Detached => break,
                    Reconnect::Refused(reason) => {
                        done.store(true, Ordering::Relaxed);
                        drop(raw);
                        anyhow::bail!("host {:?} refused to attach again: {reason}", host.name);
                    }
                }
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    drop(raw);
    say_how_it_ended(&session, ended);
    Ok(ExitCode::SUCCESS)
}

/// Connect and attach: the connection and the daemon's reply.
fn open(
    target: &Target,
    id: &str,
    (cols, rows): (u16, u16),
    terminal: bool,
) -> anyhow::Result<(Client, hangar_protocol::reply::Attached)> {
    let mut client = target.connect()?;
    let reply = api::attach(
        &mut client,
        msg::Attach {
            session: id.to_owned(),
            cols,
            rows,
            history: None,
            history_events: false,
            terminal,
        },
    )?;
    Ok((client, reply))
}

/// Whether fd 0 and fd 1 are the same terminal (the one the daemon may
/// take); a redirected stdin or stdout keeps the relay.
fn stdin_and_stdout_are_one_terminal() -> bool {
    use std::io::IsTerminal;
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let terminal = |fd: std::os::fd::BorrowedFd<'_>| {
        if !fd.is_terminal() {
            return None;
        }
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        file.metadata().ok().map(|m| m.rdev())
    };
    let input = terminal(std::io::stdin().as_fd());
    input.is_some() && input == terminal(std::io::stdout().as_fd())
}

/// Send the daemon this terminal and wait for its word: `true` when it
/// took it, `false` when this process is to relay after all.
fn hand_over_terminal(client: &mut Client) -> anyhow::Result<bool> {
    use std::os::fd::AsRawFd;
    client.send_descriptors(&[std::io::stdin().as_raw_fd()])?;
    loop {
        match client.read()? {
            Incoming::Event(e) if e["event"] == "terminal" => {
                return Ok(e["taken"] == true);
            }
            Incoming::Data(d) => {
                // Not sent before the daemon's word; written if ever.
                let mut out = std::io::stdout();
                out.write_all(&d)?;
                out.flush()?;
            }
            Incoming::Event(_) | Incoming::Reply(_) => {}
        }
    }
}

/// The daemon reads and writes the terminal: this process passes on size
/// changes, asks to detach when the daemon saw the detach key, and waits
/// for the detach or the session's exit.
fn attached_by_the_daemon(
    client: Client,
    session: &str,
    (cols, rows): (u16, u16),
    raw: RawMode,
) -> anyhow::Result<ExitCode> {
    let writer = Arc::new(Mutex::new(client.writer()?));
    let done = Arc::new(AtomicBool::new(false));
    {
        let (writer, done) = (writer.clone(), done.clone());
        std::thread::spawn(move || {
            let mut last = (cols, rows);
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if let Ok(now) = crossterm::terminal::size()
                    && now != last
                {
                    last = now;
                    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                    if api::send_resize(&mut w, now.0, now.1).is_err() {
                        return;
                    }
                }
            }
        });
    }
    let mut client = client;
    let ended = loop {
        match client.read() {
            Ok(Incoming::Event(e)) if e["event"] == "exited" => {
                break Some(e["code"].as_i64().unwrap_or(-1));
            }
            Ok(Incoming::Event(e)) if e["event"] == "detach_asked" => {
                let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                if api::send_detach(&mut w).is_err() {
                    break None;
                }
            }
            Ok(Incoming::Reply(r)) if r.body.get("detached").is_some() => break None,
            Ok(Incoming::Data(d)) => {
                let mut out = std::io::stdout();
                out.write_all(&d)?;
                out.flush()?;
            }
            Ok(_) => {}
            // The daemon is gone: so is whatever it was writing.
            Err(_) => break Some(-1),
        }
    };
    done.store(true, Ordering::Relaxed);
    drop(raw);
    say_how_it_ended(session, ended);
    Ok(ExitCode::SUCCESS)
}

/// The last line: the session exited, or it keeps running.
fn say_how_it_ended(session: &str, ended: Option<i64>) {
    let short = session.get(..8).unwrap_or(session);
    match ended {
        Some(code) => eprintln!("\r\n[hangar] session {short} exited (code {code})"),
        None => eprintln!("\r\n[hangar] detached from {short}; it keeps running"),
    }
}

enum Reconnect {
    Attached(Client),
    Detached,
    /// The host answered and said no (the session is gone).
    Refused(String),
}

/// Try again, less and less often, until the host answers or the person
/// detaches.
fn reconnect(
    target: &Target,
    session: &str,
    size: &Mutex<(u16, u16)>,
    detach_asked: &AtomicBool,
) -> Reconnect {
    let mut pause = Duration::from_millis(200);
    loop {
        let wait_until = std::time::Instant::now() + pause;
        while std::time::Instant::now() < wait_until {
            if detach_asked.load(Ordering::Relaxed) {
                return Reconnect::Detached;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        pause = (pause * 2).min(Duration::from_secs(5));
        let now = *size.lock().unwrap_or_else(|e| e.into_inner());
        match open(target, session, now, false) {
            Ok((c, _)) => return Reconnect::Attached(c),
            Err(e) => {
                if let Some(d) = e.downcast_ref::<crate::conn::DaemonError>() {
                    return Reconnect::Refused(d.0.message.clone());
                }
            }
        }
    }
}

pub(crate) fn poll_stdin(timeout: Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    poll(&mut fds, timeout).is_ok_and(|n| n > 0)
}
