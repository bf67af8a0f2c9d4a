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

    /// Codex 0.171.0 at a usage limit asks "Approaching rate limits /
    /// Switch to gpt-6-luna for lower credit usage?" (1. Switch, 2. Keep
    /// current model, 3. Keep ... never show again; "enter select · esc
    /// back"): an Enter there switches the model. Esc closes it and keeps
    /// the model (seen running it against the fake model API in a PTY).
    fn limit_question_dismissal(&self, screen: &str) -> Option<&'static [u8]> {
        (screen.contains("Keep current model") && screen.contains("esc back")).then_some(b"\x1b")
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@openai/codex")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_question_at_a_limit_is_closed_with_esc_and_nothing_else_is() {
        // The bottom of Codex 0.171.0's screen after a refusal at a usage
        // limit (run against the fake model API in tmux, 2026-12-03).
        let question = "■ You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more\n\
credits or try again at 11:17 AM.\n\
  Approaching rate limits\n\
  Switch to gpt-6-luna for lower credit usage?\n\
› 1. Switch to gpt-6-luna                   Fast and affordable model for easier tasks.\n\
  2. Keep current model\n\
  3. Keep current model (never show again)  Hide future rate limit reminders about switching models\n\
  enter select · esc back\n";
        assert_eq!(Codex.limit_question_dismissal(question), Some(&b"\x1b"[..]));
        // After Esc: the prompt, nothing to close.
        let prompt = "credits or try again at 11:17 AM.\n\
› Ask Codex to do anything\n\
  fake-model default · ~/work\n\
  ← for agents · ? for shortcuts\n";
        assert_eq!(Codex.limit_question_dismissal(prompt), None);
    }
}
