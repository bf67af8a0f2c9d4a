//! The MCP tools agents call (create, send to, list, close their own child
//! agents), arriving as `agent` requests from `hangar mcp`.

use std::sync::Arc;

use hangar_core::SessionId;
use hangar_protocol::message::{AgentCall, AgentTool};
use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::{Caller, Event};
use crate::orchestration::tools::parse;

/// Answer one orchestration tool call, journaling it with its caller.
pub async fn agent(daemon: &Arc<Daemon>, call: AgentCall) -> Result<Value, ApiError> {
    let tool = call.tool;
    let agents = &daemon.agents;
    let caller = agents.authenticate(&call)?;
    let mut touched: Vec<String> = Vec::new();
    let result = match tool {
        AgentTool::Create => agents.tool_create(&caller, call.args, &mut touched).await,
        AgentTool::SendPrompt => {
            agents
                .tool_send_prompt(&caller, call.args, &mut touched)
                .await
        }
        AgentTool::List => agents.tool_list(&caller, call.args).await,
        AgentTool::Read => agents.tool_read(&caller, call.args, &mut touched).await,
        AgentTool::ReadRunOutputs => agents.tool_read_run(&caller, call.args).await,
        AgentTool::Wait => agents.tool_wait(&caller, call.args, &mut touched).await,
        AgentTool::Close => agents.tool_close(&caller, call.args, &mut touched).await,
        AgentTool::CloseRun => {
            agents
                .tool_close_run(&caller, call.args, &mut touched)
                .await
        }
        AgentTool::Park => agents.tool_park(&caller, call.args, &mut touched).await,
        AgentTool::Hibernate => {
            agents
                .tool_hibernate(&caller, call.args, &mut touched)
                .await
        }
        AgentTool::UsageRead => {
            crate::handlers::usage::usage_read(daemon, call.args).and_then(|r| {
                serde_json::to_value(r).map_err(|e| ApiError::internal(format!("reply: {e}")))
            })
        }
        AgentTool::GoalStart => goal_start(daemon, &caller, call.args, &mut touched).await,
        AgentTool::GoalStop => goal_stop(daemon, &caller, call.args, &mut touched),
        AgentTool::GoalDone => goal_done(daemon, &caller, call.args),
    };
    let read_only = matches!(
        tool,
        AgentTool::List | AgentTool::ReadRunOutputs | AgentTool::UsageRead
    );
    if !read_only || result.is_err() {
        daemon.journal.record(Event::AgentAction {
            caller: caller.to_string(),
            action: tool.kind().to_owned(),
            sessions: touched,
            ok: result.is_ok(),
            code: result.as_ref().err().map(|e| e.code.to_owned()),
        });
    }
    result
}

// The goal tools (issue 29): results for a model, JSON like the others.

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GoalStartArgs {
    session: String,
    goal: String,
    #[serde(default)]
    max_turns: Option<u32>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GoalStopArgs {
    session: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GoalDoneArgs {
    status: String,
    #[serde(default)]
    summary: String,
}

/// The MCP tool `goal_start`: give one of the caller's agents a goal. An
/// agent's wake of a limited account is never made: the goal waits paused.
pub async fn goal_start(
    daemon: &Arc<Daemon>,
    caller: &SessionId,
    args: Value,
    touched: &mut Vec<String>,
) -> Result<Value, ApiError> {
    let a: GoalStartArgs = parse(AgentTool::GoalStart, args)?;
    let id = daemon
        .agents
        .resolve_mine(caller, &a.session, "goal_start")?;
    touched.push(id.to_string());
    let goal = daemon
        .goals
        .start(&id, &a.goal, a.max_turns, Caller::Agent)
        .await?;
    Ok(json!({"id": id.to_string(), "goal": goal}))
}

/// The MCP tool `goal_stop`.
pub fn goal_stop(
    daemon: &Arc<Daemon>,
    caller: &SessionId,
    args: Value,
    touched: &mut Vec<String>,
) -> Result<Value, ApiError> {
    let a: GoalStopArgs = parse(AgentTool::GoalStop, args)?;
    let id = daemon
        .agents
        .resolve_mine(caller, &a.session, "goal_stop")?;
    touched.push(id.to_string());
    let goal = daemon.goals.stop(&id)?;
    Ok(json!({"id": id.to_string(), "goal": goal}))
}

/// The MCP tool `goal_done`: the caller's own goal is done or blocked.
pub fn goal_done(daemon: &Arc<Daemon>, caller: &SessionId, args: Value) -> Result<Value, ApiError> {
    let a: GoalDoneArgs = parse(AgentTool::GoalDone, args)?;
    let blocked = match a.status.trim() {
        "done" => false,
        "blocked" => true,
        other => {
            return Err(ApiError::invalid(format!(
                "goal_done: status {other:?}: use \"done\" or \"blocked\""
            )));
        }
    };
    let goal = daemon.goals.done(caller, blocked, &a.summary)?;
    Ok(json!({"id": caller.to_string(), "goal": goal}))
}
