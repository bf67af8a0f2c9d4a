//! What each request does, grouped by resource: sessions (new, list, send,
//! close), placement (park, bury, pin, focus, ratio), lifecycle (wake,
//! hibernate, reload), tabs, status (status, screen), transfer (export,
//! import, workspace), fleet (evict, close-idle, resume the queue), identity
//! (session-start hook, doctor, transcript), worktrees and agent tools. Each
//! is a free function of the daemon and the request; `dispatch` maps a
//! decoded request to it. The work underneath is the subsystems' (`sessions`,
//! `spawn`, `identity`, ...), reached through the daemon's parts.

pub mod activity;
pub mod agent_tools;
pub mod engines;
pub mod fleet;
pub mod fork;
pub mod identity;
pub mod lifecycle;
pub mod placement;
pub mod review;
pub mod search;
pub mod sessions;
pub mod status;
pub mod tabs;
pub mod transfer;
pub mod usage;
pub mod worktrees;

use std::sync::Arc;

use hangar_protocol::message::{Request, codes};
use hangar_protocol::reply::{Kind, kind};
use serde_json::Value;

use crate::Daemon;
use crate::errors::ApiError;

/// A handler's typed reply as the JSON the wire carries. The reply type is
/// the one `hangar_protocol::reply::kind` names for the request, so a handler
/// that answers anything else does not compile. serde_json keeps a value's
/// keys sorted, so the bytes are those of the hand-built value before.
fn answer<K: Kind>(reply: Result<K::Reply, ApiError>) -> Result<Value, ApiError> {
    serde_json::to_value(reply?).map_err(|e| ApiError::internal(format!("reply: {e}")))
}

/// Answer one request (all but the connection-level ones: hello, attach,
/// resize, detach, shutdown). Each line is `answer::<kind::K>(handler)`:
/// see `hangar_protocol::reply` for adding a request.
pub async fn dispatch(daemon: &Arc<Daemon>, request: Request) -> Result<Value, ApiError> {
    match request {
        Request::New(r) => answer::<kind::New>(sessions::new(daemon, r).await),
        Request::List => answer::<kind::List>(Ok(worktrees::list(daemon).await)),
        Request::Status => answer::<kind::Status>(Ok(status::status(daemon))),
        Request::Send(r) => answer::<kind::Send>(sessions::send(daemon, r).await),
        Request::Park(r) => answer::<kind::Park>(placement::park(daemon, &r.session).await),
        Request::Unpark(r) => answer::<kind::Unpark>(placement::unpark(daemon, r).await),
        Request::Bury(r) => answer::<kind::Bury>(placement::bury(daemon, &r.session).await),
        Request::Unbury(r) => answer::<kind::Unbury>(placement::unbury(daemon, &r.session).await),
        Request::Pin(r) => answer::<kind::Pin>(placement::pin(daemon, &r.session, true)),
        Request::Unpin(r) => answer::<kind::Unpin>(placement::pin(daemon, &r.session, false)),
        Request::Wake(r) => answer::<kind::Wake>(lifecycle::wake(daemon, &r.session).await),
        Request::Hibernate(r) => {
            answer::<kind::Hibernate>(lifecycle::hibernate(daemon, &r.session, r.force).await)
        }
        Request::Close(r) => answer::<kind::Close>(sessions::close(daemon, r).await),
        Request::TabNew(r) => answer::<kind::TabNew>(tabs::new(daemon, r)),
        Request::TabList => answer::<kind::TabList>(Ok(tabs::list(daemon))),
        Request::TabClose(r) => answer::<kind::TabClose>(tabs::close(daemon, r).await),
        Request::TabRename(r) => answer::<kind::TabRename>(tabs::rename(daemon, r)),
        Request::Reload(r) => answer::<kind::Reload>(lifecycle::reload(daemon, r).await),
        Request::Screen(r) => {
            answer::<kind::Screen>(status::screen(daemon, &r.session, r.scrollback))
        }
        Request::History(r) => answer::<kind::History>(status::history_page(daemon, &r)),
        Request::Doctor(r) => answer::<kind::Doctor>(identity::doctor(daemon, r).await),
        Request::Transcript(r) => answer::<kind::Transcript>(identity::transcript(daemon, r).await),
        Request::Search(r) => answer::<kind::Search>(search::search(daemon, r).await),
        Request::Export => answer::<kind::Export>(transfer::export(daemon)),
        Request::Import(r) => answer::<kind::Import>(transfer::import(daemon, r).await),
        Request::Workspace => answer::<kind::Workspace>(Ok(transfer::workspace(daemon))),
        Request::Worktrees(r) => answer::<kind::Worktrees>(worktrees::worktrees(daemon, r).await),
        Request::Focus(r) => answer::<kind::Focus>(placement::focus(daemon, r)),
        Request::Evict(r) => {
            answer::<kind::Evict>(fleet::evict(daemon, r.parked_older_than_ms, r.dry_run).await)
        }
        Request::CloseIdle(r) => answer::<kind::CloseIdle>(
            fleet::close_idle(daemon, r.older_than_ms, r.include_live, r.yes).await,
        ),
        Request::ResumeQueue => answer::<kind::ResumeQueue>(Ok(fleet::resume_queue(daemon))),
        Request::Ratio(r) => answer::<kind::Ratio>(placement::ratio(daemon, r)),
        Request::Agent(call) => answer::<kind::Agent>(agent_tools::agent(daemon, call).await),
        Request::Wait(r) => {
            answer::<kind::Wait>(activity::wait(daemon, &r.sessions, &r.until, r.timeout_ms).await)
        }
        Request::Hook(r) if crate::identity::is_session_start(&r.event) => {
            answer::<kind::Hook>(identity::session_start(daemon, &r))
        }
        Request::Hook(r) => answer::<kind::Hook>(activity::hook(daemon, &r)),
        Request::Usage(r) => answer::<kind::Usage>(usage::usage(daemon, r)),
        Request::Limit(r) => answer::<kind::Limit>(usage::limit(daemon, r).await),
        Request::Goal(r) => answer::<kind::Goal>(usage::goal(daemon, r).await),
        Request::EngineImageBuild(r) => {
            answer::<kind::EngineImageBuild>(engines::image_build(daemon, r).await)
        }
        Request::Hello(_) => Err(ApiError::new(codes::BAD_REQUEST, "already greeted")),
        Request::Resize(_)
        | Request::Detach
        | Request::Attach(_)
        | Request::Shutdown
        | Request::TakeLink => Err(ApiError::new(codes::BAD_REQUEST, "not valid here")),
        Request::Diff(r) => answer::<kind::Diff>(review::diff(daemon, r).await),
        Request::Review(r) => answer::<kind::Review>(review::review(daemon, r).await),
        Request::Finish(r) => answer::<kind::Finish>(review::finish(daemon, r).await),
        Request::Fork(r) => answer::<kind::Fork>(fork::fork(daemon, r).await),
        Request::Unknown(kind) => Err(ApiError::new(
            codes::UNKNOWN_KIND,
            format!(
                "unknown request kind {kind:?}; this daemon is version {}",
                env!("CARGO_PKG_VERSION")
            ),
        )),
    }
}
