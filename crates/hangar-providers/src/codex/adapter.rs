//! Codex's adapter: `resume ID` (a subcommand), hangar's MCP server as
//! `-c mcp_servers.hangar.*` overrides, rollouts under `CODEX_HOME`
//! (`~/.codex`), forks with `codex fork`.

use crate::adapter::{Adapter, SessionArgs, StateDir};
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

    /// Codex 0.171.0: the `fork <id>` subcommand (interactive, like
    /// `resume`), after the top-level flags. Codex chooses the new id; its
    /// rollout's `session_meta` names the old one as `forked_from_id`, and
    /// the fork's own process holds that rollout open (the proof hangar
    /// adopts it by, rule 10).
    fn fork_args(
        &self,
        from: &str,
        _own: Option<&str>,
        dangerous: bool,
        sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> Option<SessionArgs> {
        let mut out = self.session_args(None, dangerous, sandboxed, mint);
        out.args.extend(["fork".to_owned(), from.to_owned()]);
        Some(out)
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@openai/codex")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_is_the_fork_subcommand_after_the_flags_and_codex_chooses_the_id() {
        let mint = || unreachable!("codex chooses its own id");
        let a = Codex.fork_args("t-1", None, true, false, &mint).unwrap();
        assert_eq!(
            a.args,
            ["--dangerously-bypass-approvals-and-sandbox", "fork", "t-1"]
        );
        assert_eq!(a.minted, None);
    }
}
