//! A configured host, the `ssh` commands that reach it, and the running
//! `ssh` under a link to it: kept with the link so its stderr can explain a
//! failure, and reaped when the link closes.

use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hangar_core::hosts::{self as rules, HostConfig};

/// A configured host, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub config: HostConfig,
}

/// `ssh` with the arguments that run the remote `hangar` with `args`.
pub(super) fn ssh_command(host: &Host, args: &[String]) -> Command {
    let home = std::env::var("HOME").ok();
    let mut cmd = Command::new("ssh");
    cmd.args(rules::ssh_args(&host.config, home.as_deref(), args));
    cmd
}

/// `ssh -t` running the remote `hangar attach SESSION` in this terminal
/// (stdio inherited: ssh owns the terminal), `on_connect` run here once it
/// has logged in.
pub fn attach_command(host: &Host, session: &str, on_connect: Option<&str>) -> Command {
    let home = std::env::var("HOME").ok();
    let mut cmd = Command::new("ssh");
    cmd.args(rules::ssh_attach_args(
        &host.config,
        home.as_deref(),
        session,
        on_connect,
    ));
    cmd
}

/// The running `ssh` of one connection and what it said on stderr.
pub struct Link {
    pub(super) child: Option<Child>,
    pub(super) stderr: Arc<Mutex<Vec<u8>>>,
}

/// The most of ssh's stderr kept for an error message.
pub(super) const STDERR_KEPT: usize = 16 * 1024;

impl Link {
    /// What ssh printed, once it has exited (waiting up to `wait`), and its
    /// exit code.
    pub(super) fn failure(&mut self, wait: Duration) -> (String, Option<i32>) {
        let deadline = Instant::now() + wait;
        let mut code = None;
        if let Some(child) = &mut self.child {
            loop {
                match child.try_wait() {
                    Ok(Some(status)) => {
                        code = status.code();
                        break;
                    }
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => break,
                }
            }
        }
        // The reader thread may still be copying ssh's last words.
        std::thread::sleep(Duration::from_millis(20));
        let text = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        (
            rules::ssh_failure_text(&String::from_utf8_lossy(&text)),
            code,
        )
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The socket is closed first (it is declared before the link), so
        // ssh sees the end of its input and exits; reap it off this thread.
        if let Some(mut child) = self.child.take() {
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = child.kill();
                let _ = child.wait();
            });
        }
    }
}
