//! Codex's adapter: `resume ID` (a subcommand), hangar's MCP server as
//! `-c mcp_servers.hangar.*` overrides, `--no-daemon` when its `--help`
//! offers it, rollouts under `CODEX_HOME` (`~/.codex`, `transcript`), the
//! conversation proven by the rollout its process holds open.

use std::path::{Path, PathBuf};

use hangar_core::activity::Reading;
use hangar_core::cli_versions::{self, Version};
use hangar_core::ledger::TranscriptFacts;
use serde_json::Value;

use hangar_core::sandbox::StateFolder;

use crate::adapter::{Adapter, SessionArgs, StateDir, UsageFact};
use crate::cli_facts::CliFacts;
use crate::codex::transcript;
use crate::launch::{LaunchSpec, McpServer, toml_string};
use crate::sandboxed::{self, SeedFrom, Seeded};
use crate::transcript::activity::codex_reading;
use crate::transcript::discovery::TranscriptIndex;
use crate::transcript::messages::Message;
use crate::transcript::turns::TurnFacts;

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
            under_var: "",
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

    fn tested_version(&self) -> Option<Version> {
        Some(Version(0, 171, 0))
    }

    /// `--no-daemon` (0.17x) is looked for in its `--help`.
    fn reads_help(&self) -> bool {
        true
    }

    fn help_facts(&self, help: &str, facts: &mut CliFacts) {
        facts.no_daemon = cli_versions::codex_has_no_daemon(help);
    }

    /// Codex 0.17x run so that it stays inside the session's own process
    /// group: `--no-daemon`, when the installed codex accepts it. Without
    /// it, codex starts a shared `codex app-server --managed-daemon` (one
    /// per `CODEX_HOME`, in a process group of its own) that outlives the
    /// session, holds every session's rollout and makes every session's
    /// requests with the first session's environment (issue 16 defect 4).
    /// A top-level flag, so it comes first, before codex's `resume`
    /// subcommand.
    fn with_cli_facts(&self, mut spec: LaunchSpec, facts: &CliFacts) -> LaunchSpec {
        if facts.no_daemon && !spec.args.iter().any(|a| a == "--no-daemon") {
            spec.args.insert(0, "--no-daemon".to_owned());
        }
        spec
    }

    fn transcript_dirs(
        &self,
        root: &Path,
        _cwd: &str,
        started_ms: u64,
        now_ms: u64,
        local_offset_ms: &dyn Fn(u64) -> i64,
    ) -> Vec<PathBuf> {
        transcript::dirs(root, started_ms, now_ms, local_offset_ms)
    }

    fn is_transcript_name(&self, name: &str) -> bool {
        transcript::is_rollout_name(name)
    }

    fn transcript_entry_facts(&self, entry: &Value) -> Option<TranscriptFacts> {
        transcript::entry_facts(entry)
    }

    fn find_transcript(&self, root: &Path, _cwd: &str, psid: &str) -> Option<PathBuf> {
        transcript::find(root, psid)
    }

    fn finding_walks(&self) -> bool {
        true
    }

    fn transcript_index(&self, root: &Path) -> Option<TranscriptIndex> {
        Some(transcript::index(root))
    }

    fn transcript_message(&self, entry: &Value) -> Option<Message> {
        transcript::message(entry)
    }

    fn turn_facts(&self, lines: &[String]) -> TurnFacts {
        transcript::turn(lines)
    }

    /// Only codex is known to hold its rollout open for the whole session;
    /// Claude Code opens, appends and closes.
    fn holds_transcript_open(&self) -> bool {
        true
    }

    fn takes_mcp(&self) -> bool {
        true
    }

    fn own_sandbox(&self) -> Option<&'static str> {
        Some(
            "off: codex is started with --sandbox danger-full-access (a nested sandbox cannot be \
             relied on inside hangar's; hangar's walls hold its commands too)",
        )
    }

    fn permission_prompts(&self) -> &'static [&'static str] {
        &[
            "Allow command?",
            "Would you like to run the following command?",
            "Would you like to make the following edits?",
            "approve this",
        ]
    }

    /// `CODEX_HOME`, rollouts under `sessions/`.
    fn sandbox_state(&self) -> &'static [StateFolder] {
        &[StateFolder {
            name: "codex",
            inside: ".codex",
            var: "CODEX_HOME",
            value: ".codex",
        }]
    }

    /// Its `config.toml` (`sandboxed::codex_config`): the person's, secrets
    /// as placeholders, with the folder trust codex wrote inside kept; the
    /// variables its model providers read keys from (`env_key`).
    fn sandbox_settings(
        &self,
        from: &SeedFrom<'_>,
        mint: &mut dyn FnMut() -> String,
    ) -> Result<Seeded, String> {
        let (Some(person_file), Some(to)) = (
            from.person_file("CODEX_HOME", ".codex", "config.toml"),
            from.state_dir("CODEX_HOME").map(|d| d.join("config.toml")),
        ) else {
            return Ok(Seeded::default());
        };
        let Some(person) = sandboxed::read_settings(&person_file)? else {
            return Ok(Seeded::default());
        };
        let inside = sandboxed::read_settings(&to)?;
        let (text, replaced, key_vars) = sandboxed::codex_config(&person, inside.as_deref(), mint)
            .map_err(|e| format!("{e} ({})", person_file.display()))?;
        Ok(Seeded {
            files: vec![(to, text.into_bytes())],
            replaced,
            key_vars,
        })
    }

    fn proxied(&self) -> bool {
        true
    }

    /// Codex (Rust, reqwest with rustls-native-certs or native-tls) reads
    /// `SSL_CERT_FILE`.
    fn replaces_trust_store(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandboxed_codex_gets_the_persons_config_without_its_secrets_and_keeps_its_own_trust() {
        let tmp = tempfile::tempdir().unwrap();
        let person = tmp.path().join("person-codex");
        std::fs::create_dir_all(&person).unwrap();
        std::fs::write(
            person.join("config.toml"),
            "model = \"gpt-5\"\n[model_providers.lab]\nenv_key = \"LAB_KEY\"\napi_key = \"sk-real\"\n",
        )
        .unwrap();
        let session = tmp.path().join("sandbox");
        let state = hangar_core::sandbox::state_binds(
            Codex.sandbox_state(),
            &session.display().to_string(),
            "/home/p",
        );
        let inside = session.join("codex");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(
            inside.join("config.toml"),
            "[projects.\"/w\"]\ntrust_level = \"trusted\"\n",
        )
        .unwrap();
        let env = |v: &str| (v == "CODEX_HOME").then(|| person.clone());
        let from = SeedFrom {
            state: &state,
            cwd: "/w",
            var: &env,
        };
        let mut mint = || "ph-1".to_owned();
        let seeded = Codex.sandbox_settings(&from, &mut mint).unwrap();
        assert_eq!(seeded.key_vars, ["LAB_KEY"]);
        assert_eq!(seeded.replaced.len(), 1);
        assert_eq!(seeded.replaced[0].real, "sk-real");
        let [(to, text)] = &seeded.files[..] else {
            panic!("one file: {:?}", seeded.files)
        };
        assert_eq!(to, &inside.join("config.toml"));
        let text = String::from_utf8(text.clone()).unwrap();
        assert!(!text.contains("sk-real") && text.contains("ph-1"), "{text}");
        assert!(text.contains("trust_level = \"trusted\""), "{text}");

        // No settings of the person's: nothing seeded, no error.
        let none = |_: &str| None;
        let from = SeedFrom {
            state: &state,
            cwd: "/w",
            var: &none,
        };
        let seeded = Codex.sandbox_settings(&from, &mut mint).unwrap();
        assert!(seeded.files.is_empty() && seeded.key_vars.is_empty());
    }

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
