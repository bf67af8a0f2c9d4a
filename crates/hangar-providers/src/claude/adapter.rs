//! Claude Code's adapter: `--session-id` for a fresh start (hangar mints
//! the id), `--resume ID`, `--mcp-config FILE`, transcripts under
//! `CLAUDE_CONFIG_DIR` (`~/.claude`, `transcript`), hooks installed with
//! `--settings FILE` (`hooks`), the conversation proven by each process's
//! own record (`process_record`), a resume refused while its background
//! supervisor holds the conversation (`background`).

use std::path::{Path, PathBuf};

use hangar_core::activity::Reading;
use hangar_core::cli_versions::Version;
use hangar_core::ledger::TranscriptFacts;
use hangar_core::{IdSource, ProviderSessionId, SessionId};
use serde_json::Value;

use hangar_core::sandbox::{StateFolder, Substitution};

use crate::adapter::{Adapter, HookSettings, SessionArgs, StateDir};
use crate::claude::process_record::{self, ProcessRecord};
use crate::claude::{background, hooks, transcript};
use crate::launch::{LaunchSpec, McpServer};
use crate::sandboxed::{self, SeedFrom};
use crate::transcript::activity::claude_reading;
use crate::transcript::messages::Message;
use crate::transcript::turns::TurnFacts;

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

    /// hangar's tools that only read, and `goal_done`, run without a
    /// permission prompt (`hangar_core::orchestration::TOOLS_WITHOUT_QUESTION`,
    /// as Claude Code's permission rules `mcp__<server>__<tool>`, one
    /// comma-separated `--allowedTools` value); every other hangar tool
    /// still asks.
    fn with_mcp(&self, mut spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
        let allowed: Vec<String> = hangar_core::orchestration::TOOLS_WITHOUT_QUESTION
            .iter()
            .map(|tool| format!("mcp__hangar__{tool}"))
            .collect();
        spec.args.splice(
            0..0,
            [
                "--allowedTools".to_owned(),
                allowed.join(","),
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
            under_var: "",
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

    /// Claude Code 2.1.197: `--session-id <new> --resume <old>
    /// --fork-session` starts conversation `<new>` (a uuid hangar chooses,
    /// so it is known before the first turn) from `<old>`'s messages and
    /// leaves `<old>`'s transcript untouched. `--session-id` with `--resume`
    /// is refused unless `--fork-session` is given ("--session-id can only
    /// be used with --continue or --resume if --fork-session is also
    /// specified"); the new transcript appears with the fork's first turn.
    fn fork_args(
        &self,
        from: &str,
        own: Option<&str>,
        dangerous: bool,
        _sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> Option<SessionArgs> {
        let id = own.map(str::to_owned).unwrap_or_else(mint);
        let mut out = SessionArgs::default();
        if dangerous {
            out.args.push("--dangerously-skip-permissions".to_owned());
        }
        out.args.extend([
            "--session-id".to_owned(),
            id.clone(),
            "--resume".to_owned(),
            from.to_owned(),
            "--fork-session".to_owned(),
        ]);
        out.minted = Some(ProviderSessionId::new(id, IdSource::ResumeRequest));
        Some(out)
    }

    /// The id when `from`'s transcript is in `cwd`'s project, else the
    /// transcript's path: Claude Code 2.1.197 finds an id only in the
    /// project of the folder it runs in (`No conversation found with
    /// session ID` otherwise), while a path works from anywhere, and a fork
    /// in a new worktree runs in another folder.
    fn fork_source(&self, transcripts: Option<&Path>, cwd: &str, from: &str) -> String {
        let Some(root) = transcripts else {
            return from.to_owned();
        };
        let own_project = root
            .join("projects")
            .join(crate::transcript::discovery::claude_slug(
                &crate::transcript::discovery::canonical_cwd(cwd),
            ))
            .join(format!("{from}.jsonl"));
        if own_project.is_file() {
            return from.to_owned();
        }
        transcript::find(root, cwd, from)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| from.to_owned())
    }

    /// Claude takes hangar's id before the conversation exists: it does
    /// once its transcript does (written with the first turn).
    fn conversation_exists(&self, transcripts: Option<&Path>, cwd: &str, id: &str) -> bool {
        transcripts.is_some_and(|root| transcript::find(root, cwd, id).is_some())
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("@anthropic-ai/claude-code")
    }

    /// Claude Code's agent view (`claude agents`, `--bg`, `/background`
    /// and the on-demand daemon that adopts a session killed with
    /// background work, whose `--resume` is then refused) is off for
    /// hangar's sessions: `CLAUDE_CODE_DISABLE_AGENT_VIEW` ("Equivalent" of
    /// the `disableAgentView` setting, read in the 2.1.197 and 2.1.337
    /// binaries; with it `claude --bg` answers "'--bg' is disabled by
    /// CLAUDE_CODE_DISABLE_AGENT_VIEW." and `claude daemon run` exits).
    fn own_env(&self) -> &'static [(&'static str, &'static str)] {
        &[("CLAUDE_CODE_DISABLE_AGENT_VIEW", "1")]
    }

    fn tested_version(&self) -> Option<Version> {
        Some(Version(2, 1, 197))
    }

    fn transcript_dirs(
        &self,
        root: &Path,
        cwd: &str,
        _started_ms: u64,
        _now_ms: u64,
        _local_offset_ms: &dyn Fn(u64) -> i64,
    ) -> Vec<PathBuf> {
        transcript::dirs(root, cwd)
    }

    fn transcript_entry_facts(&self, entry: &Value) -> Option<TranscriptFacts> {
        transcript::entry_facts(entry)
    }

    fn find_transcript(&self, root: &Path, cwd: &str, psid: &str) -> Option<PathBuf> {
        transcript::find(root, cwd, psid)
    }

    fn transcript_message(&self, entry: &Value) -> Option<Message> {
        transcript::message(entry)
    }

    fn turn_facts(&self, lines: &[String]) -> TurnFacts {
        transcript::turn(lines)
    }

    fn takes_hooks(&self) -> bool {
        true
    }

    fn hook_settings(&self, settings: &HookSettings, session: &SessionId) -> Option<Value> {
        Some(hooks::settings_json(settings, session))
    }

    fn hook_settings_args(&self, path: &Path) -> Vec<String> {
        vec!["--settings".to_owned(), path.display().to_string()]
    }

    fn own_record(&self, root: &Path, tree: &[u32]) -> Option<ProcessRecord> {
        process_record::own_record(root, tree)
    }

    fn record_dir(&self, root: &Path) -> Option<PathBuf> {
        Some(root.join("sessions"))
    }

    fn takes_mcp(&self) -> bool {
        true
    }

    /// A conversation held by Claude Code's own background-agent supervisor
    /// refuses --resume (issue 16 defect 9).
    fn resume_refusal(&self, short: &str, psid: &str) -> Option<String> {
        let holder = background::holder(psid)?;
        Some(background::reason(short, psid, Some(&holder)))
    }

    fn refused_resume(&self, short: &str, psid: &str, screen: &str) -> Option<String> {
        background::refused_on_screen(screen)
            .then(|| background::reason(short, psid, background::holder(psid).as_ref()))
    }

    fn own_sandbox(&self) -> Option<&'static str> {
        Some(
            "off: claude is started with sandbox.enabled = false in its --settings (a nested \
             sandbox cannot be relied on inside hangar's; hangar's walls hold its commands too)",
        )
    }

    fn permission_prompts(&self) -> &'static [&'static str] {
        &[
            "Do you want to allow",
            "Do you want to proceed?",
            "Do you want to make this edit",
            "Do you want to create",
        ]
    }

    /// Its config folder (`CLAUDE_CONFIG_DIR`), transcripts under `projects/`.
    fn sandbox_state(&self) -> &'static [StateFolder] {
        &[StateFolder {
            name: "claude",
            inside: ".claude",
            var: "CLAUDE_CONFIG_DIR",
            value: ".claude",
        }]
    }

    /// Its `.claude.json` (`sandboxed::claude_json`): the person's
    /// onboarding and theme, this folder's trust, and the API key's
    /// approval moved to the placeholder the sandbox gives it.
    fn sandbox_trust(
        &self,
        from: &SeedFrom<'_>,
        keys: &[Substitution],
    ) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
        let Some(dir) = from.state_dir("CLAUDE_CONFIG_DIR") else {
            return Ok(Vec::new());
        };
        let to = dir.join(".claude.json");
        // Claude Code 2.1.197 reads `.config.json` of its config folder when
        // there is one, else `.claude.json` of CLAUDE_CONFIG_DIR or the home.
        let var = from.var;
        let config_dir =
            var("CLAUDE_CONFIG_DIR").or_else(|| var("HOME").map(|h| h.join(".claude")));
        let person_file = config_dir
            .map(|d| d.join(".config.json"))
            .filter(|p| p.is_file())
            .or_else(|| {
                var("CLAUDE_CONFIG_DIR")
                    .or_else(|| var("HOME"))
                    .map(|d| d.join(".claude.json"))
            });
        let person = person_file
            .as_deref()
            .map(sandboxed::json_file)
            .unwrap_or_default();
        let key = keys
            .iter()
            .find(|s| s.var == "ANTHROPIC_API_KEY")
            .map(|s| (s.real.as_str(), s.placeholder.as_str()));
        let doc = sandboxed::claude_json(sandboxed::json_file(&to), &person, from.cwd, key);
        Ok(vec![(
            to,
            serde_json::to_vec_pretty(&doc).unwrap_or_default(),
        )])
    }

    fn proxied(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::discovery;

    #[test]
    fn a_sandboxed_claude_gets_the_persons_onboarding_trust_and_key_approval_on_its_placeholder() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let real = "sk-ant-real-key-0123456789abcdefghij";
        std::fs::write(
            home.join(".claude.json"),
            serde_json::json!({
                "hasCompletedOnboarding": true,
                "theme": "dark",
                "oauthAccount": {"emailAddress": "p@example.com"},
                "projects": {"/w": {"hasTrustDialogAccepted": true}},
                "customApiKeyResponses": {"approved": [sandboxed::claude_key_tail(real)]},
            })
            .to_string(),
        )
        .unwrap();
        let session = tmp.path().join("sandbox");
        let state = hangar_core::sandbox::state_binds(
            Claude.sandbox_state(),
            &session.display().to_string(),
            "/home/p",
        );
        let env = |v: &str| (v == "HOME").then(|| home.clone());
        let from = SeedFrom {
            state: &state,
            cwd: "/w/sub",
            var: &env,
        };
        let mut mint = || unreachable!("claude's settings are not copied");
        assert!(
            Claude
                .sandbox_settings(&from, &mut mint)
                .unwrap()
                .files
                .is_empty()
        );
        let placeholder = "hangar-sandbox-anthropic_api_key-0123456789";
        let keys = [Substitution {
            var: "ANTHROPIC_API_KEY".into(),
            placeholder: placeholder.into(),
            real: real.into(),
        }];
        let files = Claude.sandbox_trust(&from, &keys).unwrap();
        let [(to, bytes)] = &files[..] else {
            panic!("one file: {files:?}")
        };
        assert_eq!(to, &session.join("claude/.claude.json"));
        let doc: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(doc["hasCompletedOnboarding"], true);
        assert_eq!(doc["theme"], "dark");
        assert_eq!(doc["projects"]["/w/sub"]["hasTrustDialogAccepted"], true);
        assert_eq!(
            doc["customApiKeyResponses"]["approved"],
            serde_json::json!([sandboxed::claude_key_tail(placeholder)])
        );
        assert!(doc.get("oauthAccount").is_none(), "no account: {doc}");
    }

    #[test]
    fn a_fork_is_given_an_id_hangar_chooses_and_keeps_it_until_the_first_turn() {
        let mint = || "new-uuid".to_owned();
        let a = Claude.fork_args("old", None, true, false, &mint).unwrap();
        assert_eq!(
            a.args,
            [
                "--dangerously-skip-permissions",
                "--session-id",
                "new-uuid",
                "--resume",
                "old",
                "--fork-session"
            ]
        );
        assert_eq!(a.minted.unwrap().id, "new-uuid");
        let again = Claude
            .fork_args("old", Some("kept"), false, false, &mint)
            .unwrap();
        assert_eq!(again.args[1], "kept");
    }

    #[test]
    fn a_fork_in_another_folder_is_given_the_parents_transcript_path() {
        let root = tempfile::TempDir::new().unwrap();
        let here = root.path().join("here");
        let there = root.path().join("there");
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&there).unwrap();
        let here = discovery::canonical_cwd(&here.display().to_string());
        let there = discovery::canonical_cwd(&there.display().to_string());
        let project = root
            .path()
            .join("projects")
            .join(discovery::claude_slug(&here));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("old.jsonl"), "{}\n").unwrap();
        assert_eq!(Claude.fork_source(Some(root.path()), &here, "old"), "old");
        assert_eq!(
            Claude.fork_source(Some(root.path()), &there, "old"),
            project.join("old.jsonl").display().to_string()
        );
        assert!(Claude.conversation_exists(Some(root.path()), &here, "old"));
        assert!(!Claude.conversation_exists(Some(root.path()), &here, "new"));
    }
}
