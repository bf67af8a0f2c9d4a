//! One adapter per agent CLI: what hangar knows of each, behind one trait,
//! so the daemon, the launch and the transcript readers ask the adapter
//! instead of matching on the provider.
//!
//! Adding a CLI is one folder (`src/<cli>/adapter.rs`, implementing
//! [`Adapter`]) and one line in [`adapter`]. A custom provider
//! (`[providers.NAME]` in config.toml) and the shell use the plain adapter
//! (`shell`): no resume, no transcript, no hooks; config.toml gives a custom
//! one its arguments (`launch`).

use hangar_core::usage::Tokens;
use hangar_core::usage_limits::Window;
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
    },
    /// The account's limit windows as the CLI last heard them.
    Windows(Vec<Window>),
    /// The provider refused a request for a usage limit: the reset when a
    /// window said it, and the CLI's words (which may name it otherwise).
    Limited {
        resets_at: Option<i64>,
        text: String,
    },
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

    /// The keys that close a question the CLI put on `screen` at a usage
    /// limit while keeping everything as it was, so a continuation typed
    /// after the reset reaches its prompt (and never answers the question).
    fn limit_question_dismissal(&self, screen: &str) -> Option<&'static [u8]> {
        let _ = screen;
        None
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
