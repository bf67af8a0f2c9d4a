//! The orchestration tools, one function each, behind the `agent_*` request
//! kinds.
//!
//! Every call is authenticated first (caller session + its token), every
//! argument is validated with a bound, and every session named is resolved
//! among the caller's own visible descendants only, so a session of another
//! agent or another project tab is never touched, nor even confirmed beyond
//! `not_your_agent`. Nothing here wakes an agent to read it: status, messages
//! and outputs come from transcripts.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use hangar_core::orchestration::{
    AgentMatch, AgentProcess, ChildRequest, CloseRefusal, agent_finished, agent_settled,
    agent_status, descends_from,
};
use hangar_core::{IdSource, Placement, Provider, ProviderSessionId, SessionId, SessionMeta};
use hangar_protocol::message::{AgentCall, AgentTool, codes};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::ledger::{FirstPrompt, Tombstone};
use super::{McpConfig, Orchestration};
use crate::activity::Activity;
use crate::activity::Monitor;
use crate::delivery::Delivery;
use crate::errors::ApiError;
use crate::governor::Governor;
use crate::journal::Journal;
use crate::journal::{Caller, CloseCause, Event, HibernateReason};
use crate::os::Clock;
use crate::section::Section;
use crate::sessions::RunState;
use crate::sessions::{RunClose, Sessions};
use crate::shutdown::Shutdown;
use crate::spawn::Spawner;
use hangar_providers::ProvidersConfig;
use hangar_providers::transcript::turns;

/// The largest prompt an agent may send (bytes).
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;
/// The most child agents (live, parked or hibernated) one agent may have.
pub const MAX_AGENTS: usize = 64;
const MAX_TITLE_CHARS: usize = 200;
const MAX_ROLE_CHARS: usize = 64;
const MAX_RUN_CHARS: usize = 64;
const MAX_ID_CHARS: usize = 128;
const DEFAULT_MESSAGES: usize = 20;
const MAX_MESSAGES: usize = 200;
const DEFAULT_CHARS: usize = 20_000;
const MAX_CHARS: usize = 200_000;
const DEFAULT_TOTAL_CHARS: usize = 50_000;
const MAX_TOTAL_CHARS: usize = 500_000;
const DEFAULT_WAIT_MS: u64 = 60_000;
const MAX_WAIT_MS: u64 = 600_000;
const MAX_WAIT_SESSIONS: usize = 64;
/// How often `wait_agents` looks at transcripts.
const WAIT_POLL: Duration = Duration::from_millis(200);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    run: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendPromptArgs {
    session: String,
    prompt: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    #[serde(default)]
    run: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArgs {
    session: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    session: String,
    #[serde(default)]
    max_messages: Option<usize>,
    #[serde(default)]
    max_chars: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadRunArgs {
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    max_total_chars: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    sessions: Option<Vec<String>>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// The MCP tool name of a request kind, for messages an agent reads.
pub fn tool_name(tool: AgentTool) -> &'static str {
    match tool {
        AgentTool::Create => "create_agent",
        AgentTool::SendPrompt => "send_prompt",
        AgentTool::List => "list_agents",
        AgentTool::Read => "read_agent",
        AgentTool::ReadRunOutputs => "read_run_outputs",
        AgentTool::Wait => "wait_agents",
        AgentTool::Close => "close_agent",
        AgentTool::CloseRun => "close_run",
        AgentTool::Park => "park_agent",
        AgentTool::Hibernate => "hibernate_agent",
        AgentTool::UsageRead => "usage_read",
        AgentTool::GoalStart => "goal_start",
        AgentTool::GoalStop => "goal_stop",
        AgentTool::GoalDone => "goal_done",
    }
}

pub(crate) fn parse<T: DeserializeOwned>(tool: AgentTool, args: Value) -> Result<T, ApiError> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    serde_json::from_value(args)
        .map_err(|e| ApiError::invalid(format!("bad arguments for {}: {e}", tool_name(tool))))
}

/// A short free-text field: trimmed, bounded, no control characters and
/// no bidi controls (a title that reads differently from what it is).
fn text_field(name: &str, value: Option<String>, max: usize) -> Result<Option<String>, ApiError> {
    let Some(v) = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if v.chars().count() > max {
        return Err(ApiError::invalid(format!(
            "{name} is longer than {max} characters"
        )));
    }
    if v.chars().any(hangar_core::display::is_terminal_unsafe) {
        return Err(ApiError::invalid(format!(
            "{name} must not contain control characters or bidi controls"
        )));
    }
    Ok(Some(v))
}

fn run_field(value: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(run) = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if run.len() > MAX_RUN_CHARS
        || !run
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(ApiError::invalid(format!(
            "run {run:?} must be 1 to {MAX_RUN_CHARS} characters of letters, digits, '-', '_' or '.'"
        )));
    }
    Ok(Some(run))
}

fn prompt_field(prompt: &str) -> Result<(), ApiError> {
    if prompt.trim().is_empty() {
        return Err(ApiError::invalid("the prompt is empty"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(ApiError::invalid(format!(
            "the prompt is {} bytes; the limit is {MAX_PROMPT_BYTES}",
            prompt.len()
        )));
    }
    Ok(())
}

fn new_run_id() -> String {
    let u = uuid::Uuid::new_v4().simple().to_string();
    format!("run-{}", &u[..8])
}

/// What a session name given by an agent resolves to.
enum Target {
    /// The caller itself.
    Me,
    /// One of the caller's visible descendants.
    Mine(SessionId),
}

/// A status an agent sees: live, working, waiting, hibernated, failed
/// (`limited` is put above it by `AgentTools::view`).
fn status_name(state: &RunState, activity: Activity) -> &'static str {
    agent_status(agent_process(state), activity)
}

/// A runtime state as `hangar_core::orchestration` names it.
fn agent_process(state: &RunState) -> AgentProcess {
    match state {
        RunState::Live => AgentProcess::Live,
        RunState::Spawning => AgentProcess::Spawning,
        RunState::Hibernated => AgentProcess::Hibernated,
        RunState::Failed(_) | RunState::Exited(_) => AgentProcess::Ended,
    }
}

fn reason_of(state: &RunState) -> Option<String> {
    match state {
        RunState::Failed(r) => Some(r.clone()),
        RunState::Exited(c) => Some(format!("exited with code {c}")),
        _ => None,
    }
}

/// A tombstone as metadata, so its transcript can still be read.
fn tombstone_meta(t: &Tombstone) -> SessionMeta {
    let mut m = SessionMeta::new(
        SessionId::new(t.id.clone()),
        Provider::from_name(&t.provider),
        t.cwd.clone(),
    );
    m.title = t.title.clone();
    m.provider_session = t
        .provider_session_id
        .as_ref()
        .map(|p| ProviderSessionId::new(p.clone(), IdSource::Transcript));
    m
}

fn tombstone_view(t: &Tombstone) -> Value {
    json!({
        "id": t.id,
        "title": t.title,
        "role": t.role,
        "run": t.run,
        "parent": t.parent,
        "provider": t.provider,
        "status": "closed",
        "placement": null,
        "provider_session_id": t.provider_session_id,
        "closed_at_ms": t.closed_at_ms,
    })
}

/// One visible agent's facts, gathered under the state lock.
#[derive(Clone)]
struct Snapshot {
    meta: SessionMeta,
    state: RunState,
    placement: Option<Placement>,
}

/// The agent tools' work: what agents may do to the agents they created.
pub struct AgentTools {
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) journal: Arc<Journal>,
    pub(crate) orchestration: Arc<Orchestration>,
    pub(crate) governor: Arc<Governor>,
    pub(crate) spawner: Arc<Spawner>,
    pub(crate) monitor: Arc<Monitor>,
    /// The limits that stand: a limited agent is listed `limited`.
    pub(crate) limits: Arc<dyn crate::activity::StandingLimits>,
    pub(crate) delivery: Arc<Delivery>,
    pub(crate) providers: Section<ProvidersConfig>,
    pub(crate) mcp: Section<McpConfig>,
    pub(crate) shutdown: Shutdown,
    /// Every time the tools stamp (the daemon's clock; a fake one in tests).
    pub(crate) clock: Arc<dyn Clock>,
}

impl AgentTools {
    /// After `parent` was hibernated for `reason` (a person, an agent):
    /// hibernate its live children that are idle (never one mid-turn,
    /// waiting for a person or attached), and theirs, journaled with the
    /// same reason.
    pub async fn hibernate_idle_children(
        &self,
        parent: &SessionId,
        reason: HibernateReason,
    ) -> Vec<SessionId> {
        if !self.mcp.get().hibernate_idle_children {
            return Vec::new();
        }
        let mut done = Vec::new();
        let mut frontier = vec![parent.clone()];
        while let Some(p) = frontier.pop() {
            let children = self.sessions.live_children(&p);
            for child in children {
                // Mid-turn, waiting for a person or attached: left alone.
                if self.governor.in_use(&child).is_some() {
                    continue;
                }
                if self.spawner.hibernate_session(&child).await.is_ok() {
                    self.journal.record(Event::Hibernate {
                        session: child.to_string(),
                        reason,
                    });
                    done.push(child.clone());
                    frontier.push(child);
                }
            }
        }
        done
    }
}

impl AgentTools {
    /// The caller's session, proven by its token; never from an argument.
    pub(crate) fn authenticate(&self, call: &AgentCall) -> Result<SessionId, ApiError> {
        let caller = SessionId::new(call.caller.trim());
        let unauthorized = || {
            ApiError::new(
                codes::UNAUTHORIZED,
                format!(
                    "hangar does not recognise this MCP server for session {caller}: its token \
                     is missing or stale (the agent was restarted or closed); use the server \
                     hangar configured for the agent"
                ),
            )
        };
        if call.token.is_empty() || call.token.len() > 256 || caller.as_str().is_empty() {
            return Err(unauthorized());
        }
        if !self.sessions.contains(&caller) {
            return Err(unauthorized());
        }
        if !self.orchestration.token_matches(&caller, &call.token) {
            return Err(unauthorized());
        }
        Ok(caller)
    }

    /// Resolve a session name (id or unique prefix) among the caller and its
    /// visible descendants only.
    fn resolve_target(&self, caller: &SessionId, given: &str) -> Result<Target, ApiError> {
        let given = given.trim();
        if given.is_empty() || given.chars().count() > MAX_ID_CHARS {
            return Err(ApiError::invalid("give a session id from list_agents"));
        }
        let (found, exists) = self.sessions.resolve_agent(caller, given);
        match found {
            AgentMatch::Me => Ok(Target::Me),
            AgentMatch::Mine(id) => Ok(Target::Mine(id)),
            AgentMatch::NoMatch => {
                let closed = self
                    .orchestration
                    .ledger()
                    .data
                    .tombstones
                    .contains_key(given);
                if closed {
                    Err(ApiError::not_found(format!(
                        "agent {given} is already closed"
                    )))
                } else if exists {
                    Err(ApiError::new(
                        codes::NOT_YOUR_AGENT,
                        format!(
                            "session {given} is not one of your agents; you can act only on \
                         agents you created (and theirs) in your project tab"
                        ),
                    ))
                } else {
                    Err(ApiError::not_found(format!(
                        "no agent {given}; list_agents shows yours"
                    )))
                }
            }
            AgentMatch::Ambiguous => Err(ApiError::new(
                codes::AMBIGUOUS,
                format!("agent id {given:?} is ambiguous; give more characters"),
            )),
        }
    }

    pub(crate) fn resolve_mine(
        &self,
        caller: &SessionId,
        given: &str,
        what: &str,
    ) -> Result<SessionId, ApiError> {
        match self.resolve_target(caller, given)? {
            Target::Mine(id) => Ok(id),
            Target::Me => Err(ApiError::new(
                codes::NOT_YOUR_AGENT,
                format!("{given} is you; {what} acts on the agents you created"),
            )),
        }
    }

    /// Tombstones of the caller's closed descendants in its project tab.
    fn my_tombstones(&self, caller: &SessionId) -> Vec<Tombstone> {
        let (tab, parents) = self.sessions.agent_tab_and_parents(caller);
        let Some(tab) = tab else {
            return Vec::new();
        };
        let mut ledger = self.orchestration.ledger();
        if ledger
            .data
            .expire(self.clock.now_ms(), self.mcp.get().tombstone_keep_ms())
            && let Err(e) = ledger.save()
        {
            // The expired tombstones come back until the next save.
            tracing::warn!(
                "could not save the orchestration ledger after expiring tombstones: {e}"
            );
        }
        let tombs = &ledger.data.tombstones;
        let parent_of = |id: &str| -> Option<String> {
            parents
                .get(id)
                .cloned()
                .or_else(|| tombs.get(id).and_then(|t| t.parent.clone()))
        };
        tombs
            .values()
            .filter(|t| t.tab.as_deref() == Some(tab.as_str()))
            .filter(|t| descends_from(t.parent.clone(), caller.as_str(), parent_of))
            .cloned()
            .collect()
    }

    fn snapshot(&self, ids: &[SessionId]) -> Vec<Snapshot> {
        self.sessions
            .facts(ids)
            .into_iter()
            .map(|f| Snapshot {
                meta: f.meta,
                state: f.run_state,
                placement: f.placement,
            })
            .collect()
    }

    /// The activity of each snapshot's turn, read off the runtime.
    /// Read from the activity board (issue 11): the one place that decides
    /// "mid-turn" and "finished its turn" (a prompt typed through `op_send`
    /// marks the turn's start there).
    async fn activities(&self, snaps: &[Snapshot]) -> Vec<Activity> {
        snaps
            .iter()
            .map(|s| {
                if matches!(s.state, RunState::Live | RunState::Spawning) {
                    self.monitor.activity_of(&s.meta.id).0
                } else {
                    Activity::Unknown
                }
            })
            .collect()
    }

    fn view(&self, s: &Snapshot, activity: Activity) -> Value {
        let rel = &s.meta.relationships;
        let limited = matches!(s.state, RunState::Live | RunState::Spawning)
            && crate::activity::shown_name(activity, self.limits.as_ref(), s.meta.id.as_str())
                == "limited";
        // A limited agent's CLI retries by itself and would read working.
        let status = if limited {
            "limited"
        } else {
            status_name(&s.state, activity)
        };
        json!({
            "id": s.meta.id.to_string(),
            "title": s.meta.title,
            "role": rel.role,
            "run": rel.run,
            "parent": rel.orchestration_parent.as_ref().map(|p| p.to_string()),
            "provider": s.meta.provider.name(),
            "status": status,
            "placement": s.placement.as_ref().map(|p| p.name()),
            "provider_session_id": s.meta.provider_session.as_ref().map(|p| p.id.clone()),
            "reason": reason_of(&s.state),
        })
    }

    /// Type a prompt into a live child, remembering where its turn starts.
    async fn type_prompt(self: &Arc<Self>, id: &SessionId, text: &str) -> Result<(), ApiError> {
        let meta = self
            .sessions
            .meta(id)
            .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
        let mark = tokio::task::spawn_blocking(move || turns::mark(&meta))
            .await
            .map_err(|e| ApiError::internal(format!("transcript reader failed: {e}")))?;
        self.orchestration.turns().insert(id.clone(), mark);
        // An agent's prompt never goes to a limited account (rule 13).
        self.governor.refuse_if_limited(id)?;
        // Held from the budget until the prompt is typed.
        let (state, _held) = self.governor.wake_to_prompt(id, Caller::Send).await?;
        if let RunState::Failed(reason) = state {
            return Err(ApiError::new(codes::FAILED, reason));
        }
        self.delivery.send(id, text, true).await?;
        Ok(())
    }

    /// Deliver a child's pending first prompt, at most once ever: the ledger
    /// records the delivery (and drops the text) before it is typed, so a
    /// daemon restart can never send it a second time.
    async fn deliver_first_prompt(self: &Arc<Self>, id: &SessionId) -> Result<bool, ApiError> {
        let text = {
            let mut ledger = self.orchestration.ledger();
            let Some(pending) = ledger
                .data
                .first_prompts
                .get_mut(id.as_str())
                .and_then(|p| p.text.take())
            else {
                return Ok(false);
            };
            if let Some(p) = ledger.data.first_prompts.get_mut(id.as_str()) {
                p.delivered_at_ms = Some(self.clock.now_ms());
            }
            ledger.save().map_err(|e| {
                ApiError::internal(format!("cannot record the first prompt's delivery: {e}"))
            })?;
            pending
        };
        match self.type_prompt(id, &text).await {
            Ok(()) => Ok(true),
            Err(e) if e.detail.get("delivered") == Some(&Value::Bool(false)) => {
                // Typed but never submitted: not recorded as delivered, and
                // never typed again (the text may still be in the input box).
                let mut ledger = self.orchestration.ledger();
                if let Some(p) = ledger.data.first_prompts.get_mut(id.as_str()) {
                    p.delivered_at_ms = None;
                    p.undelivered = Some(e.message.clone());
                }
                ledger.save().map_err(|e| {
                    ApiError::internal(format!("cannot record the first prompt's failure: {e}"))
                })?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn tool_create(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: CreateArgs = parse(AgentTool::Create, args)?;
        let prompt = a.prompt.filter(|p| !p.trim().is_empty());
        if let Some(p) = &prompt {
            prompt_field(p)?;
        }
        let title = text_field("title", a.title, MAX_TITLE_CHARS)?;
        let role = text_field("role", a.role, MAX_ROLE_CHARS)?;
        let run = run_field(a.run)?.unwrap_or_else(new_run_id);
        let provider = match a.provider.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(p) => {
                let provider = Provider::from_name(p);
                if let Provider::Custom(name) = &provider
                    && !self.providers.get().contains_key(name)
                {
                    return Err(ApiError::invalid(format!(
                        "unknown provider {name:?}: use claude, codex, opencode or shell"
                    )));
                }
                Some(provider)
            }
        };
        if let Some(cwd) = &a.cwd
            && (!Path::new(cwd).is_absolute() || !Path::new(cwd).is_dir())
        {
            return Err(ApiError::invalid(format!(
                "cwd {cwd:?} is not an existing absolute folder"
            )));
        }
        let now = self.clock.now_ms();
        let id = SessionId::new(uuid::Uuid::new_v4().to_string());
        let request = ChildRequest {
            provider,
            cwd: a.cwd.clone(),
            title,
            role: role.clone(),
            run: run.clone(),
        };
        let (provider_name, title) =
            self.sessions
                .add_child_agent(caller, id.clone(), request, MAX_AGENTS, now)?;
        touched.push(id.to_string());
        let mut state = RunState::Hibernated;
        let mut delivered = false;
        if let Some(prompt) = prompt {
            {
                let mut ledger = self.orchestration.ledger();
                ledger.data.first_prompts.insert(
                    id.to_string(),
                    FirstPrompt {
                        text: Some(prompt),
                        delivered_at_ms: None,
                        undelivered: None,
                    },
                );
                ledger.save().map_err(|e| {
                    ApiError::internal(format!("cannot record the first prompt: {e}"))
                })?;
            }
            state = self.governor.wake_as(&id, Caller::Agent).await?;
            if state == RunState::Live {
                delivered = self.deliver_first_prompt(&id).await?;
            }
        }
        Ok(json!({
            "id": id.to_string(),
            "run": run,
            "role": role,
            "title": title,
            "provider": provider_name,
            "status": status_name(&state, Activity::Unknown),
            "reason": reason_of(&state),
            "prompt_delivered": delivered,
        }))
    }

    pub(crate) async fn tool_send_prompt(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: SendPromptArgs = parse(AgentTool::SendPrompt, args)?;
        let id = self.resolve_mine(caller, &a.session, "send_prompt")?;
        touched.push(id.to_string());
        prompt_field(&a.prompt)?;
        // Rule 13: a limited account is never used; the prompt waits for
        // the reset (delivered then by `usage::continuation`), never lost.
        if !self.governor.usage.may_use_account(id.as_str()) {
            let resets_at = self
                .governor
                .usage
                .queue_prompt(&id, &a.prompt)
                .map_err(|m| ApiError::new(codes::LIMITED, m))?;
            return Ok(json!({
                "id": id.to_string(),
                "status": "queued",
                "woke": false,
                "resets_at": resets_at,
            }));
        }
        let was_live = matches!(
            self.sessions.run_state(&id),
            RunState::Live | RunState::Spawning
        );
        if let RunState::Failed(reason) = self.governor.wake_as(&id, Caller::Agent).await? {
            return Err(ApiError::new(codes::FAILED, reason));
        }
        let first_prompt_delivered = self.deliver_first_prompt(&id).await?;
        self.type_prompt(&id, &a.prompt).await?;
        let (started, provider_session_id) = self.sessions.started_and_provider_id(&id);
        Ok(json!({
            "id": id.to_string(),
            "status": "working",
            "woke": !was_live,
            "started": started.map(|r| if r { "resumed" } else { "fresh" }),
            "provider_session_id": provider_session_id,
            "first_prompt_delivered": first_prompt_delivered,
        }))
    }

    pub(crate) async fn tool_list(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
    ) -> Result<Value, ApiError> {
        let a: RunArgs = parse(AgentTool::List, args)?;
        let run = run_field(a.run)?;
        let ids = self.sessions.visible_agents(caller);
        let snaps: Vec<Snapshot> = self
            .snapshot(&ids)
            .into_iter()
            .filter(|s| run.is_none() || s.meta.relationships.run == run)
            .collect();
        let activities = self.activities(&snaps).await;
        let mut agents: Vec<Value> = snaps
            .iter()
            .zip(activities)
            .map(|(s, a)| self.view(s, a))
            .collect();
        agents.extend(
            self.my_tombstones(caller)
                .iter()
                .filter(|t| run.is_none() || t.run == run)
                .map(tombstone_view),
        );
        Ok(json!({"agents": agents}))
    }

    /// A visible agent's or a closed one's metadata and status.
    async fn readable(
        self: &Arc<Self>,
        caller: &SessionId,
        given: &str,
    ) -> Result<(SessionMeta, &'static str), ApiError> {
        match self.resolve_mine(caller, given, "read_agent") {
            Ok(id) => {
                let snaps = self.snapshot(std::slice::from_ref(&id));
                let snap = snaps
                    .into_iter()
                    .next()
                    .ok_or_else(|| ApiError::not_found(format!("no agent {id}")))?;
                let act = self.activities(std::slice::from_ref(&snap)).await[0];
                Ok((snap.meta.clone(), status_name(&snap.state, act)))
            }
            Err(e) if e.code == codes::NOT_FOUND => self
                .my_tombstones(caller)
                .into_iter()
                .find(|t| t.id == given.trim())
                .map(|t| (tombstone_meta(&t), "closed"))
                .ok_or(e),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn tool_read(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: ReadArgs = parse(AgentTool::Read, args)?;
        let (meta, status) = self.readable(caller, &a.session).await?;
        touched.push(meta.id.to_string());
        let max_messages = a
            .max_messages
            .unwrap_or(DEFAULT_MESSAGES)
            .clamp(1, MAX_MESSAGES);
        let max_chars = a.max_chars.unwrap_or(DEFAULT_CHARS).clamp(1, MAX_CHARS);
        let id = meta.id.to_string();
        let (messages, truncated) = tokio::task::spawn_blocking(move || {
            turns::read_messages(&meta, max_messages, max_chars)
        })
        .await
        .map_err(|e| ApiError::internal(format!("transcript reader failed: {e}")))?
        .map_err(ApiError::invalid)?;
        Ok(json!({
            "id": id,
            "status": status,
            "messages": messages,
            "truncated": truncated,
        }))
    }

    /// The agents a run names (all of the caller's when `run` is `None`):
    /// visible ones, then tombstones.
    fn run_members(
        &self,
        caller: &SessionId,
        run: &Option<String>,
    ) -> (Vec<Snapshot>, Vec<Tombstone>) {
        let ids = self.sessions.visible_agents(caller);
        let snaps = self
            .snapshot(&ids)
            .into_iter()
            .filter(|s| run.is_none() || &s.meta.relationships.run == run)
            .collect();
        let tombs = self
            .my_tombstones(caller)
            .into_iter()
            .filter(|t| run.is_none() || &t.run == run)
            .collect();
        (snaps, tombs)
    }

    pub(crate) async fn tool_read_run(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
    ) -> Result<Value, ApiError> {
        let a: ReadRunArgs = parse(AgentTool::ReadRunOutputs, args)?;
        let run = run_field(a.run)?;
        let total = a
            .max_total_chars
            .unwrap_or(DEFAULT_TOTAL_CHARS)
            .clamp(1, MAX_TOTAL_CHARS);
        let (snaps, tombs) = self.run_members(caller, &run);
        let activities = self.activities(&snaps).await;
        let mut members: Vec<(SessionMeta, &'static str)> = snaps
            .iter()
            .zip(activities)
            .map(|(s, a)| (s.meta.clone(), status_name(&s.state, a)))
            .collect();
        members.extend(tombs.iter().map(|t| (tombstone_meta(t), "closed")));
        let per = (total / members.len().max(1)).max(1);
        let outputs = tokio::task::spawn_blocking(move || {
            members
                .into_iter()
                .map(|(meta, status)| {
                    let (output, truncated) = turns::latest_output(&meta, per);
                    json!({
                        "id": meta.id.to_string(),
                        "title": meta.title,
                        "status": status,
                        "output": output,
                        "truncated": truncated,
                    })
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| ApiError::internal(format!("transcript reader failed: {e}")))?;
        Ok(json!({"run": run, "outputs": outputs}))
    }

    pub(crate) async fn tool_wait(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: WaitArgs = parse(AgentTool::Wait, args)?;
        let run = run_field(a.run)?;
        let timeout =
            Duration::from_millis(a.timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS));
        let ids: Vec<SessionId> = match a.sessions {
            Some(list) if !list.is_empty() => {
                if run.is_some() {
                    return Err(ApiError::invalid("give run or sessions, not both"));
                }
                if list.len() > MAX_WAIT_SESSIONS {
                    return Err(ApiError::invalid(format!(
                        "at most {MAX_WAIT_SESSIONS} sessions at once"
                    )));
                }
                let mut ids = Vec::new();
                for s in &list {
                    let id = self.resolve_mine(caller, s, "wait_agents")?;
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                ids
            }
            _ => self
                .run_members(caller, &run)
                .0
                .into_iter()
                .map(|s| s.meta.id)
                .collect(),
        };
        touched.extend(ids.iter().map(|i| i.to_string()));
        let begun = Instant::now();
        let deadline = begun + timeout;
        let mut shutdown = self.shutdown.watch();
        let (snaps, activities) = loop {
            let snaps = self.snapshot(&ids);
            let activities = self.activities(&snaps).await;
            // A session that vanished (closed) is settled too.
            let all_settled = snaps
                .iter()
                .zip(&activities)
                .all(|(s, a)| settled(&s.state, *a));
            if all_settled || Instant::now() >= deadline || *shutdown.borrow() {
                break (snaps, activities);
            }
            let pause = WAIT_POLL.min(deadline.saturating_duration_since(Instant::now()));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shutdown.changed() => {}
            }
        };
        let per = (DEFAULT_TOTAL_CHARS / snaps.len().max(1)).max(500);
        let present: BTreeSet<SessionId> = snaps.iter().map(|s| s.meta.id.clone()).collect();
        let rows: Vec<(Snapshot, Activity)> = snaps.into_iter().zip(activities).collect();
        let mut all_finished = true;
        let views = tokio::task::spawn_blocking(move || {
            rows.into_iter()
                .map(|(s, a)| {
                    let finished = finished(&s.state, a);
                    let (output, truncated) = turns::latest_output(&s.meta, per);
                    (
                        finished,
                        json!({
                            "id": s.meta.id.to_string(),
                            "status": status_name(&s.state, a),
                            "finished": finished,
                            "output": output,
                            "truncated": truncated,
                            "reason": reason_of(&s.state),
                        }),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| ApiError::internal(format!("transcript reader failed: {e}")))?;
        let mut agents: Vec<Value> = Vec::new();
        for (f, v) in views {
            all_finished &= f;
            agents.push(v);
        }
        for gone in ids.iter().filter(|i| !present.contains(*i)) {
            agents.push(json!({"id": gone.to_string(), "status": "closed", "finished": true}));
        }
        Ok(json!({
            "all_finished": all_finished,
            "timed_out": !all_finished && Instant::now() >= deadline,
            "waited_ms": begun.elapsed().as_millis() as u64,
            "agents": agents,
        }))
    }

    /// Close exactly `ids` for the caller, journaled as closed by an agent,
    /// through the close path that removes clean worktrees (kept ones hold
    /// work and are left, like a person's close).
    async fn close_for_agent(self: &Arc<Self>, ids: &[SessionId]) -> Result<(), ApiError> {
        let (kept, _) = self
            .governor
            .close_sessions(ids, false, CloseCause::Agent, ids)
            .await?;
        if !kept.is_empty() {
            tracing::info!(
                "an agent's close kept {} worktree(s) that hold work",
                kept.len()
            );
        }
        Ok(())
    }

    pub(crate) async fn tool_close(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: SessionArgs = parse(AgentTool::Close, args)?;
        let id = match self.resolve_target(caller, &a.session)? {
            Target::Me => {
                touched.push(caller.to_string());
                return Err(refusal(CloseRefusal::SelfClose));
            }
            Target::Mine(id) => id,
        };
        touched.push(id.to_string());
        let plan = self.sessions.check_close(caller, std::slice::from_ref(&id));
        let closing = plan.map_err(refusal)?;
        self.close_for_agent(&closing).await?;
        Ok(json!({"closed": closing.iter().map(|s| s.to_string()).collect::<Vec<_>>()}))
    }

    pub(crate) async fn tool_close_run(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: RunArgs = parse(AgentTool::CloseRun, args)?;
        let run = run_field(a.run)?;
        let named: Vec<SessionId> = self
            .run_members(caller, &run)
            .0
            .into_iter()
            .map(|s| s.meta.id)
            .collect();
        touched.extend(named.iter().map(|s| s.to_string()));
        // Close every member whose cascade stays inside the run; report the
        // others with what closing them would also close.
        let RunClose { closing, skipped } = self.sessions.close_run_plan(caller, &named);
        let skipped: Vec<Value> = skipped
            .into_iter()
            .map(|(id, cascade)| {
                json!({
                    "id": id.to_string(),
                    "code": codes::CASCADE_REFUSED,
                    "reason": "closing it would also close sessions outside this run",
                    "would_close": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                })
            })
            .collect();
        let (closable, skipped) = (closing.map_err(refusal)?, skipped);
        if !closable.is_empty() {
            self.close_for_agent(&closable).await?;
        }
        Ok(json!({
            "run": run,
            "closed": closable.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "skipped": skipped,
        }))
    }

    pub(crate) async fn tool_park(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: SessionArgs = parse(AgentTool::Park, args)?;
        let id = self.resolve_mine(caller, &a.session, "park_agent")?;
        touched.push(id.to_string());
        let changed = self.sessions.park_agent(&id, self.clock.now_ms())?;
        Ok(json!({"id": id.to_string(), "placement": "parked", "changed": changed}))
    }

    pub(crate) async fn tool_hibernate(
        self: &Arc<Self>,
        caller: &SessionId,
        args: Value,
        touched: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let a: SessionArgs = parse(AgentTool::Hibernate, args)?;
        let id = self.resolve_mine(caller, &a.session, "hibernate_agent")?;
        touched.push(id.to_string());
        self.spawner.hibernate_session(&id).await?;
        self.journal.record(Event::Hibernate {
            session: id.to_string(),
            reason: HibernateReason::Agent,
        });
        let also = self
            .hibernate_idle_children(&id, HibernateReason::Agent)
            .await;
        Ok(json!({
            "id": id.to_string(),
            "status": "hibernated",
            "also_hibernated": also.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        }))
    }
}

/// Done waiting on an agent: its turn finished, it waits for a person, or
/// it has no process to make progress with.
fn settled(state: &RunState, activity: Activity) -> bool {
    agent_settled(agent_process(state), activity)
}

/// Its turn is over (not merely paused at a question for a person).
fn finished(state: &RunState, activity: Activity) -> bool {
    agent_finished(agent_process(state), activity)
}

fn refusal(r: CloseRefusal) -> ApiError {
    let ids = |v: &[SessionId]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match r {
        CloseRefusal::SelfClose => ApiError::new(
            codes::SELF_CLOSE,
            "an agent cannot close itself; a person can (`hangar close`)",
        ),
        CloseRefusal::NotYours(id) => ApiError::new(
            codes::NOT_YOUR_AGENT,
            format!("session {id} is not one of your agents"),
        ),
        CloseRefusal::Cascade {
            beyond,
            would_close,
        } => ApiError {
            code: codes::CASCADE_REFUSED,
            message: format!(
                "refused: this close would also close {} session(s) you did not name: {}; \
                 close those first, or name them all (close_run)",
                beyond.len(),
                ids(&beyond).join(", ")
            ),
            detail: json!({"would_close": ids(&would_close), "not_named": ids(&beyond)}),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Caller;
    use crate::on_a_fake_machine::{FakeMachine, build};
    use crate::sessions::WakeLooked;

    /// Pane `lead` with its agents `c1` (a pane) and `c2` (parked); pane
    /// `other` is nobody's agent.
    fn family() -> FakeMachine {
        build(
            &["lead", "c1", "other"],
            &["c2"],
            |_| {},
            |m| {
                if m.id.as_str().starts_with('c') {
                    m.relationships.orchestration_parent = Some(SessionId::from("lead"));
                    m.relationships.orchestration_root = Some(SessionId::from("lead"));
                }
            },
        )
    }

    #[tokio::test(start_paused = true)]
    async fn list_agents_shows_the_callers_agents_with_their_state_and_nobody_elses() {
        let m = family();
        let c1 = SessionId::from("c1");
        let state = m.daemon.spawner.wake_as(&c1, Caller::Agent).await;
        assert_eq!(state.unwrap(), RunState::Live);
        let lead = SessionId::from("lead");
        let listed = m.daemon.agents.tool_list(&lead, json!({})).await.unwrap();
        let mut rows: Vec<(String, String)> = listed["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["id"].as_str().unwrap_or_default().to_owned(),
                    a["status"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        rows.sort();
        let want = [
            ("c1".to_owned(), "live".to_owned()),
            ("c2".to_owned(), "hibernated".to_owned()),
        ];
        assert_eq!(rows, want, "{listed}");
        let none = m.daemon.agents.tool_list(&c1, json!({})).await.unwrap();
        assert_eq!(none["agents"], json!([]), "c1 created nobody");
    }

    fn created_id(reply: &Value) -> SessionId {
        SessionId::from(reply["id"].as_str().expect("an id in the reply"))
    }

    #[tokio::test(start_paused = true)]
    async fn create_agent_without_a_prompt_records_a_hibernated_child_and_starts_nothing() {
        let m = family();
        let lead = SessionId::from("lead");
        let mut touched = Vec::new();
        let args = json!({"title": "tests", "role": "tester", "provider": "shell"});
        let reply = m.daemon.agents.tool_create(&lead, args, &mut touched);
        let reply = reply.await.unwrap();
        assert_eq!(reply["status"], "hibernated", "{reply}");
        assert_eq!(reply["prompt_delivered"], false);
        let child = created_id(&reply);
        assert_eq!(touched, [child.to_string()]);
        assert!(m.os.spawned().is_empty(), "no process for an idle child");
        let listed = m.daemon.agents.tool_list(&lead, json!({})).await.unwrap();
        let ids: Vec<&str> = listed["agents"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["id"].as_str())
            .collect();
        assert!(ids.contains(&child.as_str()), "{listed}");
        // An agent cannot name a folder that is not there.
        let bad = json!({"cwd": "/no/such/folder", "provider": "shell"});
        let mut scratch = Vec::new();
        let refused = m.daemon.agents.tool_create(&lead, bad, &mut scratch);
        let refused = refused.await.unwrap_err();
        assert!(refused.message.contains("not an existing absolute folder"));
    }

    #[tokio::test(start_paused = true)]
    async fn create_agent_with_a_prompt_starts_the_child_and_types_the_prompt_into_it() {
        let mut scratch = Vec::new();
        let m = family();
        let lead = SessionId::from("lead");
        let args = json!({"prompt": "write the tests", "provider": "shell"});
        let reply = m.daemon.agents.tool_create(&lead, args, &mut scratch);
        let reply = reply.await.unwrap();
        assert_eq!(reply["status"], "live", "{reply}");
        assert_eq!(reply["prompt_delivered"], true, "{reply}");
        let child = created_id(&reply);
        let spawned = m.os.spawned();
        let started = spawned
            .iter()
            .find(|s| s.session.as_deref() == Some(child.as_str()))
            .expect("the child's program ran");
        let typed = String::from_utf8_lossy(&m.os.typed(started.pid)).into_owned();
        assert!(typed.contains("write the tests"), "typed: {typed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn close_agent_ends_the_callers_child_and_refuses_itself_and_strangers() {
        let mut scratch = Vec::new();
        let m = family();
        let (lead, c1) = (SessionId::from("lead"), SessionId::from("c1"));
        let state = m.daemon.spawner.wake_as(&c1, Caller::Agent).await.unwrap();
        assert_eq!(state, RunState::Live);
        let pid = m.daemon.sessions.process(&c1).unwrap().pid;
        let agents = &m.daemon.agents;
        let own = agents.tool_close(&c1, json!({"session": "c1"}), &mut scratch);
        assert_eq!(own.await.unwrap_err().code, codes::SELF_CLOSE);
        let stranger = agents.tool_close(&c1, json!({"session": "other"}), &mut scratch);
        assert!(stranger.await.is_err(), "other is nobody's agent");
        assert!(m.daemon.sessions.contains(&SessionId::from("other")));
        let closed = agents.tool_close(&lead, json!({"session": "c1"}), &mut scratch);
        let closed = closed.await.unwrap();
        assert_eq!(closed["closed"], json!(["c1"]), "{closed}");
        assert!(!m.daemon.sessions.contains(&c1), "c1 is gone");
        assert!(
            m.os.signals_sent().iter().any(|(p, _)| *p == pid),
            "c1's process was asked to end"
        );
        assert!(!m.os.running().contains(&pid), "and it ended");
        assert!(m.daemon.sessions.contains(&SessionId::from("c2")));
    }

    #[tokio::test(start_paused = true)]
    async fn wait_agents_on_an_agent_still_starting_times_out_on_the_clock_without_real_waiting() {
        let m = family();
        let c1 = SessionId::from("c1");
        // c1's start never ends: marked spawning, no process coming.
        let (_, looked) = m
            .daemon
            .sessions
            .wake_look(&c1, false, false, false, || false)
            .unwrap();
        assert!(matches!(looked, WakeLooked::Spawn(_)));
        let real = std::time::Instant::now();
        let mut touched = Vec::new();
        let waited = m
            .daemon
            .agents
            .tool_wait(
                &SessionId::from("lead"),
                json!({"sessions": ["c1"], "timeout_ms": 90_000}),
                &mut touched,
            )
            .await
            .unwrap();
        assert_eq!(waited["timed_out"], true, "{waited}");
        assert_eq!(waited["all_finished"], false);
        let ms = waited["waited_ms"].as_u64().unwrap();
        assert!((90_000..90_000 + 1_000).contains(&ms), "{ms}");
        assert!(
            real.elapsed() < std::time::Duration::from_secs(30),
            "a minute and a half passed on tokio's clock only"
        );
        assert_eq!(touched, ["c1"]);
    }
}
