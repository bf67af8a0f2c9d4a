//! `hangar mcp --session ID`: the orchestration MCP server an agent is given,
//! on stdio, built with rmcp (the official Rust SDK).
//!
//! Each tool is a thin bridge: it forwards its arguments to the daemon as an
//! `agent_*` request together with the session id this server was launched
//! for and the token from `HANGAR_MCP_TOKEN`. The daemon decides everything;
//! this server must never take the caller's identity from a tool argument,
//! and never write anything but MCP messages to stdout.

mod arguments;
mod bridge;

use std::process::ExitCode;

use anyhow::{Context, bail};
use hangar_protocol::message::AgentTool;
use hangar_protocol::paths::Paths;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;
use serde_json::{Value, json};

use arguments::{
    CreateAgent, GoalDone, GoalStart, ReadAgent, ReadRunOutputs, RunFilter, SendPrompt, SessionArg,
    UsageRead, WaitAgents,
};
use bridge::Identity;

const INSTRUCTIONS: &str = "hangar orchestration: create child agents (parked in your project tab), \
prompt them, wait for their turns to finish, read their outputs from transcripts, and close them. \
You see and act on only the agents you created and theirs. Errors carry a code: self_close, \
not_your_agent, cascade_refused, not_found, invalid, failed, unauthorized.";

/// The server: who it speaks for, and its tools.
#[derive(Clone)]
pub struct HangarMcp {
    who: Identity,
    tool_router: ToolRouter<Self>,
}

/// A tool's answer: the daemon's body as structured content, or its error
/// as a tool error whose text starts with the code.
fn answer(result: bridge::Answer) -> Result<CallToolResult, ErrorData> {
    Ok(match result {
        Ok(body) => CallToolResult::structured(wrap(body)),
        Err(e) => {
            let mut r = CallToolResult::structured_error(json!({
                "error": {"code": e.code, "message": e.message, "detail": e.detail}
            }));
            r.content = vec![rmcp::model::ContentBlock::text(format!(
                "{}: {}",
                e.code, e.message
            ))];
            r
        }
    })
}

/// Structured content must be an object.
fn wrap(body: Value) -> Value {
    if body.is_object() {
        body
    } else {
        json!({ "result": body })
    }
}

impl HangarMcp {
    async fn call(
        &self,
        tool: AgentTool,
        args: impl Serialize,
    ) -> Result<CallToolResult, ErrorData> {
        let args = serde_json::to_value(args).unwrap_or(Value::Null);
        let who = self.who.clone();
        let result = tokio::task::spawn_blocking(move || bridge::call(&who, tool, args))
            .await
            .map_err(|e| ErrorData::internal_error(format!("bridge failed: {e}"), None))?;
        answer(result)
    }
}

#[tool_router]
impl HangarMcp {
    pub fn new(who: Identity) -> Self {
        HangarMcp {
            who,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Create a child agent, parked in your project tab, optionally with a \
        first prompt (delivered exactly once; the child is started for it). Returns its id and run."
    )]
    async fn create_agent(
        &self,
        Parameters(p): Parameters<CreateAgent>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::Create, p).await
    }

    #[tool(
        description = "Send a prompt to one of your agents; a hibernated agent is woken first \
        (resuming its conversation)."
    )]
    async fn send_prompt(
        &self,
        Parameters(p): Parameters<SendPrompt>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::SendPrompt, p).await
    }

    #[tool(
        description = "List your agents (and closed ones for 24 h) with their status: live, \
        working, waiting, limited (its account refused it until a reset), hibernated, failed or \
        closed. Wakes nobody.",
        annotations(read_only_hint = true)
    )]
    async fn list_agents(
        &self,
        Parameters(p): Parameters<RunFilter>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::List, p).await
    }

    #[tool(
        description = "Read an agent's last messages from its transcript, without waking it.",
        annotations(read_only_hint = true)
    )]
    async fn read_agent(
        &self,
        Parameters(p): Parameters<ReadAgent>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::Read, p).await
    }

    #[tool(
        description = "The latest output of every agent of a run, from transcripts, without \
        waking any.",
        annotations(read_only_hint = true)
    )]
    async fn read_run_outputs(
        &self,
        Parameters(p): Parameters<ReadRunOutputs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::ReadRunOutputs, p).await
    }

    #[tool(
        description = "Wait until every named agent (a run, or a list of sessions) has \
        finished its turn, or the timeout passes; returns their status and latest outputs.",
        annotations(read_only_hint = true)
    )]
    async fn wait_agents(
        &self,
        Parameters(p): Parameters<WaitAgents>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::Wait, p).await
    }

    #[tool(
        description = "Close one of your agents. Refused (cascade_refused) when it has agents \
        of its own that you did not name; never closes you (self_close)."
    )]
    async fn close_agent(
        &self,
        Parameters(p): Parameters<SessionArg>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::Close, p).await
    }

    #[tool(
        description = "Close every agent of a run (default: all of yours); reports what was \
        closed and what was skipped, and why."
    )]
    async fn close_run(
        &self,
        Parameters(p): Parameters<RunFilter>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::CloseRun, p).await
    }

    #[tool(description = "Move one of your agents out of the grid into the tab's parked pool.")]
    async fn park_agent(
        &self,
        Parameters(p): Parameters<SessionArg>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::Park, p).await
    }

    #[tool(
        description = "Stop one of your agents' process, keeping everything needed to wake it \
        (send_prompt wakes it). Its idle children are hibernated too."
    )]
    async fn hibernate_agent(
        &self,
        Parameters(p): Parameters<SessionArg>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::Hibernate, p).await
    }

    #[tool(
        description = "What every session's model requests consumed (tokens; cost at list \
        prices, null for a model with no price) and each provider account's usage windows and \
        limit (limited_until). An error means the figures could not be read, never zero usage.",
        annotations(read_only_hint = true)
    )]
    async fn usage_read(
        &self,
        Parameters(p): Parameters<UsageRead>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::UsageRead, p).await
    }

    #[tool(
        description = "Keep one of your agents on a goal across turns: hangar types the goal, \
        then a short continuation at each end of its turns, until it calls goal_done, max_turns \
        turns passed (default 20), an error, or goal_stop. Waits while its account is limited."
    )]
    async fn goal_start(
        &self,
        Parameters(p): Parameters<GoalStart>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::GoalStart, p).await
    }

    #[tool(description = "Stop one of your agents' goal; nothing more is typed for it.")]
    async fn goal_stop(
        &self,
        Parameters(p): Parameters<SessionArg>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::GoalStop, p).await
    }

    #[tool(
        description = "End the goal hangar gave you: status \"done\" when it is reached, \
        \"blocked\" when you cannot go on without a person; with a one-line summary. hangar \
        then types nothing more for it."
    )]
    async fn goal_done(
        &self,
        Parameters(p): Parameters<GoalDone>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(AgentTool::GoalDone, p).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HangarMcp {
    /// The router's call, after checking the arguments so that a value of
    /// the wrong type is refused naming the tool and the field.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        arguments::check(&request.name, request.arguments.as_ref())?;
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(INSTRUCTIONS)
    }
}

/// Serve MCP on stdin/stdout until the client goes away.
pub fn run(paths: &Paths, session: String) -> anyhow::Result<ExitCode> {
    let token = std::env::var("HANGAR_MCP_TOKEN").unwrap_or_default();
    if token.trim().is_empty() {
        bail!(
            "HANGAR_MCP_TOKEN is not set: `hangar mcp` is started by an agent hangar launched, \
             from the MCP config hangar wrote for it ($HANGAR_HOME/mcp/<session>.json)"
        );
    }
    if session.trim().is_empty() {
        bail!("--session needs the agent's session id");
    }
    let who = Identity {
        paths: paths.clone(),
        session: session.trim().to_owned(),
        token: token.trim().to_owned(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    rt.block_on(async move {
        let service = HangarMcp::new(who)
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP client did not complete the handshake")?;
        service.waiting().await.context("the MCP session failed")?;
        anyhow::Ok(())
    })?;
    // A blocking stdin read may still be pending; nothing else is.
    rt.shutdown_background();
    Ok(ExitCode::SUCCESS)
}
