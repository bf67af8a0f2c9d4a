//! The control messages carried in `TAG_MESSAGE` frames.
//!
//! A request is `{"id": n, "kind": "<name>", "body": {...}}`; a reply is
//! `{"id": n, "ok": true, "body": ...}` or `{"id": n, "ok": false, "error":
//! {"code", "message"}}`. Kind names are permanent: a kind is never renamed or
//! reused, only added. A request whose kind this daemon does not know decodes
//! to [`Request::Unknown`] and is answered with the `unknown_kind` error, so an
//! old daemon and a new client (or the reverse) fail clearly, never silently.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bumped only when an existing message changes incompatibly. Additive
/// changes (a new kind, a new optional field) keep the version.
pub const PROTOCOL_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope {
    pub id: u64,
    pub kind: String,
    #[serde(default)]
    pub body: Value,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
    #[serde(default)]
    pub client: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol_version: u32,
    pub daemon_version: String,
    pub pid: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub tab: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    /// Split this session's pane.
    #[serde(default)]
    pub split: Option<String>,
    /// `vertical` or `horizontal`.
    #[serde(default)]
    pub direction: Option<String>,
    #[serde(default)]
    pub parked: bool,
    #[serde(default)]
    pub no_capture: bool,
    #[serde(default)]
    pub no_mcp: bool,
    /// The client's own folder, used when neither `cwd` nor the tab names one.
    #[serde(default)]
    pub fallback_cwd: Option<String>,
    /// Run the session in a new git worktree of the repository its folder
    /// is in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worktree: bool,
    /// The worktree's new branch (default: made from the title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_branch: Option<String>,
    /// Run the session on `[engines.NAME]` (a container or pod), never
    /// outside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// With `engine`: this image instead of the engine's `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Run it in hangar's sandbox (`hangar new --sandbox`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
    /// Run it under `[accounts.NAME]` (`hangar new --account`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

/// `hangar engine image build NAME [--provider P]`: build an image for
/// `[engines.NAME]` from Debian packages with the provider's CLI from npm,
/// and import it into the engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineImageBuild {
    pub engine: String,
    #[serde(default)]
    pub provider: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRef {
    pub session: String,
}

/// `hangar hibernate ID [--force]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HibernateSession {
    pub session: String,
    /// Stop it even while its turn runs or a command it started runs.
    #[serde(default)]
    pub force: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Unpark {
    pub session: String,
    #[serde(default)]
    pub tab: Option<String>,
    /// Put it beside this pane instead of the tab's automatic spot.
    #[serde(default)]
    pub split: Option<String>,
    /// `vertical` or `horizontal`, with `split`.
    #[serde(default)]
    pub direction: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Send {
    pub session: String,
    pub text: String,
    /// Press Enter after the text (the CLI's `send` always does).
    #[serde(default = "yes")]
    pub enter: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Close {
    pub session: String,
    /// A person confirmed closing every session the cascade names.
    #[serde(default)]
    pub yes: bool,
    /// Also delete the branch of each worktree removed (`git branch -d`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_branch: bool,
}

/// List the worktrees hangar created; with `prune`, remove the clean ones
/// whose session is gone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Worktrees {
    #[serde(default)]
    pub prune: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TabNew {
    pub title: String,
    #[serde(default)]
    pub cwd: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TabClose {
    pub tab: String,
    #[serde(default)]
    pub yes: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TabRename {
    pub tab: String,
    pub title: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reload {
    #[serde(default)]
    pub dangerous: Option<bool>,
}

/// The reply to `attach` is `{id, detach_key, history_end}`: `history_end`
/// (added in session 5, absent from older daemons) numbers the session's
/// history as [`HistoryPage`] does at the moment of the screen that follows,
/// so a client that reads history by page knows that the line just above the
/// screen it was sent is `history_end - 1`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Attach {
    pub session: String,
    pub cols: u16,
    pub rows: u16,
    /// Print up to this many lines of the session's history before its
    /// screen, so a client that keeps its own scrollback has it (the TUI did
    /// before it read history by page). `None` (and older clients): the
    /// screen only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<u32>,
    /// Send `{"event": "history", "end": N}` after output that moved the
    /// history's end (numbered as [`HistoryPage`]), taken with that output
    /// so it is exact for the bytes sent before it: the line just above the
    /// client's screen is `N - 1`. Older daemons ignore it (and send no
    /// `history_end` in the reply); older clients never ask.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub history_events: bool,
    /// The client's terminal is a terminal and it offers it: when the
    /// reply says `send_terminal`, the client sends one byte carrying its
    /// terminal's descriptor (SCM_RIGHTS), and the daemon reads its keys
    /// and writes the session's output there itself, as tmux's server does
    /// (no relay through the client: key echo as fast as tmux's). The
    /// event `{"event": "terminal", "taken": bool}` says whether it did;
    /// when not, the connection carries the terminal's bytes as before.
    /// Older daemons ignore it and never say `send_terminal`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminal: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Resize {
    pub cols: u16,
    pub rows: u16,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Screen {
    pub session: String,
    /// Also return up to this many lines of history above the screen
    /// (`hangar screen --scrollback N`). `None` (and older clients): the
    /// screen only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrollback: Option<u32>,
}

/// A page of a session's history (no wake), for a client that shows more
/// history than it keeps (the TUI's panes). Lines are numbered from the first
/// line the session's history ever held (since it last started), so a number
/// names the same line while it is kept: lines printed meanwhile, or the
/// oldest dropped by `[terminal] history_bytes`, never shift a page asked by
/// number. Also answered on an attached connection.
///
/// Reply: `{first, end, start, lines, source}`: `first` is the oldest line
/// kept, `end` one past the newest (the screen's top row), `lines` the page
/// (each with its SGR colour sequences, no other escape) starting at line
/// `start`, and `source` is `live` or `saved` (a session not running, whose
/// saved history is numbered from 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage {
    pub session: String,
    /// The page ends just before this line; `None`: at the newest line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<u64>,
    /// At most this many lines (the daemon may send fewer).
    #[serde(default)]
    pub lines: u32,
}

/// Make a tab active and, optionally, focus one of its panes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Focus {
    /// Tab id, prefix or title; default: the tab showing `session`.
    #[serde(default)]
    pub tab: Option<String>,
    #[serde(default)]
    pub session: Option<String>,
}

/// Resize the split directly holding a pane: `ratio` is the share of its
/// first (left or top) side, clamped to 0.1..=0.9.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub session: String,
    pub ratio: f32,
    /// `vertical` or `horizontal`: resize the nearest split of that
    /// direction around the pane (an ancestor when the pane's own split
    /// runs the other way) instead of the one directly holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Import {
    /// `agent-code` or `hangar`.
    pub format: String,
    pub text: String,
}

/// List duplicate provider session ids; optionally fix one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Doctor {
    /// Forget this session's provider id so its next wake starts fresh.
    #[serde(default)]
    pub fork: Option<String>,
    /// Close (forget) this session record.
    #[serde(default)]
    pub forget: Option<String>,
    /// Confirm a `forget` that cascades to linked children.
    #[serde(default)]
    pub yes: bool,
}

/// The last messages of a session's transcript (no wake).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub session: String,
    #[serde(default)]
    pub tail: Option<usize>,
}

/// Search every session's history, screen and transcript for a word
/// (`hangar search`, the TUI's search dialog); never wakes a session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// Plain text; case-insensitive unless it has an upper-case letter.
    pub query: String,
    /// Search only this session (id or unique prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// At most this many matches per session (default: the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_session: Option<usize>,
    /// At most this many matches in all (default: the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evict {
    pub parked_older_than_ms: u64,
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CloseIdle {
    pub older_than_ms: u64,
    #[serde(default)]
    pub include_live: bool,
    #[serde(default)]
    pub yes: bool,
}

/// Wait until sessions reach an activity state (`hangar wait`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Wait {
    pub sessions: Vec<String>,
    /// `idle`, `waiting` or `any`.
    #[serde(default = "until_idle")]
    pub until: String,
    /// Give up after this long; wait forever when absent.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

fn until_idle() -> String {
    "idle".to_owned()
}

/// A provider hook calling back (`hangar hook EVENT --session ID`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hook {
    pub session: String,
    /// `stop`, `notification`, `user-prompt-submit` or `session-start`.
    pub event: String,
    /// `session-start` only: the provider session id the agent reported
    /// (its hook input's `session_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_session_id: Option<String>,
    /// `session-start` only: the folder the agent runs in (its hook input's `cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `stop-failure` only: the error that ended the turn (its hook input's
    /// `error`: `rate_limit`, `authentication_failed`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `session-start` only: why it started (`startup`, `resume`, `clear`, `compact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The orchestration tools an agent calls through `hangar mcp`; each is its
/// own request kind (`agent_<tool>`), permanent like every other kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentTool {
    Create,
    SendPrompt,
    List,
    Read,
    ReadRunOutputs,
    Wait,
    Close,
    CloseRun,
    Park,
    Hibernate,
    /// The usage ledger and the accounts' limits (issue 29).
    UsageRead,
    /// Give one of the caller's agents a goal.
    GoalStart,
    /// Stop one of the caller's agents' goal.
    GoalStop,
    /// The caller says its own goal is done or blocked.
    GoalDone,
}

impl AgentTool {
    pub const ALL: [AgentTool; 14] = [
        AgentTool::Create,
        AgentTool::SendPrompt,
        AgentTool::List,
        AgentTool::Read,
        AgentTool::ReadRunOutputs,
        AgentTool::Wait,
        AgentTool::Close,
        AgentTool::CloseRun,
        AgentTool::Park,
        AgentTool::Hibernate,
        AgentTool::UsageRead,
        AgentTool::GoalStart,
        AgentTool::GoalStop,
        AgentTool::GoalDone,
    ];

    /// The permanent wire name of this tool's request kind.
    pub fn kind(self) -> &'static str {
        match self {
            AgentTool::Create => "agent_create",
            AgentTool::SendPrompt => "agent_send_prompt",
            AgentTool::List => "agent_list",
            AgentTool::Read => "agent_read",
            AgentTool::ReadRunOutputs => "agent_read_run_outputs",
            AgentTool::Wait => "agent_wait",
            AgentTool::Close => "agent_close",
            AgentTool::CloseRun => "agent_close_run",
            AgentTool::Park => "agent_park",
            AgentTool::Hibernate => "agent_hibernate",
            AgentTool::UsageRead => "agent_usage_read",
            AgentTool::GoalStart => "agent_goal_start",
            AgentTool::GoalStop => "agent_goal_stop",
            AgentTool::GoalDone => "agent_goal_done",
        }
    }

    pub fn from_kind(kind: &str) -> Option<AgentTool> {
        AgentTool::ALL.into_iter().find(|t| t.kind() == kind)
    }
}

/// One orchestration tool call. `caller` is the session `hangar mcp` was
/// launched for and `token` the secret the daemon minted for it; the daemon
/// takes the caller's identity from these two only, never from `args`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCall {
    #[serde(skip, default = "agent_tool_default")]
    pub tool: AgentTool,
    pub caller: String,
    pub token: String,
    /// The tool's own arguments, validated by the daemon.
    #[serde(default)]
    pub args: Value,
}

fn agent_tool_default() -> AgentTool {
    AgentTool::List
}

/// Never prints the token: requests may end up in logs.
impl std::fmt::Debug for AgentCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCall")
            .field("tool", &self.tool)
            .field("caller", &self.caller)
            .field("token", &"<redacted>")
            .field("args", &self.args)
            .finish()
    }
}

/// `hangar diff`: what a session changed since its base. A long change is
/// paged by files: `from_file` starts a page, and `tree` with `merge_base`
/// (from the first page's reply) skip building the working tree again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub session: String,
    /// Compare with this ref instead of the recorded base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Only the file list: no patch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stat: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_file: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_base: Option<String>,
    /// A later page for a client that has the file list from the first:
    /// the reply's `files` is empty (10,000 files are a megabyte of JSON
    /// on every page otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_files: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `hangar review`: comments typed into the agent as one prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub session: String,
    pub comments: Vec<hangar_core::review::ReviewComment>,
}

/// `hangar finish`: land a session's branch (or open a pull request).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Finish {
    pub session: String,
    /// `merge` (default), `squash` or `rebase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub commit: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pr: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_session: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_branch: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resolve: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// `hangar fork`: a new session carrying on another's conversation (the
/// CLI's own fork), or with `provider` another CLI's agent started with a
/// handoff prompt. Without `parked`, the fork opens in a split beside its
/// parent (or in its parent's tab when the parent is not a pane).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fork {
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Fork into this CLI instead of the parent's (a handoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A new worktree on this new branch, from the parent's HEAD with the
    /// parent's uncommitted state copied in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_branch: Option<String>,
    /// With `worktree_branch` absent: a new worktree with a branch named
    /// from the title.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worktree: bool,
    /// `vertical` (default) or `horizontal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parked: bool,
}

/// Every request kind this build understands.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    Hello(Hello),
    New(NewSession),
    List,
    Status,
    Send(Send),
    Park(SessionRef),
    Unpark(Unpark),
    Bury(SessionRef),
    Unbury(SessionRef),
    Pin(SessionRef),
    Unpin(SessionRef),
    Wake(SessionRef),
    Hibernate(HibernateSession),
    Close(Close),
    TabNew(TabNew),
    TabList,
    TabClose(TabClose),
    TabRename(TabRename),
    Reload(Reload),
    Shutdown,
    Export,
    Import(Import),
    /// Turns the connection into a terminal stream for one session.
    Attach(Attach),
    /// On an attached connection: the client's terminal changed size.
    Resize(Resize),
    /// On an attached connection: leave, the session keeps running.
    Detach,
    /// From `hangar bridge --mux`: the daemon takes the bridge's stdin and
    /// stdout (passed over the socket right after the reply) and speaks the
    /// link's channels itself.
    TakeLink,
    /// The screen of a session as text (no wake).
    Screen(Screen),
    /// A page of a session's history, by line number (no wake).
    History(HistoryPage),
    /// Duplicate provider ids and their fixes.
    Doctor(Doctor),
    /// The last messages of a session's transcript (no wake).
    Transcript(Transcript),
    /// Lines matching a query in every session's text (no wake).
    Search(Search),
    Workspace,
    /// Make a tab active and focus a pane (the TUI's focus, persisted).
    Focus(Focus),
    /// Remove parked records untouched for longer than a duration.
    Evict(Evict),
    /// Close sessions inactive for longer than a duration.
    CloseIdle(CloseIdle),
    /// Close the wake queue's breaker after authentication failures.
    ResumeQueue,
    /// Set the ratio of the split holding a pane.
    Ratio(Ratio),
    /// The worktrees hangar created, with their state (`hangar worktrees`).
    Worktrees(Worktrees),
    /// An orchestration tool call from an agent (`agent_*` kinds).
    Agent(AgentCall),
    /// Wait until sessions finish their turn or wait for the person.
    Wait(Wait),
    /// A provider hook reporting an agent's activity.
    Hook(Hook),
    /// The usage ledger summed (`hangar usage`).
    Usage(UsageQuery),
    /// A session's usage-limit settings (`hangar limit ID --continue`).
    Limit(LimitSet),
    /// Give a session a goal, or stop it (`hangar goal`).
    Goal(GoalSet),
    /// What a session changed since its base (`hangar diff`).
    Diff(Diff),
    /// Review comments sent to the agent (`hangar review`).
    Review(Review),
    /// Land a session's work (`hangar finish`).
    Finish(Finish),
    /// Fork a session's conversation (`hangar fork`).
    Fork(Fork),
    /// Build and import an image for an engine.
    EngineImageBuild(EngineImageBuild),
    /// A kind this build does not know; answered with `unknown_kind`.
    Unknown(String),
}

/// `hangar usage [--since D] [--session ID]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageQuery {
    /// Only requests at or after this time (ms since the epoch).
    pub since_ms: i64,
    /// Only this session (id or unique prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// `hangar limit ID --continue on|off`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitSet {
    pub session: String,
    /// Type the continuation prompt after a limit resets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_continue: Option<bool>,
    /// The session's own cost budget in USD (`--max-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Move the session to this `[accounts.NAME]` now (`--failover`): its
    /// conversation carries on in the same pane under that account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<String>,
}

/// `hangar goal ID TEXT [--max-turns N]`, `hangar goal ID --stop`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalSet {
    pub session: String,
    /// The goal to start (replacing any goal the session had); `None` with
    /// `stop` false only reads the goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Stop the session's goal.
    #[serde(default)]
    pub stop: bool,
}

/// Why a request could not be decoded into a known kind with a valid body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest {
    pub id: Option<u64>,
    pub message: String,
}

impl Request {
    /// The permanent wire name of this kind.
    pub fn kind(&self) -> &str {
        match self {
            Request::Hello(_) => "hello",
            Request::New(_) => "new",
            Request::List => "list",
            Request::Status => "status",
            Request::Send(_) => "send",
            Request::Park(_) => "park",
            Request::Unpark(_) => "unpark",
            Request::Bury(_) => "bury",
            Request::Unbury(_) => "unbury",
            Request::Pin(_) => "pin",
            Request::Unpin(_) => "unpin",
            Request::Wake(_) => "wake",
            Request::Hibernate(_) => "hibernate",
            Request::Close(_) => "close",
            Request::TabNew(_) => "tab_new",
            Request::TabList => "tab_list",
            Request::TabClose(_) => "tab_close",
            Request::TabRename(_) => "tab_rename",
            Request::Reload(_) => "reload",
            Request::Shutdown => "shutdown",
            Request::Export => "export",
            Request::Import(_) => "import",
            Request::Attach(_) => "attach",
            Request::Resize(_) => "resize",
            Request::Detach => "detach",
            Request::TakeLink => "take_link",
            Request::Screen(_) => "screen",
            Request::History(_) => "history",
            Request::Doctor(_) => "doctor",
            Request::Transcript(_) => "transcript",
            Request::Search(_) => "search",
            Request::Workspace => "workspace",
            Request::Worktrees(_) => "worktrees",
            Request::Focus(_) => "focus",
            Request::Evict(_) => "evict",
            Request::CloseIdle(_) => "close_idle",
            Request::ResumeQueue => "resume_queue",
            Request::Ratio(_) => "ratio",
            Request::Agent(call) => call.tool.kind(),
            Request::Wait(_) => "wait",
            Request::Hook(_) => "hook",
            Request::Usage(_) => "usage",
            Request::Limit(_) => "limit",
            Request::Goal(_) => "goal",
            Request::Diff(_) => "diff",
            Request::Review(_) => "review",
            Request::Finish(_) => "finish",
            Request::Fork(_) => "fork",
            Request::EngineImageBuild(_) => "engine_image_build",
            Request::Unknown(kind) => kind,
        }
    }

    fn body(&self) -> Value {
        fn v<T: Serialize>(t: &T) -> Value {
            serde_json::to_value(t).unwrap_or(Value::Null)
        }
        match self {
            Request::Hello(b) => v(b),
            Request::New(b) => v(b),
            Request::Send(b) => v(b),
            Request::Park(b)
            | Request::Bury(b)
            | Request::Unbury(b)
            | Request::Pin(b)
            | Request::Unpin(b)
            | Request::Wake(b) => v(b),
            Request::Hibernate(b) => v(b),
            Request::Unpark(b) => v(b),
            Request::Close(b) => v(b),
            Request::TabNew(b) => v(b),
            Request::TabClose(b) => v(b),
            Request::TabRename(b) => v(b),
            Request::Reload(b) => v(b),
            Request::Import(b) => v(b),
            Request::Attach(b) => v(b),
            Request::Resize(b) => v(b),
            Request::Screen(b) => v(b),
            Request::History(b) => v(b),
            Request::Doctor(b) => v(b),
            Request::Transcript(b) => v(b),
            Request::Search(b) => v(b),
            Request::Worktrees(b) => v(b),
            Request::Focus(b) => v(b),
            Request::Evict(b) => v(b),
            Request::CloseIdle(b) => v(b),
            Request::Ratio(b) => v(b),
            Request::Agent(b) => v(b),
            Request::Wait(b) => v(b),
            Request::Hook(b) => v(b),
            Request::Usage(b) => v(b),
            Request::Limit(b) => v(b),
            Request::Goal(b) => v(b),
            Request::Diff(b) => v(b),
            Request::Review(b) => v(b),
            Request::Finish(b) => v(b),
            Request::Fork(b) => v(b),
            Request::EngineImageBuild(b) => v(b),
            Request::List
            | Request::Status
            | Request::TabList
            | Request::Shutdown
            | Request::Export
            | Request::Detach
            | Request::TakeLink
            | Request::Workspace
            | Request::ResumeQueue
            | Request::Unknown(_) => Value::Object(Default::default()),
        }
    }

    pub fn encode(&self, id: u64) -> Vec<u8> {
        let env = Envelope {
            id,
            kind: self.kind().to_owned(),
            body: self.body(),
        };
        // Serializing a struct of strings and JSON values cannot fail.
        serde_json::to_vec(&env).expect("envelope serializes")
    }

    /// Decode a request payload. Unknown kinds are not an error: they decode
    /// to `Request::Unknown`. A payload that is not an envelope, or a known
    /// kind with a body that does not fit, is a `BadRequest` naming why.
    pub fn decode(payload: &[u8]) -> Result<(u64, Request), BadRequest> {
        let env: Envelope = serde_json::from_slice(payload).map_err(|e| BadRequest {
            id: serde_json::from_slice::<Value>(payload)
                .ok()
                .and_then(|v| v.get("id").and_then(Value::as_u64)),
            message: format!("malformed request: {e}"),
        })?;
        let id = env.id;
        let body = if env.body.is_null() {
            Value::Object(Default::default())
        } else {
            env.body
        };
        fn b<T: serde::de::DeserializeOwned>(
            id: u64,
            kind: &str,
            body: Value,
        ) -> Result<T, BadRequest> {
            serde_json::from_value(body).map_err(|e| BadRequest {
                id: Some(id),
                message: format!("bad body for request {kind:?}: {e}"),
            })
        }
        let k = env.kind.as_str();
        let req = match k {
            "hello" => Request::Hello(b(id, k, body)?),
            "new" => Request::New(b(id, k, body)?),
            "list" => Request::List,
            "status" => Request::Status,
            "send" => Request::Send(b(id, k, body)?),
            "park" => Request::Park(b(id, k, body)?),
            "unpark" => Request::Unpark(b(id, k, body)?),
            "bury" => Request::Bury(b(id, k, body)?),
            "unbury" => Request::Unbury(b(id, k, body)?),
            "pin" => Request::Pin(b(id, k, body)?),
            "unpin" => Request::Unpin(b(id, k, body)?),
            "wake" => Request::Wake(b(id, k, body)?),
            "hibernate" => Request::Hibernate(b(id, k, body)?),
            "close" => Request::Close(b(id, k, body)?),
            "tab_new" => Request::TabNew(b(id, k, body)?),
            "tab_list" => Request::TabList,
            "tab_close" => Request::TabClose(b(id, k, body)?),
            "tab_rename" => Request::TabRename(b(id, k, body)?),
            "reload" => Request::Reload(b(id, k, body)?),
            "shutdown" => Request::Shutdown,
            "export" => Request::Export,
            "import" => Request::Import(b(id, k, body)?),
            "attach" => Request::Attach(b(id, k, body)?),
            "resize" => Request::Resize(b(id, k, body)?),
            "detach" => Request::Detach,
            "take_link" => Request::TakeLink,
            "screen" => Request::Screen(b(id, k, body)?),
            "history" => Request::History(b(id, k, body)?),
            "doctor" => Request::Doctor(b(id, k, body)?),
            "transcript" => Request::Transcript(b(id, k, body)?),
            "search" => Request::Search(b(id, k, body)?),
            "workspace" => Request::Workspace,
            "worktrees" => Request::Worktrees(b(id, k, body)?),
            "focus" => Request::Focus(b(id, k, body)?),
            "evict" => Request::Evict(b(id, k, body)?),
            "close_idle" => Request::CloseIdle(b(id, k, body)?),
            "resume_queue" => Request::ResumeQueue,
            "ratio" => Request::Ratio(b(id, k, body)?),
            "wait" => Request::Wait(b(id, k, body)?),
            "hook" => Request::Hook(b(id, k, body)?),
            "usage" => Request::Usage(b(id, k, body)?),
            "limit" => Request::Limit(b(id, k, body)?),
            "goal" => Request::Goal(b(id, k, body)?),
            "diff" => Request::Diff(b(id, k, body)?),
            "review" => Request::Review(b(id, k, body)?),
            "finish" => Request::Finish(b(id, k, body)?),
            "fork" => Request::Fork(b(id, k, body)?),
            "engine_image_build" => Request::EngineImageBuild(b(id, k, body)?),
            other => match AgentTool::from_kind(other) {
                Some(tool) => {
                    let mut call: AgentCall = b(id, k, body)?;
                    call.tool = tool;
                    Request::Agent(call)
                }
                None => Request::Unknown(other.to_owned()),
            },
        };
        Ok((id, req))
    }
}

/// Error codes are part of the contract: scripts may match on them.
pub mod codes {
    pub const BAD_REQUEST: &str = "bad_request";
    pub const UNKNOWN_KIND: &str = "unknown_kind";
    pub const TOO_LARGE: &str = "too_large";
    pub const NOT_FOUND: &str = "not_found";
    pub const AMBIGUOUS: &str = "ambiguous";
    pub const INVALID: &str = "invalid";
    pub const NEEDS_CONFIRMATION: &str = "needs_confirmation";
    pub const FAILED: &str = "failed";
    pub const INTERNAL: &str = "internal";
    pub const VERSION: &str = "version_mismatch";
    pub const SHUTTING_DOWN: &str = "shutting_down";
    /// Waking would run a second process on a conversation a live session holds.
    pub const DUPLICATE: &str = "duplicate";
    /// Orchestration: the MCP caller's token does not match its session.
    pub const UNAUTHORIZED: &str = "unauthorized";
    /// Orchestration: an agent asked to close itself.
    pub const SELF_CLOSE: &str = "self_close";
    /// Orchestration: the named session is not the caller's child or
    /// descendant in its project tab.
    pub const NOT_YOUR_AGENT: &str = "not_your_agent";
    /// Orchestration: the close would also close sessions not named.
    pub const CASCADE_REFUSED: &str = "cascade_refused";
    /// The session's provider account is at a usage limit until its reset.
    pub const LIMITED: &str = "limited";
    /// Stopping the session now would cut work it is doing (its turn, a
    /// command it started): `hangar hibernate --force` stops it anyway.
    pub const BUSY: &str = "busy";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    /// Extra facts for the caller, e.g. the sessions a cascade would close.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub id: u64,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub body: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl Reply {
    pub fn ok(id: u64, body: Value) -> Reply {
        Reply {
            id,
            ok: true,
            body,
            error: None,
        }
    }

    /// A success carrying one of the `reply` module's types, as the JSON
    /// value the wire carries (keys sorted, as a hand-built value's).
    pub fn ok_typed<T: Serialize>(id: u64, body: &T) -> Reply {
        // The reply types are structs of strings, numbers and lists: they
        // always serialize.
        Reply::ok(id, serde_json::to_value(body).unwrap_or(Value::Null))
    }

    pub fn err(id: u64, code: &str, message: impl Into<String>) -> Reply {
        Reply::err_with(id, code, message, Value::Null)
    }

    pub fn err_with(id: u64, code: &str, message: impl Into<String>, detail: Value) -> Reply {
        Reply {
            id,
            ok: false,
            body: Value::Null,
            error: Some(ErrorBody {
                code: code.to_owned(),
                message: message.into(),
                detail,
            }),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        // Replies hold only JSON values and strings.
        serde_json::to_vec(self).expect("reply serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_kind_round_trips_through_its_wire_name() {
        let reqs = vec![
            Request::New(NewSession {
                provider: Some("shell".into()),
                ..Default::default()
            }),
            Request::List,
            Request::Send(Send {
                session: "ab".into(),
                text: "hi".into(),
                enter: true,
            }),
            Request::Close(Close {
                session: "x".into(),
                yes: true,
                delete_branch: true,
            }),
            Request::Worktrees(Worktrees { prune: true }),
            Request::TabRename(TabRename {
                tab: "t".into(),
                title: "n".into(),
            }),
            Request::Shutdown,
            Request::TakeLink,
            Request::Search(Search {
                query: "needle".into(),
                session: Some("ab".into()),
                per_session: Some(3),
                total: None,
            }),
            Request::Agent(AgentCall {
                tool: AgentTool::ReadRunOutputs,
                caller: "c".into(),
                token: "t".into(),
                args: serde_json::json!({"run": "r1"}),
            }),
            Request::Wait(Wait {
                sessions: vec!["a".into(), "b".into()],
                until: "any".into(),
                timeout_ms: Some(500),
            }),
            Request::Hook(Hook {
                session: "a".into(),
                event: "stop".into(),
                ..Default::default()
            }),
            Request::Hook(Hook {
                session: "a".into(),
                event: "session-start".into(),
                provider_session_id: Some("p".into()),
                cwd: Some("/w".into()),
                source: Some("clear".into()),
                ..Default::default()
            }),
            Request::Hook(Hook {
                session: "a".into(),
                event: "stop-failure".into(),
                error: Some("rate_limit".into()),
                ..Default::default()
            }),
            Request::Goal(GoalSet {
                session: "a".into(),
                text: Some("ship it".into()),
                max_turns: Some(3),
                stop: false,
            }),
        ];
        for r in reqs {
            let (id, back) = Request::decode(&r.encode(7)).unwrap();
            assert_eq!(id, 7);
            assert_eq!(back, r);
        }
    }

    #[test]
    fn every_agent_tool_has_its_own_permanent_kind_and_the_token_never_prints() {
        let kinds: std::collections::BTreeSet<_> =
            AgentTool::ALL.iter().map(|t| t.kind()).collect();
        assert_eq!(kinds.len(), AgentTool::ALL.len());
        assert_eq!(
            Request::decode(br#"{"id":1,"kind":"agent_teleport","body":{}}"#)
                .unwrap()
                .1,
            Request::Unknown("agent_teleport".into())
        );
        let call = AgentCall {
            tool: AgentTool::Close,
            caller: "c".into(),
            token: "s3cret".into(),
            args: Value::Null,
        };
        assert!(!format!("{call:?}").contains("s3cret"));
    }

    #[test]
    fn an_unknown_kind_decodes_to_unknown_instead_of_failing() {
        let (id, r) = Request::decode(br#"{"id":3,"kind":"teleport","body":{"x":1}}"#).unwrap();
        assert_eq!(id, 3);
        assert_eq!(r, Request::Unknown("teleport".into()));
    }

    #[test]
    fn a_search_from_a_client_that_names_only_the_query_decodes_with_defaults() {
        let (_, r) = Request::decode(br#"{"id":4,"kind":"search","body":{"query":"x"}}"#).unwrap();
        assert_eq!(
            r,
            Request::Search(Search {
                query: "x".into(),
                ..Default::default()
            })
        );
    }

    #[test]
    fn a_known_kind_with_a_bad_body_names_the_kind_and_keeps_the_id() {
        let e = Request::decode(br#"{"id":9,"kind":"send","body":{"session":1}}"#).unwrap_err();
        assert_eq!(e.id, Some(9));
        assert!(e.message.contains("send"), "{}", e.message);
    }

    #[test]
    fn malformed_json_is_a_bad_request() {
        let e = Request::decode(b"{not json").unwrap_err();
        assert_eq!(e.id, None);
        assert!(e.message.starts_with("malformed request"));
    }
}
