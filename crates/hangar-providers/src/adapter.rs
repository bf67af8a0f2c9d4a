//! One adapter per agent CLI: what hangar knows of each, behind one trait,
//! so the daemon, the launch and the transcript readers ask the adapter
//! instead of matching on the provider.
//!
//! Adding a CLI is one folder (`src/<cli>/adapter.rs`, implementing
//! [`Adapter`]) and one line in [`adapter`]. A custom provider
//! (`[providers.NAME]` in config.toml) and the shell use the plain adapter
//! (`shell`): no resume, no transcript, no hooks; config.toml gives a custom
//! one its arguments (`launch`).

use std::path::Path;

use hangar_core::{Provider, ProviderSessionId};

use crate::launch::{LaunchSpec, McpServer};
use hangar_core::activity::Reading;

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
}

/// What hangar knows of one agent CLI.
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
}

/// The adapter of `provider`: the registration of every CLI.
pub fn adapter(provider: &Provider) -> &'static dyn Adapter {
    match provider {
        Provider::Claude => &crate::claude::adapter::Claude,
        Provider::Codex => &crate::codex::adapter::Codex,
        Provider::Opencode => &crate::opencode::adapter::Opencode,
        Provider::Shell | Provider::Custom(_) => &crate::shell::adapter::Plain,
    }
}
