//! Requests about sessions themselves: new, ls, send, close. The close
//! path every closer shares is the governor's `close_sessions`; typing and
//! confirming a prompt is `Delivery::send`.
//!
//! Each one edits the model through `hangar-core`, persists it before
//! answering (one store transaction), and only then starts or stops
//! processes. The rules themselves (what a close cascades to, where an
//! unburied pane goes) live in `hangar-core`.

use std::path::Path;

use crate::activity::shown_name;
use hangar_core::{Direction, Provider, SessionId, SessionMeta};
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply;
use hangar_protocol::view::SessionView;
use serde_json::json;

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::{Caller, CloseCause};
use crate::sessions::{Added, NewPlace, NewSession, RunState};
use hangar_providers::launch::{LaunchEnv, resolve_program};

pub(super) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub(super) fn parse_direction(d: Option<&str>) -> Result<Direction, ApiError> {
    match d.unwrap_or("vertical") {
        "vertical" | "v" => Ok(Direction::Vertical),
        "horizontal" | "h" => Ok(Direction::Horizontal),
        other => Err(ApiError::invalid(format!(
            "direction must be vertical or horizontal, not {other:?}"
        ))),
    }
}

/// The provider `new` uses when none is named: the first agent CLI whose
/// program is found, else the shell.
fn default_provider(providers: &hangar_providers::ProvidersConfig) -> Provider {
    let var = |k: &str| std::env::var(k).ok();
    let env = LaunchEnv {
        providers,
        var: &var,
        dangerous: false,
        mint: &new_id,
        fork_from: None,
    };
    hangar_core::new_session::default_provider(|p| resolve_program(p, &env).is_ok())
}

pub async fn new(daemon: &Daemon, req: msg::NewSession) -> Result<reply::Created, ApiError> {
    let config = daemon.config.snapshot();
    let provider = match req.provider.as_deref().map(str::trim) {
        None | Some("") => default_provider(&config.providers),
        Some(p) => {
            let provider = Provider::from_name(p);
            if let Provider::Custom(name) = &provider
                && !config.providers.contains_key(name)
            {
                return Err(ApiError::invalid(format!(
                    "unknown provider {name:?}: use claude, codex, opencode, shell, or define [providers.{name}] in config.toml"
                )));
            }
            provider
        }
    };
    let account = match req.account.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => {
            let folder_var = hangar_providers::config_folder_var(&provider);
            let account =
                hangar_core::accounts::account_for(&config.accounts, name, &provider, folder_var)
                    .map_err(|e| ApiError::invalid(e.to_string()))?;
            let folder = hangar_core::accounts::account_folder(account, folder_var);
            Some((name.to_owned(), folder.map(Box::<str>::from)))
        }
    };
    let direction = parse_direction(req.direction.as_deref())?;
    let sandboxed = daemon.sandbox.wanted(
        req.sandbox,
        config
            .providers
            .get(provider.name())
            .is_some_and(|p| p.sandbox),
    );
    let engine = match req.engine.as_deref().map(str::trim) {
        None | Some("") => {
            if req.image.is_some() {
                return Err(ApiError::invalid("--image needs --engine NAME"));
            }
            None
        }
        Some(name) => {
            daemon
                .engines
                .check_new(name)
                .map_err(|e| ApiError::invalid(e.0))?;
            Some(hangar_core::engine::EngineBinding {
                name: name.to_owned(),
                image: req.image.clone().filter(|i| !i.trim().is_empty()),
            })
        }
    };
    // `[sandbox] enabled` (or a provider's `sandbox = true`) with an engine
    // is the engine's walls; only asking for both at once is refused.
    if req.sandbox && engine.is_some() {
        return Err(ApiError::invalid(
            "--sandbox and --engine cannot be combined: an engine's container is the session's walls",
        ));
    }
    if let Some((name, Some(_))) = &account
        && (sandboxed || engine.is_some())
    {
        let refused = hangar_core::accounts::AccountError::FolderInSandbox { name: name.clone() };
        return Err(ApiError::invalid(refused.to_string()));
    }
    let now = daemon.os.now_ms();
    let worktree_title = req.title.as_deref().filter(|t| !t.trim().is_empty());
    let prepared = daemon
        .worktrees
        .prepare_worktree(
            &req,
            worktree_title.unwrap_or(provider.name()),
            &config.worktree,
        )
        .await?;
    let new = NewSession {
        place: NewPlace {
            tab: req.tab.as_deref(),
            cwd: req.cwd.as_deref(),
            fallback_cwd: req.fallback_cwd.as_deref(),
        },
        provider: provider.clone(),
        title: req.title.as_deref(),
        now_ms: now,
        capture: !req.no_capture,
        mcp: !req.no_mcp,
        parked: req.parked,
        split: req.split.as_deref().map(|target| (target, direction)),
    };
    // The folder is looked at on disk before the lock; should the tab's
    // folder change meanwhile, the new one is looked at and the add asked
    // again.
    let mut cwd = daemon.sessions.new_session_folder(&new.place)?;
    let id = loop {
        if !Path::new(&cwd).is_dir() {
            return Err(ApiError::invalid(format!(
                "folder {cwd} does not exist; pass an existing --cwd"
            )));
        }
        // Where its git work starts, for `hangar diff` (issue 30).
        let git_base = {
            let wt = prepared.as_ref().map(|p| p.info.clone());
            let dir = std::path::PathBuf::from(&cwd);
            let os = daemon.os.clone();
            crate::worktree::blocking(move || {
                crate::review::start_base(os.as_ref(), wt.as_ref(), &dir)
            })
            .await
            .ok()
            .flatten()
        };
        let finish = |meta: &mut SessionMeta| {
            if let Some(p) = &prepared {
                p.apply(meta);
            }
            if sandboxed || engine.is_some() {
                // Its own state folder (and its own socket back to hangar
                // for its hooks and MCP server, made at each start); an
                // engine's container gets the same (`Sandbox::walls`).
                meta.sandbox = Some(daemon.sandbox.folder_for(&meta.id));
            }
            meta.git_base = git_base.clone().map(Box::new);
            meta.engine = engine.clone().map(Box::new);
            if let Some((name, folder)) = &account {
                meta.account = Some(name.clone());
                meta.state_folder = folder.clone();
            }
        };
        match daemon.sessions.add_session(&new, &cwd, finish)? {
            Added::Session(id) => break id,
            Added::Recheck(other) => cwd = other,
        }
    };
    let parked = req.parked;
    if let Some(failed) = daemon.worktrees.adopt_worktree(&id, prepared) {
        return Ok(reply::Created {
            id: id.to_string(),
            state: failed.name().to_owned(),
        });
    }
    let state = if parked {
        RunState::Hibernated
    } else {
        daemon.governor.wake_as(&id, Caller::New).await?
    };
    Ok(reply::Created {
        id: id.to_string(),
        state: state.name().to_owned(),
    })
}

pub fn list(daemon: &Daemon) -> Vec<SessionView> {
    let rows = daemon.sessions.views();
    let rows: Vec<_> = rows
        .into_iter()
        .map(|mut row| {
            row.usage = daemon.proxy.usage_view(&row.id);
            // Where it runs: its sandbox's walls, its engine.
            let place = daemon
                .sessions
                .meta(&SessionId::from(row.id.as_str()))
                .map(|m| daemon.places.inspect(&m))
                .unwrap_or_default();
            row.sandbox = place.sandbox;
            row.engine = place.engine;
            row
        })
        .collect();
    // Activity is read off the state lock: a hibernated session's
    // transcript may be read (never woken).
    rows.into_iter()
        .map(|mut row| {
            let (activity, since) = daemon
                .monitor
                .activity_of(&SessionId::from(row.id.as_str()));
            row.activity_since = (since > 0).then_some(since);
            row.limit = daemon.usage.limit_view(&row.id);
            row.goal = daemon.goals.view_of(&row.id);
            // Limited above whatever the agent's own retries look like.
            row.activity = shown_name(activity, daemon.usage.as_ref(), &row.id).to_owned();
            if row.state == "hibernated" && row.reason.is_none() {
                row.reason = daemon
                    .usage
                    .budget_hibernated_why(&row.id)
                    .map(|why| format!("hibernated: its cost budget is spent ({why})"));
            }
            if row.reason.is_none() {
                let id = SessionId::from(row.id.as_str());
                row.reason = daemon.governor.memory_note(&id, &row.state);
            }
            row
        })
        .collect()
}

pub(super) fn touch(daemon: &Daemon, id: &SessionId) {
    daemon.sessions.touch(id, daemon.os.now_ms());
}

pub async fn send(daemon: &Daemon, req: msg::Send) -> Result<reply::Sent, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    // A person's words: a limit's continuation stands down after them.
    daemon.usage.person_typed(&id);
    // Held from the budget until the prompt is typed.
    let (state, _held) = daemon.governor.wake_to_prompt(&id, Caller::Send).await?;
    if let RunState::Failed(reason) = state {
        return Err(ApiError::new(codes::FAILED, reason));
    }
    daemon.delivery.send(&id, &req.text, req.enter).await
}

pub async fn close(daemon: &Daemon, req: msg::Close) -> Result<reply::Closed, ApiError> {
    let cascade = daemon.sessions.close_cascade(&req.session)?;
    if cascade.len() > 1 && !req.yes {
        return Err(needs_confirmation(
            format!(
                "closing {} also closes {} linked session(s): {}; pass --yes to close them all",
                cascade[0].short(),
                cascade.len() - 1,
                cascade[1..]
                    .iter()
                    .map(SessionId::short)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &cascade,
        ));
    }
    let (kept, removed) = daemon
        .governor
        .close_sessions(&cascade, req.delete_branch, CloseCause::User, &cascade[..1])
        .await?;
    Ok(reply::Closed {
        closed: cascade.iter().map(|s| s.to_string()).collect(),
        kept_worktrees: kept,
        removed_worktrees: removed,
    })
}

pub(super) fn needs_confirmation(message: String, cascade: &[SessionId]) -> ApiError {
    ApiError {
        code: codes::NEEDS_CONFIRMATION,
        message,
        detail: json!({"would_close": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>()}),
    }
}

#[cfg(test)]
mod account_tests {
    use super::*;
    use crate::on_a_fake_machine::build;

    /// A machine whose config has two claude accounts and a codex one,
    /// and claude found (any program that exists: the fake OS runs none).
    fn machine() -> crate::on_a_fake_machine::FakeMachine {
        machine_with(false)
    }

    /// `machine`, with `[limits] failover` as given.
    fn machine_with(failover: bool) -> crate::on_a_fake_machine::FakeMachine {
        build(
            &[],
            &[],
            |c| {
                c.limits.failover = failover;
                let account =
                    |provider: &str, key: &str, value: &str| hangar_core::accounts::AccountConfig {
                        provider: provider.into(),
                        env: [(key.to_owned(), value.to_owned())].into(),
                        folder: None,
                    };
                c.accounts.insert(
                    "work".into(),
                    account("claude", "ANTHROPIC_API_KEY", "sk-work-1"),
                );
                c.accounts.insert(
                    "openai".into(),
                    account("codex", "OPENAI_API_KEY", "sk-oa-2"),
                );
                c.accounts.insert(
                    "home".into(),
                    account("claude", "ANTHROPIC_API_KEY", "sk-home-3"),
                );
                crate::on_a_fake_machine::find_claude(c);
            },
            |_| {},
        )
    }

    fn new_claude(m: &crate::on_a_fake_machine::FakeMachine, account: &str) -> msg::NewSession {
        msg::NewSession {
            provider: Some("claude".into()),
            cwd: Some(m.home.path().display().to_string()),
            account: Some(account.into()),
            no_mcp: true,
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_runs_under_its_account_and_ls_names_the_account_never_its_credential() {
        let m = machine();
        let created = new(&m.daemon, new_claude(&m, "work")).await.unwrap();
        assert_eq!(created.state, "live");
        let spawned = m.os.spawned();
        let env = &spawned.last().unwrap().env;
        assert!(
            env.contains(&("ANTHROPIC_API_KEY".into(), "sk-work-1".into())),
            "the account's credential reaches its agent"
        );
        let rows = list(&m.daemon);
        let row = rows.iter().find(|r| r.id == created.id).unwrap();
        assert_eq!(row.account.as_deref(), Some("work"));
        let shown = serde_json::to_string(&rows).unwrap();
        assert!(!shown.contains("sk-work-1"), "{shown}");
        let journal =
            std::fs::read_to_string(m.home.path().join("journal.jsonl")).unwrap_or_default();
        assert!(!journal.contains("sk-work-1"));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unknown_account_or_another_providers_is_refused_and_nothing_starts() {
        let m = machine();
        let unknown = new(&m.daemon, new_claude(&m, "nope")).await.unwrap_err();
        assert!(
            unknown.message.contains("no account \"nope\""),
            "{}",
            unknown.message
        );
        let other = new(&m.daemon, new_claude(&m, "openai")).await.unwrap_err();
        assert!(other.message.contains("is for codex"), "{}", other.message);
        assert!(!other.message.contains("sk-oa-2"));
        assert!(m.os.spawned().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_between_account_folders_carries_the_conversation_and_resumes_it_there() {
        let folders = tempfile::tempdir().unwrap();
        let (work, home) = (folders.path().join("work"), folders.path().join("home"));
        let psid = "0b6c3e1e-2f4d-4a8b-9c1d-5e6f7a8b9c0d";
        let (w, h) = (work.display().to_string(), home.display().to_string());
        let m = build(
            &["a"],
            &[],
            |c| {
                for (name, folder) in [("work", &w), ("home", &h)] {
                    let account = hangar_core::accounts::AccountConfig {
                        provider: "claude".into(),
                        env: Default::default(),
                        folder: Some(folder.clone()),
                    };
                    c.accounts.insert(name.into(), account);
                }
                crate::on_a_fake_machine::find_claude(c);
            },
            |meta| {
                meta.provider = hangar_core::Provider::Claude;
                meta.account = Some("work".into());
                meta.state_folder = Some(w.as_str().into());
                meta.provider_session = Some(hangar_core::ProviderSessionId::new(
                    psid,
                    hangar_core::IdSource::Transcript,
                ));
            },
        );
        // The conversation as Claude Code keeps it under the work folder.
        let cwd = m.home.path().display().to_string();
        let slug = hangar_providers::transcript::discovery::claude_slug(&cwd);
        let relative = format!("projects/{slug}/{psid}.jsonl");
        std::fs::create_dir_all(work.join(format!("projects/{slug}"))).unwrap();
        let line = format!("{{\"type\":\"user\",\"sessionId\":\"{psid}\",\"cwd\":\"{cwd}\"}}\n");
        std::fs::write(work.join(&relative), &line).unwrap();

        let id = SessionId::from("a");
        let woken = m
            .daemon
            .spawner
            .wake_as(&id, crate::journal::Caller::Cli)
            .await;
        assert_eq!(woken.unwrap(), RunState::Live);
        let first = m.os.spawned().last().unwrap().clone();
        assert!(first.env.contains(&("CLAUDE_CONFIG_DIR".into(), w.clone())));

        let state = m
            .daemon
            .governor
            .move_to_account(&id, "home")
            .await
            .unwrap();
        assert_eq!(state, RunState::Live);
        assert_eq!(
            std::fs::read_to_string(home.join(&relative)).unwrap(),
            line,
            "carried to the same place under the home folder"
        );
        let moved = m.os.spawned().last().unwrap().clone();
        assert!(moved.env.contains(&("CLAUDE_CONFIG_DIR".into(), h.clone())));
        let resumes = moved
            .args
            .windows(2)
            .any(|a| a[0] == "--resume" && a[1] == psid);
        assert!(resumes, "the same conversation: {:?}", moved.args);
        let meta = m.daemon.sessions.meta(&id).unwrap();
        assert_eq!(meta.state_folder.as_deref(), Some(h.as_str()));
        let recorded = meta.provider_id_history.last().unwrap();
        assert_eq!(recorded.to.as_deref(), Some(psid));
        let change = recorded.account_move.as_deref().unwrap();
        assert_eq!(
            (change.from.as_deref(), change.to.as_deref()),
            (Some("work"), Some("home"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_moved_sessions_usage_counts_under_each_account_it_ran_under() {
        use crate::os::Clock;
        let m = machine();
        m.daemon.usage.start();
        let created = new(&m.daemon, new_claude(&m, "work")).await.unwrap();
        let id = SessionId::from(created.id.as_str());
        // A provider id, so the ledger records the move under it.
        let cwd = m.daemon.sessions.meta(&id).unwrap().cwd;
        let seen = hangar_core::ledger::Observation {
            id: "c1".into(),
            source: hangar_core::IdSource::Transcript,
            cwd: Some(cwd.clone()),
        };
        assert!(
            m.daemon
                .sessions
                .record_provider_id(&id, &seen, &cwd, m.os.now_ms())
        );
        let request = |key: &str, at_ms: i64| hangar_core::usage::UsageRecord {
            request_key: key.into(),
            session: id.to_string(),
            provider: "claude".into(),
            account: None,
            model: Some("claude-sonnet-4-5".into()),
            at_ms,
            tokens: hangar_core::usage::Tokens {
                input: 100,
                output: 10,
                cache_write: 0,
                cache_read: 0,
            },
            status: Some(200),
            source: hangar_core::usage::UsageSource::Proxy,
            agent_cost_usd: None,
        };
        let before = m.os.now_ms() as i64;
        m.daemon.usage.record_usage(request("r1", before - 1_000));
        m.daemon.usage.record_usage(request("r2", before - 500));
        m.os.advance(std::time::Duration::from_secs(5));
        m.daemon
            .governor
            .move_to_account(&id, "home")
            .await
            .unwrap();
        m.os.advance(std::time::Duration::from_secs(5));
        m.daemon
            .usage
            .record_usage(request("r3", m.os.now_ms() as i64));
        let report = crate::handlers::usage::usage(
            &m.daemon,
            msg::UsageQuery {
                since_ms: 0,
                session: None,
            },
        )
        .unwrap();
        let per: Vec<(&str, u64, u64)> = report
            .named_accounts
            .iter()
            .map(|a| (a.name.as_str(), a.sessions, a.requests))
            .collect();
        assert_eq!(per, [("home", 1, 1), ("work", 1, 2)], "{report:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_accounts_folder_is_refused_for_a_sandboxed_session() {
        let folders = tempfile::tempdir().unwrap();
        let folder = folders.path().display().to_string();
        let m = build(
            &[],
            &[],
            |c| {
                let account = hangar_core::accounts::AccountConfig {
                    provider: "claude".into(),
                    env: Default::default(),
                    folder: Some(folder.clone()),
                };
                c.accounts.insert("work".into(), account);
                crate::on_a_fake_machine::find_claude(c);
            },
            |_| {},
        );
        let mut req = new_claude(&m, "work");
        req.sandbox = true;
        let refused = new(&m.daemon, req).await.unwrap_err();
        assert!(refused.message.contains("sandboxed"), "{}", refused.message);
        assert!(m.os.spawned().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_to_another_account_restarts_the_agent_under_it_and_is_journalled_by_name() {
        let m = machine();
        let created = new(&m.daemon, new_claude(&m, "work")).await.unwrap();
        let id = SessionId::from(created.id.as_str());
        let before = m.os.spawned().len();
        let state = m
            .daemon
            .governor
            .move_to_account(&id, "home")
            .await
            .unwrap();
        assert_eq!(state, RunState::Live);
        let spawned = m.os.spawned();
        assert_eq!(spawned.len(), before + 1, "one new process, under home");
        let env = &spawned.last().unwrap().env;
        assert!(env.contains(&("ANTHROPIC_API_KEY".into(), "sk-home-3".into())));
        let row = list(&m.daemon)
            .into_iter()
            .find(|r| r.id == created.id)
            .unwrap();
        assert_eq!(row.account.as_deref(), Some("home"));
        let journal = std::fs::read_to_string(m.home.path().join("journal.jsonl")).unwrap();
        assert!(
            journal.contains("\"event\":\"account-move\"") && journal.contains("\"to\":\"home\""),
            "{journal}"
        );
        assert!(!journal.contains("sk-"), "no credential in the journal");
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_is_refused_while_a_person_is_attached_or_to_another_providers_account() {
        let m = machine();
        let created = new(&m.daemon, new_claude(&m, "work")).await.unwrap();
        let id = SessionId::from(created.id.as_str());
        let other = m
            .daemon
            .governor
            .move_to_account(&id, "openai")
            .await
            .unwrap_err();
        assert!(other.message.contains("is for codex"), "{}", other.message);
        let watching = m.daemon.activity.view(&id);
        let attached = m
            .daemon
            .governor
            .move_to_account(&id, "home")
            .await
            .unwrap_err();
        assert!(
            attached.message.contains("attached"),
            "{}",
            attached.message
        );
        drop(watching);
        let spawned = m.os.spawned().len();
        assert_eq!(spawned, 1, "nothing restarted");
        assert_eq!(
            m.daemon.sessions.meta(&id).unwrap().account.as_deref(),
            Some("work")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn with_failover_a_limited_session_carries_on_under_the_other_account_with_its_continuation()
     {
        let m = machine_with(true);
        let created = new(&m.daemon, new_claude(&m, "work")).await.unwrap();
        let id = SessionId::from(created.id.as_str());
        let now = m.daemon.usage.now();
        m.daemon.usage.limited(
            &id,
            hangar_core::usage_limits::SessionLimit {
                kind: "five_hour".to_owned(),
                resets_at: Some(now + 3_600_000),
                source: "proxy".to_owned(),
                since_ms: now,
                continue_at: None,
                stopped_mid_task: true,
                continued: false,
                account: None,
            },
        );
        let continuation = tokio::spawn(m.daemon.continuation.clone().run());
        crate::on_a_fake_machine::until("it runs under home", || {
            m.daemon.sessions.meta(&id).unwrap().account.as_deref() == Some("home")
                && m.os.spawned().len() == 2
                && m.daemon.sessions.run_state(&id) == RunState::Live
        })
        .await;
        let pid = m.os.spawned().last().unwrap().pid;
        crate::on_a_fake_machine::until("the continuation is typed under home", || {
            m.os.typed(pid).windows(8).any(|w| w == b"continue")
        })
        .await;
        assert!(
            m.daemon.usage.limit_view(id.as_str()).is_none(),
            "the old account's limit no longer holds it"
        );
        continuation.abort();
    }
}
