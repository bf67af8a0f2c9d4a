//! The bridge from an MCP tool call to the daemon: one `agent_*` request on
//! the control socket, carrying the session this server was launched for and
//! its token.
//!
//! It never starts a daemon (an agent's MCP server outlives nothing; with no
//! daemon there is no agent either) and never prints the token.

use anyhow::Context;
use hangar_protocol::message::{AgentCall, AgentTool, ErrorBody};
use hangar_protocol::paths::Paths;
use serde_json::Value;

use crate::api;
use crate::conn::{DaemonError, Target};

/// Who is calling: fixed when `hangar mcp` starts.
#[derive(Clone)]
pub struct Identity {
    pub paths: Paths,
    pub session: String,
    pub token: String,
}

/// The daemon's answer to one call: its body, or its error with a code.
pub type Answer = Result<Value, ErrorBody>;

/// Send one tool call and wait for the answer (blocking; run it off the
/// async runtime).
pub fn call(who: &Identity, tool: AgentTool, args: Value) -> Answer {
    let attempt = || -> anyhow::Result<Value> {
        // An agent's callbacks are this machine's, whatever host its
        // daemon's starter named (`cli.rs` routes `hangar mcp` here).
        let mut client = Target::local(who.paths.clone())
            .connect_existing()?
            .context("no hangar daemon is running for this agent's HANGAR_HOME")?;
        api::agent(
            &mut client,
            AgentCall {
                tool,
                caller: who.session.clone(),
                token: who.token.clone(),
                args,
            },
        )
    };
    attempt().map_err(|e| match e.downcast::<DaemonError>() {
        Ok(d) => d.0,
        Err(other) => ErrorBody {
            code: "unavailable".to_owned(),
            message: format!("{other:#}"),
            detail: Value::Null,
        },
    })
}
