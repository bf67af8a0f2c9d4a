//! The daemon's requests as functions, one per request, over a connection
//! (`conn::Client`): what a front-end calls instead of building frames.
//!
//! Every reply comes back as the type `hangar_protocol::reply::kind` names
//! for its request ([`ask`]); `reply` says how to add a request. An error
//! reply is a `conn::DaemonError` inside the `anyhow::Error`, as
//! `Client::request` gives it. This module imports only the connection
//! layer and the protocol (`.ci/shape`).

use anyhow::Context;
use hangar_protocol::message::{self as msg, AgentCall, Request};
use hangar_protocol::reply::{self, Kind, kind};
use hangar_protocol::view::{SearchView, SessionView, StatusView, TabView};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::conn::Client;

/// A reply read as its type.
fn typed<T: DeserializeOwned>(v: Value, what: &str) -> anyhow::Result<T> {
    serde_json::from_value(v).with_context(|| format!("the daemon sent a malformed {what} reply"))
}

/// Request kind `K` with `body`; its reply as the kind's reply type.
pub fn ask<K: Kind>(c: &mut Client, body: K::Body) -> anyhow::Result<K::Reply> {
    let request = K::request(body);
    let what = request.kind().to_owned();
    typed(c.request(request)?, &what)
}

fn session(id: &str) -> msg::SessionRef {
    msg::SessionRef {
        session: id.to_owned(),
    }
}

/// Any request, its reply as JSON: for a front-end that queues requests
/// built elsewhere and only reports how they went (the TUI's control thread
/// runs the user's commands in order, whichever they are).
pub fn call(c: &mut Client, req: Request) -> anyhow::Result<Value> {
    c.request(req)
}

/// the new session's `id` and `state`.
pub fn new(c: &mut Client, req: msg::NewSession) -> anyhow::Result<reply::Created> {
    ask::<kind::New>(c, req)
}

/// `ls`: every session.
pub fn list(c: &mut Client) -> anyhow::Result<Vec<SessionView>> {
    ask::<kind::List>(c, ())
}

/// `status`.
pub fn status(c: &mut Client) -> anyhow::Result<StatusView> {
    ask::<kind::Status>(c, ())
}

/// `tab ls`.
pub fn tab_list(c: &mut Client) -> anyhow::Result<Vec<TabView>> {
    ask::<kind::TabList>(c, ())
}

/// The whole workspace model (tabs, layouts, sessions), as the daemon keeps it.
pub fn workspace(c: &mut Client) -> anyhow::Result<reply::Workspace> {
    ask::<kind::Workspace>(c, ())
}

pub fn search(c: &mut Client, req: msg::Search) -> anyhow::Result<SearchView> {
    ask::<kind::Search>(c, req)
}

pub fn park(c: &mut Client, id: &str) -> anyhow::Result<reply::Placed> {
    ask::<kind::Park>(c, session(id))
}

pub fn unpark(c: &mut Client, req: msg::Unpark) -> anyhow::Result<reply::Placed> {
    ask::<kind::Unpark>(c, req)
}

pub fn bury(c: &mut Client, id: &str) -> anyhow::Result<reply::Placed> {
    ask::<kind::Bury>(c, session(id))
}

pub fn unbury(c: &mut Client, id: &str) -> anyhow::Result<reply::Placed> {
    ask::<kind::Unbury>(c, session(id))
}

pub fn pin(c: &mut Client, id: &str) -> anyhow::Result<reply::Pinned> {
    ask::<kind::Pin>(c, session(id))
}

pub fn unpin(c: &mut Client, id: &str) -> anyhow::Result<reply::Pinned> {
    ask::<kind::Unpin>(c, session(id))
}

/// The woken session as `ls` shows it (`None`: closed meanwhile).
pub fn wake(c: &mut Client, id: &str) -> anyhow::Result<Option<SessionView>> {
    ask::<kind::Wake>(c, session(id))
}

pub fn hibernate(c: &mut Client, id: &str, force: bool) -> anyhow::Result<reply::Hibernated> {
    ask::<kind::Hibernate>(
        c,
        msg::HibernateSession {
            session: id.to_owned(),
            force,
        },
    )
}

pub fn close(c: &mut Client, req: msg::Close) -> anyhow::Result<reply::Closed> {
    ask::<kind::Close>(c, req)
}

pub fn focus(c: &mut Client, req: msg::Focus) -> anyhow::Result<reply::Focused> {
    ask::<kind::Focus>(c, req)
}

pub fn ratio(c: &mut Client, req: msg::Ratio) -> anyhow::Result<reply::RatioSet> {
    ask::<kind::Ratio>(c, req)
}

pub fn send(c: &mut Client, req: msg::Send) -> anyhow::Result<reply::Sent> {
    ask::<kind::Send>(c, req)
}

pub fn tab_new(c: &mut Client, req: msg::TabNew) -> anyhow::Result<reply::TabNamed> {
    ask::<kind::TabNew>(c, req)
}

pub fn tab_close(c: &mut Client, req: msg::TabClose) -> anyhow::Result<reply::TabClosed> {
    ask::<kind::TabClose>(c, req)
}

pub fn tab_rename(c: &mut Client, req: msg::TabRename) -> anyhow::Result<reply::TabNamed> {
    ask::<kind::TabRename>(c, req)
}

pub fn reload(c: &mut Client, req: msg::Reload) -> anyhow::Result<reply::Reloaded> {
    ask::<kind::Reload>(c, req)
}

/// Reopen a wake queue its breaker paused: `was_open` says whether it was.
pub fn resume_queue(c: &mut Client) -> anyhow::Result<reply::QueueResumed> {
    ask::<kind::ResumeQueue>(c, ())
}

pub fn evict(c: &mut Client, req: msg::Evict) -> anyhow::Result<reply::Evicted> {
    ask::<kind::Evict>(c, req)
}

pub fn close_idle(c: &mut Client, req: msg::CloseIdle) -> anyhow::Result<reply::ClosedIdle> {
    ask::<kind::CloseIdle>(c, req)
}

pub fn worktrees(c: &mut Client, req: msg::Worktrees) -> anyhow::Result<reply::WorktreeList> {
    ask::<kind::Worktrees>(c, req)
}

/// A session's screen (and `history` lines above it when asked).
pub fn screen(c: &mut Client, req: msg::Screen) -> anyhow::Result<reply::ScreenText> {
    ask::<kind::Screen>(c, req)
}

/// A page of a session's history by line number.
pub fn history(c: &mut Client, req: msg::HistoryPage) -> anyhow::Result<reply::HistoryLines> {
    ask::<kind::History>(c, req)
}

pub fn transcript(c: &mut Client, req: msg::Transcript) -> anyhow::Result<reply::TranscriptTail> {
    ask::<kind::Transcript>(c, req)
}

pub fn doctor(c: &mut Client, req: msg::Doctor) -> anyhow::Result<reply::DoctorReport> {
    ask::<kind::Doctor>(c, req)
}

pub fn export(c: &mut Client) -> anyhow::Result<reply::Exported> {
    ask::<kind::Export>(c, ())
}

pub fn import(c: &mut Client, req: msg::Import) -> anyhow::Result<reply::Imported> {
    ask::<kind::Import>(c, req)
}

pub fn wait(c: &mut Client, req: msg::Wait) -> anyhow::Result<reply::Waited> {
    ask::<kind::Wait>(c, req)
}

pub fn hook(c: &mut Client, req: msg::Hook) -> anyhow::Result<reply::HookRecorded> {
    ask::<kind::Hook>(c, req)
}

/// One MCP tool call of an agent session: the tool's result, handed to the agent as it is.
pub fn agent(c: &mut Client, call: AgentCall) -> anyhow::Result<Value> {
    ask::<kind::Agent>(c, call)
}

pub fn shutdown(c: &mut Client) -> anyhow::Result<reply::Stopping> {
    ask::<kind::Shutdown>(c, ())
}

/// Attach this connection to a session: after the reply, the connection
/// carries the session's output.
pub fn attach(c: &mut Client, req: msg::Attach) -> anyhow::Result<reply::Attached> {
    ask::<kind::Attach>(c, req)
}

/// `usage`: the ledger summed (`hangar usage`).
pub fn usage(c: &mut Client, req: msg::UsageQuery) -> anyhow::Result<reply::UsageReport> {
    ask::<kind::Usage>(c, req)
}

/// `limit`: a session's limit and auto-continue switch.
pub fn limit(c: &mut Client, req: msg::LimitSet) -> anyhow::Result<reply::LimitState> {
    ask::<kind::Limit>(c, req)
}

/// One page of what a session changed since its base.
pub fn diff(c: &mut Client, req: msg::Diff) -> anyhow::Result<reply::DiffPage> {
    ask::<kind::Diff>(c, req)
}

/// Review comments typed into the agent as one prompt.
pub fn review(c: &mut Client, req: msg::Review) -> anyhow::Result<reply::Reviewed> {
    ask::<kind::Review>(c, req)
}

/// Land a session's work (or open a pull request, or ask it to resolve conflicts).
pub fn finish(c: &mut Client, req: msg::Finish) -> anyhow::Result<reply::Finished> {
    ask::<kind::Finish>(c, req)
}

/// A new session carrying on another's conversation (`hangar fork`).
pub fn fork(c: &mut Client, req: msg::Fork) -> anyhow::Result<reply::Forked> {
    ask::<kind::Fork>(c, req)
}

/// Build and import an image for an engine (slow: minutes).
pub fn engine_image_build(
    c: &mut Client,
    req: msg::EngineImageBuild,
) -> anyhow::Result<reply::ImageBuilt> {
    ask::<kind::EngineImageBuild>(c, req)
}

/// Tell an attached connection's session the terminal's new size (no reply
/// is waited for: output keeps flowing on the same connection).
pub fn send_resize(c: &mut Client, cols: u16, rows: u16) -> anyhow::Result<()> {
    c.send_request(&Request::Resize(msg::Resize { cols, rows }))
        .map(drop)
}

/// Leave an attached session; the daemon answers `detached`.
pub fn send_detach(c: &mut Client) -> anyhow::Result<()> {
    c.send_request(&Request::Detach).map(drop)
}

/// `goal`: give a session a goal, stop it, or read it.
pub fn goal(c: &mut Client, req: msg::GoalSet) -> anyhow::Result<reply::GoalState> {
    ask::<kind::Goal>(c, req)
}
