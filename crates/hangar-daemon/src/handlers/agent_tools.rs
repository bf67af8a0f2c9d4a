//! The MCP tools agents call (create, send to, list, close their own child
//! agents), arriving as `agent` requests from `hangar mcp`.

use std::sync::Arc;

use hangar_protocol::message::{AgentCall, AgentTool};
use serde_json::Value;

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Event;

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
        AgentTool::GoalStart => {
            crate::handlers::usage::goal_start(daemon, &caller, call.args, &mut touched).await
        }
        AgentTool::GoalStop => {
            crate::handlers::usage::goal_stop(daemon, &caller, call.args, &mut touched)
        }
        AgentTool::GoalDone => crate::handlers::usage::goal_done(daemon, &caller, call.args),
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
