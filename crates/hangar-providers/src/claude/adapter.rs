//! Claude Code's adapter: `--session-id` for a fresh start (hangar mints
//! the id), `--resume ID`, `--mcp-config FILE`, transcripts under
//! `CLAUDE_CONFIG_DIR` (`~/.claude`).

use hangar_core::{IdSource, ProviderSessionId};

use crate::adapter::{Adapter, SessionArgs, StateDir};
use crate::launch::{LaunchSpec, McpServer};
use crate::transcript::activity::claude_reading;
use hangar_core::activity::Reading;

pub struct Claude;

impl Adapter for Claude {
    fn session_args(
        &self,
        resume: Option<&str>,
        dangerous: bool,
        _sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> SessionArgs {
        let mut out = SessionArgs::default();
        if dangerous {
            out.args.push("--dangerously-skip-permissions".to_owned());
        }
        match resume {
            Some(id) => out.args.extend(["--resume".to_owned(), id.to_owned()]),
            None => {
                let id = mint();
                out.args.extend(["--session-id".to_owned(), id.clone()]);
                out.minted = Some(ProviderSessionId::new(id, IdSource::ResumeRequest));
            }
        }
        out
    }

    /// `goal_done` ends the goal hangar gave the agent: allowed without a
    /// permission prompt (issue 29), as Claude Code's permission rule
    /// `mcp__<server>__<tool>`; every other hangar tool still asks.
    fn with_mcp(&self, mut spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
        spec.args.splice(
            0..0,
            [
                "--allowedTools".to_owned(),
                "mcp__hangar__goal_done".to_owned(),
                "--mcp-config".to_owned(),
                server.config_file.display().to_string(),
            ],
        );
        spec
    }

    fn transcript_state(&self) -> Option<StateDir> {
        Some(StateDir {
            var: "CLAUDE_CONFIG_DIR",
            under_home: ".claude",
        })
    }

    fn transcript_reading(
        &self,
        lines: &[String],
        complete: bool,
        fallback_ms: u64,
    ) -> Option<Reading> {
        claude_reading(lines, complete, fallback_ms)
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@anthropic-ai/claude-code")
    }
}
