//! hangar-daemon: the server that owns every session's PTY.
//!
//! One daemon per `HANGAR_HOME` (a lock file enforces it). At start it checks
//! the store and takes a first look at its visible panes, ends agents a
//! killed predecessor left behind, forks those panes, loads every other
//! session beside the forks, and only then serves the control socket, until
//! `shutdown` or a signal, when it ends every live session's process group
//! and exits with the workspace saved.

// No unsafe code, but for the one `pre_exec` of a sandboxed launch
// (`pty::spawn_real_pty`), the one that ties hangar's own Podman service
// to the daemon's life (`engines::podman_service`) and the descriptors a
// bridge passes (`server::link::recv_fds`), allowed there alone.
#![deny(unsafe_code)]

pub mod account_folders;
pub mod activity;
pub mod cli_probe;
pub mod config;
#[cfg(test)]
mod config_reference;
pub mod delivery;
pub mod engines;
pub mod errors;
pub mod eviction;
pub mod file_watch;
pub mod governor;
pub mod handlers;
pub mod home_watch;
pub mod identity;
pub mod journal;
pub mod lifecycle;
pub mod orchestration;
pub mod os;
pub mod places;
pub mod proxy_observer;
pub mod pty;
pub mod reload;
pub mod review;
pub mod sandbox;
pub mod section;
pub mod server;
pub mod sessions;
pub mod shutdown;
pub mod spawn;
pub mod spawn_failure;
pub mod strays;
pub mod tmux_adoption;
pub mod transfer;
pub mod usage;
pub mod worktree;

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, bail};
use hangar_core::{SessionId, restore_plan};
use hangar_store::Store;
use tokio::sync::watch;

pub use crate::config::Config;
pub use crate::os::{now_ms, wall_ms};
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;
pub use hangar_protocol::paths::{self, Paths};

/// The daemon: the shared pieces and the subsystems built on them, which
/// handlers and the server use. Each subsystem holds only the pieces it
/// needs; they are layered without cycles (see ARCHITECTURE.md): the leaves
/// (activity, identity, the CLI probe, worktrees, proxy grants,
/// orchestration's tokens), delivery on activity and identity, the spawner
/// on the leaves, the governor on the spawner, the agent tools on top.
pub struct Daemon {
    pub paths: Paths,
    /// The settings in use; `hangar reload` reads config.toml again. A
    /// request takes one snapshot of it.
    pub config: Arc<config::LiveConfig>,
    /// `[attach]`, read by the server at each attach (it never sees the
    /// whole config).
    pub attach_settings: section::Section<server::AttachConfig>,
    /// The clock, signals and process facts (a fake in unit tests).
    pub os: Arc<dyn os::Os>,
    pub journal: Arc<journal::Journal>,
    pub queue: Arc<spawn::queue::WakeQueue>,
    /// The recording proxy shared by every session; started lazily.
    pub proxy: Arc<hangar_proxy::Proxy>,
    /// Every session's activity (working, waiting, idle) and its viewers.
    pub activity: Arc<activity::Hub>,
    /// The workspace model, the store and every session's runtime.
    pub sessions: Arc<Sessions>,
    /// What each session is doing, read from its sources.
    pub monitor: Arc<activity::Monitor>,
    /// Which provider conversation each session is.
    pub identity: Arc<identity::Identity>,
    /// Installed agent CLIs' versions and flags.
    pub cli_probe: Arc<cli_probe::CliProbe>,
    pub worktrees: Arc<worktree::Worktrees>,
    /// Typing prompts into sessions and confirming their turns.
    pub delivery: Arc<delivery::Delivery>,
    /// Wake (without the budget), launch, stop, hibernate, restore.
    pub spawner: Arc<spawn::Spawner>,
    /// The budget, waking with room made, evict, close-idle, close.
    pub governor: Arc<governor::Governor>,
    /// The MCP tools agents call.
    pub agents: Arc<orchestration::AgentTools>,
    /// The one folder watcher (inotify) every session's watchers share.
    pub files: Arc<file_watch::FileWatcher>,
    /// The usage ledger and every session's usage limit (issue 29).
    pub usage: Arc<usage::Ledger>,
    /// Types the continuation prompt after a limit resets.
    pub continuation: Arc<usage::continuation::Continuation>,
    /// Goals: continuing an agent at each end of turn (`hangar goal`).
    pub goals: Arc<usage::goals::Goals>,
    /// Cost budgets: `[usage] max_cost_usd_per_day` and `--max-cost`.
    pub budgets: Arc<usage::budget::Budgets>,
    /// Reads limit words off agents' screens.
    pub screen_words: Arc<usage::screen_words::ScreenWords>,
    /// Reads usage and limits from the agents' own records (Claude and
    /// Codex transcripts, OpenCode's database).
    pub transcripts: Arc<usage::transcripts::Transcripts>,
    shutdown: Shutdown,
    /// The container engines sessions run on (`[engines.NAME]`).
    pub engines: Arc<engines::Engines>,
    /// The sandbox's settings and what it learned of this machine; each
    /// sandboxed session's socket back to the daemon (issue 32).
    pub sandbox: Arc<sandbox::Sandbox>,
    /// Where sessions run: this machine, the sandbox, an engine (issue 43).
    pub places: Arc<places::Places>,
}

impl Daemon {
    /// Build the daemon's parts for `paths` with `config` and the sessions
    /// loaded from its store; nothing is started.
    pub fn new(paths: Paths, config: Config, os: Arc<dyn os::Os>, sessions: Sessions) -> Daemon {
        let sessions = Arc::new(sessions);
        let journal = Arc::new(
            journal::Journal::new(paths.home.join("journal.jsonl")).with_clock(os.clone()),
        );
        let queue = Arc::new(spawn::queue::WakeQueue::with_clock(
            config.governor.queue_limits(),
            os.clone(),
        ));
        let proxy = Arc::new(hangar_proxy::Proxy::new(
            config.proxy.clone(),
            paths.home.clone(),
        ));
        let activity = Arc::new(activity::Hub::new(&config.activity, os.clone()));
        // One inotify watcher for every session's watchers and the home's.
        let files = Arc::new(file_watch::FileWatcher::default());
        let orchestration = Arc::new(orchestration::Orchestration::new(
            paths.home.clone(),
            os.clone(),
        ));
        let shutdown = Shutdown::default();
        let governor_config = config.governor.clone();
        let activity_config = config.activity.clone();
        let config = Arc::new(config::LiveConfig::new(config));

        let monitor = Arc::new(activity::Monitor {
            sessions: sessions.clone(),
            activity: activity.clone(),
            settings: activity_config,
            notify: config.section(|c| &c.notify),
            paths: paths.clone(),
            shutdown: shutdown.clone(),
            files: files.clone(),
            clock: os.clone(),
        });
        let identity = Arc::new(identity::Identity::new(
            sessions.clone(),
            files.clone(),
            activity.clone(),
            os.clone(),
        ));
        let cli_probe = Arc::new(cli_probe::CliProbe::default());
        let worktrees = Arc::new(worktree::Worktrees::new(
            sessions.clone(),
            paths.clone(),
            os.clone(),
        ));
        let usage = Arc::new(usage::Ledger::new(
            paths.store(),
            sessions.clone(),
            journal.clone(),
            activity.clone(),
            config.section(|c| &c.notify),
            config.section(|c| &c.limits),
            &config.snapshot().usage,
            os.clone(),
        ));
        let grants = Arc::new(proxy_observer::ProxyGrants::new(
            sessions.clone(),
            proxy.clone(),
            activity.clone(),
            identity.clone(),
            usage.report_sender(),
        ));
        let delivery = Arc::new(delivery::Delivery::new(
            sessions.clone(),
            monitor.clone(),
            identity.clone(),
            os.clone(),
        ));
        let engines = Arc::new(engines::Engines::new(
            paths.home.clone(),
            config.section(|c| &c.engines),
        ));
        let sandbox = Arc::new(sandbox::Sandbox::new(
            paths.home.clone(),
            config.section(|c| &c.sandbox),
        ));
        let places = Arc::new(places::Places::new(
            os.clone(),
            sandbox.clone(),
            engines.clone(),
        ));
        // What happens to a session's process, announced by the spawner;
        // the subsystems that follow a session's life listen.
        let lifecycle = Arc::new(lifecycle::Lifecycle::default());
        {
            let (identity, monitor, delivery) =
                (identity.clone(), monitor.clone(), delivery.clone());
            lifecycle.listen(move |event| match event {
                lifecycle::LifecycleEvent::Started {
                    session,
                    live,
                    spawned_ms,
                } => {
                    identity.watch_identity(session.clone(), live.clone(), *spawned_ms);
                    identity.watch_opencode_identity(session.clone(), live.clone(), *spawned_ms);
                    monitor.watch_activity(session.clone(), live.clone());
                }
                lifecycle::LifecycleEvent::Stopping { session, live } => {
                    identity.note_identity_before_stop(session, live)
                }
                lifecycle::LifecycleEvent::Woke { session } => {
                    delivery.deliver_pending_handoff(session)
                }
                _ => {}
            });
        }
        let spawner = Arc::new(spawn::Spawner {
            places: places.clone(),
            paths: paths.clone(),
            sessions: sessions.clone(),
            journal: journal.clone(),
            os: os.clone(),
            queue: queue.clone(),
            monitor: monitor.clone(),
            cli_probe: cli_probe.clone(),
            grants,
            mcp: Arc::new(orchestration::McpForLaunches {
                orchestration: orchestration.clone(),
                mcp: config.section(|c| &c.mcp),
            }),
            start_rules: governor_config.start_rules(),
            providers: config.section(|c| &c.providers),
            accounts: config.section(|c| &c.accounts),
            restore: config.section(|c| &c.restore),
            terminal: config.section(|c| &c.terminal),
            lifecycle,
        });
        let governor = Arc::new(governor::Governor {
            paths: paths.clone(),
            sessions: sessions.clone(),
            journal: journal.clone(),
            os: os.clone(),
            activity: activity.clone(),
            monitor: monitor.clone(),
            spawner: spawner.clone(),
            places: places.clone(),
            worktrees: worktrees.clone(),
            orchestration: orchestration.clone(),
            mcp: config.section(|c| &c.mcp),
            config: governor_config,
            shutdown: shutdown.clone(),
            budget: Default::default(),
            usage: usage.clone(),
            memory: Default::default(),
        });
        let agents = Arc::new(orchestration::AgentTools {
            sessions: sessions.clone(),
            journal: journal.clone(),
            orchestration,
            governor: governor.clone(),
            spawner: spawner.clone(),
            monitor: monitor.clone(),
            limits: usage.clone(),
            delivery: delivery.clone(),
            providers: config.section(|c| &c.providers),
            mcp: config.section(|c| &c.mcp),
            shutdown: shutdown.clone(),
            clock: os.clone(),
        });
        let continuation = Arc::new(usage::continuation::Continuation {
            ledger: usage.clone(),
            sessions: sessions.clone(),
            monitor: monitor.clone(),
            delivery: delivery.clone(),
            governor: governor.clone(),
            shutdown: shutdown.clone(),
            moving: Default::default(),
        });
        let goals = Arc::new(usage::goals::Goals {
            ledger: usage.clone(),
            sessions: sessions.clone(),
            monitor: monitor.clone(),
            activity: activity.clone(),
            delivery: delivery.clone(),
            governor: governor.clone(),
            journal: journal.clone(),
            shutdown: shutdown.clone(),
            changed: Default::default(),
        });
        let budgets = Arc::new(usage::budget::Budgets {
            ledger: usage.clone(),
            sessions: sessions.clone(),
            monitor: monitor.clone(),
            spawner: spawner.clone(),
            goals: goals.clone(),
            journal: journal.clone(),
            usage: config.section(|c| &c.usage),
            shutdown: shutdown.clone(),
            warned: Default::default(),
            spent: Default::default(),
        });
        let transcripts = Arc::new(usage::transcripts::Transcripts {
            ledger: usage.clone(),
            sessions: sessions.clone(),
            read: Default::default(),
            stored: Default::default(),
            exhausted: Default::default(),
            models: Default::default(),
        });
        let screen_words = Arc::new(usage::screen_words::ScreenWords {
            transcripts: transcripts.clone(),
            ledger: usage.clone(),
            sessions: sessions.clone(),
            monitor: monitor.clone(),
            shutdown: shutdown.clone(),
            seen: Default::default(),
        });
        Daemon {
            paths,
            attach_settings: config.section(|c| &c.attach),
            config,
            os,
            journal,
            queue,
            proxy,
            activity,
            sessions,
            monitor,
            identity,
            cli_probe,
            worktrees,
            delivery,
            spawner,
            governor,
            agents,
            files,
            usage,
            continuation,
            goals,
            budgets,
            screen_words,
            transcripts,
            shutdown,
            engines,
            sandbox,
            places,
        }
    }

    pub fn shutdown_watch(&self) -> watch::Receiver<bool> {
        self.shutdown.watch()
    }

    /// End every live session's process group, keep their last screens, save,
    /// and let the server loop finish.
    pub async fn shutdown(self: &Arc<Self>) {
        // The final save needs the whole model (a start's full load is
        // under way for a moment after the first forks).
        self.sessions.full_model().await;
        let lives = self.sessions.begin_shutdown();
        let Some(lives) = lives else {
            // Another caller is already shutting down: wait for it.
            let mut rx = self.shutdown_watch();
            let _ = rx.wait_for(|s| *s).await;
            return;
        };
        let stops = lives.iter().map(|(id, live)| async move {
            let screen = live.formatted();
            self.identity.note_identity_before_stop(id, live);
            self.spawner.stop_process(live).await;
            (id.clone(), screen)
        });
        let screens = futures::future::join_all(stops).await;
        // The sessions' containers are stopped (their bridges asked through
        // it): the Podman services hangar started end with the daemon.
        self.engines.end_services().await;
        let now = self.os.now_ms();
        for (id, screen) in screens {
            self.sessions.keep_stopped_screen(&id, &screen, now);
        }
        if let Err(e) = self.sessions.save_observed() {
            tracing::error!("final save failed: {}", e.message);
        }
        self.shutdown.finish();
    }

    /// Phase two of a start: read the rest of the store off the state lock
    /// (`hangar_store::read_rest`), install it as the whole model, count
    /// what stays hibernated and say what the load found. A pane the full
    /// plan has that the first look did not fork (only a damaged index
    /// does that) is restored now.
    fn load_the_rest(self: &Arc<Self>, forks: &[SessionId]) -> anyhow::Result<()> {
        // On this thread (the one `run` is driven on, not a runtime worker:
        // the forks go on beside it), so the workspace and the read's
        // garbage live in the allocator's main arena as a one-phase load's
        // did; a blocking-pool thread would leave its own arena holding
        // megabytes after the read.
        let read = hangar_store::read_rest(&self.paths.store()).map(|rest| {
            let duplicates = identity::duplicate_notices(rest.workspace());
            (rest, duplicates)
        });
        let (rest, duplicates) = read.with_context(|| {
            format!(
                "cannot load the workspace store {}",
                self.paths.store().display()
            )
        })?;
        let full = self.sessions.install_full_load(rest).with_context(|| {
            format!(
                "cannot load the workspace store {}",
                self.paths.store().display()
            )
        })?;
        let mut notices = Vec::new();
        if let Some(r) = &full.recovered {
            notices.push(damaged_store_notice(r));
        }
        if !full.pruned.is_empty() {
            notices.push(format!(
                "repaired the workspace on load: dropped {} unreferenced session(s)",
                full.pruned.dropped_sessions.len()
            ));
        }
        // A pane the full plan forks that the first look did not (its row
        // was not found by its key): only a damaged index does that, as it
        // does a pane row read differently by key and by scan.
        let missed: Vec<SessionId> = self
            .sessions
            .first_forks()
            .into_iter()
            .filter(|id| !forks.contains(id))
            .collect();
        let disagreeing: Vec<&str> = full
            .differing_rows
            .iter()
            .chain(&missed)
            .map(|id| id.as_str())
            .collect();
        if !disagreeing.is_empty() {
            let repair = match &full.reindexed {
                Some(Ok(())) => "; the index was rebuilt from the table".to_owned(),
                Some(Err(e)) => format!(
                    ". The index could not be rebuilt ({e}): the file may be damaged, \
                     `hangar export` keeps a copy"
                ),
                None => ". The file may be damaged: `hangar export` keeps a copy".to_owned(),
            };
            let msg = format!(
                "the store's index and table disagree about {} pane session(s) ({}); the \
                 table's rows are used{repair}",
                disagreeing.len(),
                disagreeing.join(", ")
            );
            tracing::warn!("{msg}");
            notices.push(msg);
        }
        notices.extend(duplicates);
        for line in notices {
            self.sessions.notice(line);
        }
        let all_forks: Vec<SessionId> = forks.iter().chain(&missed).cloned().collect();
        self.spawner.count_hibernated(&all_forks);
        if !missed.is_empty() {
            let to_spawn = self.spawner.adopt_first_forks(missed);
            let restorer = self.spawner.clone();
            tokio::spawn(async move { restorer.restore_spawn(to_spawn).await });
        }
        Ok(())
    }

    /// End every process this daemon started, saving nothing: for a start
    /// whose full load failed.
    async fn stop_without_saving(&self) {
        if let Some(lives) = self.sessions.begin_shutdown() {
            let stops = lives
                .iter()
                .map(|(_, live)| self.spawner.stop_process(live));
            futures::future::join_all(stops).await;
        }
        self.shutdown.finish();
    }

    /// End agents a previous daemon started and could not stop (it was
    /// killed). A pid is only signalled when its start time still matches
    /// the recorded one, so a reused pid is never touched.
    fn end_orphans(&self) {
        let recorded = match self.sessions.recorded_processes() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("cannot read recorded processes: {e}");
                return;
            }
        };
        for p in recorded {
            // The leader often dies of the terminal hangup while children it
            // started in its group (a dev server, a `sleep`) live on.
            if os::is_recorded_agent(self.os.as_ref(), p.pid, p.pgid, p.start_time) {
                tracing::info!("ending orphaned agent of {} (pid {})", p.session, p.pid);
                self.os.signal_group(p.pgid, libc::SIGKILL);
            }
            self.sessions.forget_process(&p.session);
        }
    }
}

/// Holds the per-home lock for as long as the daemon runs.
pub(crate) struct HomeLock {
    _file: File,
}

pub(crate) fn take_home_lock(paths: &Paths) -> anyhow::Result<HomeLock> {
    let path = paths.lock();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open lock file {}", path.display()))?;
    // std's `try_lock` is flock(LOCK_EX | LOCK_NB) on Linux, so an older
    // daemon holding the lock through libc still excludes this one.
    let try_lock = || match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    };
    let mut locked = try_lock()?;
    // A daemon just killed (SIGKILL, a crash) shows as gone, a zombie or no
    // process at all, while its last threads are still exiting and its files,
    // the lock among them, are not closed yet: a start right after it waits
    // a moment for the lock instead of refusing with a dead pid.
    let dying_since = std::time::Instant::now();
    while !locked
        && !holder_is_running(&path)
        && dying_since.elapsed() < std::time::Duration::from_secs(5)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
        locked = try_lock()?;
    }
    if !locked {
        bail!(
            "a hangar daemon is already running for {} ({}); use it, or stop it with `hangar shutdown`",
            paths.home.display(),
            lock_holder(&path)
        );
    }
    file.set_len(0)?;
    write!(file, "{}", std::process::id())?;
    file.flush()?;
    Ok(HomeLock { _file: file })
}

/// Whether the pid written in the lock file is a running process (not a
/// zombie). An unreadable pid counts as running: it may be a daemon started
/// this instant that has not written it yet.
fn holder_is_running(path: &std::path::Path) -> bool {
    let Ok(pid) = std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .parse::<u32>()
    else {
        return true;
    };
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Who holds the home lock, as "pid N". A daemon started at the same
/// instant may hold the lock but not have written its pid yet, so the file
/// is read again for a moment before giving up on the number.
fn lock_holder(path: &std::path::Path) -> String {
    for _ in 0..50 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<u32>() {
            return format!("pid {pid}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    "its pid is not recorded yet".to_owned()
}

/// Run the daemon in the foreground until it is shut down.
pub async fn run(paths: Paths) -> anyhow::Result<()> {
    run_with(paths, |_| {}).await
}

/// `run`, handing `watch_far_hosts` the notifier of other hosts' agents
/// (issue 47) once every session is loaded: the `hangar` binary holds the
/// ssh links (`remote::far_watch`).
pub async fn run_with(
    paths: Paths,
    watch_far_hosts: impl FnOnce(activity::far::FarNotifier),
) -> anyhow::Result<()> {
    paths::ensure_private_dir(&paths.home)
        .with_context(|| format!("cannot create {}", paths.home.display()))?;
    paths::ensure_private_dir(&paths.run_dir())
        .with_context(|| format!("cannot create {}", paths.run_dir().display()))?;
    let _lock = take_home_lock(&paths)?;
    // Anchor the daemon's clock now (see `now_ms`).
    now_ms();
    let config = Config::load(&paths.config())?;

    // Phase one: the whole-file check and a first look at what the restore
    // forks (the tabs and the visible panes' rows); the other sessions are
    // read after the forks (hangar-store's `first_look.rs`).
    let look = Store::open_first_look(&paths.store()).with_context(|| {
        format!(
            "cannot open the workspace store {}",
            paths.store().display()
        )
    })?;
    let mut notices = Vec::new();
    if let Some(r) = &look.recovered {
        notices.push(damaged_store_notice(r));
    }
    let forks = restore_plan::first_forks(&look.workspace);
    let daemon = Arc::new(Daemon::new(
        paths.clone(),
        config,
        Arc::new(os::RealOs),
        Sessions::first_look(look.workspace, look.store, notices),
    ));
    // Before any fork: an agent a killed predecessor left running must not
    // write a conversation a restored pane resumes.
    daemon.end_orphans();
    // Likewise for agents a predecessor left running in containers.
    daemon.engines.stop_leftovers().await;
    // The duplicate-identity check of these wakes sees only the visible
    // panes' sessions, and that is enough: it refuses a wake while another
    // *live* session holds the same conversation, and until the full load
    // only these panes can be live (no request is served, nothing else
    // wakes).
    let to_spawn = daemon.spawner.adopt_first_forks(forks.clone());
    let restorer = daemon.spawner.clone();
    tokio::spawn(async move { restorer.restore_spawn(to_spawn).await });
    // Once every session is known: remove this home's containers of
    // sessions it no longer has.
    let sweeper = daemon.clone();
    tokio::spawn(async move {
        sweeper.sessions.full_model().await;
        let removed = sweeper
            .engines
            .remove_unknown(|id| sweeper.sessions.meta(&SessionId::from(id)).is_some())
            .await;
        if removed > 0 {
            tracing::info!("removed {removed} container(s) of closed sessions");
        }
    });

    let signals = daemon.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("signal received; shutting down");
        signals.shutdown().await;
    });

    // Bound now so a client's connection waits in the backlog; served once
    // the model is whole.
    let socket = paths.socket();
    match std::fs::remove_file(&socket) {
        Ok(()) => tracing::info!("removed a stale socket {}", socket.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", socket.display())),
    }
    let listener = tokio::net::UnixListener::bind(&socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    }

    // Phase two, beside the forks: every other session, read, digested and
    // pruned off the state lock, then installed. A rest the file's content
    // fails is salvaged into a fresh file (hangar-store's `salvage.rs`).
    #[cfg(debug_assertions)]
    hold_before_the_full_load();
    if let Err(e) = daemon.load_the_rest(&forks) {
        // Nothing is served from a model that could not be loaded whole
        // (a read refused for permission, I/O or a lock: the file may be
        // good): the forked panes are stopped, the file is left as it is.
        daemon.stop_without_saving().await;
        let _ = std::fs::remove_file(&socket);
        return Err(e);
    }

    // A finish a killed predecessor cut off between its steps: settled
    // before any request is served (a backup ref never outlives a move
    // that did not happen).
    handlers::review::settle_interrupted(&daemon).await;
    tokio::spawn(daemon.governor.clone().govern());
    daemon.usage.start();
    tokio::spawn(daemon.continuation.clone().run());
    tokio::spawn(daemon.goals.clone().run());
    tokio::spawn(daemon.budgets.clone().run());
    watch_far_hosts(activity::far::FarNotifier::new(
        daemon.activity.clone(),
        daemon.monitor.notify.clone(),
        &daemon.shutdown,
    ));
    if daemon.config.snapshot().usage.watch_agents {
        tokio::spawn(daemon.screen_words.clone().run());
    }
    let home_watch = Arc::new(home_watch::HomeWatch {
        paths: paths.clone(),
        sessions: daemon.sessions.clone(),
        os: daemon.os.clone(),
        shutdown: daemon.shutdown.clone(),
        files: daemon.files.clone(),
    });
    let serving = daemon.clone();
    tokio::spawn(home_watch.watch_home(move |listener| {
        tokio::spawn(server::serve(serving.clone(), listener));
    }));

    tracing::info!(
        "hangar daemon {} serving {} (pid {})",
        env!("CARGO_PKG_VERSION"),
        socket.display(),
        std::process::id()
    );
    server::serve(daemon.clone(), listener).await;
    let _ = std::fs::remove_file(&socket);
    Ok(())
}

/// Tests only, never in a release build: with
/// `HANGAR_TEST_HOLD_FULL_LOAD=PATH` a start writes `PATH.held` once it has
/// started forking its panes and waits, before phase two reads the rest of
/// the store, until `PATH` exists (at most a minute). The moment between the
/// phases is a few milliseconds: no real fault (a page damaged, a table
/// dropped, the file moved) can be timed into it from outside.
#[cfg(debug_assertions)]
fn hold_before_the_full_load() {
    let Some(release) = std::env::var_os("HANGAR_TEST_HOLD_FULL_LOAD") else {
        return;
    };
    let release = std::path::PathBuf::from(release);
    let mut held = release.clone().into_os_string();
    held.push(".held");
    if let Err(e) = std::fs::write(&held, b"") {
        tracing::warn!(
            "cannot write {}: {e}",
            std::path::Path::new(&held).display()
        );
        return;
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !release.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// What `status` says of a damaged store set aside.
fn damaged_store_notice(r: &hangar_store::Recovery) -> String {
    let msg = format!(
        "the workspace store was damaged ({}); the original was kept at {}",
        r.reason,
        r.moved_to.display()
    );
    tracing::warn!("{msg}");
    msg
}

/// The export document of a home whose daemon is not running, read from its
/// store without starting anything. Refuses while a daemon holds the home.
pub fn export_offline(paths: &Paths) -> anyhow::Result<String> {
    paths::ensure_private_dir(&paths.home)?;
    paths::ensure_private_dir(&paths.run_dir())?;
    let _lock = take_home_lock(paths)?;
    let opened = Store::open(&paths.store()).with_context(|| {
        format!(
            "cannot open the workspace store {}",
            paths.store().display()
        )
    })?;
    let screens = opened
        .store
        .screens()
        .context("cannot read the saved screens")?;
    Ok(hangar_store::export_document(&opened.workspace, &screens))
}

/// Import into the store of a home whose daemon is not running: the next
/// start restores it. Refuses while a daemon holds the home.
pub fn import_offline(
    paths: &Paths,
    report: &hangar_store::ImportReport,
) -> anyhow::Result<hangar_protocol::reply::Imported> {
    paths::ensure_private_dir(&paths.home)?;
    paths::ensure_private_dir(&paths.run_dir())?;
    let _lock = take_home_lock(paths)?;
    let opened = Store::open(&paths.store()).with_context(|| {
        format!(
            "cannot open the workspace store {}",
            paths.store().display()
        )
    })?;
    let mut store = opened.store;
    let merged = transfer::merge(opened.workspace, report.workspace.clone())
        .map_err(|e| anyhow::anyhow!(e.message))?;
    store
        .save_with_screens(&merged, &[], &report.screens)
        .context("cannot save the imported workspace")?;
    Ok(transfer::imported(report, false))
}

/// A daemon on a fake machine ([`os::FakeOs`]: a clock the test advances,
/// scripted programs in place of real ones), for the subsystems' in-process
/// tests: built like the real one, started nowhere.
#[cfg(test)]
pub(crate) mod on_a_fake_machine {
    use super::*;
    use hangar_core::placement::PanePosition;
    use hangar_core::{Provider, SessionId, SessionMeta, Tab, TabId, Workspace};

    pub struct FakeMachine {
        pub daemon: Arc<Daemon>,
        pub os: Arc<os::FakeOs>,
        /// The home and every session's folder; removed when dropped.
        pub home: tempfile::TempDir,
    }

    /// Wait until `done` holds, looking again after each millisecond of
    /// tokio's clock (paused in these tests: no real time passes while
    /// nothing else can run); fails after a minute of that clock.
    pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
        for _ in 0..60_000 {
            if done() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("never happened: {what}");
    }

    /// Settings where claude is found: the launch looks its program up
    /// first, and on the fake machine, which runs none, any that exists does.
    pub fn find_claude(c: &mut Config) {
        let claude = hangar_providers::ProviderConfig {
            program: Some("/bin/sh".into()),
            ..Default::default()
        };
        c.providers.insert("claude".into(), claude);
    }

    /// A daemon whose workspace is one tab holding `panes` as panes and
    /// `parked` parked: shells in the home folder, last used now.
    pub fn with_sessions(panes: &[&str], parked: &[&str]) -> FakeMachine {
        build(panes, parked, |_| {}, |_| {})
    }

    /// [`with_sessions`] with the default settings changed by `settings`,
    /// and each session's metadata by `edit` (an orchestration parent,
    /// another provider).
    pub fn build(
        panes: &[&str],
        parked: &[&str],
        settings: impl FnOnce(&mut Config),
        edit: impl Fn(&mut SessionMeta),
    ) -> FakeMachine {
        let mut config = Config::default();
        // The fake clock moves only when a test moves it: starts are not
        // spaced unless a test asks for it (and then moves the clock).
        config.governor.wake_spacing_ms = 0;
        settings(&mut config);
        let home = tempfile::tempdir().expect("a temporary home");
        let paths = Paths::new(home.path().to_path_buf());
        let os = Arc::new(os::FakeOs::default());
        let now = os::Clock::now_ms(os.as_ref());
        let cwd = home.path().display().to_string();
        let meta = |id: &str| {
            let mut m = SessionMeta::new(SessionId::from(id), Provider::Shell, &cwd);
            m.last_active_ms = now;
            edit(&mut m);
            m
        };
        let mut ws = Workspace::default();
        let tab = TabId::new("t1");
        ws.add_tab(Tab::new(tab.clone(), "main"))
            .expect("a new tab");
        for id in panes {
            ws.add_pane_session(meta(id), &tab, PanePosition::Auto)
                .expect("a pane");
        }
        for id in parked {
            ws.add_parked_session(meta(id), &tab, now)
                .expect("a parked session");
        }
        let mut opened = Store::open(&paths.store()).expect("a new store");
        opened.store.save(&ws, &[]).expect("the first save");
        let sessions = Sessions::new(ws, opened.store, Vec::new());
        let daemon = Arc::new(Daemon::new(paths, config, os.clone(), sessions));
        FakeMachine { daemon, os, home }
    }
}

/// The settings a config.toml text makes, as `Debug` text: what
/// config_reference.rs compares (only lib.rs and a few read the whole
/// `Config`, `.ci/shape`).
#[cfg(test)]
fn settings_of_config_text(text: &str) -> Result<String, String> {
    toml::from_str::<config::Config>(text)
        .map(|c| format!("{c:?}"))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::SessionId;

    #[test]
    fn a_daemon_on_a_fake_machine_ends_the_orphan_it_recorded_and_spares_a_reused_pid() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path().to_path_buf());
        let mut opened = Store::open(&paths.store()).unwrap();
        // A killed predecessor recorded two agents; pid 200 was reused since.
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        opened.store.record_process(&a, 100, 100, 5_000).unwrap();
        opened.store.record_process(&b, 200, 200, 6_000).unwrap();
        let os = Arc::new(os::FakeOs::default());
        os.spawn(100, 100, 5_000);
        os.spawn(200, 200, 9_999);
        let sessions = Sessions::new(opened.workspace, opened.store, Vec::new());
        let daemon = Daemon::new(paths, Config::default(), os.clone(), sessions);
        daemon.end_orphans();
        assert_eq!(os.signals_sent(), vec![(100, libc::SIGKILL)]);
        let left = daemon.sessions.recorded_processes().unwrap().len();
        assert_eq!(left, 0, "both records are forgotten");
    }

    /// A daemon on a fake machine whose workspace is one tab holding
    /// `pane` as a pane and `parked` parked, both shells last used now.
    fn daemon_with_a_parked_record(
        home: &std::path::Path,
        pane: &str,
        parked: &str,
    ) -> (Daemon, Arc<os::FakeOs>) {
        use hangar_core::placement::PanePosition;
        use hangar_core::{Provider, SessionMeta, Tab, TabId, Workspace};
        let paths = Paths::new(home.to_path_buf());
        let os = Arc::new(os::FakeOs::default());
        let now = os::Clock::now_ms(os.as_ref());
        let mut ws = Workspace::default();
        let tab = TabId::new("t1");
        ws.add_tab(Tab::new(tab.clone(), "main")).unwrap();
        let meta = |id: &str| {
            let mut m = SessionMeta::new(SessionId::from(id), Provider::Shell, "/");
            m.last_active_ms = now;
            m
        };
        ws.add_pane_session(meta(pane), &tab, PanePosition::Auto)
            .unwrap();
        ws.add_parked_session(meta(parked), &tab, now).unwrap();
        let mut opened = Store::open(&paths.store()).unwrap();
        opened.store.save(&ws, &[]).unwrap();
        let sessions = Sessions::new(ws, opened.store, Vec::new());
        let daemon = Daemon::new(paths, Config::default(), os.clone(), sessions);
        (daemon, os)
    }

    #[tokio::test]
    async fn a_parked_record_is_evicted_once_the_fake_clock_passes_its_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let (daemon, os) = daemon_with_a_parked_record(dir.path(), "pane", "old");
        let day = 86_400_000;
        let ids = |rows: &[hangar_protocol::reply::EvictedRow]| -> Vec<String> {
            rows.iter().map(|r| r.id.clone()).collect()
        };
        let early = daemon.governor.evict_parked(day, false).await.unwrap();
        assert!(ids(&early.evicted).is_empty(), "nothing is a day old yet");
        os.advance(std::time::Duration::from_millis(day + 1));
        let dry = daemon.governor.evict_parked(day, true).await.unwrap();
        assert_eq!(ids(&dry.evicted), vec!["old"]);
        assert!(
            daemon.sessions.contains(&SessionId::from("old")),
            "a dry run keeps it"
        );
        let done = daemon.governor.evict_parked(day, false).await.unwrap();
        assert_eq!(ids(&done.evicted), vec!["old"]);
        assert!(!daemon.sessions.contains(&SessionId::from("old")));
        assert!(
            daemon.sessions.contains(&SessionId::from("pane")),
            "a pane is never evicted"
        );
        let log = std::fs::read_to_string(dir.path().join("evicted.jsonl")).unwrap();
        assert!(log.contains("\"old\"") && log.contains("cd /"), "{log}");
    }

    #[tokio::test]
    async fn close_idle_takes_what_the_fake_clock_made_idle_and_spares_a_recent_use() {
        let dir = tempfile::tempdir().unwrap();
        let (daemon, os) = daemon_with_a_parked_record(dir.path(), "pane", "parked");
        let hour = 3_600_000;
        os.advance(std::time::Duration::from_millis(2 * hour));
        // A person used the pane just now.
        daemon.governor.touch_used(&SessionId::from("pane"), false);
        let plan = daemon.governor.idle_plan(hour, false);
        let closed = daemon.governor.close_idle(plan, hour, false).await.unwrap();
        assert_eq!(closed.closed, vec!["parked".to_owned()]);
        assert!(daemon.sessions.contains(&SessionId::from("pane")));
    }
}
