//! Waking and hibernating a session on request, and `reload` (config.toml
//! read again, the dangerous setting stored, live agents restarted one at a
//! time).

use std::sync::Arc;

use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply::{self, ConfigChange, Hibernated, Reloaded};
use hangar_protocol::view::SessionView;
use serde_json::Value;

use super::sessions::touch;
use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::{Caller, Event, HibernateReason};
use crate::sessions::RunState;

pub async fn wake(daemon: &Arc<Daemon>, session: &str) -> Result<Option<SessionView>, ApiError> {
    let id = daemon.sessions.resolve(session)?;
    // A retry after the person fixed config.toml (as the failed reason
    // advises) must see the fix: read it again, cheaply, first.
    if matches!(daemon.sessions.run_state(&id), RunState::Failed(_)) {
        crate::reload::reload_config(&daemon.config, &daemon.paths.config())?;
    }
    let state = daemon.governor.wake(&id).await?;
    touch(daemon, &id);
    let view = daemon.sessions.view(&id);
    match state {
        RunState::Failed(reason) => Err(ApiError {
            code: codes::FAILED,
            message: reason,
            detail: serde_json::to_value(view).unwrap_or(Value::Null),
        }),
        _ => Ok(view),
    }
}

/// `hangar hibernate`: refused while the agent's turn runs or a command it
/// started runs (issue 46 part 3: stopping it would cut that work), saying
/// what runs, unless `force`.
pub async fn hibernate(
    daemon: &Arc<Daemon>,
    session: &str,
    force: bool,
) -> Result<Hibernated, ApiError> {
    let id = daemon.sessions.resolve(session)?;
    let in_flight = if force {
        None
    } else {
        let (governor, at) = (daemon.governor.clone(), id.clone());
        tokio::task::spawn_blocking(move || governor.work_in_flight(&at))
            .await
            .map_err(|e| ApiError::internal(format!("cannot look at {}: {e}", id.short())))?
    };
    if let Some(work) = in_flight {
        let mut refused = ApiError::new(
            codes::BUSY,
            format!(
                "session {} is not hibernated: {}; `hangar hibernate --force {}` stops it anyway",
                id.short(),
                work.reason(),
                id.short()
            ),
        );
        refused.detail = serde_json::json!({"id": id.to_string(), "in_flight": work.reason()});
        return Err(refused);
    }
    daemon.spawner.hibernate_session(&id).await?;
    daemon.journal.record(Event::Hibernate {
        session: id.to_string(),
        reason: HibernateReason::User,
    });
    let children = daemon
        .agents
        .hibernate_idle_children(&id, HibernateReason::User)
        .await;
    Ok(Hibernated {
        id: id.to_string(),
        state: "hibernated".to_owned(),
        also_hibernated: children.iter().map(|s| s.to_string()).collect(),
    })
}

/// Store the setting, then restart live agent sessions one at a time
/// under the same ids. Hibernated sessions pick it up when they wake.
pub async fn reload(daemon: &Arc<Daemon>, req: msg::Reload) -> Result<Reloaded, ApiError> {
    let config = crate::reload::reload_config(&daemon.config, &daemon.paths.config())?;
    let providers = &daemon.config.snapshot().providers;
    let live_agents = daemon.sessions.reload_restart_set(req.dangerous, |name| {
        crate::reload::has_dangerous_args(providers, name)
    })?;
    let mut restarted = Vec::new();
    let mut failed = Vec::new();
    for id in live_agents {
        daemon.spawner.hibernate_session(&id).await?;
        daemon.journal.record(Event::Hibernate {
            session: id.to_string(),
            reason: HibernateReason::Reload,
        });
        match daemon.governor.wake_as(&id, Caller::Reload).await? {
            RunState::Failed(reason) => failed.push(reply::Failed {
                id: id.to_string(),
                reason,
            }),
            _ => restarted.push(id.to_string()),
        }
    }
    let dangerous = daemon.sessions.dangerous();
    daemon.journal.record(Event::Reload {
        dangerous,
        restarted: restarted.len(),
        failed: failed.len(),
    });
    Ok(Reloaded {
        dangerous,
        restarted,
        failed,
        config: ConfigChange {
            changed: config.changed,
            needs_restart: config.needs_restart.iter().map(|s| s.to_string()).collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::on_a_fake_machine::build;
    use crate::sessions::RunState;
    use hangar_core::SessionId;

    #[tokio::test(start_paused = true)]
    async fn hibernate_refuses_an_agent_running_a_command_unless_forced_and_says_what_runs() {
        let m = build(
            &["pane"],
            &[],
            |c| {
                crate::on_a_fake_machine::find_claude(c);
            },
            |meta| meta.provider = hangar_core::Provider::Claude,
        );
        let pane = SessionId::from("pane");
        let woken = m.daemon.governor.wake(&pane).await.unwrap();
        assert_eq!(woken, RunState::Live);
        // A command the agent started, as Claude Code runs a background
        // Bash task: a shell under its process.
        let agent = m.daemon.sessions.process(&pane).unwrap().pid;
        m.os.spawn(90_002, agent, 7);
        m.os.set_process(90_002, Some(agent), 4096);
        m.os.set_cmdline(90_002, &["bash", "-c", "npm test\x1b[31m"]);
        let refused = hibernate(&m.daemon, "pane", false).await.unwrap_err();
        assert_eq!(refused.code, codes::BUSY);
        assert!(
            refused.message.contains("bash -c npm test") && refused.message.contains("pid 90002"),
            "{}",
            refused.message
        );
        assert!(
            !refused.message.contains('\x1b'),
            "the agent's text is escaped"
        );
        assert!(refused.message.contains("--force"), "{}", refused.message);
        assert_eq!(m.daemon.sessions.run_state(&pane), RunState::Live);
        let forced = hibernate(&m.daemon, "pane", true).await.unwrap();
        assert_eq!(forced.state, "hibernated");
    }
}
