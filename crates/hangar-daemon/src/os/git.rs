//! `git`, behind the [`Git`] trait: worktrees (`worktree.rs`) and review
//! and landing (`review/`) run every git command through it, so a test on
//! [`super::FakeOs`] scripts git's answers ([`FakeGit`]) and reads the
//! commands back instead of needing a repository.
//!
//! What it must never do: prompt (for credentials or in an editor) — a
//! prompt would hang the daemon.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// What one git command answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitOutput {
    /// Its exit code (`None`: ended by a signal).
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl GitOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Running `git -C dir ARGS`.
pub trait Git: Send + Sync {
    /// Run git in `dir` with `env` added to its environment and `stdin`
    /// written to it (`None`: nothing to read). `Err` only when git could
    /// not be run at all; a failed command is an `Ok` with its code.
    fn run_git(
        &self,
        dir: &Path,
        args: &[OsString],
        env: &[(&str, &OsStr)],
        stdin: Option<&[u8]>,
    ) -> std::io::Result<GitOutput>;
}

/// The `git` program on PATH, never prompting: no terminal prompt, no
/// editor, no merge message to edit, and no optional locks (a status must
/// not block the person's own git).
pub fn run_real_git(
    dir: &Path,
    args: &[OsString],
    env: &[(&str, &OsStr)],
    stdin: Option<&[u8]>,
) -> std::io::Result<GitOutput> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    // Written from a thread: git answers while it reads, and a full stdout
    // pipe would otherwise block both sides.
    let writer = match (child.stdin.take(), stdin) {
        (Some(mut pipe), Some(input)) => {
            let input = input.to_vec();
            Some(std::thread::spawn(move || {
                // git may stop reading early (it answered already); what it
                // said is in its output and code.
                let _ = pipe.write_all(&input);
            }))
        }
        _ => None,
    };
    let out = child.wait_with_output()?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ok(GitOutput {
        code: out.status.code(),
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

/// One git command the fake was asked to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitCall {
    pub dir: PathBuf,
    pub args: Vec<String>,
}

/// A scripted git: each command is answered by the first rule whose
/// arguments begin with the rule's, and recorded. A command no rule
/// answers fails as git does for an unknown command (code 1), so a test
/// sees what it did not script.
#[derive(Default)]
pub struct FakeGit {
    rules: Mutex<Vec<(Vec<String>, GitOutput)>>,
    calls: Mutex<Vec<GitCall>>,
}

impl FakeGit {
    /// Answer commands beginning with `prefix` with `stdout` and `code`.
    pub fn answer(&self, prefix: &[&str], code: i32, stdout: &str) {
        self.rules.lock().unwrap_or_else(|p| p.into_inner()).push((
            prefix.iter().map(|s| (*s).to_owned()).collect(),
            GitOutput {
                code: Some(code),
                stdout: stdout.as_bytes().to_vec(),
                stderr: if code == 0 {
                    Vec::new()
                } else {
                    format!("fatal: scripted failure of {}", prefix.join(" ")).into_bytes()
                },
            },
        ));
    }

    /// Every command run so far, in order.
    pub fn calls(&self) -> Vec<GitCall> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Git for FakeGit {
    fn run_git(
        &self,
        dir: &Path,
        args: &[OsString],
        _env: &[(&str, &OsStr)],
        _stdin: Option<&[u8]>,
    ) -> std::io::Result<GitOutput> {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(GitCall {
                dir: dir.to_owned(),
                args: args.clone(),
            });
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        Ok(rules
            .iter()
            .find(|(prefix, _)| args.starts_with(prefix))
            .map(|(_, out)| out.clone())
            .unwrap_or_else(|| GitOutput {
                code: Some(1),
                stdout: Vec::new(),
                stderr: format!("fake git: nothing scripted for `git {}`", args.join(" "))
                    .into_bytes(),
            }))
    }
}
