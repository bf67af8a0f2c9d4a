//! hangar-daemon: the server that owns every session's PTY.
//!
//! One daemon per `HANGAR_HOME` (a lock file enforces it). At start it loads
//! the store, ends agents a killed predecessor left behind, restores only the
//! visible panes, and then serves the control socket until `shutdown` or a
//! signal, when it ends every live session's process group and exits with
//! the workspace saved.

pub mod activity;
pub mod cli_probe;
pub mod config;
pub mod delivery;
pub mod errors;
pub mod eviction;
pub mod governor;
pub mod handlers;
pub mod home_watch;
pub mod identity;
pub mod journal;
pub mod orchestration;
pub mod os;
pub mod proxy_observer;
pub mod pty;
pub mod reload;
pub mod server;
pub mod sessions;
pub mod spawn;
pub mod strays;
pub mod tmux_adoption;
pub mod transfer;
pub mod worktree;

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use anyhow::{Context, bail};
use hangar_core::RestorePlan;
use hangar_store::Store;
use tokio::sync::watch;

pub use crate::config::Config;
pub use crate::os::{now_ms, wall_ms};
use crate::sessions::Sessions;
pub use hangar_protocol::paths::{self, Paths};

pub struct Daemon {
    pub paths: Paths,
    /// The settings in use; `hangar reload` reads config.toml again.
    pub config: config::LiveConfig,
    /// The clock, signals and process facts (a fake in unit tests).
    pub os: Arc<dyn os::Os>,
    pub journal: journal::Journal,
    pub queue: spawn::queue::WakeQueue,
    /// The recording proxy shared by every session; started lazily.
    pub proxy: hangar_proxy::Proxy,
    /// Every session's activity (working, waiting, idle) and its viewers.
    pub activity: Arc<activity::Hub>,
    /// MCP tokens, turn marks, tombstones and first prompts of agents.
    pub orchestration: orchestration::Orchestration,
    /// Prompts hangar typed into each session (OpenCode's identity proof).
    pub typed: identity::opencode::TypedLog,
    /// Installed agent CLIs' versions and flags.
    pub cli_probe: cli_probe::CliProbe,
    /// The workspace model, the store and every session's runtime.
    pub sessions: Sessions,
    shutdown: watch::Sender<bool>,
}

impl Daemon {
    pub fn shutdown_watch(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// End every live session's process group, keep their last screens, save,
    /// and let the server loop finish.
    pub async fn shutdown(self: &Arc<Self>) {
        let lives = self.sessions.begin_shutdown();
        let Some(lives) = lives else {
            // Another caller is already shutting down: wait for it.
            let mut rx = self.shutdown_watch();
            let _ = rx.wait_for(|s| *s).await;
            return;
        };
        let stops = lives.iter().map(|(id, live)| async move {
            let screen = live.formatted();
            self.note_identity_before_stop(id, live);
            self.stop_process(live).await;
            (id.clone(), screen)
        });
        let screens = futures::future::join_all(stops).await;
        let now = now_ms();
        for (id, screen) in screens {
            self.sessions.keep_stopped_screen(&id, &screen, now);
        }
        if let Err(e) = self.sessions.edit(|st| st.save_observed(&[])) {
            tracing::error!("final save failed: {}", e.message);
        }
        self.shutdown.send_replace(true);
    }

    /// End agents a previous daemon started and could not stop (it was
    /// killed). A pid is only signalled when its start time still matches
    /// the recorded one, so a reused pid is never touched.
    fn end_orphans(&self) {
        let recorded = match self.sessions.read(|st| st.store.recorded_processes()) {
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
    // SAFETY: flock on an fd we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
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
    paths::ensure_private_dir(&paths.home)
        .with_context(|| format!("cannot create {}", paths.home.display()))?;
    paths::ensure_private_dir(&paths.run_dir())
        .with_context(|| format!("cannot create {}", paths.run_dir().display()))?;
    let _lock = take_home_lock(&paths)?;
    // Anchor the daemon's clock now (see `now_ms`).
    now_ms();
    let config = Config::load(&paths.config())?;

    let opened = Store::open(&paths.store()).with_context(|| {
        format!(
            "cannot open the workspace store {}",
            paths.store().display()
        )
    })?;
    let mut notices = Vec::new();
    if let Some(r) = &opened.recovered {
        let msg = format!(
            "the workspace store was damaged ({}); the original was kept at {}",
            r.reason,
            r.moved_to.display()
        );
        tracing::warn!("{msg}");
        notices.push(msg);
    }
    if !opened.pruned.is_empty() {
        notices.push(format!(
            "repaired the workspace on load: dropped {} unreferenced session(s)",
            opened.pruned.dropped_sessions.len()
        ));
    }
    notices.extend(identity::duplicate_notices(&opened.workspace));
    // Planned now so the loaded workspace moves into the plan instead of
    // being copied (10,000 sessions are megabytes); it is adopted below,
    // before the socket serves anyone.
    let plan = RestorePlan::new(opened.workspace);
    let (shutdown, _) = watch::channel(false);
    let daemon = Arc::new(Daemon {
        paths: paths.clone(),
        config: config::LiveConfig::new(config.clone()),
        os: Arc::new(os::RealOs),
        journal: journal::Journal::new(paths.home.join("journal.jsonl")),
        queue: spawn::queue::WakeQueue::new(config.governor.queue_limits()),
        orchestration: orchestration::Orchestration::new(paths.home.clone()),
        typed: Default::default(),
        cli_probe: Default::default(),
        proxy: hangar_proxy::Proxy::new(config.proxy.clone(), paths.home.clone()),
        activity: Arc::new(activity::Hub::new(&config.activity)),
        sessions: Sessions::new(Default::default(), opened.store, notices),
        shutdown,
    });
    daemon.end_orphans();

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

    let to_spawn = daemon.adopt_plan(plan);
    let restorer = daemon.clone();
    tokio::spawn(async move { restorer.restore_spawn(to_spawn).await });
    tokio::spawn(daemon.clone().govern());
    tokio::spawn(daemon.clone().watch_home());

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
) -> anyhow::Result<serde_json::Value> {
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
    Ok(transfer::report_json(report, false))
}
