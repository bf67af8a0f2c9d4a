//! Shared harness for the process-level tests: a temp home and project
//! directory, the agent started in its own process group, its stdout read in
//! the background, and waits on named conditions with a deadline.
//!
//! Every agent is killed (with its whole process group) when its handle drops,
//! so a failing test never leaves processes behind.

#![allow(dead_code)] // not every helper is used by the tests of the moment

use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// The deadline of a named wait (hangar-testkit's, the norm for every
/// process-level test).
pub const DEADLINE: Duration = hangar_testkit::DEADLINE;

/// Polls `check` until it yields a value; panics naming `what` after the deadline.
pub fn wait_until<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    hangar_testkit::wait_for(what, DEADLINE, check)
}

/// A temp directory holding `home/` and a project directory whose path has a
/// '.' in it (so the Claude slug rule is exercised).
pub struct Setup {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub cwd: PathBuf,
}

impl Setup {
    pub fn new() -> Setup {
        let dir = tempfile::tempdir().expect("temp dir");
        // The agent sees the kernel's cwd, with symlinks resolved.
        let root = fs::canonicalize(dir.path()).expect("canonical temp dir");
        let home = root.join("home");
        let cwd = root.join("proj.x").join("work");
        fs::create_dir_all(&home).expect("home");
        fs::create_dir_all(&cwd).expect("cwd");
        Setup {
            _dir: dir,
            home,
            cwd,
        }
    }

    /// The agent binary with a scrubbed environment: only PATH and HOME.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hangar-fake-agent"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .current_dir(&self.cwd)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    pub fn start(&self, args: &[&str]) -> Agent {
        Agent::spawn(self.command(args))
    }

    pub fn start_with(&self, args: &[&str], env: &[(&str, &str)]) -> Agent {
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied());
        Agent::spawn(cmd)
    }

    /// `$HOME/.claude/projects/<slug>/<id>.jsonl`, the slug computed independently.
    pub fn claude_transcript(&self, id: &str) -> PathBuf {
        let slug = slug_of(self.cwd.to_str().expect("utf-8 cwd"));
        self.home
            .join(".claude/projects")
            .join(slug)
            .join(format!("{id}.jsonl"))
    }

    /// Every file under `dir`, recursively, sorted.
    pub fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    stack.push(e.path());
                } else {
                    out.push(e.path());
                }
            }
        }
        out.sort();
        out
    }
}

/// A running agent.
pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    /// Set by each reader at the end of its pipe.
    drained: Vec<Arc<AtomicBool>>,
    reaped: bool,
}

/// What `from` says, read in the background, and whether its end was read.
fn drain(mut from: impl Read + Send + 'static) -> (Arc<Mutex<String>>, Arc<AtomicBool>) {
    let text = Arc::new(Mutex::new(String::new()));
    let done = Arc::new(AtomicBool::new(false));
    let (sink, end) = (Arc::clone(&text), Arc::clone(&done));
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        end.store(true, Ordering::SeqCst);
    });
    (text, done)
}

impl Agent {
    pub fn spawn(mut cmd: Command) -> Agent {
        let mut child = cmd.spawn().expect("start hangar-fake-agent");
        // Drop the command now: it holds the parent's copy of a PTY slave, if any.
        drop(cmd);
        let mut drained = Vec::new();
        let mut read = |pipe: Option<Box<dyn Read + Send>>| match pipe {
            Some(p) => {
                let (text, done) = drain(p);
                drained.push(done);
                text
            }
            None => Arc::default(),
        };
        let stdout = read(
            child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn Read + Send>),
        );
        let stderr = read(
            child
                .stderr
                .take()
                .map(|e| Box::new(e) as Box<dyn Read + Send>),
        );
        let stdin = child.stdin.take();
        Agent {
            child,
            stdin,
            stdout,
            stderr,
            drained,
            reaped: false,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("agent stdin is open");
        writeln!(stdin, "{line}").expect("write to agent");
        stdin.flush().expect("flush agent stdin");
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits until stdout contains `needle` and returns all stdout so far.
    pub fn wait_for_output(&self, needle: &str) -> String {
        wait_until(&format!("stdout contains {needle:?}"), || {
            let out = self.stdout();
            out.contains(needle).then_some(out)
        })
    }

    /// The banner line's session id, once the first prompt is up.
    pub fn banner_session_id(&self) -> String {
        let out = self.wait_for_output("> ");
        let banner = out.lines().next().expect("a banner line");
        banner
            .split_whitespace()
            .nth(3)
            .unwrap_or_else(|| panic!("no session id in banner {banner:?}"))
            .to_string()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain syscall on the pid of a child we have not reaped yet.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0, "kill({sig})");
    }

    pub fn try_status(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().expect("try_wait");
        self.reaped |= status.is_some();
        status
    }

    /// Waits for the agent's exit, then for the last of what it wrote: its
    /// pipes' readers may be behind the exit (a test that read stderr at
    /// once found it empty under load). A pipe a child of the agent keeps
    /// open is not waited on past the deadline.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let status = wait_until("the agent exits", || self.try_status());
        hangar_testkit::poll_for(DEADLINE, || {
            self.drained
                .iter()
                .all(|d| d.load(Ordering::SeqCst))
                .then_some(())
        });
        status
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.reaped {
            // The leader is not reaped, so its pid still names our group:
            // this cannot hit an unrelated process.
            // SAFETY: plain syscall.
            unsafe { libc::killpg(self.pid(), libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}

/// Every line of a JSON-lines file, parsed; a partial or malformed line fails the test.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} ends mid-line",
        path.display()
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// A claude-style transcript's entries from the first one that carries a
/// `cwd`: the lines real Claude Code writes first (`mode`,
/// `permission-mode`) have only the id, and are checked on their own.
pub fn entries(path: &Path) -> Vec<Value> {
    read_jsonl(path)
        .into_iter()
        .skip_while(|l| l.get("cwd").is_none())
        .collect()
}

/// Waits until the transcript at `path` exists and satisfies `check`.
pub fn wait_for_lines(path: &Path, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    wait_until(what, || {
        if !path.exists() {
            return None;
        }
        let lines = read_jsonl(path);
        check(&lines).then_some(lines)
    })
}

/// The text of a Claude-shaped assistant entry.
pub fn assistant_text(entry: &Value) -> Option<&str> {
    (entry["type"] == "assistant")
        .then(|| entry["message"]["content"][0]["text"].as_str())
        .flatten()
}

/// Claude Code's project folder name for a short path (no hash suffix: test
/// folders stay under 200 characters): every UTF-16 unit that is not an ASCII
/// letter or digit becomes `-`, as the real CLI does.
pub fn slug_of(cwd: &str) -> String {
    assert!(cwd.len() < 200, "slug_of handles short paths only");
    cwd.encode_utf16()
        .map(|u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect()
}
