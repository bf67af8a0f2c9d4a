//! Starting and stopping session processes: wake (single-flight), spawn with
//! a start timeout, graceful stop of a whole process group.
//!
//! Wake is single-flight (DESIGN.md rule 6): the first caller marks the
//! session `spawning` under the state lock and spawns; every concurrent caller
//! sees `spawning` and waits for the state to change instead of spawning a
//! second process.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_protocol::message::codes;

use crate::Daemon;
use crate::journal::{Caller, Event, FailureKind};
use crate::provider::{LaunchEnv, launch_spec};
use crate::pty::{DEFAULT_COLS, DEFAULT_ROWS, LiveProcess, SpawnRequest};
use crate::state::{ApiError, RunState};
use hangar_core::governor::WakePriority;

/// How long a process group gets between SIGTERM and SIGKILL.
///
/// Longer than Claude Code's own shutdown: on SIGTERM it drains its pending
/// writes (the transcript among them) and runs its SessionEnd hooks, and
/// only forces its exit after max(5 s, hook timeout + 3.5 s) (read in the
/// shipped 2.1.197). With 3 s, a hibernate right after an answer on a busy
/// machine killed it mid-flush and the next wake found "No conversation".
/// Only a process that does not exit by itself waits this long.
const STOP_GRACE: Duration = Duration::from_secs(6);
/// A shell or custom command that neither printed nor exited within this
/// window counts as started (it may legitimately print nothing).
const QUIET_START: Duration = Duration::from_millis(300);

impl Daemon {
    /// Make `id` live on behalf of a person at the command line.
    pub async fn wake(self: &Arc<Self>, id: &SessionId) -> Result<RunState, ApiError> {
        self.wake_as(id, Caller::Cli).await
    }

    /// Make `id` live, joining a spawn already under way. Returns the state
    /// the session ended in (`Live`, or `Failed` with its reason).
    pub async fn wake_as(
        self: &Arc<Self>,
        id: &SessionId,
        caller: Caller,
    ) -> Result<RunState, ApiError> {
        let mut joined = false;
        let mut requested = false;
        // The state before this wake marked it spawning, to go back to when
        // a paused queue refuses a person's wake.
        let before = loop {
            let mut rx = {
                let mut st = self.lock();
                if st.shutting_down {
                    return Err(ApiError::new(
                        codes::SHUTTING_DOWN,
                        "the daemon is shutting down",
                    ));
                }
                if !st.ws.sessions.contains_key(id) {
                    return Err(ApiError::not_found(format!("no session {id}")));
                }
                crate::identity::refuse_duplicate_wake(&st, id)?;
                let rt = st.runtime(id);
                if !requested && rt.state != RunState::Live {
                    requested = true;
                    self.journal.record(Event::WakeRequest {
                        session: id.to_string(),
                        caller,
                    });
                }
                match &rt.state {
                    RunState::Live => return Ok(RunState::Live),
                    RunState::Spawning => rt.changed.subscribe(),
                    // The spawn we joined failed: report it, don't start another.
                    other if joined => return Ok(other.clone()),
                    _ => {
                        // A person is told at once, never left waiting
                        // silently behind an open breaker.
                        if caller.is_person() && self.queue.snapshot().breaker_open {
                            return Err(self.queue_paused_error());
                        }
                        let before = rt.state.clone();
                        rt.set_state(RunState::Spawning);
                        break before;
                    }
                }
            };
            // Another caller is spawning this session: wait for its outcome.
            joined = true;
            if rx.changed().await.is_err() {
                return Err(ApiError::internal("session runtime went away"));
            }
        };
        let state = match self.spawn_marked(id, caller).await {
            Ok(state) => state,
            Err(paused) => {
                if let Some(rt) = self.lock().runtimes.get_mut(id) {
                    rt.set_state(before);
                }
                self.journal.record(Event::WakeResult {
                    session: id.to_string(),
                    caller,
                    ok: false,
                    joined: false,
                });
                return Err(paused);
            }
        };
        self.journal.record(Event::WakeResult {
            session: id.to_string(),
            caller,
            ok: state == RunState::Live,
            joined: false,
        });
        if state == RunState::Live && caller != Caller::Restore {
            let protect = std::collections::BTreeSet::from([id.clone()]);
            self.enforce_budget_now(&protect).await;
        }
        Ok(state)
    }

    /// Spawn a session already marked `Spawning` by the caller, through the
    /// wake queue. A person's wake is refused (not queued) while the breaker
    /// is open.
    async fn spawn_marked(
        self: &Arc<Self>,
        id: &SessionId,
        caller: Caller,
    ) -> Result<RunState, ApiError> {
        let slot = match caller {
            // Restore has its own concurrency bound; it only honours the breaker.
            Caller::Restore => self.queue.acquire_breaker_only().await,
            Caller::Agent => self.queue.acquire(WakePriority::Background).await,
            _ => self.queue.acquire(WakePriority::Person).await,
        };
        let Some(slot) = slot else {
            return Err(self.queue_paused_error());
        };
        let begun = std::time::Instant::now();
        let mut outcome = self.try_spawn(id).await;
        let auth = matches!(&outcome, Err(f) if f.kind == FailureKind::AuthFailure);
        if self.queue.finish(slot, auth) {
            let failures = self.config.governor.breaker_threshold;
            tracing::warn!("{failures} consecutive authentication failures: wake queue paused");
            self.journal.record(Event::BreakerTrip { failures });
            if let Err(f) = &mut outcome {
                f.message.push_str(&format!(
                    "; that is {failures} authentication failures in a row, so the wake queue is now paused: log in again, then `hangar wake --resume-queue`"
                ));
            }
        }
        let mut st = self.lock();
        let rt = st.runtime(id);
        let state = match outcome {
            Ok(()) => {
                let pid = rt.proc.as_ref().map(|p| p.pid).unwrap_or(0);
                self.journal.record(Event::SpawnEnd {
                    session: id.to_string(),
                    pid,
                    duration_ms: begun.elapsed().as_millis() as u64,
                });
                RunState::Live
            }
            Err(failure) => {
                rt.proc = None;
                self.journal.record(Event::SpawnFailed {
                    session: id.to_string(),
                    kind: failure.kind,
                    exit_code: failure.exit_code,
                });
                RunState::Failed(failure.message)
            }
        };
        rt.set_state(state.clone());
        Ok(state)
    }

    /// The answer to a person's wake while the breaker holds the queue.
    fn queue_paused_error(&self) -> ApiError {
        let failures = self.queue.snapshot().consecutive_auth_failures;
        ApiError::new(
            codes::FAILED,
            format!(
                "the wake queue is paused after {failures} consecutive authentication failures; log in to the provider again, then run `hangar wake --resume-queue`"
            ),
        )
    }

    async fn try_spawn(self: &Arc<Self>, id: &SessionId) -> Result<(), SpawnFailure> {
        // Proxy credentials for this process (issue 7); revoked when dropped.
        let proxy_grant = self.proxy_grant(id).await?;
        // Claude Code hooks that report activity (issue 11), written off the lock.
        let hook_settings = {
            let provider = self.lock().ws.sessions.get(id).map(|m| m.provider.clone());
            provider.and_then(|p| self.hook_settings(id, &p))
        };
        // Codex's command line depends on its version (issue 16 defect 4).
        let cli_facts = {
            let provider = self.lock().ws.sessions.get(id).map(|m| m.provider.clone());
            match provider {
                Some(p) => self.cli_facts_before_start(&p).await,
                None => None,
            }
        };
        // A claude conversation held by Claude Code's own background-agent
        // supervisor refuses --resume (issue 16 defect 9): say so, and what
        // to do, instead of starting a claude that exits at once.
        let claude_resume = {
            let st = self.lock();
            st.ws
                .sessions
                .get(id)
                .filter(|m| m.provider == hangar_core::Provider::Claude)
                .and_then(|m| m.durable_provider_id().map(str::to_owned))
        };
        if let Some(psid) = &claude_resume
            && let Some(holder) = crate::claude_bg::holder(psid)
        {
            return Err(SpawnFailure::new(
                FailureKind::Other,
                crate::claude_bg::reason(short(id), psid, Some(&holder)),
            ));
        }
        let (request, resumed, provider, title) = {
            let mut st = self.lock();
            let dangerous = st.ws.settings.dangerous;
            let meta = st.ws.sessions.get(id).cloned().ok_or_else(|| {
                SpawnFailure::new(FailureKind::Other, format!("session {id} no longer exists"))
            })?;
            let var = |k: &str| std::env::var(k).ok();
            let mint = || uuid::Uuid::new_v4().to_string();
            let env = LaunchEnv {
                config: &self.config,
                var: &var,
                dangerous,
                mint: &mint,
            };
            let describe = |m: &hangar_core::SessionMeta| {
                if m.title.is_empty() {
                    format!("cannot start {}", short(&m.id))
                } else {
                    format!("cannot start {} (title {:?})", short(&m.id), m.title)
                }
            };
            let spec = launch_spec(&meta, &env).map_err(|e| {
                SpawnFailure::new(
                    FailureKind::ProgramMissing,
                    format!(
                        "{}: {}",
                        describe(&meta),
                        crate::failure_reason::launch_failure(
                            &e,
                            &meta.provider,
                            &self.paths.home,
                            short(id)
                        )
                    ),
                )
            })?;
            let spec = self.with_orchestration_mcp(&meta, spec);
            let spec = crate::provider::codex_in_process(
                spec,
                &meta.provider,
                cli_facts.as_ref().is_some_and(|f| f.no_daemon),
            );
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
            let mut changed = false;
            if let Some(minted) = spec.minted.clone()
                && let Some(m) = st.ws.sessions.get_mut(id)
            {
                m.provider_session = Some(minted);
                changed = true;
            }
            if let Some(m) = st.ws.sessions.get_mut(id)
                && m.dangerous != dangerous
            {
                m.dangerous = dangerous;
                changed = true;
            }
            if changed {
                st.save(&[])
                    .map_err(|e| SpawnFailure::new(FailureKind::Other, e.message))?;
            }
            let mut env_vars: Vec<(String, String)> = spec.env.into_iter().collect();
            env_vars.push(("TERM".into(), "xterm-256color".into()));
            env_vars.push(("HANGAR_SESSION_ID".into(), id.to_string()));
            env_vars.push(("HANGAR_HOME".into(), self.paths.home.display().to_string()));
            if let Some(g) = &proxy_grant {
                env_vars.extend(g.env.iter().cloned());
            }
            // Loopback never goes through a proxy: a local model server,
            // codex's own loopback traffic (issue 16 defect 7).
            let no_proxy = crate::provider::no_proxy_with_loopback(
                std::env::var("NO_PROXY")
                    .ok()
                    .or_else(|| std::env::var("no_proxy").ok())
                    .as_deref(),
            );
            env_vars.push(("NO_PROXY".into(), no_proxy.clone()));
            env_vars.push(("no_proxy".into(), no_proxy));
            let mut args = spec.args;
            if let Some(settings) = &hook_settings {
                args.extend(["--settings".to_owned(), settings.display().to_string()]);
            }
            // The last screen and history it had, kept above what the new
            // process prints (a read failure only loses that history).
            let resume = st.store.load_screen(id).unwrap_or_else(|e| {
                tracing::warn!(session = %id, "cannot read the saved screen: {e}");
                None
            });
            let request = SpawnRequest {
                program: spec.program,
                args,
                cwd,
                env: env_vars,
                rows: DEFAULT_ROWS,
                cols: DEFAULT_COLS,
                terminal: self.config.terminal.model(),
                resume,
            };
            (
                request,
                spec.resumed,
                meta.provider.clone(),
                meta.title.clone(),
            )
        };
        let program = request.program.display().to_string();
        self.journal.record(Event::SpawnBegin {
            session: id.to_string(),
            resumed,
        });
        let live = LiveProcess::spawn(request).map_err(|e| {
            SpawnFailure::new(
                FailureKind::SpawnError,
                format!(
                    "cannot start {} (title {title:?}): {program}: {e}",
                    short(id)
                ),
            )
        })?;
        let start_time = self.os.start_time(live.pid).unwrap_or(0);
        {
            let mut st = self.lock();
            if let Err(e) = st
                .store
                .record_process(id, live.pid, live.pgid(), start_time)
            {
                tracing::warn!("could not record pid of {id}: {e}");
            }
            let rt = st.runtime(id);
            rt.proc = Some(live.clone());
            rt.resumed = Some(resumed);
        }
        self.watch_exit(id.clone(), live.clone());
        self.watch_identity(id.clone(), live.clone());
        self.watch_opencode_identity(id.clone(), live.clone());
        self.watch_activity(id.clone(), live.clone());
        if let Some(g) = proxy_grant {
            self.hold_grant_until_exit(g, live.exit_watch());
        }

        let mut first = live.first_output_watch();
        let mut exit = live.exit_watch();
        let timeout = if provider.is_agent() {
            self.config.spawn_timeout()
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
            // An agent that fails its login prints and exits at once: give it
            // a moment so that counts as a failed start, not a live session.
            let _ = tokio::time::timeout(QUIET_START, exit.wait_for(|e| e.is_some())).await;
        }
        if let Some(code) = live.exited() {
            let screen = live.text();
            let auth =
                crate::governor::looks_like_auth_failure(&self.config, &provider, &screen, code);
            let last = live.last_line().unwrap_or_default();
            if let Some(psid) = &claude_resume
                && crate::claude_bg::refused_on_screen(&screen)
            {
                let holder = crate::claude_bg::holder(psid);
                return Err(SpawnFailure {
                    kind: FailureKind::ExitedDuringStart,
                    message: crate::claude_bg::reason(short(id), psid, holder.as_ref()),
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
                    short(id)
                ),
            ));
        }
        Ok(())
    }

    /// When the process exits on its own, mark the session `exited` and keep
    /// its last screen.
    fn watch_exit(self: &Arc<Self>, id: SessionId, live: Arc<LiveProcess>) {
        let daemon = self.clone();
        tokio::spawn(async move {
            let mut exit = live.exit_watch();
            let code = match exit.wait_for(|e| e.is_some()).await {
                Ok(code) => code.unwrap_or(-1),
                Err(_) => return,
            };
            // Stragglers of the group (children that outlived the leader).
            daemon.os.signal_group(live.pgid(), libc::SIGKILL);
            daemon.end_strays(id.as_str(), &live).await;
            let screen = live.formatted();
            let mut st = daemon.lock();
            let _ = st.store.forget_process(&id);
            let is_current = st
                .runtimes
                .get(&id)
                .and_then(|r| r.proc.as_ref())
                .is_some_and(|p| Arc::ptr_eq(p, &live));
            if !is_current {
                return;
            }
            if st.ws.sessions.contains_key(&id) {
                let now = crate::now_ms();
                let _ = st.store.save_screen(&id, &screen, now);
            }
            let rt = st.runtime(&id);
            rt.proc = None;
            if rt.state == RunState::Live {
                rt.set_state(RunState::Exited(code));
                daemon.journal.record(Event::Exited {
                    session: id.to_string(),
                    code,
                });
            }
        });
    }

    /// End a process group: SIGTERM, then SIGKILL after a grace period.
    /// Returns once the leader has been reaped.
    pub async fn stop_process(&self, live: &Arc<LiveProcess>) {
        // Read while the leader runs: what it left outside its group is
        // found by the session id it was given.
        let session = crate::strays::session_of(live.pid as i32);
        let mut exit = live.exit_watch();
        if live.exited().is_none() {
            self.os.signal_group(live.pgid(), libc::SIGTERM);
            self.os.signal_group(live.pgid(), libc::SIGHUP);
            // A group stopped with SIGSTOP would only see those after the
            // grace period's SIGKILL: let it run, so it can exit cleanly now.
            self.os.signal_group(live.pgid(), libc::SIGCONT);
            let graceful = tokio::time::timeout(STOP_GRACE, exit.wait_for(|e| e.is_some()))
                .await
                .is_ok();
            if !graceful {
                self.os.signal_group(live.pgid(), libc::SIGKILL);
                let _ = tokio::time::timeout(STOP_GRACE, exit.wait_for(|e| e.is_some())).await;
            }
        }
        self.os.signal_group(live.pgid(), libc::SIGKILL);
        if let Some(session) = session {
            self.end_strays(&session, live).await;
        }
    }

    /// End what session `session`'s process `stopped` started outside its
    /// process group (codex's shared app-server), sparing a newer process
    /// of the same session.
    async fn end_strays(&self, session: &str, stopped: &Arc<LiveProcess>) {
        let spare = {
            let st = self.lock();
            st.runtimes
                .get(&SessionId::from(session))
                .and_then(|r| r.proc.as_ref())
                .filter(|p| !Arc::ptr_eq(p, stopped))
                .map(|p| p.pgid() as i32)
        };
        crate::strays::end(session, &self.paths.home, spare).await;
    }

    /// Stop a session's process (if any) and mark it hibernated, keeping its
    /// last screen.
    pub async fn hibernate_session(self: &Arc<Self>, id: &SessionId) -> Result<(), ApiError> {
        // Wait out a spawn in progress so we stop the process it makes.
        loop {
            let mut rx = {
                let mut st = self.lock();
                if !st.ws.sessions.contains_key(id) {
                    return Err(ApiError::not_found(format!("no session {id}")));
                }
                let rt = st.runtime(id);
                if rt.state != RunState::Spawning {
                    break;
                }
                rt.changed.subscribe()
            };
            let _ = rx.changed().await;
        }
        let live = {
            let mut st = self.lock();
            let rt = st.runtime(id);
            let live = rt.proc.take();
            rt.set_state(RunState::Hibernated);
            live
        };
        if let Some(live) = live {
            let screen = live.formatted();
            self.note_identity_before_stop(id, &live);
            self.stop_process(&live).await;
            let mut st = self.lock();
            let _ = st.store.save_screen(id, &screen, crate::now_ms());
            let _ = st.store.forget_process(id);
        }
        Ok(())
    }
}

/// Why a spawn failed: a category for the journal and the breaker, and a
/// message for the person.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnFailure {
    pub kind: FailureKind,
    pub message: String,
    pub exit_code: Option<i32>,
}

impl SpawnFailure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> SpawnFailure {
        SpawnFailure {
            kind,
            message: message.into(),
            exit_code: None,
        }
    }
}

/// The first 8 characters of an id, as people see it in `ls`.
pub fn short(id: &SessionId) -> &str {
    let s = id.as_str();
    s.get(..8).unwrap_or(s)
}
