//! One adapter per agent CLI: what hangar knows of each, behind one trait,
//! so the daemon, the launch and the transcript readers ask the adapter
//! instead of matching on the provider.
//!
//! Adding a CLI is one folder (`src/<cli>/adapter.rs`, implementing
//! [`Adapter`]) and one registration (its line in [`adapter`], beside its
//! `Provider` variant and name in `hangar_core::model`): see the crate's
//! docs, "Adding a CLI". A custom provider (`[providers.NAME]` in
//! config.toml) and the shell use the plain adapter (`shell`): no resume,
//! no transcript, no hooks; config.toml gives a custom one its arguments
//! (`launch`). `.ci/shape` refuses a match on a CLI's provider outside the
//! adapters.

use hangar_core::usage::Tokens;
use hangar_core::usage_limits::Window;
use std::path::{Path, PathBuf};

use hangar_core::activity::{Activity, Reading};
use hangar_core::cli_versions::Version;
use hangar_core::ledger::TranscriptFacts;
use hangar_core::sandbox::{StateFolder, Substitution};
use hangar_core::{Provider, ProviderSessionId, SessionId};
use serde_json::Value;

use crate::claude::process_record::ProcessRecord;
use crate::cli_facts::CliFacts;
use crate::launch::{LaunchSpec, McpServer};
use crate::sandboxed::{SeedFrom, Seeded};
use crate::transcript::discovery::TranscriptIndex;
use crate::transcript::messages::Message;
use crate::transcript::turns::TurnFacts;

/// The arguments that start a session's CLI, and the provider session id
/// hangar minted for a fresh start of a CLI that takes one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionArgs {
    pub args: Vec<String>,
    pub minted: Option<ProviderSessionId>,
}

/// Where a CLI keeps its state (and its transcripts): the folder its
/// variable names, else this folder under `$HOME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateDir {
    pub var: &'static str,
    pub under_home: &'static str,
    /// Under the variable's folder (Gemini CLI's `$GEMINI_CLI_HOME/.gemini`);
    /// empty for the folder itself.
    pub under_var: &'static str,
}

/// What a CLI's own records say about usage (issue 29), for the requests
/// the recording proxy did not see.
#[derive(Clone, Debug, PartialEq)]
pub enum UsageFact {
    /// One model request. `key` is the provider's id for it when the record
    /// names one (`resp_...`), else a key of the CLI's own starting with
    /// `hangar_core::usage::OWN_KEY_PREFIX`.
    Request {
        key: String,
        model: Option<String>,
        at_ms: Option<i64>,
        tokens: Tokens,
        /// What the CLI itself says the request cost, USD (OpenCode's
        /// `cost`); `None` when it says nothing or 0 (see `UsageRecord`).
        agent_cost_usd: Option<f64>,
    },
    /// The model the requests that follow are made to (Codex's
    /// `turn_context`): a record read in a later look than its turn's start
    /// still names its model.
    Model(String),
    /// The account's limit windows as the CLI last heard them.
    Windows(Vec<Window>),
    /// The provider refused a request for a usage limit: the reset when a
    /// window said it, and the CLI's words (which may name it otherwise).
    Limited {
        resets_at: Option<i64>,
        text: String,
    },
}

/// What a session's hook settings are built from (`Adapter::hook_settings`).
#[derive(Clone, Debug)]
pub struct HookSettings {
    /// The `hangar` the hooks run, and the `HANGAR_HOME` they name (inside
    /// a sandbox: hangar's own paths there).
    pub hangar: PathBuf,
    pub home: PathBuf,
    /// Install the hooks (the hooks activity source is on).
    pub hooks: bool,
    /// Turn the CLI's own sandbox for its commands off: inside hangar's
    /// sandbox (issue 32).
    pub own_sandbox_off: bool,
}

/// What hangar knows of one agent CLI. Every method has the answer of a CLI
/// that lacks the feature, so an adapter names only what its CLI has.
pub trait Adapter: Sync {
    /// Launch and resume: the arguments that resume conversation `resume`,
    /// or start a fresh one (`mint` gives a new id to a CLI that takes
    /// one), with the CLI's own flag for skipping every approval when
    /// `dangerous`; `sandboxed` when hangar's sandbox holds it (issue 32).
    fn session_args(
        &self,
        resume: Option<&str>,
        dangerous: bool,
        sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> SessionArgs {
        let _ = (resume, dangerous, sandboxed, mint);
        SessionArgs::default()
    }

    /// The launch with hangar's orchestration MCP server given to the CLI;
    /// unchanged for a CLI that takes none.
    fn with_mcp(&self, spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
        let _ = server;
        spec
    }

    /// Transcript roots: where the CLI keeps its state, for one that writes
    /// transcript files hangar reads.
    fn transcript_state(&self) -> Option<StateDir> {
        None
    }

    /// Activity from a transcript's lines (`transcript::activity`).
    fn transcript_reading(
        &self,
        lines: &[String],
        complete: bool,
        fallback_ms: u64,
    ) -> Option<Reading> {
        let _ = (lines, complete, fallback_ms);
        None
    }

    /// Usage facts in complete lines of the CLI's transcript, in order.
    fn transcript_usage(&self, lines: &[String]) -> Vec<UsageFact> {
        let _ = lines;
        Vec::new()
    }

    /// Usage facts the CLI keeps elsewhere than a transcript file (its
    /// database) for its conversation `conversation`, updated at or after
    /// `since_ms`, with the newest update time read (where the next look
    /// starts). `var` reads the agents' environment. `Ok(None)` for a CLI
    /// that keeps none.
    fn stored_usage(
        &self,
        conversation: &str,
        since_ms: i64,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(Vec<UsageFact>, i64)>, String> {
        let _ = (conversation, since_ms, var);
        Ok(None)
    }

    /// Where conversation `conversation` is in its turn, from what the CLI
    /// keeps elsewhere than a transcript file (its database), for a CLI
    /// that keeps one (`Ok(None)` otherwise, and before it has any).
    fn stored_reading(
        &self,
        conversation: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Reading>, String> {
        let _ = (conversation, var);
        Ok(None)
    }

    /// The folder whose changes may change `stored_reading` (watched while
    /// a session of the CLI runs).
    fn stored_folder(&self, var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let _ = var;
        None
    }

    /// Whether the CLI retries a request refused at a usage limit by itself
    /// once the refusal's `retry-after` has passed: hangar then shows the
    /// limit but types no continuation (it would be a second prompt).
    fn retries_after_a_refusal(&self) -> bool {
        false
    }

    /// The keys that close a question the CLI put on `screen` at a usage
    /// limit while keeping everything as it was, so a continuation typed
    /// after the reset reaches its prompt (and never answers the question).
    fn limit_question_dismissal(&self, screen: &str) -> Option<&'static [u8]> {
        let _ = screen;
        None
    }

    /// Fork (`hangar fork`, issue 30): the arguments that start a new
    /// conversation holding conversation `from`'s messages, `from` left
    /// untouched, with the new id when hangar chooses it (recorded at once,
    /// source `resume-request`). `own`: the id an earlier start of this fork
    /// was given and whose conversation does not exist yet, given again so
    /// the fork keeps one id. `None`: the CLI cannot fork.
    fn fork_args(
        &self,
        from: &str,
        own: Option<&str>,
        dangerous: bool,
        sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> Option<SessionArgs> {
        let _ = (from, own, dangerous, sandboxed, mint);
        None
    }

    /// What a fork started in folder `cwd` names conversation `from` by
    /// (`transcripts`: the CLI's transcript root); its id unless the CLI
    /// needs more.
    fn fork_source(&self, transcripts: Option<&Path>, cwd: &str, from: &str) -> String {
        let _ = (transcripts, cwd);
        from.to_owned()
    }

    /// Whether conversation `id` (of a session in `cwd`) exists yet. True
    /// for a CLI that chooses its own ids: hangar learns one only from the
    /// CLI's own record of the conversation.
    fn conversation_exists(&self, transcripts: Option<&Path>, cwd: &str, id: &str) -> bool {
        let _ = (transcripts, cwd, id);
        true
    }

    /// The npm package its CLI is installed from (an engine's image).
    fn npm_package(&self) -> Option<&'static str> {
        None
    }

    /// The version in the output of its `--version`.
    fn version_in(&self, output: &str) -> Option<Version> {
        hangar_core::cli_versions::parse_version(output)
    }

    /// The newest version of the CLI the conformance suite ran (docs/src/testing.md
    /// names them; `crates/hangar/tests/it/real_cli_*.rs` run them).
    fn tested_version(&self) -> Option<Version> {
        None
    }

    /// Variables hangar sets in every start of this CLI, so that no daemon
    /// of the CLI's own takes a session hangar runs (issue 46). A
    /// `[providers.NAME] env` of the person's own names wins.
    fn own_env(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Whether its `--help` is read too, for a flag the launch depends on
    /// (then the facts are gathered before the first start: `with_cli_facts`).
    fn reads_help(&self) -> bool {
        false
    }

    /// What the installed CLI's `--help` says that the launch uses.
    fn help_facts(&self, help: &str, facts: &mut CliFacts) {
        let _ = (help, facts);
    }

    /// The launch as the installed CLI's facts (`cli_facts`) want it.
    fn with_cli_facts(&self, spec: LaunchSpec, facts: &CliFacts) -> LaunchSpec {
        let _ = facts;
        spec
    }

    /// Transcript discovery: the folders a session's new transcripts can
    /// appear in, for a session in `cwd` (as the kernel sees it) started at
    /// `started_ms`, looked at `now_ms`, with the local time zone's offset
    /// at a time.
    fn transcript_dirs(
        &self,
        root: &Path,
        cwd: &str,
        started_ms: u64,
        now_ms: u64,
        local_offset_ms: &dyn Fn(u64) -> i64,
    ) -> Vec<PathBuf> {
        let _ = (root, cwd, started_ms, now_ms, local_offset_ms);
        Vec::new()
    }

    /// Whether a file of that name in those folders is a transcript.
    fn is_transcript_name(&self, name: &str) -> bool {
        name.ends_with(".jsonl")
    }

    /// The conversation id and folder one of a transcript's first entries
    /// names (`discovery::read_facts` reads the first lines).
    fn transcript_entry_facts(&self, entry: &Value) -> Option<TranscriptFacts> {
        let _ = entry;
        None
    }

    /// The transcript of conversation `psid`, wherever it is under `root`.
    fn find_transcript(&self, root: &Path, cwd: &str, psid: &str) -> Option<PathBuf> {
        let _ = (root, cwd, psid);
        None
    }

    /// Whether `find_transcript` walks every folder (rather than looking
    /// where the id says): a watcher that found nothing waits before it
    /// walks again.
    fn finding_walks(&self) -> bool {
        false
    }

    /// Many transcripts found at once (`hangar search`): an index of `root`
    /// built in one walk, for a CLI whose `find_transcript` walks.
    fn transcript_index(&self, root: &Path) -> Option<TranscriptIndex> {
        let _ = root;
        None
    }

    /// Messages: the readable message of one transcript entry.
    fn transcript_message(&self, entry: &Value) -> Option<Message> {
        let _ = entry;
        None
    }

    /// Turns: whether a prompt arrived in these transcript lines, and the
    /// activity at their end.
    fn turn_facts(&self, lines: &[String]) -> TurnFacts {
        let _ = lines;
        TurnFacts {
            prompted: false,
            activity: Activity::Unknown,
        }
    }

    /// Hooks: whether the CLI calls hangar back on its turns (then a turn's
    /// end comes from its hook, not its transcript).
    fn takes_hooks(&self) -> bool {
        false
    }

    /// The settings file that installs hangar's hooks for `session` (and
    /// turns the CLI's own sandbox off inside hangar's), for a CLI that
    /// takes one; written by the daemon under `$HANGAR_HOME/hooks/`.
    fn hook_settings(&self, settings: &HookSettings, session: &SessionId) -> Option<Value> {
        let _ = (settings, session);
        None
    }

    /// The arguments that give the CLI that settings file.
    fn hook_settings_args(&self, path: &Path) -> Vec<String> {
        let _ = path;
        Vec::new()
    }

    /// Identity proof: the record one of the processes `tree` (a session's
    /// process and its descendants) keeps of its conversation, under the
    /// CLI's state folder `root`.
    fn own_record(&self, root: &Path, tree: &[u32]) -> Option<ProcessRecord> {
        let _ = (root, tree);
        None
    }

    /// The folder those records are written to (watched while the id is
    /// looked for).
    fn record_dir(&self, root: &Path) -> Option<PathBuf> {
        let _ = root;
        None
    }

    /// Whether the CLI holds its transcript open for the whole session, so
    /// the files its process holds open prove its conversation.
    fn holds_transcript_open(&self) -> bool {
        false
    }

    /// Whether the conversation is proven from the CLI's own database,
    /// matched against the prompts hangar typed (`opencode::database`).
    fn conversation_in_database(&self) -> bool {
        false
    }

    /// Whether hangar's orchestration MCP server is given to the CLI
    /// (`with_mcp` changes its launch).
    fn takes_mcp(&self) -> bool {
        false
    }

    /// A resume refused before the CLI starts: why (the failure a person
    /// reads, for session `short`), else `None`.
    fn resume_refusal(&self, short: &str, psid: &str) -> Option<String> {
        let _ = (short, psid);
        None
    }

    /// The permission prompts it draws on screen (case-sensitive substrings
    /// of one screen line; `screen`), read from the real CLI's screens.
    fn permission_prompts(&self) -> &'static [&'static str] {
        &[]
    }

    /// Where its turn is by its screen alone, for a CLI with no record of
    /// its turns hangar reads: `Working` or `Idle`, `None` when the screen
    /// says neither (`screen::permission_prompt_open` says `Waiting`).
    fn screen_activity(&self, screen: &str) -> Option<hangar_core::activity::Activity> {
        let _ = screen;
        None
    }

    /// The state folders a sandboxed session's CLI gets of its own (issue
    /// 32; `hangar_core::sandbox::state_binds`): its config and transcripts,
    /// or its database.
    fn sandbox_state(&self) -> &'static [StateFolder] {
        &[]
    }

    /// What a sandboxed session's state folders get of the person's own
    /// settings of this CLI before its environment is made (`sandboxed`):
    /// the settings files, secrets as placeholders (`mint` makes one), and
    /// the variables they name as holding a key. Nothing for a CLI whose
    /// settings hold nothing it needs; a missing file is no error.
    fn sandbox_settings(
        &self,
        from: &SeedFrom<'_>,
        mint: &mut dyn FnMut() -> String,
    ) -> Result<Seeded, String> {
        let _ = (from, mint);
        Ok(Seeded::default())
    }

    /// Then, with the environment's placeholders for the keys (`keys`):
    /// the files in which the CLI records the trust the person gave
    /// (onboarding done, this folder trusted, the key approved), moved to
    /// the placeholders.
    fn sandbox_trust(
        &self,
        from: &SeedFrom<'_>,
        keys: &[Substitution],
    ) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
        let _ = (from, keys);
        Ok(Vec::new())
    }

    /// A resume the CLI refused, seen on the `screen` it left when it
    /// exited during its start: why, else `None`.
    fn refused_resume(&self, short: &str, psid: &str, screen: &str) -> Option<String> {
        let _ = (short, psid, screen);
        None
    }

    /// Whether its requests to its model go through hangar's recording
    /// proxy when the session captures (one the proxy was tested with).
    fn proxied(&self) -> bool {
        false
    }

    /// Whether it trusts only the CA bundle `SSL_CERT_FILE` names (which
    /// replaces its trust store: hangar gives it the system's roots plus
    /// hangar's CA) rather than adding hangar's CA to its own roots
    /// (`NODE_EXTRA_CA_CERTS`).
    fn replaces_trust_store(&self) -> bool {
        false
    }

    /// What `hangar ls` says of the CLI's own sandbox for its commands
    /// inside hangar's; `None` for a CLI hangar knows nothing of.
    fn own_sandbox(&self) -> Option<&'static str> {
        None
    }
}

/// The variable naming `provider`'s config folder (Claude Code's
/// `CLAUDE_CONFIG_DIR`, Codex's `CODEX_HOME`), where its login and its
/// transcripts are; `None` for a CLI whose folder hangar does not know.
pub fn config_folder_var(provider: &Provider) -> Option<&'static str> {
    adapter(provider).transcript_state().map(|s| s.var)
}

/// The adapter of `provider`: the registration of every CLI (a new one's
/// line goes here).
pub fn adapter(provider: &Provider) -> &'static dyn Adapter {
    match provider {
        Provider::Claude => &crate::claude::adapter::Claude,
        Provider::Codex => &crate::codex::adapter::Codex,
        Provider::Opencode => &crate::opencode::adapter::Opencode,
        Provider::Gemini
        | Provider::Pi
        | Provider::Qwen
        | Provider::Copilot
        | Provider::Crush
        | Provider::Kilo
        | Provider::Aider
        | Provider::Kimi => crate::described::shipped_adapter(provider),
        Provider::Shell | Provider::Custom(_) => &crate::shell::adapter::Plain,
    }
}
