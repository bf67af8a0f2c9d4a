//! Codex's adapter: `resume ID` (a subcommand), hangar's MCP server as
//! `-c mcp_servers.hangar.*` overrides, rollouts under `CODEX_HOME`
//! (`~/.codex`).

use crate::adapter::{Adapter, SessionArgs, StateDir, UsageFact};
use crate::launch::{LaunchSpec, McpServer, toml_string};
use crate::transcript::activity::codex_reading;
use hangar_core::activity::Reading;

pub struct Codex;

impl Adapter for Codex {
    fn session_args(
        &self,
        resume: Option<&str>,
        dangerous: bool,
        sandboxed: bool,
        _mint: &dyn Fn() -> String,
    ) -> SessionArgs {
        let mut out = SessionArgs::default();
        if dangerous {
            out.args
                .push("--dangerously-bypass-approvals-and-sandbox".to_owned());
        } else if sandboxed {
            // Inside hangar's sandbox its own one for its commands is off
            // (issue 32; `hangar ls` says so): hangar's walls hold them, and
            // a nested sandbox cannot be relied on there.
            out.args
                .extend(["--sandbox".to_owned(), "danger-full-access".to_owned()]);
        }
        if let Some(id) = resume {
            out.args.extend(["resume".to_owned(), id.to_owned()]);
        }
        out
    }

    /// Codex never sees the server's environment on its command line (see
    /// `launch::with_mcp`): the values go into its own environment and
    /// `env_vars` names them. The overrides come before its `resume`.
    fn with_mcp(&self, mut spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
        let args = server
            .args
            .iter()
            .map(|a| toml_string(a))
            .collect::<Vec<_>>()
            .join(", ");
        let names = server
            .env
            .keys()
            .map(|k| toml_string(k))
            .collect::<Vec<_>>()
            .join(", ");
        for (k, v) in &server.env {
            spec.env.insert(k.clone(), v.clone());
        }
        spec.args.splice(
            0..0,
            [
                "-c".to_owned(),
                format!(
                    "mcp_servers.hangar.command={}",
                    toml_string(&server.command.display().to_string())
                ),
                "-c".to_owned(),
                format!("mcp_servers.hangar.args=[{args}]"),
                "-c".to_owned(),
                format!("mcp_servers.hangar.env_vars=[{names}]"),
            ],
        );
        spec
    }

    fn transcript_state(&self) -> Option<StateDir> {
        Some(StateDir {
            var: "CODEX_HOME",
            under_home: ".codex",
        })
    }

    fn transcript_reading(
        &self,
        lines: &[String],
        complete: bool,
        fallback_ms: u64,
    ) -> Option<Reading> {
        codex_reading(lines, complete, fallback_ms)
    }

    fn transcript_usage(&self, lines: &[String]) -> Vec<UsageFact> {
        super::usage::rollout_usage(lines)
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@openai/codex")
    }
}
