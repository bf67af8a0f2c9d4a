//! `hangar attach`: this terminal becomes one session's terminal.
//!
//! Raw mode in, bytes through unchanged (bracketed paste included), the
//! server's screen first and the live stream after. A detach key (default
//! `Ctrl-b d`) leaves with the terminal restored and the session running.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use hangar_protocol::message as msg;

use crate::api;
use crate::conn::{Client, Incoming, Target};
use crate::keys::{DetachKey, PassThroughFilter};

/// Modes a session may have switched on that must not leak into the shell.
const RESET_TERMINAL: &[u8] =
    b"\x1b[?1049l\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1l\x1b>\x1b[0m\x1b[?25h";

/// Splits keyboard input into bytes for the session and a detach request.
/// The prefix is found by the TUI's pass-through filter, so a prefix byte
/// inside a bracketed paste is pasted text, never the start of a detach.
#[derive(Debug)]
pub struct InputFilter {
    key: DetachKey,
    prefix: PassThroughFilter,
    pending_prefix: bool,
}

impl InputFilter {
    pub fn new(key: DetachKey) -> Self {
        InputFilter {
            key,
            prefix: PassThroughFilter::new(key.prefix),
            pending_prefix: false,
        }
    }

    /// The start of a sequence a read cut off waits for its rest.
    pub fn pending(&self) -> bool {
        self.prefix.pending()
    }

    /// No byte came for the escape time: the bytes held go to the session.
    pub fn flush(&mut self) -> Vec<u8> {
        self.prefix.flush()
    }

    /// Returns the bytes to forward and whether the user asked to detach.
    pub fn feed(&mut self, input: &[u8]) -> (Vec<u8>, bool) {
        let mut out = Vec::with_capacity(input.len());
        let mut rest = input.to_vec();
        loop {
            if self.pending_prefix {
                let Some(&b) = rest.first() else {
                    return (out, false);
                };
                self.pending_prefix = false;
                if b == self.key.key {
                    return (out, true);
                }
                // Prefix twice sends one literal prefix; anything else passes
                // both (the key itself goes through the filter: it may start
                // a paste).
                out.push(self.key.prefix);
                if b == self.key.prefix {
                    rest.remove(0);
                }
            }
            let split = self.prefix.feed(&rest);
            out.extend_from_slice(&split.forward);
            match split.left {
                None => return (out, false),
                Some(after) => {
                    self.pending_prefix = true;
                    rest = after;
                }
            }
        }
    }
}

struct RawMode;

impl RawMode {
    fn enable() -> anyhow::Result<RawMode> {
        crossterm::terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
        let mut out = std::io::stdout();
        let _ = out.write_all(RESET_TERMINAL);
        let _ = out.flush();
    }
}

pub fn attach(target: &Target, id: &str) -> anyhow::Result<ExitCode> {
    let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
    let (mut client, reply) = open(target, id, (cols, rows))?;
    let session = reply.id;
    let key = DetachKey::parse(&reply.detach_key);
    eprintln!(
        "[hangar] attached to {}; detach with {}\r",
        session.get(..8).unwrap_or(&session),
        key.describe()
    );
    let raw = RawMode::enable()?;
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
            let mut filter = InputFilter::new(key);
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 4096];
            loop {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                // Bytes a read cut off wait the escape time for their rest.
                let wait = if filter.pending() {
                    crate::keys::ESCAPE_TIME
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
    match ended {
        Some(code) => eprintln!(
            "\r\n[hangar] session {} exited (code {code})",
            session.get(..8).unwrap_or(&session)
        ),
        None => eprintln!(
            "\r\n[hangar] detached from {}; it keeps running",
            session.get(..8).unwrap_or(&session)
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Connect and attach: the connection and the daemon's reply.
fn open(
    target: &Target,
    id: &str,
    (cols, rows): (u16, u16),
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
        },
    )?;
    Ok((client, reply))
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
        match open(target, session, now) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_detach_key_is_ctrl_b_d() {
        let k = DetachKey::parse("C-b d");
        assert_eq!(
            k,
            DetachKey {
                prefix: 0x02,
                key: b'd'
            }
        );
        assert_eq!(k.describe(), "Ctrl-b d");
    }

    #[test]
    fn prefix_then_detach_key_detaches_and_forwards_what_came_before() {
        let mut f = InputFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(f.feed(b"ls\x02d"), (b"ls".to_vec(), true));
    }

    #[test]
    fn a_prefix_split_across_reads_still_detaches() {
        let mut f = InputFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(f.feed(b"\x02"), (vec![], false));
        assert_eq!(f.feed(b"d"), (vec![], true));
    }

    #[test]
    fn a_prefix_inside_a_bracketed_paste_is_pasted_and_never_detaches() {
        let mut f = InputFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(
            f.feed(b"\x1b[200~a\x02d"),
            (b"\x1b[200~a\x02d".to_vec(), false)
        );
        // Still inside the paste in the next read; after it, keys count again.
        assert_eq!(
            f.feed(b"\x02d\x1b[201~\x02d"),
            (b"\x02d\x1b[201~".to_vec(), true)
        );
    }

    #[test]
    fn prefix_twice_sends_one_literal_prefix_and_other_keys_pass() {
        let mut f = InputFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(f.feed(b"\x02\x02x\x02c"), (b"\x02x\x02c".to_vec(), false));
    }
}
