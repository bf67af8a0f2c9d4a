//! What the daemon answers each request with: one type per reply, and the
//! table ([`Kind`]) that names, for every request kind, its body and its
//! reply.
//!
//! # Adding a request (or typing one that still answers `json!`)
//! 1. The body type in `message.rs` and its `Request` variant, as before.
//! 2. The reply type here, its fields exactly the JSON the reply carries
//!    (`Option` without `skip_serializing_if` for a key that is `null`,
//!    with it for a key that is left out).
//! 3. One line in the `kinds!` table at the end of this file:
//!    `Name(Body) -> Reply = Request::Variant;`.
//! 4. The daemon's handler returns `Result<Reply, ApiError>` and its line in
//!    `handlers::dispatch` is `answer::<kind::Name>(handler(..).await)`:
//!    the compiler then checks that the handler answers the kind's reply.
//! 5. The client's `api` module calls it with `ask::<kind::Name>(c, body)`
//!    and gets the reply type back.
//!
//! The wire does not change with the types: the daemon turns a reply into a
//! JSON value (whose keys serde_json keeps sorted) before encoding it, as it
//! did when it built the value by hand, and a client prints a reply it was
//! asked for as JSON through the same value.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `workspace` request's reply: the model itself.
pub use hangar_core::model::Workspace;

use crate::message::{self as msg, Request};
use crate::view::{GoalView, LimitView, SearchView, SessionView, StatusView, TabView};

/// A request kind: the body it carries and the reply it is answered with.
/// Each kind is a type of its own in [`kind`] (several kinds share a body,
/// `park` and `wake` both carry a `SessionRef`, but not a reply).
pub trait Kind {
    /// The request's body (`()` for a kind that carries none).
    type Body;
    /// What the daemon answers it with.
    type Reply: Serialize + DeserializeOwned;
    /// The request carrying `body`.
    fn request(body: Self::Body) -> Request;
}

/// `new`: the new session and the state its start left it in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Created {
    pub id: String,
    /// As `SessionView::state` (`live`, `hibernated`, `failed`...).
    pub state: String,
}

/// `send` (and `review`, which types its comments the same way).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    pub id: String,
    /// Bytes typed.
    pub sent: usize,
    /// Whether the agent was seen to take the prompt (null: not watched).
    pub confirmed: Option<bool>,
    /// Enter presses it took (null: no Enter was pressed).
    pub enters: Option<usize>,
}

/// `review`: the comments sent as one prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reviewed {
    #[serde(flatten)]
    pub sent: Sent,
    /// The prompt typed into the agent.
    pub prompt: String,
    /// How many comments it holds.
    pub comments: usize,
}

/// `park`, `bury`, `unpark`, `unbury`: where the session is now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placed {
    pub id: String,
    pub tab: String,
    /// `pane`, `parked` or `buried`.
    pub placement: String,
    /// Its state after the wake a move to a pane starts (`unpark`,
    /// `unbury` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// `finish --resolve`: the predicted conflicts sent to the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resolving {
    #[serde(flatten)]
    pub sent: Sent,
    pub prompt: String,
    /// The files git predicts conflicts in.
    pub conflicts: Vec<String>,
}

/// `diff`: one page of what a session changed since its base.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiffPage {
    pub base: String,
    pub merge_base: String,
    pub head: String,
    /// The working tree's tree object (pass it back for the next page).
    pub tree: String,
    /// Empty on a page asked `without_files`.
    pub files: Vec<hangar_core::review::DiffFile>,
    /// Null with `stat`.
    pub patch: Option<String>,
    /// Where the next page starts, null on the last.
    pub next_file: Option<usize>,
}

/// One ref `finish` moved, with the backup ref of where it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MovedRef {
    #[serde(rename = "ref")]
    pub refname: String,
    pub old: String,
    pub new: String,
    pub backup: String,
}

/// `finish`: what it did, or would do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Finished {
    /// The work is on the target.
    Landed(Landed),
    /// `--pr`: the branch pushed and the pull request opened.
    PullRequest {
        pr: bool,
        url: String,
        branch: String,
        target: String,
        remote: String,
        committed: bool,
    },
    /// `--pr --dry-run`.
    PullRequestPlan {
        dry_run: bool,
        pr: bool,
        branch: String,
        target: String,
        remote: String,
        commit: bool,
    },
    /// `--dry-run`.
    LandingPlan {
        dry_run: bool,
        strategy: String,
        branch: String,
        target: String,
        /// The target's commit now.
        target_at: String,
        /// Commits to land.
        commits: usize,
        /// Whether the agent's uncommitted files would be committed first.
        commit: bool,
        #[serde(rename = "move")]
        how: hangar_core::review::TargetMove,
    },
    /// `--resolve`.
    Resolving(Resolving),
}

/// A landing `finish` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Landed {
    pub landed: bool,
    pub strategy: String,
    pub branch: String,
    pub target: String,
    /// The landed commit.
    pub commit: String,
    pub committed: bool,
    #[serde(rename = "move")]
    pub how: hangar_core::review::TargetMove,
    pub refs: Vec<MovedRef>,
    /// Whether the session was closed after landing.
    #[serde(default)]
    pub closed: bool,
    /// Why it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// With `closed`: its worktree's fate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_worktrees: Option<Vec<WorktreeKept>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_worktrees: Option<Vec<WorktreeRemoved>>,
}

/// `fork`: the new session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forked {
    pub id: String,
    /// The session it was forked from.
    pub forked_from: String,
    /// Forked into another CLI: it starts from a handoff prompt, not from
    /// its parent's conversation.
    pub handoff: bool,
    /// As `SessionView::state` (`live`, `hibernated`, `failed`...).
    pub state: String,
    /// With `--worktree`: the new worktree holding the parent's state.
    pub worktree: Option<ForkWorktree>,
}

/// The worktree a fork was given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForkWorktree {
    pub path: String,
    pub branch: String,
    /// The branch its diff is taken against.
    pub base: String,
}

/// `pin`, `unpin`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pinned {
    pub id: String,
    pub pinned: bool,
}

/// `focus`: the active tab and its focused pane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Focused {
    pub tab: String,
    pub focus: Option<String>,
}

/// `ratio`: the split's ratio as set (clamped).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatioSet {
    pub id: String,
    pub ratio: f32,
}

/// `hibernate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hibernated {
    pub id: String,
    /// Always `hibernated`.
    pub state: String,
    /// Its idle child agents, hibernated with it.
    pub also_hibernated: Vec<String>,
}

/// A worktree a close kept because it holds work (or git could not
/// remove it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorktreeKept {
    /// The session that ran in it.
    pub id: String,
    pub path: String,
    pub branch: String,
    pub reason: String,
}

/// A worktree a close removed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRemoved {
    pub id: String,
    pub path: String,
    pub branch: String,
    pub branch_deleted: bool,
    /// What became of the branch when it was kept, for a person.
    pub note: Option<String>,
}

/// `close`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Closed {
    /// The session and every linked one the cascade closed.
    pub closed: Vec<String>,
    pub kept_worktrees: Vec<WorktreeKept>,
    pub removed_worktrees: Vec<WorktreeRemoved>,
}

/// `tab_new`, `tab_rename`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TabNamed {
    pub id: String,
    pub title: String,
}

/// `tab_close`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TabClosed {
    pub tab: String,
    pub closed: Vec<String>,
    pub kept_worktrees: Vec<WorktreeKept>,
    pub removed_worktrees: Vec<WorktreeRemoved>,
}

/// A session a reload could not start again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failed {
    pub id: String,
    pub reason: String,
}

/// What reading config.toml again changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigChange {
    pub changed: bool,
    /// The sections that take effect only when the daemon restarts.
    pub needs_restart: Vec<String>,
}

/// `reload`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reloaded {
    pub dangerous: bool,
    pub restarted: Vec<String>,
    pub failed: Vec<Failed>,
    pub config: ConfigChange,
}

/// A session an eviction or a close of idle sessions left alone, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub id: String,
    pub title: String,
    pub reason: String,
}

/// A parked session removed by `evict`, with the command that resumes its
/// conversation by hand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvictedRow {
    pub id: String,
    pub title: String,
    pub resume_command: String,
}

/// `evict`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evicted {
    pub evicted: Vec<EvictedRow>,
    pub skipped: Vec<Skipped>,
    pub dry_run: bool,
    pub kept_worktrees: Vec<WorktreeKept>,
    pub removed_worktrees: Vec<WorktreeRemoved>,
}

/// `close_idle` (with `yes`; without, the reply is the
/// `needs_confirmation` error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedIdle {
    pub closed: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub kept_worktrees: Vec<WorktreeKept>,
    pub removed_worktrees: Vec<WorktreeRemoved>,
}

/// `resume_queue`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueResumed {
    /// Always `closed`.
    pub breaker: String,
    pub was_open: bool,
}

/// `screen`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScreenText {
    pub id: String,
    pub screen: String,
    /// `live` or `saved`.
    pub source: String,
    /// The lines above the screen, when `scrollback` asked for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<String>>,
}

/// `history`: see [`msg::HistoryPage`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryLines {
    pub first: u64,
    pub end: u64,
    pub start: u64,
    pub lines: Vec<String>,
    /// `live` or `saved`.
    pub source: String,
}

/// `export`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exported {
    pub format: String,
    pub text: String,
}

/// What an imported workspace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportCounts {
    pub tabs: usize,
    pub panes: usize,
    pub parked: usize,
    pub buried: usize,
    pub pins: usize,
    pub sessions: usize,
}

/// One thing an import left out (`hangar_store::DroppedItem`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportDropped {
    pub id: String,
    pub kind: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One thing imported in another form (`hangar_store::KeptItem`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportKept {
    pub id: String,
    pub kind: String,
    pub note: String,
}

/// `import`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    pub source: Option<String>,
    pub warnings: Vec<String>,
    pub imported: ImportCounts,
    pub kept: Vec<ImportKept>,
    pub dropped: Vec<ImportDropped>,
    /// Last screens imported with the sessions.
    pub screens: usize,
    pub restoring: bool,
}

/// A session's activity in `wait`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityRow {
    pub id: String,
    /// `working`, `waiting`, `idle` or `unknown`.
    pub activity: String,
    /// ms since the epoch.
    pub activity_since: u64,
}

/// `wait`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Waited {
    pub done: bool,
    pub timed_out: bool,
    /// `idle`, `waiting` or `any`.
    pub until: String,
    pub sessions: Vec<ActivityRow>,
}

/// `hook`: whether the event was recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookRecorded {
    pub recorded: bool,
    /// The event recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Why it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `session-start` only, and there always (null when the hook named
    /// none): why the agent started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Option<String>>,
}

/// A fix `doctor` carried out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum DoctorFix {
    /// The session's provider id was forgotten: its next wake starts fresh.
    Fork {
        session: String,
        forgot_provider_session_id: Option<String>,
    },
    /// The session was closed.
    Forget { session: String, closed: Closed },
}

/// A session holding a duplicate provider id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DuplicateMember {
    pub id: String,
    pub title: String,
    pub cwd: String,
    pub state: String,
    /// `pane`, `parked`, `buried`, or null when in none.
    pub placement: Option<String>,
}

/// Sessions sharing one provider conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DuplicateGroup {
    pub provider: String,
    pub provider_session_id: String,
    pub sessions: Vec<DuplicateMember>,
    /// The commands that fix it, one session at a time.
    pub fixes: Vec<String>,
}

/// An agent CLI `doctor` looked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CliFound {
    pub provider: String,
    /// Null when it was not found.
    pub program: Option<String>,
    pub version: Option<String>,
    /// The version hangar was tested with.
    pub tested: Option<String>,
    pub newer_than_tested: bool,
    /// What to watch for with a newer CLI than tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// Codex only: whether it runs without its shared app server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_daemon: Option<bool>,
}

/// `doctor`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// No duplicate provider id.
    pub ok: bool,
    pub duplicates: Vec<DuplicateGroup>,
    pub fixed: Vec<DoctorFix>,
    pub clis: Vec<CliFound>,
}

/// One message of a transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TranscriptMessage {
    /// `user` or `assistant`.
    pub role: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// `transcript`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TranscriptTail {
    pub id: String,
    pub provider_session_id: String,
    pub path: String,
    pub messages: Vec<TranscriptMessage>,
}

/// One worktree hangar created, in `worktrees`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRow {
    pub path: String,
    pub branch: String,
    pub base: String,
    pub repo_root: String,
    pub session: String,
    pub title: String,
    pub session_alive: bool,
    /// `in-use`, `clean`, `dirty`, `unpushed` or `missing`.
    pub state: String,
    pub exists: bool,
    pub dirty: Option<bool>,
    pub ahead: Option<u32>,
    pub behind: Option<u32>,
    pub unpushed: Option<usize>,
    pub note: Option<String>,
    pub removed: bool,
}

/// `worktrees`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorktreeList {
    pub worktrees: Vec<WorktreeRow>,
    /// The paths `prune` removed.
    pub removed: Vec<String>,
}

/// A usage window of an account (five hours, seven days...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageWindow {
    pub kind: String,
    pub used_percent: Option<f64>,
    pub resets_at: Option<i64>,
}

/// A provider account in `usage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccountUsage {
    pub provider: String,
    pub account: String,
    pub windows: Vec<UsageWindow>,
    /// The latest reset of a limit that stopped one of its sessions.
    pub limited_until: Option<i64>,
}

/// `usage` (and the MCP tool `usage_read`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// ms since the epoch.
    pub since: i64,
    pub sessions: Vec<hangar_core::usage::SessionUsage>,
    pub accounts: Vec<AccountUsage>,
    /// Usage summed per `[accounts.NAME]` the sessions run under.
    #[serde(default)]
    pub named_accounts: Vec<hangar_core::accounts::NamedAccountUsage>,
    pub total: hangar_core::usage::UsageTotal,
    /// What the cost figures are.
    pub note: String,
}

/// `limit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LimitState {
    pub id: String,
    pub auto_continue: bool,
    /// The session's own cost budget (`--max-cost`), null without one.
    pub max_cost_usd: Option<f64>,
    pub limit: Option<LimitView>,
    /// The `[accounts.NAME]` it runs under, null for the provider's own
    /// login.
    #[serde(default)]
    pub account: Option<String>,
}

/// `goal`: the session's goal after the change (null without one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalState {
    pub id: String,
    pub goal: Option<GoalView>,
}

/// `engine_image_build`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageBuilt {
    pub engine: String,
    pub image: String,
    pub provider: String,
    /// The image id the engine gave it.
    pub id: String,
}

/// `attach`: see [`msg::Attach`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attached {
    pub id: String,
    pub detach_key: String,
    #[serde(default)]
    pub history_end: Option<u64>,
    /// The daemon waits for the terminal the client offered (`terminal`
    /// in the request): one byte with its descriptor comes next.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub send_terminal: bool,
}

/// `detach`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Detached {
    pub detached: bool,
}

/// `take_link`: the daemon waits for the link's descriptors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkTaken {
    pub send_descriptors: bool,
}

/// `shutdown`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stopping {
    pub stopping: bool,
}

/// The kinds: one type each, named as its `Request` variant.
pub mod kind {
    use super::*;

    macro_rules! kinds {
        ($($(#[$doc:meta])* $name:ident($body:ty) -> $reply:ty = $make:expr;)*) => {$(
            $(#[$doc])*
            pub struct $name;
            impl Kind for $name {
                type Body = $body;
                type Reply = $reply;
                fn request(body: $body) -> Request {
                    ($make)(body)
                }
            }
        )*};
    }

    kinds! {
        New(msg::NewSession) -> Created = Request::New;
        List(()) -> Vec<SessionView> = |()| Request::List;
        Status(()) -> StatusView = |()| Request::Status;
        Send(msg::Send) -> Sent = Request::Send;
        Park(msg::SessionRef) -> Placed = Request::Park;
        Unpark(msg::Unpark) -> Placed = Request::Unpark;
        Bury(msg::SessionRef) -> Placed = Request::Bury;
        Unbury(msg::SessionRef) -> Placed = Request::Unbury;
        Pin(msg::SessionRef) -> Pinned = Request::Pin;
        Unpin(msg::SessionRef) -> Pinned = Request::Unpin;
        /// The session as `ls` shows it (null when it was closed meanwhile);
        /// a failed start is the `failed` error with that view as its
        /// detail.
        Wake(msg::SessionRef) -> Option<SessionView> = Request::Wake;
        Hibernate(msg::HibernateSession) -> Hibernated = Request::Hibernate;
        Close(msg::Close) -> Closed = Request::Close;
        TabNew(msg::TabNew) -> TabNamed = Request::TabNew;
        TabList(()) -> Vec<TabView> = |()| Request::TabList;
        TabClose(msg::TabClose) -> TabClosed = Request::TabClose;
        TabRename(msg::TabRename) -> TabNamed = Request::TabRename;
        Reload(msg::Reload) -> Reloaded = Request::Reload;
        Shutdown(()) -> Stopping = |()| Request::Shutdown;
        Export(()) -> Exported = |()| Request::Export;
        Import(msg::Import) -> Imported = Request::Import;
        Attach(msg::Attach) -> Attached = Request::Attach;
        Detach(()) -> Detached = |()| Request::Detach;
        /// Followed by the link's file descriptors, sent by the bridge.
        TakeLink(()) -> LinkTaken = |()| Request::TakeLink;
        Screen(msg::Screen) -> ScreenText = Request::Screen;
        History(msg::HistoryPage) -> HistoryLines = Request::History;
        Doctor(msg::Doctor) -> DoctorReport = Request::Doctor;
        Transcript(msg::Transcript) -> TranscriptTail = Request::Transcript;
        Search(msg::Search) -> SearchView = Request::Search;
        /// The workspace model as the daemon keeps it.
        Workspace(()) -> super::Workspace = |()| Request::Workspace;
        Worktrees(msg::Worktrees) -> WorktreeList = Request::Worktrees;
        Focus(msg::Focus) -> Focused = Request::Focus;
        Evict(msg::Evict) -> Evicted = Request::Evict;
        CloseIdle(msg::CloseIdle) -> ClosedIdle = Request::CloseIdle;
        ResumeQueue(()) -> QueueResumed = |()| Request::ResumeQueue;
        Ratio(msg::Ratio) -> RatioSet = Request::Ratio;
        /// An MCP tool's result: handed to the calling agent's model as the
        /// tool's JSON text, its shape documented with each tool
        /// (`hangar mcp`), so it stays a JSON value on both sides.
        Agent(msg::AgentCall) -> Value = Request::Agent;
        Wait(msg::Wait) -> Waited = Request::Wait;
        Hook(msg::Hook) -> HookRecorded = Request::Hook;
        Usage(msg::UsageQuery) -> UsageReport = Request::Usage;
        Limit(msg::LimitSet) -> LimitState = Request::Limit;
        Goal(msg::GoalSet) -> GoalState = Request::Goal;
        Diff(msg::Diff) -> DiffPage = Request::Diff;
        Review(msg::Review) -> Reviewed = Request::Review;
        Finish(msg::Finish) -> Finished = Request::Finish;
        Fork(msg::Fork) -> Forked = Request::Fork;
        EngineImageBuild(msg::EngineImageBuild) -> ImageBuilt = Request::EngineImageBuild;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the daemon puts on the wire for a reply.
    fn wire<T: Serialize>(reply: &T) -> String {
        crate::message::Reply::ok_typed(1, reply).body.to_string()
    }

    #[test]
    fn a_typed_reply_is_the_json_the_hand_built_one_was() {
        let parked = Placed {
            id: "s".into(),
            tab: "t".into(),
            placement: "parked".into(),
            state: None,
        };
        // Keys sorted, `state` left out: byte for byte the old `json!`.
        assert_eq!(
            wire(&parked),
            json!({"id": "s", "tab": "t", "placement": "parked"}).to_string()
        );
        assert_eq!(
            wire(&parked),
            r#"{"id":"s","placement":"parked","tab":"t"}"#
        );
        let started = HookRecorded {
            recorded: true,
            event: Some("session-start".into()),
            reason: None,
            source: Some(None),
        };
        assert_eq!(
            wire(&started),
            r#"{"event":"session-start","recorded":true,"source":null}"#
        );
        let fix = DoctorFix::Fork {
            session: "s".into(),
            forgot_provider_session_id: None,
        };
        assert_eq!(
            wire(&fix),
            r#"{"action":"fork","forgot_provider_session_id":null,"session":"s"}"#
        );
    }

    #[test]
    fn each_shape_of_a_finish_reads_back_as_itself() {
        let landed = Finished::Landed(Landed {
            landed: true,
            strategy: "squash".into(),
            branch: "b".into(),
            target: "main".into(),
            commit: "c0ffee".into(),
            committed: false,
            how: hangar_core::review::TargetMove::RefOnly,
            refs: vec![MovedRef {
                refname: "refs/heads/main".into(),
                old: "a".into(),
                new: "c0ffee".into(),
                backup: "refs/hangar/backup/x".into(),
            }],
            closed: true,
            note: None,
            kept_worktrees: Some(Vec::new()),
            removed_worktrees: Some(Vec::new()),
        });
        let plan = Finished::LandingPlan {
            dry_run: true,
            strategy: "merge".into(),
            branch: "b".into(),
            target: "main".into(),
            target_at: "a".into(),
            commits: 2,
            commit: false,
            how: hangar_core::review::TargetMove::RefOnly,
        };
        let pr_plan = Finished::PullRequestPlan {
            dry_run: true,
            pr: true,
            branch: "b".into(),
            target: "main".into(),
            remote: "origin".into(),
            commit: true,
        };
        let resolving = Finished::Resolving(Resolving {
            sent: Sent {
                id: "s".into(),
                sent: 10,
                confirmed: Some(true),
                enters: Some(1),
            },
            prompt: "rebase".into(),
            conflicts: vec!["a.rs".into()],
        });
        for reply in [landed, plan, pr_plan, resolving] {
            let back: Finished = serde_json::from_str(&wire(&reply)).unwrap();
            assert_eq!(back, reply);
        }
    }

    #[test]
    fn every_kind_builds_its_own_request() {
        assert_eq!(kind::List::request(()).kind(), "list");
        assert_eq!(
            kind::Park::request(msg::SessionRef {
                session: "s".into()
            })
            .kind(),
            "park"
        );
        assert_eq!(kind::Workspace::request(()).kind(), "workspace");
    }
}
