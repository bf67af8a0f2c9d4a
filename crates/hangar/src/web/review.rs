//! The web page's review of a session (issue 30): its diff, as `hangar
//! diff` lists it, a file's hunks read into numbered lines, and review
//! comments sent to the agent as one prompt (the daemon's `review`
//! request, the prompt `hangar review --comment FILE:LINE TEXT` sends).
//!
//! The Fork button (`POST /api/sessions/ID/fork`) is the TUI's `F`: the
//! daemon's `fork` with no options, a split beside the parent.
//!
//! The list comes without the patch (a 10,000-file change lists fast); a
//! file's hunks are the daemon's page of the patch that starts at it. File
//! names and lines are the agent's (rule 11): each comes with a `shown`
//! form escaped as the CLI escapes it, which the page sets as text.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hangar_core::display;
use hangar_core::patch::{self, LineKind};
use hangar_core::review::ReviewComment;
use hangar_protocol::message as msg;
use hangar_protocol::reply::kind;
use serde::Deserialize;
use serde_json::{Value, json};

use super::app::{App, error, link_error};
use crate::conn::tokio_link::DaemonLink;

/// `GET /api/sessions/ID/diff`: the file list, with the working tree the
/// file routes read from.
pub async fn files(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let ask = msg::Diff {
        session: id,
        stat: true,
        ..Default::default()
    };
    match DaemonLink::once::<kind::Diff>(&app.paths, ask).await {
        Ok(page) => {
            let files: Vec<Value> = page
                .files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    json!({
                        "index": i,
                        "path": f.path,
                        "shown": display::name(&f.path),
                        "old_shown": f.old_path.as_deref().map(display::name),
                        "status": f.status,
                        "letter": patch::status_letter(&f.status).to_string(),
                        "additions": f.additions,
                        "deletions": f.deletions,
                        "binary": f.binary,
                    })
                })
                .collect();
            Json(json!({
                "base": display::name(&page.base),
                "merge_base": page.merge_base,
                "head": page.head,
                "tree": page.tree,
                "files": files,
            }))
            .into_response()
        }
        Err(e) => link_error(e),
    }
}

#[derive(Deserialize)]
pub struct FileQuery {
    tree: Option<String>,
    merge_base: Option<String>,
}

fn kind_name(k: LineKind) -> &'static str {
    match k {
        LineKind::Header => "header",
        LineKind::Hunk => "hunk",
        LineKind::Context => "context",
        LineKind::Added => "added",
        LineKind::Removed => "removed",
        LineKind::NoNewline => "no-newline",
    }
}

/// `GET /api/sessions/ID/diff/N?tree=T&merge_base=M`: file N's lines,
/// each with the line a comment on it names (`target`).
pub async fn file(
    State(app): State<Arc<App>>,
    Path((id, index)): Path<(String, usize)>,
    Query(q): Query<FileQuery>,
) -> Response {
    let ask = msg::Diff {
        session: id,
        from_file: index,
        tree: q.tree,
        merge_base: q.merge_base,
        ..Default::default()
    };
    let page = match DaemonLink::once::<kind::Diff>(&app.paths, ask).await {
        Ok(page) => page,
        Err(e) => return link_error(e),
    };
    let Some(f) = page.files.get(index) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such file in the diff",
        );
    };
    let text = page.patch.unwrap_or_default();
    // The page starts at this file: its section is the first.
    let lines: Vec<Value> = if f.binary {
        Vec::new()
    } else {
        patch::split_files(&text)
            .first()
            .map(|s| patch::parse_file(s))
            .unwrap_or_default()
            .into_iter()
            .map(|l| {
                json!({
                    "kind": kind_name(l.kind),
                    "shown": display::body(&l.text),
                    "old": l.old,
                    "new": l.new,
                    "target": l.target,
                })
            })
            .collect()
    };
    Json(json!({
        "path": f.path,
        "shown": display::name(&f.path),
        "binary": f.binary,
        "lines": lines,
    }))
    .into_response()
}

#[derive(Deserialize)]
pub struct ReviewBody {
    comments: Vec<ReviewComment>,
}

/// `POST /api/sessions/ID/review {comments: [{file, line, text}]}`.
pub async fn review(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(body): Json<ReviewBody>,
) -> Response {
    let ask = msg::Review {
        session: id,
        comments: body.comments,
    };
    match DaemonLink::once::<kind::Review>(&app.paths, ask).await {
        Ok(v) => Json(serde_json::to_value(v).unwrap_or(Value::Null)).into_response(),
        Err(e) => link_error(e),
    }
}

/// `POST /api/sessions/ID/fork`: fork the session as the TUI's `F` does (a
/// split beside it); the reply is `hangar fork --json`'s, whose `id` the
/// page opens.
pub async fn fork(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let ask = msg::Fork {
        session: id,
        ..Default::default()
    };
    match DaemonLink::once::<kind::Fork>(&app.paths, ask).await {
        Ok(v) => Json(serde_json::to_value(v).unwrap_or(Value::Null)).into_response(),
        Err(e) => link_error(e),
    }
}
