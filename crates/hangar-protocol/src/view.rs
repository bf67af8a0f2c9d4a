//! The JSON shapes the command-line contract promises (DESIGN.md section 4).
//!
//! `hangar ls --json`, `hangar status --json` and `hangar tab ls --json` print
//! these exactly. Fields are only ever added, never renamed or removed.

use serde::{Deserialize, Serialize};

/// One row of `hangar ls`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub id: String,
    pub provider: String,
    pub cwd: String,
    pub title: String,
    /// `pane`, `parked` or `buried`.
    pub placement: String,
    pub tab: Option<String>,
    /// `live`, `spawning`, `hibernated`, `failed` or `exited`.
    pub state: String,
    pub pid: Option<u32>,
    pub provider_session_id: Option<String>,
    /// `resume-request`, `transcript`, `proxy-header`, or null.
    #[serde(default)]
    pub provider_session_source: Option<String>,
    pub pinned: bool,
    pub parent: Option<String>,
    pub root: Option<String>,
    pub run: Option<String>,
    #[serde(default)]
    pub linked_parent: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    /// Why the session is `failed` (or how it exited), for a person to read.
    #[serde(default)]
    pub reason: Option<String>,
    /// How the last start went: `fresh` (no durable provider id to resume)
    /// or `resumed`.
    #[serde(default)]
    pub started: Option<String>,
    #[serde(default)]
    pub dangerous: bool,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Other sessions holding the same durable provider session id: only one
    /// of them may run at a time (`hangar doctor` fixes it).
    #[serde(default)]
    pub duplicate_of: Vec<String>,
    /// The git worktree the session runs in (`hangar new --worktree`).
    #[serde(default)]
    pub worktree: Option<WorktreeView>,
    /// Token usage and errors seen by the recording proxy; null until the
    /// session's API traffic was seen.
    #[serde(default)]
    pub usage: Option<UsageView>,
    /// What the agent is doing: `working`, `waiting` (for the person),
    /// `idle` (turn finished) or `unknown`; `limited` above them all while a
    /// usage limit stands and its reset has not passed.
    #[serde(default = "unknown_activity")]
    pub activity: String,
    /// When it entered that state, in ms since the epoch.
    #[serde(default)]
    pub activity_since: Option<u64>,
    /// The usage limit that stopped the session (issue 29), null when none.
    #[serde(default)]
    pub limit: Option<LimitView>,
    /// The goal hangar keeps the session on (`hangar goal`), null when it
    /// never had one.
    #[serde(default)]
    pub goal: Option<GoalView>,
    /// The container engine the session runs on (`hangar new --engine`),
    /// null for a process on this machine.
    #[serde(default)]
    pub engine: Option<EngineView>,
    /// The walls around the agent (`hangar new --sandbox`); null when it
    /// runs with the person's whole account.
    #[serde(default)]
    pub sandbox: Option<SandboxView>,
    /// The session this one was forked from (`hangar fork`), null when none.
    #[serde(default)]
    pub forked_from: Option<String>,
    /// Forked into another CLI: it started from a handoff prompt, not from
    /// its parent's conversation.
    #[serde(default)]
    pub handoff: bool,
    /// The `[accounts.NAME]` it runs under (`hangar new --account`), null
    /// for the provider's own login. Only the name: never its credential.
    #[serde(default)]
    pub account: Option<String>,
}

/// A session's usage limit in `hangar ls --json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitView {
    /// `five_hour`, `seven_day`, `usage_limit`, `rate_limit` or
    /// `retry_after`.
    pub kind: String,
    /// When the provider said the limit resets (ms since the epoch); null
    /// when no source said.
    pub resets_at: Option<i64>,
    /// `proxy`, `hook`, `transcript` or `screen`.
    pub source: String,
    /// When hangar will type the continuation prompt (ms), null when it
    /// will not.
    pub continue_at: Option<i64>,
}

/// A session's goal in `hangar ls --json` (`hangar goal`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalView {
    pub text: String,
    /// Ends of turns since the goal was typed.
    pub turns: u32,
    pub max_turns: u32,
    /// `running`, `paused`, `done`, `blocked` or `stopped`.
    pub state: String,
    /// Why it is paused or stopped.
    pub reason: Option<String>,
    /// The agent's own summary (`goal_done`).
    pub summary: Option<String>,
}

/// A session's engine in `hangar ls`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineView {
    /// The `[engines.NAME]` it runs on.
    pub name: String,
    /// `docker`, `podman` or `kubernetes`; null when config.toml no longer
    /// has that engine.
    pub kind: Option<String>,
    /// The container's name (Docker, Podman).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The pod's name (Kubernetes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The image it runs (null when neither the session nor the engine
    /// names one).
    pub image: Option<String>,
}

/// A sandboxed session's walls, in `hangar ls --json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SandboxView {
    /// `bubblewrap`.
    pub kind: String,
    /// `proxy` (only hangar's recording proxy, through a socket) or `none`.
    pub network: String,
    /// The only folders the agent can write.
    pub writable: Vec<String>,
    /// Whether the agent CLI's own sandbox (for its shell commands) works
    /// inside hangar's, or why it is off.
    #[serde(default)]
    pub agent_sandbox: Option<String>,
}

fn unknown_activity() -> String {
    "unknown".to_owned()
}

/// A session's API usage, summed over its turns, from captured traffic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageView {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Recorded API requests (turns).
    pub requests: u64,
    /// Requests that failed: an error status, an error event, or an
    /// unreachable upstream.
    pub errors: u64,
    #[serde(default)]
    pub last_error: Option<String>,
}

/// The recording proxy in `hangar status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxyView {
    /// `[proxy] enabled` in config.toml.
    pub enabled: bool,
    /// Started (it starts with the first session that uses it).
    pub running: bool,
    pub port: Option<u16>,
    /// Live sessions holding proxy credentials.
    pub sessions: usize,
    pub allow_hosts: Vec<String>,
    /// hangar's CA certificate, trusted by agents.
    pub ca_file: String,
    pub capture_dir: String,
    /// Why the last start failed, if it did.
    #[serde(default)]
    pub fault: Option<String>,
    /// Totals over every session's captured traffic: this daemon's, and
    /// earlier daemons' read back from the capture files. `last_error` is
    /// the fleet's latest.
    #[serde(default)]
    pub usage: UsageView,
    /// The session whose error `usage.last_error` is.
    #[serde(default)]
    pub last_error_session: Option<String>,
}

/// A session's worktree in `hangar ls`. `dirty`, `ahead` and `behind` are
/// null when git could not tell (the folder is gone, or the listing did not
/// ask git).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorktreeView {
    pub path: String,
    pub branch: String,
    /// The branch (or commit) the worktree's branch was made from.
    pub base: String,
    /// The folder still exists.
    #[serde(default)]
    pub exists: bool,
    /// Uncommitted or untracked files.
    pub dirty: Option<bool>,
    /// Commits on the worktree not on `base`.
    pub ahead: Option<u32>,
    /// Commits on `base` not in the worktree.
    pub behind: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonView {
    pub pid: u32,
    pub version: String,
    #[serde(default)]
    pub home: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCounts {
    pub total: usize,
    pub panes: usize,
    pub parked: usize,
    pub buried: usize,
    pub live: usize,
    pub hibernated: usize,
    pub failed: usize,
    #[serde(default)]
    pub spawning: usize,
    #[serde(default)]
    pub exited: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RestoreView {
    /// The live set size: pane sessions the restore had to spawn.
    pub expected: usize,
    pub restored: usize,
    pub hibernated: usize,
    pub failed: usize,
    /// Every expected spawn has finished, whether it succeeded or failed.
    pub complete: bool,
    pub duration_ms: Option<u64>,
    /// Complete, and every expected spawn ended live (no pane failed).
    #[serde(default)]
    pub all_live: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusView {
    pub daemon: DaemonView,
    pub sessions: SessionCounts,
    pub restore: RestoreView,
    #[serde(default)]
    pub dangerous: bool,
    /// Problems a person should know about (a store moved aside, ...).
    #[serde(default)]
    pub notices: Vec<String>,
    #[serde(default)]
    pub budget: BudgetView,
    #[serde(default)]
    pub wake_queue: WakeQueueView,
    #[serde(default)]
    pub proxy: ProxyView,
    /// Every session in state `failed`, with the reason it shows.
    #[serde(default)]
    pub failed: Vec<FailedView>,
    /// Every session a usage limit stopped (issue 29).
    #[serde(default)]
    pub limited: Vec<LimitedView>,
}

/// A limited session in `hangar status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitedView {
    pub id: String,
    pub title: String,
    pub limit: LimitView,
}

/// A failed session in `hangar status`: what it is and why it failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailedView {
    pub id: String,
    pub title: String,
    pub reason: String,
}

/// The live budget and current usage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetView {
    pub max_live: Option<usize>,
    pub max_memory_bytes: Option<u64>,
    /// Live agent sessions at the last check.
    pub live: usize,
    /// Memory of their process trees at the last check: the proportional
    /// set size (`/proc/PID/smaps_rollup`), a page shared by many processes
    /// counted once across the fleet; what `max_memory_bytes` is held to.
    pub memory_bytes: u64,
    /// The same trees' resident memory, a shared page counted once per
    /// process that maps it (the older, overstated figure).
    #[serde(default)]
    pub resident_bytes: u64,
    /// Sessions whose wake waits in the queue for room within the memory
    /// budget.
    #[serde(default)]
    pub waiting_for_memory: Vec<String>,
    #[serde(default)]
    pub over_budget: bool,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WakeQueueView {
    pub pending: usize,
    pub running: usize,
    /// `closed` or `open`.
    pub breaker: String,
    #[serde(default)]
    pub consecutive_auth_failures: u32,
}

impl Default for WakeQueueView {
    fn default() -> Self {
        WakeQueueView {
            pending: 0,
            running: 0,
            breaker: "closed".to_owned(),
            consecutive_auth_failures: 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TabView {
    pub id: String,
    pub title: String,
    pub cwd: Option<String>,
    pub active: bool,
    pub panes: Vec<String>,
    pub parked: Vec<String>,
    pub focus: Option<String>,
}

/// One matching line of `hangar search --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchMatchView {
    pub session: String,
    pub title: String,
    /// The tab holding the session (a pane's or a parked record's), or null.
    pub tab: Option<String>,
    /// `screen`, `history` or `transcript`.
    pub source: String,
    /// 1-based: the screen row, the history line counting from the oldest
    /// kept, or the transcript message.
    pub line: usize,
    /// The matching line, escape sequences and control characters removed,
    /// cut around the match when long.
    pub text: String,
    /// Where the match starts in `text`, in characters.
    #[serde(default)]
    pub column: usize,
    /// The match's length in characters.
    #[serde(default)]
    pub length: usize,
    /// The session's state (`live`, `hibernated`, ...), as `hangar ls`.
    #[serde(default)]
    pub state: String,
}

/// `hangar search --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchView {
    pub query: String,
    /// Whether upper and lower case were told apart (smart case).
    pub case_sensitive: bool,
    /// Grouped by session, in `hangar ls` order, the most recent text of
    /// each first.
    pub matches: Vec<SearchMatchView>,
    /// A cap (per session or in all) left matches out.
    pub truncated: bool,
    /// Sessions whose text could not be read, and why; the others were
    /// still searched.
    #[serde(default)]
    pub unreadable: Vec<SearchUnreadable>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchUnreadable {
    pub session: String,
    pub reason: String,
}
