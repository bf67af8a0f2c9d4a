//! What an installed agent CLI is: its version (`--version`) and, for
//! codex, whether it takes `--no-daemon` (`--help`), read from their output
//! by hangar-providers' `cli_facts`. Probed once per program file (path,
//! size, modification time) and kept, so an upgrade of the CLI is noticed
//! at its next start.
//!
//! Codex needs its answer before it starts (issue 16 defect 4), so that
//! probe is awaited (about a second, once). The version of claude and
//! opencode only feeds a notice, so it is read in the background: opencode
//! takes seconds to print its version on a machine without network.
//!
//! A probe is single-flight per program file: starts that come while it
//! runs wait for its answer instead of each running the CLI again (a restore
//! of forty opencode sessions would otherwise start forty `opencode
//! --version` outside the restore's bound).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::sessions::Sessions;
use hangar_core::Provider;
use hangar_core::cli_versions::{Tested, Version};
use hangar_providers::ProvidersConfig;
pub use hangar_providers::cli_facts::CliFacts;
use hangar_providers::cli_facts::{self, reads_help};
use hangar_providers::launch::{LaunchEnv, resolve_program};

/// A CLI that does not answer `--version` within this is taken as unknown.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

type Key = (PathBuf, u64, Option<SystemTime>);

#[derive(Default)]
pub struct CliProbe {
    /// One cell per program file: filled by its one probe, awaited by every
    /// caller that comes while that probe runs.
    cache: Mutex<HashMap<Key, Arc<tokio::sync::OnceCell<CliFacts>>>>,
    /// (provider, version) pairs already given a notice.
    noticed: Mutex<BTreeSet<(String, Version)>>,
}

fn key_of(program: &Path) -> Key {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let meta = std::fs::metadata(&real).ok();
    (
        real,
        meta.as_ref().map(|m| m.len()).unwrap_or(0),
        meta.and_then(|m| m.modified().ok()),
    )
}

/// Where a probe's answer is read from.
#[derive(Clone, Copy)]
enum Answer {
    Stdout,
    /// Its stdout, else its stderr: Pi 0.73.1 prints its `--version` there
    /// (docs/clis/pi.md).
    StdoutElseStderr,
}

/// How often a probe is tried again when its program is still open for
/// writing (ETXTBSY: an install writing it, or a file just written whose
/// descriptor another thread's child still holds until it execs).
const BUSY_TRIES: usize = 3;

/// Runs `program args` and returns its answer (empty on any failure).
async fn output_of(program: &Path, args: &[&str], answer: Answer) -> String {
    let run = async {
        let mut tries = 0;
        loop {
            let out = tokio::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output()
                .await;
            tries += 1;
            match out {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < BUSY_TRIES => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                out => return out,
            }
        }
    };
    match tokio::time::timeout(PROBE_TIMEOUT, run).await {
        Ok(Ok(out)) => {
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            match answer {
                Answer::StdoutElseStderr if stdout.trim().is_empty() => {
                    String::from_utf8_lossy(&out.stderr).into_owned()
                }
                _ => stdout,
            }
        }
        Ok(Err(e)) => {
            tracing::debug!("cannot run {} {args:?}: {e}", program.display());
            String::new()
        }
        Err(_) => {
            tracing::debug!("{} {args:?} did not answer in time", program.display());
            String::new()
        }
    }
}

impl CliProbe {
    fn cell(&self, program: &Path) -> Arc<tokio::sync::OnceCell<CliFacts>> {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key_of(program))
            .or_default()
            .clone()
    }

    /// The facts of `program`, probing it when not known yet; while a probe
    /// of the same file runs, its answer.
    pub async fn facts(&self, provider: &Provider, program: &Path) -> CliFacts {
        self.cell(program)
            .get_or_init(|| async {
                let version = output_of(program, &["--version"], Answer::StdoutElseStderr).await;
                let help = if reads_help(provider) {
                    Some(output_of(program, &["--help"], Answer::Stdout).await)
                } else {
                    None
                };
                CliFacts::from_outputs(provider, &version, help.as_deref())
            })
            .await
            .clone()
    }

    /// The notice for a CLI newer than tested, the first time that
    /// provider and version are seen.
    fn first_notice(&self, provider: &Provider, facts: &CliFacts) -> Option<String> {
        let Tested::Newer { installed, tested } = cli_facts::compare(provider, facts.version)
        else {
            return None;
        };
        let fresh = self
            .noticed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((provider.name().to_owned(), installed));
        fresh.then(|| cli_facts::newer_notice(provider, installed, tested))
    }
}

impl CliProbe {
    /// The program `provider` runs by `[providers.*]` and `PATH`, if found.
    pub fn program_of(provider: &Provider, providers: &ProvidersConfig) -> Option<PathBuf> {
        let var = |k: &str| std::env::var(k).ok();
        let mint = String::new;
        let env = LaunchEnv {
            providers,
            var: &var,
            dangerous: false,
            mint: &mint,
            fork_from: None,
        };
        resolve_program(provider, &env).ok()
    }

    /// Before a session of `provider` starts: codex's facts (awaited: its
    /// command line depends on them); for claude and opencode, their
    /// version is read in the background and `None` returned. A CLI newer
    /// than tested is a notice in `sessions`' status.
    pub async fn cli_facts_before_start(
        self: &Arc<Self>,
        provider: &Provider,
        providers: &ProvidersConfig,
        sessions: &Arc<Sessions>,
    ) -> Option<CliFacts> {
        if !provider.is_agent() {
            return None;
        }
        let program = Self::program_of(provider, providers)?;
        // A CLI whose launch depends on its `--help` (codex's --no-daemon)
        // waits for the facts; any other is probed beside its start.
        if reads_help(provider) {
            let facts = self.facts(provider, &program).await;
            self.notice_if_newer(provider, &facts, sessions);
            return Some(facts);
        }
        let probe = self.clone();
        let sessions = sessions.clone();
        let provider = provider.clone();
        tokio::spawn(async move {
            let facts = probe.facts(&provider, &program).await;
            probe.notice_if_newer(&provider, &facts, &sessions);
        });
        None
    }

    fn notice_if_newer(&self, provider: &Provider, facts: &CliFacts, sessions: &Sessions) {
        if let Some(line) = self.first_notice(provider, facts) {
            tracing::warn!("{line}");
            sessions.notice(line);
        }
    }

    /// For `hangar doctor`: each agent CLI, with its program and facts when
    /// it is installed.
    pub async fn installed(
        &self,
        providers: &ProvidersConfig,
    ) -> Vec<(Provider, Option<(PathBuf, CliFacts)>)> {
        let mut out = Vec::new();
        for provider in Provider::AGENT_CLIS {
            let found = match Self::program_of(&provider, providers) {
                Some(program) => {
                    let facts = self.facts(&provider, &program).await;
                    Some((program, facts))
                }
                None => None,
            };
            out.push((provider, found));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[tokio::test]
    async fn a_codex_that_offers_no_daemon_is_seen_and_kept_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        // The shapes of codex 0.171.0's `--version` and `--help`.
        let codex = script(
            dir.path(),
            "codex",
            r#"case "$1" in --version) echo "codex-cli 0.171.0";; --help) printf '      --no-daemon\n          Run without the shared background server\n';; esac"#,
        );
        let probe = CliProbe::default();
        let facts = probe.facts(&Provider::Codex, &codex).await;
        assert_eq!(
            facts,
            CliFacts {
                version: Some(Version(0, 171, 0)),
                no_daemon: true
            }
        );
        assert_eq!(probe.first_notice(&Provider::Codex, &facts), None);
        // An older codex without the flag, installed over it.
        std::thread::sleep(Duration::from_millis(20));
        let old = script(
            dir.path(),
            "codex",
            r#"case "$1" in --version) echo "codex-cli 0.160.0 older build";; --help) echo "Usage: codex";; esac"#,
        );
        let facts = probe.facts(&Provider::Codex, &old).await;
        assert_eq!(facts.version, Some(Version(0, 160, 0)));
        assert!(!facts.no_daemon);
    }

    #[tokio::test]
    async fn starts_that_come_while_a_probe_runs_wait_for_it_instead_of_running_the_cli_again() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        // An opencode that takes a while to print its version (it does on a
        // machine without network) and notes every run.
        let opencode = script(
            dir.path(),
            "opencode",
            &format!(
                "echo \"$1\" >> '{}'\nsleep 0.3\necho 1.14.0",
                runs.display()
            ),
        );
        let probe = Arc::new(CliProbe::default());
        let starts: Vec<_> = (0..8)
            .map(|_| {
                let probe = probe.clone();
                let opencode = opencode.clone();
                tokio::spawn(async move { probe.facts(&Provider::Opencode, &opencode).await })
            })
            .collect();
        for start in starts {
            assert_eq!(start.await.unwrap().version, Some(Version(1, 14, 0)));
        }
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), "--version\n");
    }

    #[tokio::test]
    async fn a_newer_cli_gets_one_notice_naming_the_tested_version() {
        let dir = tempfile::tempdir().unwrap();
        let claude = script(dir.path(), "claude", r#"echo "9.0.0 (Claude Code)""#);
        let probe = CliProbe::default();
        let facts = probe.facts(&Provider::Claude, &claude).await;
        let line = probe.first_notice(&Provider::Claude, &facts).unwrap();
        assert!(line.contains(
            "claude 9.0.0 is newer than the newest version hangar is tested with (2.1.197)"
        ));
        assert_eq!(probe.first_notice(&Provider::Claude, &facts), None);
    }

    #[tokio::test]
    async fn a_cli_that_prints_its_version_on_stderr_is_read_there() {
        // Pi 0.73.1: `pi --version` prints `0.73.1` on stderr, nothing on
        // stdout (docs/clis/pi.md); `hangar doctor` said "version unknown".
        let dir = tempfile::tempdir().unwrap();
        let pi = script(dir.path(), "pi", "echo 0.73.1 >&2");
        let facts = CliProbe::default()
            .facts(&Provider::from_name("pi"), &pi)
            .await;
        assert_eq!(facts.version, Some(Version(0, 73, 1)));
    }
}
