//! Launching a session's process: its command line from the provider
//! adapter, environment, proxy grant and hooks; the process itself; and the
//! wait for its first output that tells a start from a failed one.
//!
//! Everything a launch needs is read from one snapshot of the session; the
//! I/O (PATH search, MCP config write, folder stat) runs off the state lock.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;

use super::start_slot::StartSlot;
use super::{SpawnFailure, Spawner};
use crate::journal::{Event, FailureKind};
use crate::pty::{DEFAULT_COLS, DEFAULT_ROWS, LiveProcess, SpawnRequest};
use hangar_providers::launch::{LaunchEnv, launch_spec};

/// A shell or custom command that neither printed nor exited within this
/// window counts as started (it may legitimately print nothing).
const QUIET_START: Duration = Duration::from_millis(300);

impl Spawner {
    /// Start `id`'s process and wait until it is up: its first output (or a
    /// quiet shell's window), then its settle. `slot` is given up once the
    /// process has printed, before the settle (`start_slot.rs`).
    pub(super) async fn try_spawn(
        self: &Arc<Self>,
        id: &SessionId,
        mut slot: StartSlot,
    ) -> Result<(), SpawnFailure> {
        // Proxy credentials for this process (issue 7); revoked when dropped.
        let proxy_grant = self.grants.proxy_grant(id).await?;
        // Claude Code hooks that report activity (issue 11), written off the
        // lock; in a sandbox they call hangar back through the session's own
        // socket, and the settings turn claude's own sandbox off.
        let sandboxed = self.sessions.meta(id).is_some_and(|m| m.sandbox.is_some());
        let hook_settings = {
            let provider = self.sessions.provider_of(id);
            provider.and_then(|p| self.monitor.hook_settings(id, &p, sandboxed))
        };
        // Codex's command line depends on its version (issue 16 defect 4).
        let cli_facts = {
            let provider = self.sessions.provider_of(id);
            match provider {
                Some(p) => {
                    self.cli_probe
                        .cli_facts_before_start(&p, self.providers.get(), &self.sessions)
                        .await
                }
                None => None,
            }
        };
        // A resume the CLI will refuse (a claude conversation held by
        // Claude Code's own background-agent supervisor, issue 16 defect 9):
        // say so, and what to do, instead of starting a CLI that exits at
        // once.
        let resume_psid = self
            .sessions
            .meta(id)
            .and_then(|m| m.durable_provider_id().map(str::to_owned));
        let refusal = self.sessions.provider_of(id).zip(resume_psid.as_deref());
        let refusal = refusal
            .and_then(|(p, psid)| hangar_providers::adapter(&p).resume_refusal(id.short(), psid));
        if let Some(reason) = refusal {
            return Err(SpawnFailure::new(FailureKind::Other, reason));
        }
        // Everything a launch needs is read from one snapshot, and the I/O
        // (PATH search, MCP config write, folder stat) happens off the lock.
        let (request, resumed, provider, title, on_engine) = {
            let (meta, dangerous) = self.sessions.launch_facts(id);
            let meta = meta.ok_or_else(|| {
                SpawnFailure::new(FailureKind::Other, format!("session {id} no longer exists"))
            })?;
            let var = |k: &str| std::env::var(k).ok();
            let mint = || uuid::Uuid::new_v4().to_string();
            // A fork starts from its origin until its own conversation
            // exists (issue 30; `hangar_core::fork`).
            let transcripts = hangar_providers::transcript::discovery::session_transcript_root(
                &meta,
                &hangar_providers::transcript::discovery::env_var,
            );
            let fork_from = hangar_providers::fork::fork_start(&meta, transcripts.as_deref());
            let env = LaunchEnv {
                providers: self.providers.get(),
                var: &var,
                dangerous,
                mint: &mint,
                fork_from: fork_from.as_deref(),
            };
            let describe = |m: &hangar_core::SessionMeta| {
                if m.title.is_empty() {
                    format!("cannot start {}", m.id.short())
                } else {
                    format!("cannot start {} (title {:?})", m.id.short(), m.title)
                }
            };
            let spec = launch_spec(&meta, &env).map_err(|e| {
                SpawnFailure::new(
                    FailureKind::ProgramMissing,
                    format!(
                        "{}: {}",
                        describe(&meta),
                        hangar_providers::failure_reason::launch_failure(
                            &e,
                            &meta.provider,
                            &self.paths.home,
                            id.short()
                        )
                    ),
                )
            })?;
            // On an engine, hangar's files for the agent (MCP config, hook
            // settings) are mounted into its container, and its hooks and
            // MCP server reach the daemon through its own socket, as in the
            // sandbox.
            let on_engine = meta.engine.is_some().then(|| meta.clone());
            let spec = self
                .orchestration
                .with_orchestration_mcp(&meta, spec, self.mcp.get());
            let spec =
                hangar_providers::launch::with_cli_facts(spec, &meta.provider, cli_facts.as_ref());
            let cwd = PathBuf::from(&meta.cwd);
            if !cwd.is_dir() {
                // A worktree deleted by hand is reported, never recreated.
                let reason = crate::worktree::missing_worktree_reason(&meta).unwrap_or_else(|| {
                    // Say why: "does not exist" was misleading for a folder
                    // that loops through symlinks or cannot be read.
                    let why = match std::fs::metadata(&cwd) {
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            "does not exist".to_owned()
                        }
                        Err(e) => format!("cannot be used ({e})"),
                        Ok(_) => "is not a folder".to_owned(),
                    };
                    format!("{}: its folder {} {why}", describe(&meta), meta.cwd)
                });
                return Err(SpawnFailure::new(FailureKind::CwdMissing, reason));
            }
            // The minted provider id and the dangerous flag it starts with,
            // saved in one store transaction.
            self.sessions
                .record_launch(id, spec.minted.clone(), dangerous)
                .map_err(|e| SpawnFailure::new(FailureKind::Other, e.message))?;
            let mut env_vars: Vec<(String, String)> = spec.env.into_iter().collect();
            env_vars.push(("TERM".into(), "xterm-256color".into()));
            env_vars.push(("HANGAR_SESSION_ID".into(), id.to_string()));
            env_vars.push(("HANGAR_HOME".into(), self.paths.home.display().to_string()));
            if let Some(g) = &proxy_grant {
                env_vars.extend(g.env.iter().cloned());
            }
            // Loopback never goes through a proxy: a local model server,
            // codex's own loopback traffic (issue 16 defect 7), unless the
            // proxy is told to capture that host.
            let no_proxy = hangar_providers::launch::no_proxy_with_loopback(
                std::env::var("NO_PROXY")
                    .ok()
                    .or_else(|| std::env::var("no_proxy").ok())
                    .as_deref(),
                proxy_grant.as_ref().map_or(&[], |g| &g.captured_hosts[..]),
            );
            env_vars.push(("NO_PROXY".into(), no_proxy.clone()));
            env_vars.push(("no_proxy".into(), no_proxy));
            let mut args = spec.args;
            if let Some(settings) = hook_settings.as_ref() {
                args.extend(hangar_providers::adapter(&meta.provider).hook_settings_args(settings));
            }
            // The last screen and history it had, kept above what the new
            // process prints (a read failure only loses that history).
            let resume = self.sessions.load_screen(id).unwrap_or_else(|e| {
                tracing::warn!(session = %id, "cannot read the saved screen: {e}");
                None
            });
            let request = SpawnRequest {
                program: spec.program,
                args,
                cwd,
                env: env_vars,
                sandboxed: false,
                rows: DEFAULT_ROWS,
                cols: DEFAULT_COLS,
                terminal: self.terminal.get().model(),
                resume,
            };
            (
                request,
                spec.resumed,
                meta.provider.clone(),
                meta.title.clone(),
                on_engine,
            )
        };
        // A session bound to an engine runs there or not at all (DESIGN.md
        // rule 14): the launch becomes the exec bridge, or fails with the
        // engine's words.
        // Its container gets the sandbox's walls (`Sandbox::walls`).
        let (request, sandbox_held) = match &on_engine {
            Some(meta) => self
                .engines
                .wrap_launch(meta, request, &self.sandbox, proxy_grant.as_ref())
                .await
                .map_err(|e| SpawnFailure::new(FailureKind::SpawnError, e.to_string()))?,
            // A sandboxed session runs inside its walls or not at all (issue 32).
            None => match self.sessions.meta(id) {
                Some(meta) if meta.sandbox.is_some() => {
                    let w = self
                        .sandbox
                        .wrap(&meta, request, proxy_grant.as_ref())
                        .await?;
                    (w.request, w.held)
                }
                _ => (request, Default::default()),
            },
        };
        let program = request.program.display().to_string();
        self.journal.record(Event::SpawnBegin {
            session: id.to_string(),
            resumed,
        });
        // Taken before the spawn: an agent may write its conversation's first
        // record (an OpenCode `--fork` copy) before the watches below start.
        let spawned_ms = self.os.wall_ms();
        let live = LiveProcess::spawn(self.os.as_ref(), request).map_err(|e| {
            SpawnFailure::new(
                FailureKind::SpawnError,
                format!(
                    "cannot start {} (title {title:?}): {program}: {e}",
                    id.short()
                ),
            )
        })?;
        let start_time = self.os.start_time(live.pid).unwrap_or(0);
        self.sessions
            .attach_process(id, live.clone(), start_time, resumed);
        self.watch_exit(id.clone(), live.clone());
        self.identity
            .watch_identity(id.clone(), live.clone(), spawned_ms);
        self.identity
            .watch_opencode_identity(id.clone(), live.clone(), spawned_ms);
        self.monitor.watch_activity(id.clone(), live.clone());
        if let Some(g) = proxy_grant {
            self.grants.hold_grant_until_exit(g, live.exit_watch());
        }
        crate::sandbox::hold_until_exit(sandbox_held, live.exit_watch());

        let mut first = live.first_output_watch();
        let mut exit = live.exit_watch();
        let timeout = if provider.is_agent() {
            Duration::from_secs(self.restore.get().spawn_timeout_secs.max(1))
        } else {
            QUIET_START
        };
        let started = tokio::time::timeout(timeout, async {
            tokio::select! {
                _ = first.wait_for(|v| *v) => {}
                _ = exit.wait_for(|e| e.is_some()) => {}
            }
        })
        .await;
        if started.is_ok() && provider.is_agent() {
            // It has booted: the next pane may fork while this one settles.
            slot.release();
            // An agent that fails its login prints and exits at once: give it
            // a moment so that counts as a failed start, not a live session.
            let settle = self.restore.get().settle();
            let _ = tokio::time::timeout(settle, exit.wait_for(|e| e.is_some())).await;
        }
        if let Some(code) = live.exited() {
            let screen = live.text();
            let auth = crate::governor::looks_like_auth_failure(
                &self.governor,
                self.providers.get(),
                &provider,
                &screen,
                code,
            );
            let last = live.last_line().unwrap_or_default();
            let refused = resume_psid.as_deref().and_then(|psid| {
                hangar_providers::adapter(&provider).refused_resume(id.short(), psid, &screen)
            });
            if let Some(message) = refused {
                return Err(SpawnFailure {
                    kind: FailureKind::ExitedDuringStart,
                    message,
                    exit_code: Some(code),
                });
            }
            return Err(SpawnFailure {
                kind: if auth {
                    FailureKind::AuthFailure
                } else {
                    FailureKind::ExitedDuringStart
                },
                message: format!(
                    "{program} exited with code {code} while starting{}",
                    if last.is_empty() {
                        String::new()
                    } else {
                        format!(": {last}")
                    }
                ),
                exit_code: Some(code),
            });
        }
        if started.is_err() && provider.is_agent() {
            self.stop_process(&live).await;
            return Err(SpawnFailure::new(
                FailureKind::Timeout,
                format!(
                    "{program} showed no output within the {}s spawn timeout ([restore] spawn_timeout_secs in config.toml); `hangar wake {}` retries",
                    timeout.as_secs(),
                    id.short()
                ),
            ));
        }
        Ok(())
    }
}
