//! What an agent is doing, beside its process state: `working` on a turn,
//! `waiting` for the person (a question, a permission prompt), `idle` (turn
//! finished, ready for input), or `unknown`, with the time it entered that
//! state.
//!
//! Read from structured signals in order of trust (`sources`): the
//! transcript, the capture proxy, the provider's hooks, and the screen only
//! as the last resort; `combine` (`hangar_core::activity`) is the one rule
//! that merges them and `tracker` (`hangar_core::activity_debounce`)
//! debounces the result so a flickering signal does not flap.
//! A live session is watched by one task for as long as its process lives;
//! a hibernated session's transcript is read on demand, never watched, and
//! the session is never woken to learn its state.
//!
//! The governor ("mid-turn"), eviction, orchestration ("finished its turn"),
//! `hangar ls` and `hangar wait` all read activity through `Monitor::
//! activity_of` and `Monitor::wait_activity`; nothing else may guess it.
//! The `Monitor` is built once with the session owner, the `Hub`, its
//! `[activity]` section (fixed at start) and `[notify]` (read again after a
//! reload).

pub mod far;
pub mod notify;
pub mod sources;
pub mod tracker;

pub use hangar_core::activity::{Activity, INPUT_ALONE_MS, Reading, Readings, TurnEnd, combine};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hangar_core::{Provider, SessionId, SessionMeta};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, broadcast, watch};

use crate::Paths;
use crate::os::Clock;
use crate::pty::LiveProcess;
use crate::section::Section;
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;
use hangar_providers::claude::hooks::HookEvent;
use hangar_providers::transcript::activity::TranscriptWatch;
use sources::proxy::{ProxyState, Signal};
use tracker::{Tracker, Transition};

/// A source of activity signals, as named in `[activity] sources`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Transcript,
    Proxy,
    Hooks,
    Screen,
}

/// `[activity]` in config.toml.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityConfig {
    /// The sources read; remove one to turn it off.
    #[serde(default = "all_sources")]
    pub sources: Vec<Source>,
    /// How long a new state must hold before it is committed.
    #[serde(default = "default_debounce")]
    pub debounce_ms: u64,
}

fn all_sources() -> Vec<Source> {
    vec![
        Source::Transcript,
        Source::Proxy,
        Source::Hooks,
        Source::Screen,
    ]
}

fn default_debounce() -> u64 {
    1000
}

impl Default for ActivityConfig {
    fn default() -> Self {
        ActivityConfig {
            sources: all_sources(),
            debounce_ms: default_debounce(),
        }
    }
}

impl ActivityConfig {
    pub fn enabled(&self, source: Source) -> bool {
        self.sources.contains(&source)
    }
}

/// The least time between two looks at a session whose screen keeps
/// changing, and how often a folder inotify could not watch is looked at.
const POLL: Duration = Duration::from_millis(200);

/// A hook or proxy signal, or typed input: look again now rather than at
/// the next poll.
type Nudge = Arc<Notify>;

#[derive(Default)]
struct Entry {
    tracker: Option<Tracker>,
    hooks: Option<Reading>,
    /// When the agent's `UserPromptSubmit` hook last reported a turn start.
    prompt_submitted_ms: Option<u64>,
    proxy: ProxyState,
    input_ms: Option<u64>,
    /// A watcher task evaluates this session (its process is live).
    watched: bool,
    nudge: Nudge,
    /// A hibernated session's transcript, read on demand.
    offline: Option<TranscriptWatch>,
}

impl Entry {
    fn clear_signals(&mut self) {
        self.hooks = None;
        self.prompt_submitted_ms = None;
        self.proxy = ProxyState::default();
        self.input_ms = None;
    }
}

/// The daemon's activity board: every session's tracker and signals, the
/// clients viewing each session, and the notification channel.
pub struct Hub {
    entries: Mutex<HashMap<SessionId, Entry>>,
    viewers: Mutex<HashMap<SessionId, usize>>,
    /// Bumped on every committed change; `wait_activity` listens.
    changed: watch::Sender<u64>,
    /// Terminal notification escapes for attached clients: (the session it
    /// is about, the bytes). A client never gets one about what it views.
    osc: broadcast::Sender<(SessionId, Vec<u8>)>,
    /// Ends of turns a transcript showed (Codex, OpenCode; Claude without
    /// hooks): what a goal continues at (`usage::goals`).
    turn_ends: broadcast::Sender<SessionId>,
    /// `[activity] sources` names the proxy.
    proxy_source: bool,
    /// When a proxy signal came (the daemon's clock; a fake one in tests).
    clock: Arc<dyn Clock>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new(&ActivityConfig::default(), Arc::new(crate::os::RealOs))
    }
}

impl Hub {
    pub fn new(config: &ActivityConfig, clock: Arc<dyn Clock>) -> Hub {
        let (changed, _) = watch::channel(0);
        let (osc, _) = broadcast::channel(64);
        let (turn_ends, _) = broadcast::channel(256);
        Hub {
            turn_ends,
            entries: Mutex::new(HashMap::new()),
            viewers: Mutex::new(HashMap::new()),
            changed,
            osc,
            proxy_source: config.enabled(Source::Proxy),
            clock,
        }
    }

    /// The proxy's hook: a request of `session` to the provider API began
    /// or ended. Sessions without a watcher (not live) are ignored.
    pub fn proxy_signal(&self, session: &str, signal: Signal) {
        if !self.proxy_source {
            return;
        }
        let nudge = {
            let mut entries = self.entries();
            let Some(e) = entries
                .get_mut(&SessionId::from(session))
                .filter(|e| e.watched)
            else {
                return;
            };
            e.proxy.apply(&signal, self.clock.now_ms());
            e.nudge.clone()
        };
        nudge.notify_one();
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<SessionId, Entry>> {
        // Plain data, consistent between statements: keep going after a panic.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn viewer_table(&self) -> MutexGuard<'_, HashMap<SessionId, usize>> {
        self.viewers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Clients currently attached to `id`.
    pub fn viewers(&self, id: &SessionId) -> usize {
        self.viewer_table().get(id).copied().unwrap_or(0)
    }

    /// Count a client viewing `id` until the guard is dropped.
    pub fn view(self: &Arc<Self>, id: &SessionId) -> ViewerGuard {
        *self.viewer_table().entry(id.clone()).or_default() += 1;
        ViewerGuard {
            hub: self.clone(),
            id: id.clone(),
        }
    }

    /// Notification escapes for attached clients.
    pub fn osc_notifications(&self) -> broadcast::Receiver<(SessionId, Vec<u8>)> {
        self.osc.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|g| *g += 1);
    }

    /// Have `id`'s watcher look again now: what it reads changed without a
    /// signal of its own (its provider session id, so its transcript).
    pub fn nudge(&self, id: &SessionId) {
        let nudge = self.entries().get(id).map(|e| e.nudge.clone());
        if let Some(n) = nudge {
            n.notify_one();
        }
    }

    /// A receiver that changes on every committed activity change, and when
    /// a session's watch starts or ends (a spawn, an exit).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Ends of turns read from transcripts (never from quiet output).
    pub fn turn_ends(&self) -> broadcast::Receiver<SessionId> {
        self.turn_ends.subscribe()
    }

    /// Drop everything known about a session that no longer exists.
    pub fn forget(&self, id: &SessionId) {
        self.entries().remove(id);
    }

    /// Something a listing shows changed without an activity change (a
    /// usage limit began or ended): viewers and waiters look again.
    pub fn bump_changes(&self) {
        self.bump();
    }

    /// Send a notification escape to clients attached anywhere.
    pub fn send_osc(&self, id: &SessionId, bytes: Vec<u8>) {
        // No receivers is normal: nobody is attached anywhere.
        let _ = self.osc.send((id.clone(), bytes));
    }
}

/// One attached client; dropping it stops counting the client.
pub struct ViewerGuard {
    hub: Arc<Hub>,
    id: SessionId,
}

impl Drop for ViewerGuard {
    fn drop(&mut self) {
        let mut t = self.hub.viewer_table();
        if let Some(n) = t.get_mut(&self.id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                t.remove(&self.id);
            }
        }
    }
}

/// What `hangar wait` waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Until {
    /// The turn finished and the agent is ready for input.
    Idle,
    /// The agent waits for the person.
    Waiting,
    /// Either: the agent stopped working.
    Any,
}

impl Until {
    pub fn parse(s: &str) -> Option<Until> {
        match s.trim() {
            "idle" => Some(Until::Idle),
            "waiting" => Some(Until::Waiting),
            "any" => Some(Until::Any),
            _ => None,
        }
    }

    pub fn reached(self, a: Activity) -> bool {
        match self {
            Until::Idle => a == Activity::Idle,
            Until::Waiting => a == Activity::Waiting,
            Until::Any => matches!(a, Activity::Idle | Activity::Waiting),
        }
    }
}

/// A session's activity as reported by `ls` and `wait`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ActivityView {
    pub id: String,
    pub activity: Activity,
    pub activity_since: u64,
}

/// Where a session's transcripts are: the daemon's environment names the
/// folder, or the session's sandbox folder holds it.
fn transcript_root(meta: &hangar_core::SessionMeta) -> Option<PathBuf> {
    hangar_providers::transcript::discovery::session_transcript_root(
        meta,
        &hangar_providers::transcript::discovery::env_var,
    )
}

/// What `meta`'s transcript says now, read afresh (on hangar's clock);
/// `None` unless `enabled`.
fn transcript_now(meta: &SessionMeta, enabled: bool) -> Option<Reading> {
    let root = transcript_root(meta).filter(|_| enabled)?;
    TranscriptWatch::default()
        .read(
            &meta.provider,
            &root,
            &meta.cwd,
            meta.provider_session.as_ref().map(|p| p.id.as_str()),
        )
        .map(|r| Reading {
            at_ms: hangar_clock::from_wall_ms(r.at_ms),
            ..r
        })
}

/// Where the limits that stand are known (the usage ledger): what a
/// session's activity is shown as goes through `shown_name`, so `ls`,
/// `hangar wait` and MCP's `list_agents` agree that a limited session reads
/// `limited` (`hangar_core::activity::shown`) without activity or
/// orchestration reaching into usage.
pub trait StandingLimits: Send + Sync {
    /// The limit standing for session `id`, if any.
    fn standing(&self, id: &str) -> Option<hangar_core::activity::StandingLimit>;
    /// The clock the limits' resets are read by, ms since the epoch.
    fn now_ms(&self) -> i64;
}

/// What session `id`'s activity `agent` is shown as, a limit that stands
/// above it.
pub fn shown_name(agent: Activity, limits: &dyn StandingLimits, id: &str) -> &'static str {
    hangar_core::activity::shown(agent, limits.standing(id), limits.now_ms()).name()
}

/// The activity subsystem: watches each live session's sources, commits
/// their combined reading to the `Hub`, and answers what a session is doing.
pub struct Monitor {
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) activity: Arc<Hub>,
    /// `[activity]`, fixed at start (it built the `Hub`).
    pub(crate) settings: ActivityConfig,
    /// `[notify]`, as the live settings have it.
    pub(crate) notify: Section<notify::NotifyConfig>,
    pub(crate) paths: Paths,
    pub(crate) shutdown: Shutdown,
    /// The daemon's folder watcher: a session's transcript folder wakes it.
    pub(crate) files: Arc<crate::file_watch::FileWatcher>,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Monitor {
    /// A session's activity and the time (ms since the epoch) it entered it.
    /// A session whose process is not running is read from its transcript
    /// once (per change of the file), never woken.
    pub fn activity_of(&self, id: &SessionId) -> (Activity, u64) {
        {
            let entries = self.activity.entries();
            if let Some(e) = entries.get(id)
                && e.watched
                && let Some(t) = &e.tracker
            {
                return (t.activity(), t.since_ms());
            }
        }
        self.offline_activity(id)
    }

    /// A non-live session's activity, from its transcript alone. A turn
    /// that was in progress when the process ended is over: idle.
    fn offline_activity(&self, id: &SessionId) -> (Activity, u64) {
        let meta = self.sessions.meta(id);
        let Some(meta) = meta else {
            return (Activity::Unknown, 0);
        };
        let fallback = (Activity::Unknown, meta.last_active_ms);
        if !self.settings.enabled(Source::Transcript) {
            return fallback;
        }
        let Some(root) = transcript_root(&meta) else {
            return fallback;
        };
        // Taken out of the table so the file is read without the lock held.
        let Some(mut watch) = self.with_known_entry(id, |e| e.offline.take().unwrap_or_default())
        else {
            return fallback;
        };
        let reading = watch.read(
            &meta.provider,
            &root,
            &meta.cwd,
            meta.provider_session.as_ref().map(|p| p.id.as_str()),
        );
        if let Some(e) = self.activity.entries().get_mut(id) {
            e.offline = Some(watch);
        }
        match reading.map(hangar_core::activity::offline_activity) {
            Some(r) => (r.activity, r.at_ms),
            None => fallback,
        }
    }

    /// Every session's activity, for `ls`.
    pub fn activity_views(&self, ids: &[SessionId]) -> Vec<ActivityView> {
        ids.iter()
            .map(|id| {
                let (activity, since) = self.activity_of(id);
                ActivityView {
                    id: id.to_string(),
                    activity,
                    activity_since: since,
                }
            })
            .collect()
    }

    /// Wait until every session in `ids` has reached `until`, or `timeout`
    /// passes. Returns whether they all did, and each one's activity.
    pub async fn wait_activity(
        &self,
        ids: &[SessionId],
        until: Until,
        timeout: Option<Duration>,
    ) -> (bool, Vec<ActivityView>) {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut changed = self.activity.changed.subscribe();
        let mut shutdown = self.shutdown.watch();
        // A session closed meanwhile has nothing left to wait for.
        let settled = |v: &ActivityView| {
            until.reached(v.activity) || !self.sessions.contains(&SessionId::from(v.id.as_str()))
        };
        loop {
            changed.borrow_and_update();
            let views = self.activity_views(ids);
            if views.iter().all(settled) {
                return (true, views);
            }
            // Hibernated sessions change without a commit (their file is read
            // on demand): look again every few seconds regardless.
            let tick = tokio::time::sleep(Duration::from_secs(2));
            let expired = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = changed.changed() => {}
                _ = tick => {}
                _ = shutdown.wait_for(|s| *s) => return (false, self.activity_views(ids)),
                _ = expired => {
                    let views = self.activity_views(ids);
                    let done = views.iter().all(settled);
                    return (done, views);
                }
            }
        }
    }

    /// Run `f` on `id`'s activity entry, creating it only while the session
    /// exists. The workspace lock is held across the check and the insert:
    /// a close forgets the entry under that same lock, so a signal racing a
    /// close can never leave an entry behind for a session that is gone.
    fn with_known_entry<R>(&self, id: &SessionId, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        self.sessions.while_known(id, || {
            let mut entries = self.activity.entries();
            f(entries.entry(id.clone()).or_default())
        })
    }

    /// Record a hook event of session `id`'s agent (`hangar hook EVENT`)
    /// and look again at once; `false` when the session no longer exists.
    pub fn record_hook(&self, id: &SessionId, event: HookEvent) -> bool {
        let now = self.clock.now_ms();
        let nudge = self.with_known_entry(id, |e| {
            e.hooks = Some(Reading {
                activity: event.activity(),
                at_ms: now,
            });
            if event == HookEvent::UserPromptSubmit {
                e.prompt_submitted_ms = Some(now);
            }
            e.nudge.clone()
        });
        let Some(nudge) = nudge else {
            return false;
        };
        nudge.notify_one();
        true
    }

    /// A request of `session` to the provider API began or ended (the
    /// capture proxy reports through `Hub::proxy_signal` directly).
    pub fn activity_signal(&self, session: &str, signal: Signal) {
        self.activity.proxy_signal(session, signal);
    }

    /// A prompt was typed into `id` at `at_ms` (taken just before the Enter):
    /// a turn starts. Committed at once, since typed input does not flicker.
    pub fn note_input(&self, id: &SessionId, at_ms: u64) {
        let is_agent = self.sessions.provider_of(id).is_some_and(|p| p.is_agent());
        if !is_agent {
            return;
        }
        let Some((transition, nudge)) = self.with_known_entry(id, |e| {
            e.input_ms = Some(at_ms);
            let transition = match (&mut e.tracker, e.watched) {
                (Some(t), true) => t.force(Activity::Working, at_ms),
                _ => None,
            };
            (transition, e.nudge.clone())
        }) else {
            return;
        };
        if transition.is_some() {
            self.activity.bump();
        }
        nudge.notify_one();
    }

    /// Whether the agent's `UserPromptSubmit` hook reported a turn start at
    /// or after `since_ms` (a prompt being delivered, see `delivery`).
    /// Whether the session's process sent a request to its model through
    /// the proxy at or after `since_ms` that carries the prompt `typed`
    /// (`None`: none of its requests was ever seen, so this cannot tell).
    pub fn prompt_sent_to_model_since(
        &self,
        id: &SessionId,
        since_ms: u64,
        typed: &str,
    ) -> Option<bool> {
        let entries = self.activity.entries();
        let proxy = &entries.get(id)?.proxy;
        proxy
            .seen_any()
            .then(|| proxy.prompt_carried_since(since_ms, typed))
    }

    /// Whether any request of the session's process went through the proxy.
    pub fn model_requests_seen(&self, id: &SessionId) -> bool {
        self.activity
            .entries()
            .get(id)
            .is_some_and(|e| e.proxy.seen_any())
    }

    pub fn prompt_submitted_since(&self, id: &SessionId, since_ms: u64) -> bool {
        self.activity
            .entries()
            .get(id)
            .and_then(|e| e.prompt_submitted_ms)
            .is_some_and(|at| at >= since_ms)
    }

    /// What to do before stopping `id`'s process (`hangar_core::stop_gate`):
    /// its readings now, the transcript read afresh.
    pub fn before_stop(&self, id: &SessionId) -> hangar_core::stop_gate::BeforeStop {
        match self.stop_readings(id) {
            Some(r) => r.rule(),
            None => hangar_core::stop_gate::BeforeStop::Now,
        }
    }

    /// The readings the stop gate judges by; `None` for a session gone.
    fn stop_readings(&self, id: &SessionId) -> Option<StopReadings> {
        let meta = self.sessions.meta(id)?;
        let keeps_transcript = hangar_providers::adapter(&meta.provider)
            .transcript_state()
            .is_some()
            && self.settings.enabled(Source::Transcript);
        let entries = self.activity.entries();
        let entry = entries.get(id);
        Some(
            StopReadings {
                keeps_transcript,
                readings: Readings {
                    transcript: None,
                    proxy: None,
                    hooks: entry.and_then(|e| e.hooks),
                    screen: None,
                    input_ms: entry.and_then(|e| e.input_ms),
                },
                prompt_submitted_ms: entry.and_then(|e| e.prompt_submitted_ms),
                meta,
            }
            .with_transcript_read(),
        )
    }

    /// Waits (bounded) until stopping `id`'s process loses no turn its
    /// transcript has yet to hold.
    pub async fn until_transcript_saved(&self, id: &SessionId) {
        use hangar_core::stop_gate::BeforeStop;
        let Some(mut readings) = self.stop_readings(id) else {
            return;
        };
        let BeforeStop::AwaitTranscript { up_to_ms } = readings.rule() else {
            return;
        };
        // Polled: this wait is rare (a stop inside the moment between the
        // answer and its write) and short. Only the transcript is read
        // again: the turn's start and its hooks are as the first look had
        // them (the session's activity entry is reset once its process is
        // taken to be stopped, which would read as "nothing asked").
        let deadline = tokio::time::Instant::now() + Duration::from_millis(up_to_ms);
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            readings = readings.with_transcript_read();
            if readings.rule() == BeforeStop::Now {
                return;
            }
        }
        tracing::info!(
            "session {id}: its transcript did not show the last turn within {up_to_ms} ms; stopping it anyway"
        );
    }

    /// Whether claude sessions get hangar's hooks (the hooks source is on).
    pub fn hooks_installed(&self) -> bool {
        self.settings.enabled(Source::Hooks)
    }

    /// The `--settings` file that installs hangar's hooks for a claude
    /// session, written before it starts; `None` when the hooks source is
    /// off or the file cannot be written (the session starts without hooks).
    /// A sandboxed claude always gets one: it turns claude's own sandbox
    /// off, and its hooks call the hangar inside (issue 32).
    pub fn hook_settings(
        &self,
        id: &SessionId,
        provider: &Provider,
        sandboxed: bool,
    ) -> Option<PathBuf> {
        let hooks = self.settings.enabled(Source::Hooks);
        let adapter = hangar_providers::adapter(provider);
        if !adapter.takes_hooks() || !(hooks || sandboxed) {
            return None;
        }
        let settings = if sandboxed {
            hangar_providers::HookSettings {
                hangar: PathBuf::from(hangar_core::sandbox::INSIDE_HANGAR),
                home: self.paths.home.clone(),
                hooks,
                own_sandbox_off: true,
            }
        } else {
            hangar_providers::HookSettings {
                hangar: std::env::current_exe().ok()?,
                home: self.paths.home.clone(),
                hooks,
                own_sandbox_off: false,
            }
        };
        let body = adapter.hook_settings(&settings, id)?;
        match sources::hooks::write_settings(&body, &self.paths.home, id) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(
                    "cannot write the hook settings of {id}: {e}; it runs without hooks"
                );
                None
            }
        }
    }

    /// Watch a freshly spawned session's activity for as long as `live` is
    /// its process.
    pub fn watch_activity(self: &Arc<Self>, id: SessionId, live: Arc<LiveProcess>) {
        let Some(meta) = self.sessions.meta(&id) else {
            return;
        };
        if matches!(meta.provider, Provider::Shell) {
            return;
        }
        let nudge = {
            let mut entries = self.activity.entries();
            let e = entries.entry(id.clone()).or_default();
            e.clear_signals();
            e.watched = true;
            e.tracker = Some(Tracker::new(self.clock.now_ms()));
            e.nudge.clone()
        };
        self.activity.bump();
        let daemon = self.clone();
        tokio::spawn(async move {
            let mut watch = TranscriptWatch::default();
            let root = transcript_root(&meta);
            let mut exit = live.exit_watch();
            let mut output = live.output_watch();
            let screen = daemon.settings.enabled(Source::Screen);
            let mut files = daemon.files.subscribe();
            let mut next_look: Option<tokio::time::Instant> = None;
            let mut last_look = tokio::time::Instant::now();
            let mut first = true;
            loop {
                // Woken by what can change a reading, never by a clock alone:
                // a hook, proxy or input nudge, the transcript's folder, the
                // screen (only for the screen source), or the deadline the
                // debounce rule names (`hangar_core::activity_debounce`).
                if !first {
                    let deadline = async {
                        match next_look {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    };
                    let throttled = tokio::select! {
                        _ = nudge.notified() => false,
                        _ = files.changed(POLL) => true,
                        _ = output.changed(), if screen => true,
                        _ = deadline => false,
                        _ = exit.wait_for(|e| e.is_some()) => break,
                    };
                    if throttled {
                        // A session printing or writing its transcript
                        // non-stop is looked at no more often than the old
                        // poll did; a hook or typed input is seen at once.
                        tokio::time::sleep_until(last_look + POLL).await;
                    }
                }
                last_look = tokio::time::Instant::now();
                first = false;
                output.borrow_and_update();
                let current = daemon.sessions.meta_while_current(&id, &live);
                let Some(meta) = current else { break };
                let look_at = daemon.evaluate(&id, &meta, &live, root.as_deref(), &mut watch);
                let now = daemon.clock.now_ms();
                let psid = meta.provider_session.as_ref().map(|p| p.id.as_str());
                let folders = match root.as_deref() {
                    Some(root) if daemon.settings.enabled(Source::Transcript) => {
                        watch.folders(&meta.provider, root, &meta.cwd, psid, now)
                    }
                    // A CLI's database (OpenCode's): its writes are its turns.
                    None if daemon.settings.enabled(Source::Transcript) => {
                        hangar_providers::adapter(&meta.provider)
                            .stored_folder(&hangar_providers::transcript::discovery::env_var)
                            .into_iter()
                            .collect()
                    }
                    _ => Vec::new(),
                };
                files.watch(folders);
                let retry = watch.retry_in(&meta.provider);
                let after = look_at
                    // One ms past it: the rule commits at `>=` its deadline.
                    .map(|t| Duration::from_millis(t.saturating_sub(now) + 1))
                    .into_iter()
                    .chain(retry)
                    .min();
                next_look = after.map(|d| tokio::time::Instant::now() + d);
            }
            daemon.stop_watching(&id, &live);
        });
    }

    /// One look at a live session's sources. Returns when (ms) it must be
    /// looked at again even if nothing new is reported.
    fn evaluate(
        &self,
        id: &SessionId,
        meta: &SessionMeta,
        live: &LiveProcess,
        root: Option<&std::path::Path>,
        watch: &mut TranscriptWatch,
    ) -> Option<u64> {
        let config = &self.settings;
        let now = self.clock.now_ms();
        let psid = meta.provider_session.as_ref().map(|p| p.id.as_str());
        let transcript = match root {
            Some(root) if config.enabled(Source::Transcript) => {
                watch.read(&meta.provider, root, &meta.cwd, psid)
            }
            // OpenCode's conversation is in its database, not a file.
            None if config.enabled(Source::Transcript) => psid.and_then(|c| {
                hangar_providers::adapter(&meta.provider)
                    .stored_reading(c, &hangar_providers::transcript::discovery::env_var)
                    .unwrap_or_else(|e| {
                        tracing::debug!("session {id}: {e}");
                        None
                    })
            }),
            _ => None,
        }
        // The agent dates its lines by the wall clock; typed input, hooks and
        // the proxy are on hangar's, and a turn's start compares them.
        .map(|r| Reading {
            at_ms: hangar_clock::from_wall_ms(r.at_ms),
            ..r
        });
        let screen = config
            .enabled(Source::Screen)
            .then(|| {
                let text = live.text();
                if hangar_providers::screen::permission_prompt_open(&meta.provider, &text) {
                    return Some(Activity::Waiting);
                }
                // A CLI with no record of its turns: its screen's own words.
                hangar_providers::adapter(&meta.provider).screen_activity(&text)
            })
            .flatten()
            .map(|activity| Reading {
                activity,
                at_ms: now,
            });
        let (transition, look_at) = {
            let mut entries = self.activity.entries();
            let e = entries.get_mut(id)?;
            let readings = Readings {
                transcript,
                proxy: e.proxy.reading(),
                hooks: e.hooks,
                screen,
                input_ms: e.input_ms,
            };
            let combined = combine(&readings, now);
            let tracker = e.tracker.get_or_insert_with(|| Tracker::new(now));
            let transition = tracker.observe(combined, now, config.debounce_ms);
            let look_at = hangar_core::activity_debounce::next_look(
                tracker,
                &readings,
                now,
                config.debounce_ms,
            );
            (transition, look_at)
        };
        if let Some(t) = transition {
            tracing::debug!("session {id}: {} -> {}", t.from.name(), t.to.name());
            // A turn's end as the transcript wrote it; Claude's comes from
            // its Stop hook when hooks are on (never both: one turn, one end).
            let claude_hooks = hangar_providers::adapter(&meta.provider).takes_hooks()
                && config.enabled(Source::Hooks);
            if t.from == Activity::Working
                && t.to == Activity::Idle
                && !claude_hooks
                && transcript.is_some_and(|r| r.activity == Activity::Idle)
            {
                // No receiver is normal: no goal subsystem listens in tests.
                let _ = self.activity.turn_ends.send(id.clone());
            }
            self.activity.bump();
            self.maybe_notify(id, meta, t);
        }
        look_at
    }

    fn stop_watching(&self, id: &SessionId, _live: &Arc<LiveProcess>) {
        {
            let mut entries = self.activity.entries();
            if let Some(e) = entries.get_mut(id) {
                e.watched = false;
                e.tracker = None;
                e.clear_signals();
            }
        }
        self.activity.bump();
    }

    /// Tell the person about a committed change, unless someone is looking
    /// at the session.
    fn maybe_notify(&self, id: &SessionId, meta: &SessionMeta, t: Transition) {
        if !notify::worth_notifying(t.from, t.to) || self.activity.viewers(id) > 0 {
            return;
        }
        let config = self.notify.get();
        notify::run_commands(config, id.as_str(), &meta.title, t.to);
        if config.osc {
            let text = notify::message(&meta.title, id.as_str(), t.to);
            // No receivers is normal: nobody is attached anywhere.
            let _ = self
                .activity
                .osc
                .send((id.clone(), notify::osc_bytes(&text)));
        }
    }

    /// Whether `id` is mid-turn or waiting for the person: what the governor
    /// and close-idle must never interrupt.
    pub fn is_busy(&self, id: &SessionId) -> bool {
        self.activity_of(id).0.is_busy()
    }

    /// Where `id`'s turn is for a prompt about to be typed into it
    /// (`hangar_core::activity::turn_end`). The debounced state answers
    /// when it is not busy; while it says busy, the latest hook, proxy,
    /// screen and input readings and the transcript read afresh decide, as
    /// a turn that just ended still reads busy for a second or more. Reads
    /// a file: call it off the async threads.
    pub fn turn_end_now(&self, id: &SessionId) -> TurnEnd {
        if !self.is_busy(id) {
            return TurnEnd::Over;
        }
        let Some(meta) = self.sessions.meta(id) else {
            return TurnEnd::Over;
        };
        let (hooks, proxy, input_ms) = match self.activity.entries().get(id) {
            Some(e) => (e.hooks, e.proxy.reading(), e.input_ms),
            None => (None, None, None),
        };
        let now = self.clock.now_ms();
        let screen = self
            .sessions
            .process(id)
            .filter(|_| self.settings.enabled(Source::Screen))
            .filter(|live| {
                hangar_providers::screen::permission_prompt_open(&meta.provider, &live.text())
            })
            .map(|_| Reading {
                activity: Activity::Waiting,
                at_ms: now,
            });
        let readings = Readings {
            transcript: transcript_now(&meta, self.settings.enabled(Source::Transcript)),
            proxy,
            hooks,
            screen,
            input_ms,
        };
        // A claude whose hooks reached hangar reports its turns' ends by them.
        let stop_hooks = hooks.is_some() && hangar_providers::adapter(&meta.provider).takes_hooks();
        hangar_core::activity::turn_end(&readings, now, stop_hooks)
    }

    /// Only for runtimes that are gone for good (closed sessions).
    pub fn forget_activity(&self, id: &SessionId) {
        self.activity.forget(id);
        sources::hooks::remove_settings(&self.paths.home, id);
    }
}

/// What the stop gate judges a session by: its hooks and typed input as
/// the monitor had them, and its transcript as read last.
struct StopReadings {
    meta: SessionMeta,
    keeps_transcript: bool,
    readings: Readings,
    prompt_submitted_ms: Option<u64>,
}

impl StopReadings {
    fn with_transcript_read(mut self) -> StopReadings {
        self.readings.transcript = transcript_now(&self.meta, self.keeps_transcript);
        self
    }

    fn rule(&self) -> hangar_core::stop_gate::BeforeStop {
        hangar_core::stop_gate::before_stop(
            self.keeps_transcript,
            &self.readings,
            self.prompt_submitted_ms,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sources_and_debounce_have_defaults_and_unknown_keys_are_refused() {
        let c: ActivityConfig = toml::from_str("").unwrap();
        assert_eq!(c.sources.len(), 4);
        assert_eq!(c.debounce_ms, 1000);
        let c: ActivityConfig = toml::from_str("sources = [\"screen\"]\ndebounce_ms = 0").unwrap();
        assert!(c.enabled(Source::Screen) && !c.enabled(Source::Transcript));
        assert!(toml::from_str::<ActivityConfig>("sources = [\"tea leaves\"]").is_err());
        assert!(toml::from_str::<ActivityConfig>("bogus = 1").is_err());
    }

    #[test]
    fn until_any_is_reached_by_idle_and_waiting_but_not_working() {
        assert!(Until::Any.reached(Activity::Idle));
        assert!(Until::Any.reached(Activity::Waiting));
        assert!(!Until::Any.reached(Activity::Working));
        assert!(!Until::Idle.reached(Activity::Waiting));
        assert_eq!(Until::parse("waiting"), Some(Until::Waiting));
        assert_eq!(Until::parse("later"), None);
    }
}
