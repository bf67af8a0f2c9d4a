//! Requests about provider identities: the session-start hook that names a
//! session's conversation, `doctor` (duplicate ids, one fix at a time, the
//! CLIs found) and `transcript` (the last messages, read without waking).

use std::sync::Arc;

use hangar_core::cli_versions::Tested;
use hangar_core::ledger::Observation;
use hangar_core::{IdSource, SessionId};
use hangar_protocol::message as msg;
use hangar_protocol::reply::{
    CliFound, DoctorFix, DoctorReport, DuplicateGroup, DuplicateMember, HookRecorded,
    TranscriptMessage, TranscriptTail,
};
use hangar_providers::cli_facts;

use crate::Daemon;
use crate::errors::ApiError;
use crate::identity::DEFAULT_TAIL;
use hangar_providers::transcript::discovery;
use hangar_providers::transcript::messages;

/// `hangar hook session-start`: the session's own Claude Code process
/// reports the conversation it now writes (at startup, on resume, after
/// `/clear` or a compaction). As trustworthy as its transcript, so it is
/// recorded with source `transcript`; real Claude Code links a `/clear`
/// to nothing else, so this and its per-process record are what follow
/// the rotation.
pub fn session_start(daemon: &Daemon, req: &msg::Hook) -> Result<HookRecorded, ApiError> {
    let id = SessionId::from(req.session.trim());
    let session_cwd = daemon.sessions.running_cwd(&id)?;
    let Some(session_cwd) = session_cwd else {
        // A late hook of a process hangar already stopped: whatever it
        // says was seen by the transcript watcher's last look.
        return Ok(HookRecorded {
            recorded: false,
            event: None,
            reason: Some("the session is not running".to_owned()),
            source: None,
        });
    };
    let Some(psid) = req.provider_session_id.clone() else {
        return Err(ApiError::invalid(
            "a session-start hook needs the session_id of the hook's JSON input on stdin",
        ));
    };
    let session_cwd = discovery::canonical_cwd(&session_cwd);
    let observed = Observation {
        id: psid,
        source: IdSource::Transcript,
        // Older Claude Code versions send no `cwd`; the process hangar
        // started in the session's folder is then taken to run there.
        cwd: Some(
            req.cwd
                .as_deref()
                .map(discovery::canonical_cwd)
                .unwrap_or_else(|| session_cwd.clone()),
        ),
    };
    let recorded = daemon
        .identity
        .record_provider_id(&id, &observed, &session_cwd);
    Ok(HookRecorded {
        recorded,
        event: Some("session-start".to_owned()),
        reason: None,
        source: Some(req.source.clone()),
    })
}

/// `hangar doctor [--fork ID | --forget ID]`: list duplicate provider ids
/// and carry out one fix; and the agent CLIs found.
pub async fn doctor(daemon: &Arc<Daemon>, req: msg::Doctor) -> Result<DoctorReport, ApiError> {
    let mut fixed = Vec::new();
    if let Some(given) = &req.fork {
        let (id, old) = daemon
            .sessions
            .fork_provider_id(given, daemon.os.now_ms())?;
        fixed.push(DoctorFix::Fork {
            session: id.to_string(),
            forgot_provider_session_id: old,
        });
    }
    if let Some(given) = &req.forget {
        let id = daemon.sessions.resolve(given)?;
        let closed = crate::handlers::sessions::close(
            daemon,
            msg::Close {
                session: id.to_string(),
                yes: req.yes,
                ..Default::default()
            },
        )
        .await?;
        fixed.push(DoctorFix::Forget {
            session: id.to_string(),
            closed,
        });
    }
    let groups: Vec<DuplicateGroup> = daemon
        .sessions
        .duplicate_groups()
        .into_iter()
        .map(|(g, members)| {
            let sessions = members
                .iter()
                .map(|m| DuplicateMember {
                    id: m.id.to_string(),
                    title: m.title.clone(),
                    cwd: m.cwd.clone(),
                    state: m.state.to_string(),
                    placement: m.placement.map(str::to_owned),
                })
                .collect();
            let fixes: Vec<String> = g
                .sessions
                .iter()
                .flat_map(|s| {
                    [
                        format!("hangar doctor --fork {s}"),
                        format!("hangar doctor --forget {s}"),
                    ]
                })
                .collect();
            DuplicateGroup {
                provider: g.provider.name().to_owned(),
                provider_session_id: g.provider_session_id.clone(),
                sessions,
                fixes,
            }
        })
        .collect();
    let config = daemon.config.snapshot();
    Ok(DoctorReport {
        ok: groups.is_empty(),
        duplicates: groups,
        fixed,
        clis: cli_report(daemon, &config.providers).await,
    })
}

/// `hangar transcript ID [--tail N]`: the last messages of a session's
/// conversation, read from its transcript; never wakes it.
pub async fn transcript(daemon: &Daemon, req: msg::Transcript) -> Result<TranscriptTail, ApiError> {
    let (id, meta) = daemon.sessions.resolve_meta(&req.session)?;
    let Some(root) = discovery::session_transcript_root(&meta, &discovery::env_var) else {
        return Err(ApiError::invalid(format!(
            "session {id} runs {}; hangar reads transcripts of claude and codex sessions only",
            meta.provider
        )));
    };
    let Some(psid) = meta.provider_session.as_ref().map(|p| p.id.clone()) else {
        return Err(ApiError::not_found(format!(
            "session {id} has no provider session id yet (it never ran, or was forked), so it \
             has no transcript; `hangar wake {id}` starts one"
        )));
    };
    let tail = req.tail.unwrap_or(DEFAULT_TAIL);
    let provider = meta.provider.clone();
    let read = tokio::task::spawn_blocking(move || {
        let path =
            discovery::find_transcript(&provider, &root, &meta.cwd, &psid).ok_or_else(|| {
                ApiError::not_found(format!(
                    "no transcript of {provider} session {psid} under {}; was it deleted?",
                    root.display()
                ))
            })?;
        let messages = messages::read_tail(&provider, &path, tail)
            .map_err(|e| ApiError::internal(format!("cannot read {}: {e}", path.display())))?;
        Ok::<_, ApiError>((psid, path, messages))
    })
    .await
    .map_err(|e| ApiError::internal(format!("transcript reader failed: {e}")))?;
    let (psid, path, messages) = read?;
    Ok(TranscriptTail {
        id: id.to_string(),
        provider_session_id: psid,
        path: path.display().to_string(),
        messages: messages
            .into_iter()
            .map(|m| TranscriptMessage {
                role: m.role,
                text: m.text,
                timestamp: m.timestamp,
            })
            .collect(),
    })
}

/// `hangar doctor`'s CLI section: each agent CLI found, its version and
/// the tested one.
pub async fn cli_report(
    daemon: &Daemon,
    providers: &hangar_providers::ProvidersConfig,
) -> Vec<CliFound> {
    let mut out = Vec::new();
    for (provider, found) in daemon.cli_probe.installed(providers).await {
        let tested = cli_facts::tested(&provider).map(|v| v.to_string());
        let Some((program, facts)) = found else {
            out.push(CliFound {
                provider: provider.name().to_owned(),
                program: None,
                version: None,
                tested,
                newer_than_tested: false,
                notice: None,
                no_daemon: None,
            });
            continue;
        };
        let newer = matches!(
            cli_facts::compare(&provider, facts.version),
            Tested::Newer { .. }
        );
        let notice = match (newer, facts.version, cli_facts::tested(&provider)) {
            (true, Some(v), Some(t)) => Some(cli_facts::newer_notice(&provider, v, t)),
            _ => None,
        };
        out.push(CliFound {
            provider: provider.name().to_owned(),
            program: Some(program.display().to_string()),
            version: facts.version.map(|v| v.to_string()),
            tested,
            newer_than_tested: newer,
            notice,
            no_daemon: cli_facts::reads_help(&provider).then_some(facts.no_daemon),
        });
    }
    out
}
