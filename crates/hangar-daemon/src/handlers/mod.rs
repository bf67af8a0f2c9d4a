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
use serde_json::Value;

use crate::Daemon;
use crate::errors::ApiError;

/// Answer one request (all but the connection-level ones: hello, attach,
/// resize, detach, shutdown).
pub async fn dispatch(daemon: &Arc<Daemon>, request: Request) -> Result<Value, ApiError> {
    match request {
        Request::New(r) => sessions::new(daemon, r).await,
        Request::List => Ok(worktrees::list(daemon).await),
        Request::Status => Ok(status::status(daemon)),
        Request::Send(r) => sessions::send(daemon, r).await,
        Request::Park(r) => placement::park(daemon, &r.session).await,
        Request::Unpark(r) => placement::unpark(daemon, r).await,
        Request::Bury(r) => placement::bury(daemon, &r.session).await,
        Request::Unbury(r) => placement::unbury(daemon, &r.session).await,
        Request::Pin(r) => placement::pin(daemon, &r.session, true),
        Request::Unpin(r) => placement::pin(daemon, &r.session, false),
        Request::Wake(r) => lifecycle::wake(daemon, &r.session).await,
        Request::Hibernate(r) => lifecycle::hibernate(daemon, &r.session).await,
        Request::Close(r) => sessions::close(daemon, r).await,
        Request::TabNew(r) => tabs::new(daemon, r),
        Request::TabList => Ok(tabs::list(daemon)),
        Request::TabClose(r) => tabs::close(daemon, r).await,
        Request::TabRename(r) => tabs::rename(daemon, r),
        Request::Reload(r) => lifecycle::reload(daemon, r).await,
        Request::Screen(r) => status::screen(daemon, &r.session, r.scrollback),
        Request::History(r) => status::history_page(daemon, &r),
        Request::Doctor(r) => match identity::doctor(daemon, r).await {
            Ok(mut v) => {
                let config = daemon.config.snapshot();
                v["clis"] = identity::cli_report(daemon, &config.providers).await;
                Ok(v)
            }
            Err(e) => Err(e),
        },
        Request::Transcript(r) => identity::transcript(daemon, r).await,
        Request::Search(r) => search::search(daemon, r).await,
        Request::Export => transfer::export(daemon),
        Request::Import(r) => transfer::import(daemon, r).await,
        Request::Workspace => transfer::workspace(daemon),
        Request::Worktrees(r) => worktrees::worktrees(daemon, r).await,
        Request::Focus(r) => placement::focus(daemon, r),
        Request::Evict(r) => fleet::evict(daemon, r.parked_older_than_ms, r.dry_run).await,
        Request::CloseIdle(r) => {
            fleet::close_idle(daemon, r.older_than_ms, r.include_live, r.yes).await
        }
        Request::ResumeQueue => Ok(fleet::resume_queue(daemon)),
        Request::Ratio(r) => placement::ratio(daemon, r),
        Request::Agent(call) => agent_tools::agent(daemon, call).await,
        Request::Wait(r) => activity::wait(daemon, &r.sessions, &r.until, r.timeout_ms).await,
        Request::Hook(r) if crate::identity::is_session_start(&r.event) => {
            identity::session_start(daemon, &r)
        }
        Request::Hook(r) => activity::hook(daemon, &r),
        Request::Usage(r) => usage::usage(daemon, r),
        Request::Limit(r) => usage::limit(daemon, r),
        Request::Goal(r) => usage::goal(daemon, r).await,
        Request::EngineImageBuild(r) => engines::image_build(daemon, r).await,
        Request::Hello(_) => Err(ApiError::new(codes::BAD_REQUEST, "already greeted")),
        Request::Resize(_) | Request::Detach | Request::Attach(_) | Request::Shutdown => {
            Err(ApiError::new(codes::BAD_REQUEST, "not valid here"))
        }
        Request::Diff(r) => review::diff(daemon, r).await,
        Request::Review(r) => review::review(daemon, r).await,
        Request::Finish(r) => review::finish(daemon, r).await,
        Request::Unknown(kind) => Err(ApiError::new(
            codes::UNKNOWN_KIND,
            format!(
                "unknown request kind {kind:?}; this daemon is version {}",
                env!("CARGO_PKG_VERSION")
            ),
        )),
    }
}
