//! Runs a program (a `hangar` command, mostly) inside a real
//! pseudo-terminal and keeps a vt100 picture of what it draws, for the TUI
//! and attach tests.
//!
//! Every fd is opened with O_CLOEXEC so a PTY of one test never leaks into
//! the processes another test starts in parallel; the child gets the slave
//! as its controlling terminal in a session of its own. `Drop` SIGKILLs the
//! child's process group and reaps it, even when the test failed.

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A named wait's deadline: the norm for every process-level test (2
/// shared cores may be busy building while a TUI draws).
pub const DEADLINE: Duration = crate::wait::DEADLINE;

pub struct PtyApp {
    master: File,
    child: Child,
    parser: Arc<Mutex<vt100::Parser>>,
    /// Every byte the program wrote, for failure messages and escape checks.
    raw: Arc<Mutex<Vec<u8>>>,
}

fn set_size(fd: i32, rows: u16, cols: u16) {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: a valid fd and a valid winsize for the duration of the call.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCSWINSZ, &ws) };
    assert_eq!(rc, 0, "TIOCSWINSZ failed");
}

/// Open a PTY pair, both ends close-on-exec.
fn open_pty(rows: u16, cols: u16) -> (File, OwnedFd) {
    // SAFETY: plain libc calls; every return value is checked before use.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0, "posix_openpt failed");
        let master_file = File::from_raw_fd(master);
        assert_eq!(libc::grantpt(master), 0, "grantpt failed");
        assert_eq!(libc::unlockpt(master), 0, "unlockpt failed");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(master, name.as_mut_ptr(), name.len()),
            0,
            "ptsname_r failed"
        );
        let slave = libc::open(
            CStr::from_ptr(name.as_ptr()).as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(slave >= 0, "cannot open the PTY slave");
        set_size(master, rows, cols);
        (master_file, OwnedFd::from_raw_fd(slave))
    }
}

impl PtyApp {
    /// Start `cmd` on a `rows` x `cols` terminal.
    pub fn spawn(mut cmd: Command, rows: u16, cols: u16) -> PtyApp {
        let (master, slave) = open_pty(rows, cols);
        cmd.stdin(Stdio::from(slave.try_clone().expect("dup slave")))
            .stdout(Stdio::from(slave.try_clone().expect("dup slave")))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl are async-signal-safe; fd 0 is the slave.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // `cmd` (holding the slave copies) is dropped right after the spawn.
        let child = cmd.spawn().expect("start the program in a PTY");
        drop(cmd);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(rows).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
            0,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().expect("dup master");
        let (p, r) = (parser.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        p.lock().unwrap().process(&buf[..n]);
                        r.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                }
            }
        });
        PtyApp {
            master,
            child,
            parser,
            raw,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn write(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).expect("write to the PTY");
        self.master.flush().expect("flush the PTY");
    }

    /// Type keys one write at a time, like a person (so a key is never
    /// mistaken for the tail of an escape sequence).
    pub fn keys(&mut self, keys: &[&[u8]]) {
        for k in keys {
            self.write(k);
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    pub fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// The screen as rows, trailing spaces kept off.
    pub fn rows(&self) -> Vec<String> {
        let p = self.parser.lock().unwrap();
        let (_, cols) = p.screen().size();
        p.screen()
            .rows(0, cols.get())
            .map(|r| r.trim_end().to_owned())
            .collect()
    }

    /// The screen's rows once they stayed the same for `quiet`: a frame
    /// still being written is never taken (a TUI's frame can reach the
    /// reader in pieces; a snapshot once caught the help overlay half
    /// drawn). A TUI writes on every tick even when nothing changed, so
    /// the screen is compared, not the bytes. Panics after the deadline
    /// if it never holds still.
    pub fn settled_rows(&self, quiet: Duration) -> Vec<String> {
        let deadline = Instant::now() + DEADLINE;
        let mut seen = self.rows();
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.rows();
            if now != seen {
                seen = now;
                since = Instant::now();
            } else if since.elapsed() >= quiet {
                return seen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never held still for {quiet:?}\n--- screen ---\n{}",
                seen.join("\n")
            );
        }
    }

    pub fn with_screen<T>(&self, f: impl FnOnce(&vt100::Screen) -> T) -> T {
        f(self.parser.lock().unwrap().screen())
    }

    pub fn raw_output(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Wait until the screen satisfies `pred`; panics with the screen after
    /// the deadline.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let text = self.text();
            if pred(&text) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {DEADLINE:?} waiting for: {what}\n--- screen ---\n{}",
                    self.rows().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn wait_text(&self, needle: &str) {
        self.wait_for(&format!("{needle:?} on screen"), |t| t.contains(needle));
    }

    /// Resize the outer terminal (the program gets SIGWINCH).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        set_size(self.master.as_raw_fd(), rows, cols);
        self.parser.lock().unwrap().screen_mut().set_size(
            std::num::NonZeroU16::new(rows).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
        );
        // SAFETY: signalling our own child's process group.
        unsafe {
            libc::kill(-self.pid(), libc::SIGWINCH);
        }
    }

    /// The terminal's line discipline flags (cooked mode has ICANON and ECHO).
    pub fn termios(&self) -> libc::termios {
        // SAFETY: a zeroed termios is a valid out-parameter for tcgetattr.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(self.master.as_raw_fd(), &mut t), 0);
            t
        }
    }

    pub fn is_cooked(&self) -> bool {
        let t = self.termios();
        t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO != 0
    }

    /// Wait for the program to exit and return its status code.
    pub fn wait_exit(&mut self) -> Option<i32> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the program") {
                return status.code();
            }
            if Instant::now() > deadline {
                panic!(
                    "the program did not exit\n--- screen ---\n{}",
                    self.rows().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PtyApp {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: the child leads its own session and process group.
            unsafe {
                libc::kill(-self.pid(), libc::SIGKILL);
            }
            let _ = self.child.wait();
        }
    }
}

/// Replace what changes from run to run (uuids, ages) so a screen can be
/// snapshotted.
pub fn mask(screen: &str) -> String {
    screen
        .lines()
        .map(|l| mask_ages(&mask_uuids(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn mask_uuids(line: &str) -> String {
    let b: Vec<char> = line.chars().collect();
    let shape = |i: usize| -> bool {
        const DASHES: [usize; 4] = [8, 13, 18, 23];
        if i + 36 > b.len() {
            return false;
        }
        (0..36).all(|k| {
            let c = b[i + k];
            if DASHES.contains(&k) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
    };
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if shape(i) {
            // Same width, so the borders after it stay in place.
            out.push_str("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
            i += 36;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// "12s", "3m": a space-separated token of digits and one unit letter,
/// right-aligned in a field; the field becomes "<t>".
fn mask_ages(line: &str) -> String {
    let b: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let start_ok = i == 0 || b[i - 1] == ' ';
        if start_ok && b[i].is_ascii_digit() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j < b.len()
                && matches!(b[j], 's' | 'm' | 'h' | 'd')
                && (j + 1 == b.len() || matches!(b[j + 1], ' ' | '│' | '║'))
            {
                // Ages are right-aligned in three columns: drop the padding
                // so "1m" and "12s" mask alike.
                for _ in 0..3usize.saturating_sub(j + 1 - i) {
                    if out.ends_with("  ") {
                        out.pop();
                    }
                }
                out.push_str("<t>");
                i = j + 1;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_in_the_pty_draws_on_the_screen_and_its_exit_is_seen() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "printf 'a\\033[2;3Hb'; read line; exit 7"]);
        let mut app = PtyApp::spawn(cmd, 5, 20);
        app.wait_text("b");
        assert_eq!(app.rows()[0], "a");
        assert_eq!(app.rows()[1], "  b");
        assert!(app.is_cooked());
        app.write(b"go\r");
        assert_eq!(app.wait_exit(), Some(7));
    }

    #[test]
    fn uuids_and_ages_are_masked() {
        assert_eq!(
            mask("3f2a0000-1111-4222-8333-444455556666  12s"),
            "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx  <t>"
        );
    }
}
