//! hangar-daemon: the server that owns every session's PTY.
//!
//! One daemon per `HANGAR_HOME` (a lock file enforces it). At start it loads
//! the store, ends agents a killed predecessor left behind, restores only the
//! visible panes, and then serves the control socket until `shutdown` or a
//! signal, when it ends every live session's process group and exits with
//! the workspace saved.

pub mod activity;
pub mod attach_size;
pub mod cli_probe;
pub mod config;
pub mod delivery;
pub mod eviction;
pub mod governor;
pub mod home_watch;
pub mod identity;
pub mod journal;
pub mod layout_ops;
pub mod lifecycle;
pub mod ops;
pub mod orchestration;
pub mod os;
pub mod paths;
pub mod proxy_observer;
pub mod pty;
pub mod reload;
pub mod restore;
pub mod server;
pub mod state;
pub mod strays;
pub mod tmux_adoption;
pub mod transfer;
pub mod wake_queue;
pub mod worktree;

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, bail};
use hangar_core::RestorePlan;
use hangar_store::Store;
use tokio::sync::watch;

pub use crate::config::Config;
use crate::os::ProcessControl;
pub use crate::paths::Paths;
use crate::state::{RestoreProgress, State};

pub struct Daemon {
    pub paths: Paths,
    /// The settings in use; `hangar reload` reads config.toml again.
    pub config: config::LiveConfig,
    pub os: Arc<dyn ProcessControl>,
    pub journal: journal::Journal,
    pub queue: wake_queue::WakeQueue,
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
    state: Mutex<State>,
    shutdown: watch::Sender<bool>,
}

/// The daemon's clock, in ms since the Unix epoch: the wall clock as read at
/// the daemon's start, plus the time elapsed since on a clock that never
/// jumps (`CLOCK_BOOTTIME` on Linux, which keeps counting through a suspend,
/// so a laptop's night still ages its sessions).
///
/// Every timestamp the daemon stores and every age it computes (idle,
/// parked, tombstones, activity) comes from here, so a wall clock stepped a
/// day forward or back while it runs neither makes a session "idle for a
/// day" nor yields a time before the one just stored. The price: a step of
/// the wall clock (an NTP correction too) is taken at the next start.
pub fn now_ms() -> u64 {
    static ANCHOR: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    let (wall_at_start, steady_at_start) = *ANCHOR.get_or_init(|| (wall_ms(), steady_ms()));
    wall_at_start.saturating_add(steady_ms().saturating_sub(steady_at_start))
}

/// The wall clock as it is now, for comparing with times other programs
/// wrote (file names and dates of transcripts).
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Milliseconds on a clock that only moves forward.
fn steady_ms() -> u64 {
    #[cfg(target_os = "linux")]
    const CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
    #[cfg(not(target_os = "linux"))]
    const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
    // SAFETY: clock_gettime writes into the zeroed timespec we own.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(CLOCK, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1000)
        .saturating_add(ts.tv_nsec as u64 / 1_000_000)
}

impl Daemon {
    /// The state lock. Never held across an await.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic inside one request must not wedge every other client; the
        // state is plain data and stays consistent between statements.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn shutdown_watch(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// End every live session's process group, keep their last screens, save,
    /// and let the server loop finish.
    pub async fn shutdown(self: &Arc<Self>) {
        let lives: Option<Vec<_>> = {
            let mut st = self.lock();
            if st.shutting_down {
                None
            } else {
                st.shutting_down = true;
                Some(
                    st.runtimes
                        .iter_mut()
                        .filter_map(|(id, rt)| rt.proc.take().map(|p| (id.clone(), p)))
                        .collect(),
                )
            }
        };
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
        {
            let mut st = self.lock();
            let now = now_ms();
            for (id, screen) in screens {
                let _ = st.store.save_screen(&id, &screen, now);
                let _ = st.store.forget_process(&id);
            }
            if let Err(e) = st.save_observed(&[]) {
                tracing::error!("final save failed: {}", e.message);
            }
        }
        self.shutdown.send_replace(true);
    }

    /// End agents a previous daemon started and could not stop (it was
    /// killed). A pid is only signalled when its start time still matches
    /// the recorded one, so a reused pid is never touched.
    fn end_orphans(&self) {
        let mut st = self.lock();
        let recorded = match st.store.recorded_processes() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("cannot read recorded processes: {e}");
                return;
            }
        };
        for p in recorded {
            let leader_matches =
                p.start_time != 0 && self.os.start_time(p.pid) == Some(p.start_time);
            // The leader often dies of the terminal hangup while children it
            // started in its group (a dev server, a `sleep`) live on. With the
            // leader gone, a group that still has members is the recorded
            // one: the kernel does not hand out a pid number while it is
            // still some group's id, so no newer process can own it.
            let stragglers_of_dead_leader =
                self.os.start_time(p.pid).is_none() && self.os.signal_group(p.pgid, 0);
            if leader_matches || stragglers_of_dead_leader {
                tracing::info!("ending orphaned agent of {} (pid {})", p.session, p.pid);
                self.os.signal_group(p.pgid, libc::SIGKILL);
            }
            let _ = st.store.forget_process(&p.session);
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
    let (shutdown, _) = watch::channel(false);
    let daemon = Arc::new(Daemon {
        paths: paths.clone(),
        config: config::LiveConfig::new(config.clone()),
        os: Arc::new(os::RealOs),
        journal: journal::Journal::new(paths.home.join("journal.jsonl")),
        queue: wake_queue::WakeQueue::new(config.governor.queue_limits()),
        orchestration: orchestration::Orchestration::new(paths.home.clone()),
        typed: Default::default(),
        cli_probe: Default::default(),
        proxy: hangar_proxy::Proxy::new(config.proxy.clone(), paths.home.clone()),
        activity: Arc::new(activity::Hub::new(&config.activity)),
        state: Mutex::new(State {
            ws: opened.workspace.clone(),
            store: opened.store,
            runtimes: HashMap::new(),
            restore: RestoreProgress::default(),
            notices,
            shutting_down: false,
            budget: governor::BudgetStatus::default(),
        }),
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

    let to_spawn = daemon.adopt_plan(RestorePlan::new(opened.workspace));
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
