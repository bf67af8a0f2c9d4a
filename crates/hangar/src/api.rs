//! The daemon's requests as functions, one per request, over a connection
//! (`conn::Client`): what a front-end calls instead of building frames.
//!
//! A reply with a view type in `hangar-protocol` comes back as that type;
//! the others are still the reply's JSON (issue 28 step 4 types them all).
//! An error reply is a `conn::DaemonError` inside the `anyhow::Error`, as
//! `Client::request` gives it. This module imports only the connection
//! layer and the protocol (`.ci/shape`).

use anyhow::Context;
use hangar_protocol::message::{self as msg, AgentCall, Request};
use hangar_protocol::view::{SearchView, SessionView, StatusView, TabView};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::conn::Client;

/// A reply read as its view type.
fn typed<T: DeserializeOwned>(v: Value, what: &str) -> anyhow::Result<T> {
    serde_json::from_value(v).with_context(|| format!("the daemon sent a malformed {what} reply"))
}

fn session(id: &str) -> msg::SessionRef {
    msg::SessionRef {
        session: id.to_owned(),
    }
}

/// Any request, its reply as JSON: for a front-end that queues requests
/// built elsewhere (the TUI's control thread runs the user's commands in
/// order, whichever they are).
pub fn call(c: &mut Client, req: Request) -> anyhow::Result<Value> {
    c.request(req)
}

/// `new`: the reply carries the new session's `id` and `state`.
pub fn new(c: &mut Client, req: msg::NewSession) -> anyhow::Result<Value> {
    c.request(Request::New(req))
}

/// `ls`: every session.
pub fn list(c: &mut Client) -> anyhow::Result<Vec<SessionView>> {
    typed(c.request(Request::List)?, "list")
}

/// `status`.
pub fn status(c: &mut Client) -> anyhow::Result<StatusView> {
    typed(c.request(Request::Status)?, "status")
}

/// `tab ls`.
pub fn tab_list(c: &mut Client) -> anyhow::Result<Vec<TabView>> {
    typed(c.request(Request::TabList)?, "tab list")
}

/// The whole workspace model (tabs, layouts, sessions), as the daemon keeps
/// it; `hangar_core::model::Workspace` reads it.
pub fn workspace(c: &mut Client) -> anyhow::Result<Value> {
    c.request(Request::Workspace)
}

pub fn search(c: &mut Client, req: msg::Search) -> anyhow::Result<SearchView> {
    typed(c.request(Request::Search(req))?, "search")
}

pub fn park(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Park(session(id)))
}

pub fn unpark(c: &mut Client, req: msg::Unpark) -> anyhow::Result<Value> {
    c.request(Request::Unpark(req))
}

pub fn bury(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Bury(session(id)))
}

pub fn unbury(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Unbury(session(id)))
}

pub fn pin(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Pin(session(id)))
}

pub fn unpin(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Unpin(session(id)))
}

pub fn wake(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Wake(session(id)))
}

pub fn hibernate(c: &mut Client, id: &str) -> anyhow::Result<Value> {
    c.request(Request::Hibernate(session(id)))
}

pub fn close(c: &mut Client, req: msg::Close) -> anyhow::Result<Value> {
    c.request(Request::Close(req))
}

pub fn focus(c: &mut Client, req: msg::Focus) -> anyhow::Result<Value> {
    c.request(Request::Focus(req))
}

pub fn ratio(c: &mut Client, req: msg::Ratio) -> anyhow::Result<Value> {
    c.request(Request::Ratio(req))
}

pub fn send(c: &mut Client, req: msg::Send) -> anyhow::Result<Value> {
    c.request(Request::Send(req))
}

pub fn tab_new(c: &mut Client, req: msg::TabNew) -> anyhow::Result<Value> {
    c.request(Request::TabNew(req))
}

pub fn tab_close(c: &mut Client, req: msg::TabClose) -> anyhow::Result<Value> {
    c.request(Request::TabClose(req))
}

pub fn tab_rename(c: &mut Client, req: msg::TabRename) -> anyhow::Result<Value> {
    c.request(Request::TabRename(req))
}

pub fn reload(c: &mut Client, req: msg::Reload) -> anyhow::Result<Value> {
    c.request(Request::Reload(req))
}

/// Reopen a wake queue its breaker paused: `was_open` says whether it was.
pub fn resume_queue(c: &mut Client) -> anyhow::Result<Value> {
    c.request(Request::ResumeQueue)
}

pub fn evict(c: &mut Client, req: msg::Evict) -> anyhow::Result<Value> {
    c.request(Request::Evict(req))
}

pub fn close_idle(c: &mut Client, req: msg::CloseIdle) -> anyhow::Result<Value> {
    c.request(Request::CloseIdle(req))
}

pub fn worktrees(c: &mut Client, req: msg::Worktrees) -> anyhow::Result<Value> {
    c.request(Request::Worktrees(req))
}

/// A session's screen (and `history` lines above it when asked).
pub fn screen(c: &mut Client, req: msg::Screen) -> anyhow::Result<Value> {
    c.request(Request::Screen(req))
}

/// A page of a session's history by line number.
pub fn history(c: &mut Client, req: msg::HistoryPage) -> anyhow::Result<Value> {
    c.request(Request::History(req))
}

pub fn transcript(c: &mut Client, req: msg::Transcript) -> anyhow::Result<Value> {
    c.request(Request::Transcript(req))
}

pub fn doctor(c: &mut Client, req: msg::Doctor) -> anyhow::Result<Value> {
    c.request(Request::Doctor(req))
}

pub fn export(c: &mut Client) -> anyhow::Result<Value> {
    c.request(Request::Export)
}

pub fn import(c: &mut Client, req: msg::Import) -> anyhow::Result<Value> {
    c.request(Request::Import(req))
}

pub fn wait(c: &mut Client, req: msg::Wait) -> anyhow::Result<Value> {
    c.request(Request::Wait(req))
}

pub fn hook(c: &mut Client, req: msg::Hook) -> anyhow::Result<Value> {
    c.request(Request::Hook(req))
}

/// One MCP tool call of an agent session.
pub fn agent(c: &mut Client, call: AgentCall) -> anyhow::Result<Value> {
    c.request(Request::Agent(call))
}

pub fn shutdown(c: &mut Client) -> anyhow::Result<Value> {
    c.request(Request::Shutdown)
}

/// Attach this connection to a session: after the reply (its `id` and
/// `detach_key`), the connection carries the session's output.
pub fn attach(c: &mut Client, req: msg::Attach) -> anyhow::Result<Value> {
    c.request(Request::Attach(req))
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

/// `usage`: the ledger summed (`hangar usage`).
pub fn usage(c: &mut Client, req: msg::UsageQuery) -> anyhow::Result<Value> {
    c.request(Request::Usage(req))
}

/// `limit`: a session's limit and auto-continue switch.
pub fn limit(c: &mut Client, req: msg::LimitSet) -> anyhow::Result<Value> {
    c.request(Request::Limit(req))
}

/// `goal`: give a session a goal, stop it, or read it.
pub fn goal(c: &mut Client, req: msg::GoalSet) -> anyhow::Result<Value> {
    c.request(Request::Goal(req))
}

/// Build and import an image for an engine (slow: minutes).
pub fn engine_image_build(c: &mut Client, req: msg::EngineImageBuild) -> anyhow::Result<Value> {
    c.request(Request::EngineImageBuild(req))
}
