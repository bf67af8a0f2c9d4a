//! Launching a session's process: the facts its start depends on, gathered
//! once (the provider adapter's command, its CLI's facts, the proxy grant,
//! the hook settings, the folder), the plan `hangar_core::launch_plan`
//! makes of them, the process itself, and the wait for its first output
//! that `launch_plan::judge_start` reads as a start or a failed one.
//!
//! Every decision is the plan's; this file only does I/O, off the state
//! lock (PATH search, MCP config write, folder stat).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::launch_plan::{
    self, EarlyExit, FolderCheck, LaunchCommand, LaunchFacts, ProxyGrantFacts, StartFacts,
    StartVerdict,
};

use super::Spawner;
use super::start_slot::StartSlot;
use crate::journal::{Event, FailureKind};
use crate::lifecycle::LifecycleEvent;
use crate::places::{Launch, Started};
use crate::pty::{DEFAULT_COLS, DEFAULT_ROWS, SpawnRequest};
use crate::spawn_failure::SpawnFailure;
use hangar_providers::launch::{LaunchEnv, launch_spec};

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
        let (facts, dangerous) = self.launch_facts(id, proxy_grant.as_ref()).await?;
        let plan = launch_plan::plan(&facts)?;
        let meta = &facts.meta;
        // The minted provider id and the dangerous flag it starts with,
        // saved in one store transaction.
        self.sessions
            .record_launch(id, plan.minted.clone(), dangerous)
            .map_err(|e| SpawnFailure::new(FailureKind::Other, e.message))?;
        // The last screen and history it had, kept above what the new
        // process prints (a read failure only loses that history).
        let resume = self.sessions.load_screen(id).unwrap_or_else(|e| {
            tracing::warn!(session = %id, "cannot read the saved screen: {e}");
            None
        });
        let request = SpawnRequest {
            program: plan.program.clone(),
            args: plan.args.clone(),
            cwd: plan.cwd.clone(),
            env: plan.env.clone(),
            sandboxed: false,
            rows: DEFAULT_ROWS,
            cols: DEFAULT_COLS,
            terminal: self.terminal.get().model(),
            resume,
        };
        // Its place puts up its walls (a sandbox, a container) and starts it
        // there, or fails: never a process without them (DESIGN.md rule 14).
        // The clock is read just before the spawn: an agent may write its
        // conversation's first record (an OpenCode `--fork` copy) before
        // the watches below start.
        let spawned_at = AtomicU64::new(0);
        let begin = || {
            self.journal.record(Event::SpawnBegin {
                session: id.to_string(),
                resumed: plan.resumed,
            });
            spawned_at.store(self.os.wall_ms(), Ordering::Relaxed);
        };
        let Started { live, program } = self
            .places
            .place(&plan.place)
            .start(Launch {
                meta,
                request,
                grant: proxy_grant.as_ref(),
                begin: &begin,
            })
            .await?;
        let spawned_ms = spawned_at.load(Ordering::Relaxed);
        let start_time = self.os.start_time(live.pid).unwrap_or(0);
        self.sessions
            .attach_process(id, live.clone(), start_time, plan.resumed);
        self.watch_exit(id.clone(), live.clone());
        // Identity's and activity's watchers start here (lib.rs listens).
        self.lifecycle.announce(LifecycleEvent::Started {
            session: id.clone(),
            live: live.clone(),
            spawned_ms,
        });
        if let Some(g) = proxy_grant {
            self.grants.hold_grant_until_exit(g, live.exit_watch());
        }

        let mut first = live.first_output_watch();
        let mut exit = live.exit_watch();
        let started =
            tokio::time::timeout(Duration::from_millis(plan.watch.first_output_ms), async {
                tokio::select! {
                    _ = first.wait_for(|v| *v) => {}
                    _ = exit.wait_for(|e| e.is_some()) => {}
                }
            })
            .await;
        let answered_in_time = started.is_ok();
        if let (true, Some(settle_ms)) = (answered_in_time, plan.watch.settle_ms) {
            // It has booted: the next pane may fork while this one settles.
            slot.release();
            // An agent that fails its login prints and exits at once: give it
            // a moment so that counts as a failed start, not a live session.
            let settle = Duration::from_millis(settle_ms);
            let _ = tokio::time::timeout(settle, exit.wait_for(|e| e.is_some())).await;
        }
        let exited = live.exited().map(|code| {
            let screen = live.text();
            EarlyExit {
                code,
                last_line: live.last_line().unwrap_or_default(),
                auth_failure: self.start_rules.looks_like_auth_failure(
                    self.providers.get(),
                    &meta.provider,
                    &screen,
                    code,
                ),
                refused_resume: facts.meta.durable_provider_id().and_then(|psid| {
                    hangar_providers::adapter(&meta.provider).refused_resume(
                        id.short(),
                        psid,
                        &screen,
                    )
                }),
            }
        });
        let verdict = launch_plan::judge_start(&StartFacts {
            program,
            short: id.short().to_owned(),
            watch: plan.watch,
            answered_in_time,
            exited,
        });
        match verdict {
            StartVerdict::Started => Ok(()),
            StartVerdict::Failed(refusal) => Err(refusal.into()),
            StartVerdict::StopAndFail(refusal) => {
                self.stop_process(&live).await;
                Err(refusal.into())
            }
        }
    }

    /// Everything `id`'s start depends on, gathered once: the adapter's
    /// command (with the MCP config and the CLI's version facts), its hook
    /// settings, its resume refusal, the folder, the proxy grant, the
    /// settings. Also the dangerous flag it starts with, which the launch
    /// records.
    async fn launch_facts(
        &self,
        id: &SessionId,
        proxy_grant: Option<&hangar_proxy::Grant>,
    ) -> Result<(LaunchFacts, bool), SpawnFailure> {
        // Claude Code hooks that report activity (issue 11), written off the
        // lock; in a sandbox they call hangar back through the session's own
        // socket, and the settings turn claude's own sandbox off.
        let sandboxed = self.sessions.meta(id).is_some_and(|m| m.sandbox.is_some());
        let hook_settings = {
            let provider = self.sessions.provider_of(id);
            provider.and_then(|p| self.monitor.hook_settings(id, &p, sandboxed))
        };
        // Codex's command line depends on its version (issue 16 defect 4).
        let cli_facts = match self.sessions.provider_of(id) {
            Some(p) => {
                self.cli_probe
                    .cli_facts_before_start(&p, self.providers.get(), &self.sessions)
                    .await
            }
            None => None,
        };
        let (meta, dangerous) = self.sessions.launch_facts(id);
        let mut meta = meta.ok_or_else(|| {
            SpawnFailure::new(FailureKind::Other, format!("session {id} no longer exists"))
        })?;
        // First: the account's folder decides where its transcripts are.
        let account = meta
            .account
            .clone()
            .map(|name| self.account_start(&mut meta, &name));
        let adapter = hangar_providers::adapter(&meta.provider);
        let resume_refusal = meta
            .durable_provider_id()
            .and_then(|psid| adapter.resume_refusal(id.short(), psid));
        let var = |k: &str| std::env::var(k).ok();
        let mint = || uuid::Uuid::new_v4().to_string();
        // A fork starts from its origin until its own conversation exists
        // (issue 30; `hangar_core::fork`).
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
        // Not built for a resume the CLI refuses: building it mints the
        // session's MCP token.
        let command = match launch_spec(&meta, &env) {
            _ if resume_refusal.is_some() => Err(String::new()),
            Ok(spec) => {
                let spec = self.mcp.with_mcp(&meta, spec);
                let spec = hangar_providers::launch::with_cli_facts(
                    spec,
                    &meta.provider,
                    cli_facts.as_ref(),
                );
                Ok(LaunchCommand {
                    program: spec.program,
                    args: spec.args,
                    env: spec.env.into_iter().collect(),
                    resumed: spec.resumed,
                    minted: spec.minted,
                })
            }
            Err(e) => Err(hangar_providers::failure_reason::launch_failure(
                &e,
                &meta.provider,
                &self.paths.home,
                id.short(),
            )),
        };
        let hook_settings_args = hook_settings
            .as_ref()
            .map(|settings| adapter.hook_settings_args(settings))
            .unwrap_or_default();
        let restore = self.restore.get();
        let facts = LaunchFacts {
            resume_refusal,
            command,
            folder: folder_check(Path::new(&meta.cwd)),
            hook_settings_args,
            home: self.paths.home.display().to_string(),
            proxy: proxy_grant.map(|g| ProxyGrantFacts {
                env: g.env.clone(),
                captured_hosts: g.captured_hosts.clone(),
            }),
            inherited_no_proxy: std::env::var("NO_PROXY")
                .ok()
                .or_else(|| std::env::var("no_proxy").ok()),
            spawn_timeout_secs: restore.spawn_timeout_secs,
            settle_ms: restore.settle_ms,
            account,
            meta,
        };
        Ok((facts, dangerous))
    }

    /// What account `name` adds to `meta`'s start, or why it cannot be
    /// used. Its config folder is read as config.toml says now: when that
    /// is not where the session's conversation is (the account's `folder`
    /// was edited), the conversation is carried there before the start.
    fn account_start(
        &self,
        meta: &mut hangar_core::SessionMeta,
        name: &str,
    ) -> Result<Vec<(String, String)>, String> {
        let accounts = self.accounts.get();
        let folder = crate::account_folders::folder_under(accounts, Some(name), meta)
            .map_err(|e| e.to_string())?;
        if folder.as_deref() != meta.state_folder.as_deref() {
            crate::account_folders::carry_to(meta, folder.as_deref())?;
            self.sessions
                .set_state_folder(&meta.id, folder.as_deref())
                .map_err(|e| e.message)?;
            meta.state_folder = folder.map(Box::from);
        }
        let var = hangar_providers::config_folder_var(&meta.provider);
        let account = hangar_core::accounts::account_for(accounts, name, &meta.provider, var)
            .map_err(|e| e.to_string())?;
        Ok(hangar_core::accounts::account_env(account, var))
    }
}

/// What a session's folder is, looked at just before its start.
fn folder_check(cwd: &Path) -> FolderCheck {
    if cwd.is_dir() {
        return FolderCheck::Folder;
    }
    match std::fs::metadata(cwd) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FolderCheck::NotFound,
        Err(e) => FolderCheck::Unusable(e.to_string()),
        Ok(_) => FolderCheck::NotAFolder,
    }
}
