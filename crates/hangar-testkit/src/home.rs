//! One test's hangar: a real daemon in its own temporary `HANGAR_HOME`,
//! with `hangar-fake-agent` standing in for every provider.
//!
//! A process belongs to a test when its environment carries that test's
//! `HANGAR_HOME` (children inherit the daemon's environment, and the daemon
//! inherits the CLI's), so counts stay right while tests run in parallel.
//!
//! This fixture must never leak a process: `Drop` asks the daemon to shut
//! down, then SIGKILLs every process still carrying the test's home, even
//! when the test panicked.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::bins::{fake_agent_bin, hangar_bin};
use crate::proc::{all_pids, arg_after, cmdline, environ, is_running, is_zombie, kill_all, ppid};
use crate::wait::{DEADLINE, poll_for};

/// One test's hangar: temp home, project folder, env, and the daemon it starts.
pub struct Hangar {
    _dir: tempfile::TempDir,
    /// The canonical temp root (symlinks resolved: the fake agent sees the
    /// kernel's cwd, and Claude slugs are made from it).
    pub root: PathBuf,
    /// `HANGAR_HOME`.
    pub home: PathBuf,
    /// A project folder with a '.' in its path; the CLI runs here, so it is
    /// every session's default cwd.
    pub work: PathBuf,
    /// `CLAUDE_CONFIG_DIR`.
    pub claude_dir: PathBuf,
    /// `CODEX_HOME`.
    pub codex_home: PathBuf,
    /// `HOME` for the daemon and its children.
    pub user_home: PathBuf,
    /// The wrapper scripts `HANGAR_CODEX_BIN` / `HANGAR_OPENCODE_BIN` point at.
    pub codex_bin: PathBuf,
    pub opencode_bin: PathBuf,
    env: Vec<(String, OsString)>,
    daemon: Mutex<Option<Child>>,
}

impl Default for Hangar {
    fn default() -> Self {
        Self::new()
    }
}

impl Hangar {
    pub fn new() -> Hangar {
        Self::with_env(&[])
    }

    /// A fixture whose CLI (and so daemon, and so agents) also get `extra` env.
    pub fn with_env(extra: &[(&str, &str)]) -> Hangar {
        let dir = tempfile::Builder::new()
            .prefix("hangar-test-")
            .tempdir()
            .expect("temp dir");
        let root = fs::canonicalize(dir.path()).expect("canonical temp dir");
        let home = root.join("hangar-home");
        let work = root.join("proj.x").join("work");
        let claude_dir = root.join("claude");
        let codex_home = root.join("codex");
        let user_home = root.join("user");
        let opencode_dir = root.join("opencode");
        for d in [&work, &claude_dir, &codex_home, &user_home, &opencode_dir] {
            fs::create_dir_all(d).expect("create test folder");
        }
        let fake = fake_agent_bin();
        let codex_bin = root.join("bin").join("codex");
        let opencode_bin = root.join("bin").join("opencode");
        write_wrapper(&codex_bin, &fake, "codex");
        write_wrapper(&opencode_bin, &fake, "opencode");

        let mut env: Vec<(String, OsString)> = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), user_home.clone().into()),
            ("HANGAR_HOME".into(), home.clone().into()),
            ("HANGAR_CLAUDE_BIN".into(), fake.clone().into()),
            ("HANGAR_CODEX_BIN".into(), codex_bin.clone().into()),
            ("HANGAR_OPENCODE_BIN".into(), opencode_bin.clone().into()),
            ("HANGAR_SHELL".into(), "/bin/sh".into()),
            ("SHELL".into(), "/bin/sh".into()),
            ("CLAUDE_CONFIG_DIR".into(), claude_dir.clone().into()),
            ("CODEX_HOME".into(), codex_home.clone().into()),
            ("HANGAR_FAKE_OPENCODE_DIR".into(), opencode_dir.into()),
            ("TERM".into(), "xterm-256color".into()),
            ("HANGAR_LOG".into(), "info".into()),
        ];
        for (k, v) in extra {
            env.retain(|(ek, _)| ek != k);
            env.push(((*k).into(), (*v).into()));
        }
        Hangar {
            _dir: dir,
            root,
            home,
            work,
            claude_dir,
            codex_home,
            user_home,
            codex_bin,
            opencode_bin,
            env,
            daemon: Mutex::new(None),
        }
    }

    /// Sets (or replaces) one variable of the env every later command (and
    /// so a daemon started later, and its agents) gets.
    pub fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// The env every command of this fixture gets.
    pub fn env_vars(&self) -> &[(String, OsString)] {
        &self.env
    }

    /// One variable of that env.
    pub fn env_var(&self, key: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }

    /// Writes `$HANGAR_HOME/config.toml`.
    pub fn write_config(&self, text: &str) {
        fs::create_dir_all(&self.home).expect("create HANGAR_HOME");
        fs::write(self.home.join("config.toml"), text).expect("write config.toml");
    }

    /// A `hangar` command with this fixture's env (nothing inherited but PATH)
    /// and cwd.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(hangar_bin());
        cmd.args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `hangar ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run hangar")
    }

    /// The last lines of the daemons' logs (the one `hangar daemon` keeps
    /// and the fixture's foreground one): what a failed command's daemon
    /// said, for the failure's message (the home is gone after the test).
    pub fn daemon_logs_tail(&self) -> String {
        let mut out = String::new();
        for log in [
            self.home.join("daemon.log"),
            self.root.join("daemon-foreground.log"),
        ] {
            let Ok(text) = fs::read_to_string(&log) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            out.push_str(&format!("--- last lines of {}:\n{tail}\n", log.display()));
        }
        out
    }

    /// Runs `hangar ARGS`, asserts success, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "`hangar {}` failed ({}):\nstdout: {}\nstderr: {}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.daemon_logs_tail()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `hangar --json ARGS`, asserts success, parses stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("`hangar {}` printed no JSON ({e}): {out}", all.join(" ")))
    }

    /// Runs `hangar ARGS`, asserts failure, returns stderr.
    pub fn fail(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "`hangar {}` should have failed but succeeded:\nstdout: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Starts `hangar daemon` in the background (explicitly, not by
    /// auto-start) and waits until it answers. Returns its pid.
    pub fn start_daemon(&self) -> i32 {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("daemon-foreground.log"))
            .expect("daemon log");
        let child = self
            .command(&["daemon"])
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log)
            .spawn()
            .expect("start hangar daemon");
        let pid = child.id() as i32;
        {
            let mut slot = self.daemon.lock().unwrap();
            if let Some(mut old) = slot.take() {
                let _ = old.try_wait();
            }
            *slot = Some(child);
        }
        self.wait_until("the daemon answers status", DEADLINE, || {
            // Connect first: `hangar status` on a missing or stale socket
            // auto-starts a second daemon that can win the lock from ours.
            std::os::unix::net::UnixStream::connect(self.home.join("run").join("hangar.sock"))
                .is_ok()
                && self.daemon_pid_opt() == Some(pid)
                && self.run(&["status"]).status.success()
        });
        pid
    }

    /// Stops the daemon with `hangar shutdown` and waits until no daemon
    /// process for this home is left.
    pub fn shutdown(&self) {
        self.ok(&["shutdown"]);
        self.wait_until("the daemon process has exited", DEADLINE, || {
            self.daemon_pid_opt().is_none()
        });
        if let Some(mut child) = self.daemon.lock().unwrap().take() {
            let _ = child.wait();
        }
    }

    /// The running daemon's pid, found in /proc (a `hangar daemon` process
    /// carrying this home).
    pub fn daemon_pid_opt(&self) -> Option<i32> {
        self.pids_for_home().into_iter().find(|&pid| {
            let c = cmdline(pid);
            c.len() >= 2 && c[0].ends_with("hangar") && c[1] == "daemon" && !is_zombie(pid)
        })
    }

    /// The running daemon's pid; panics when none runs.
    pub fn daemon_pid(&self) -> i32 {
        self.daemon_pid_opt()
            .unwrap_or_else(|| panic!("no hangar daemon runs for {}", self.home.display()))
    }

    /// `hangar new --json ARGS`: the new session's id.
    pub fn new_agent(&self, args: &[&str]) -> String {
        let mut all = vec!["new"];
        all.extend_from_slice(args);
        let v = self.json(&all);
        v["id"]
            .as_str()
            .unwrap_or_else(|| panic!("`hangar new` printed no id: {v}"))
            .to_owned()
    }

    /// A claude pane in the active tab (a new tab when none).
    pub fn new_pane(&self) -> String {
        self.new_agent(&["--provider", "claude"])
    }

    /// A claude pane that splits `of`.
    pub fn split(&self, of: &str, direction: &str) -> String {
        self.new_agent(&[
            "--provider",
            "claude",
            "--split",
            of,
            "--direction",
            direction,
        ])
    }

    /// The journal's entries, in the order they were written.
    pub fn journal(&self) -> Vec<Value> {
        fs::read_to_string(self.home.join("journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `hangar ls --json` rows.
    pub fn ls(&self) -> Vec<Value> {
        match self.json(&["ls"]) {
            Value::Array(rows) => rows,
            other => panic!("`hangar ls --json` is not an array: {other}"),
        }
    }

    /// One `ls` row, by full id.
    pub fn session(&self, id: &str) -> Value {
        self.ls()
            .into_iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("session {id} is not in `hangar ls`"))
    }

    pub fn status(&self) -> Value {
        self.json(&["status"])
    }

    /// The session's provider session id and that id's source, as `ls`
    /// shows them.
    pub fn provider_id(&self, id: &str) -> (Option<String>, Option<String>) {
        let s = self.session(id);
        (
            s["provider_session_id"].as_str().map(str::to_owned),
            s["provider_session_source"].as_str().map(str::to_owned),
        )
    }

    /// Waits until `id`'s provider id comes from its transcript; returns it.
    pub fn wait_transcript_id(&self, id: &str) -> String {
        let mut found = None;
        self.wait_until(
            &format!("session {id} has a provider id from its transcript"),
            DEADLINE,
            || {
                if let (Some(p), Some(s)) = self.provider_id(id)
                    && s == "transcript"
                {
                    found = Some(p);
                }
                found.is_some()
            },
        );
        found.expect("the wait ends only once an id is found")
    }

    /// The session's state (`live`, `hibernated`, ...).
    pub fn state_of(&self, id: &str) -> String {
        self.session(id)["state"].as_str().unwrap_or("").to_owned()
    }

    /// Waits until session `id` is in `state`; returns its ls row.
    pub fn wait_state(&self, id: &str, state: &str) -> Value {
        let mut row = Value::Null;
        self.wait_until(&format!("session {id} is {state}"), DEADLINE, || {
            row = self.session(id);
            row["state"] == state
        });
        row
    }

    /// The session's pid as ls reports it; panics when it has none.
    pub fn pid_of(&self, id: &str) -> i32 {
        self.session(id)["pid"]
            .as_i64()
            .unwrap_or_else(|| panic!("session {id} has no pid")) as i32
    }

    /// `hangar screen ID` as text.
    pub fn screen(&self, id: &str) -> String {
        self.ok(&["screen", id])
    }

    /// Waits until `needle` shows on session `id`'s screen.
    pub fn wait_screen(&self, id: &str, needle: &str) -> String {
        let what = format!("session {id}'s screen shows {needle:?}");
        let start = Instant::now();
        loop {
            let last = self.screen(id);
            if last.contains(needle) {
                return last;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting until {what}; screen:\n{last}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// The Claude transcript of provider session `psid` run in `cwd`.
    pub fn claude_transcript(&self, cwd: &Path, psid: &str) -> PathBuf {
        let slug = hangar_core::claude_slug::claude_project_slug(&cwd.to_string_lossy());
        self.claude_dir
            .join("projects")
            .join(slug)
            .join(format!("{psid}.jsonl"))
    }

    /// Writes `workspace` (export format) to a file and runs `hangar import
    /// hangar FILE`: into the store when no daemon runs, else into the daemon.
    pub fn import(&self, workspace: &Value) -> Value {
        let file = self.root.join("import.json");
        fs::write(
            &file,
            serde_json::to_vec(workspace).expect("encode workspace"),
        )
        .expect("write import file");
        self.json(&["import", "hangar", file.to_str().expect("utf-8 path")])
    }

    /// Waits until `status` reports the restore complete; returns the status.
    pub fn wait_restore_complete(&self) -> Value {
        let mut status = Value::Null;
        self.wait_until("the restore is complete", DEADLINE, || {
            status = self.status();
            status["restore"]["complete"] == true
        });
        status
    }

    /// Polls `f` until it holds; on a timeout the failure carries the
    /// daemons' log tails, which say why (a CI run shows nothing else).
    pub fn wait_until(&self, what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
        if poll_for(timeout, || f().then_some(())).is_none() {
            panic!(
                "timed out after {timeout:?} waiting until {what}\n{}",
                self.daemon_logs_tail()
            );
        }
    }

    /// Every process whose environment carries this fixture's `HANGAR_HOME`:
    /// the daemon, its agents and their children.
    pub fn pids_for_home(&self) -> Vec<i32> {
        let needle = format!("HANGAR_HOME={}", self.home.display());
        all_pids()
            .into_iter()
            .filter(|&pid| environ(pid).contains(&needle))
            .collect()
    }

    /// Running (non-zombie) `hangar-fake-agent` processes of this fixture.
    pub fn fake_agent_pids_for_home(&self) -> Vec<i32> {
        self.pids_for_home()
            .into_iter()
            .filter(|&pid| {
                cmdline(pid)
                    .first()
                    .is_some_and(|a| a.ends_with("hangar-fake-agent"))
                    && !is_zombie(pid)
            })
            .collect()
    }

    /// The fake agents of this fixture that are sessions' agents: not the
    /// daemon's one-off `--version`/`--help` probe of a program (it starts no
    /// session and holds no slot), and not a child a fake agent forked for a
    /// hook's shell, which until its exec still looks like a fake agent.
    ///
    /// Count agents with this, never with `fake_agent_pids_for_home().len()`:
    /// the daemon probes a claude or opencode program in the background
    /// while the first session of it starts, so a count taken then is one
    /// too many on a slow machine. Each process's command line and parent
    /// are read once: one that ends between two reads is dropped, not
    /// counted without being looked at.
    pub fn session_agent_pids(&self) -> Vec<i32> {
        let needle = format!("HANGAR_HOME={}", self.home.display());
        let fakes: Vec<(i32, Vec<String>, Option<i32>)> = all_pids()
            .into_iter()
            .filter_map(|pid| {
                let args = cmdline(pid);
                let parent = ppid(pid);
                let running = is_running(pid);
                (running
                    && args
                        .first()
                        .is_some_and(|a| a.ends_with("hangar-fake-agent"))
                    && environ(pid).contains(&needle))
                .then_some((pid, args, parent))
            })
            .collect();
        fakes
            .iter()
            .filter(|(_, _, parent)| {
                !parent.is_some_and(|parent| fakes.iter().any(|(p, _, _)| *p == parent))
            })
            // Through the fixture's wrappers a probe is `hangar-fake-agent
            // --style claude --version`; codex's shared `app-server` (it
            // outlives the agent that started it) is no session either.
            .filter(|(_, args, _)| {
                !args
                    .iter()
                    .skip(1)
                    .any(|a| a == "--version" || a == "--help")
                    && args.get(1).map(String::as_str) != Some("app-server")
            })
            .map(|(pid, _, _)| *pid)
            .collect()
    }

    /// Fake agents of this fixture whose command line contains `arg`.
    pub fn processes_with_arg(&self, arg: &str) -> Vec<i32> {
        self.fake_agent_pids_for_home()
            .into_iter()
            .filter(|&pid| cmdline(pid).iter().any(|a| a == arg))
            .collect()
    }

    /// Fake agents of this fixture whose command line has `flag value`
    /// (e.g. `--resume <id>`).
    pub fn processes_with_flag(&self, flag: &str, value: &str) -> Vec<i32> {
        self.fake_agent_pids_for_home()
            .into_iter()
            .filter(|&pid| arg_after(&cmdline(pid), flag).as_deref() == Some(value))
            .collect()
    }

    /// SIGKILLs every process carrying this home (used by Drop; also to
    /// simulate a crash).
    pub fn kill_everything(&self) {
        for _ in 0..5 {
            let pids = self.pids_for_home();
            if pids.is_empty() {
                break;
            }
            // Only processes carrying our unique temp home are named.
            kill_all(&pids);
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut child) = self.daemon.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Hangar {
    fn drop(&mut self) {
        if self.daemon_pid_opt().is_some() {
            // Bounded: `hangar shutdown` waits at most 30s itself; we give it
            // 10s and then kill regardless.
            if let Ok(mut child) = self
                .command(&["shutdown"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(10) {
                    if let Ok(Some(_)) = child.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        self.kill_everything();
    }
}

fn write_wrapper(path: &Path, fake: &Path, style: &str) {
    fs::create_dir_all(path.parent().expect("wrapper has a parent")).expect("bin dir");
    fs::write(
        path,
        format!(
            "#!/bin/sh\nexec '{}' --style {style} \"$@\"\n",
            fake.display()
        ),
    )
    .expect("write wrapper");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod wrapper");
}

/// How many user entries of a claude transcript are exactly `text`.
pub fn user_entries(path: &Path, text: &str) -> usize {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "user" && v["message"]["content"] == text)
        .count()
}
