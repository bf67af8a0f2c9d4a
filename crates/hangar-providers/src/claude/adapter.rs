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

use hangar_core::sandbox::StateFolder;

use crate::adapter::{Adapter, HookSettings, SessionArgs, StateDir};
use crate::claude::process_record::{self, ProcessRecord};
use crate::claude::{background, hooks, transcript};
use crate::launch::{LaunchSpec, McpServer};
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

    fn proxied(&self) -> bool {
        true
    }
}
