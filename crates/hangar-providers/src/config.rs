//! `[providers.NAME]` in config.toml: a provider's program, or a whole
//! custom provider. The daemon's config.rs reads the section and hands it to
//! `launch` and `auth_failure`; its keys must never be renamed.
//!
//! It is also the format of a CLI described in a file (issue 45): a shipped
//! `clis/<name>.toml` takes exactly these keys, so a person adds a CLI
//! without Rust by writing the same table in config.toml. The sections
//! that say what hangar knows of the CLI beyond its command line (`id`,
//! `state`, `activity`, `mcp`, `version`) are `described::format`'s.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::described::format::{
    Activity, IdRule, McpRule, SessionFiles, StateFolder, VersionProbe,
};

/// Every `[providers.NAME]` table, by name.
pub type ProvidersConfig = BTreeMap<String, ProviderConfig>;

/// A provider's program, or a whole custom provider.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The program to run (a path, or a name looked up on PATH).
    pub program: Option<String>,
    /// Arguments always passed (custom providers).
    #[serde(default)]
    pub args: Vec<String>,
    /// Arguments to resume a provider session; `{id}` is replaced by the id
    /// (custom providers).
    #[serde(default)]
    pub resume_args: Vec<String>,
    /// Arguments added in dangerous mode (custom providers).
    #[serde(default)]
    pub dangerous_args: Vec<String>,
    /// Extra environment for the program.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Output patterns that mark this provider's failed start as an
    /// authentication failure (replacing `governor.auth_patterns`). Shell
    /// and custom commands count toward the breaker only when set.
    #[serde(default)]
    pub auth_patterns: Option<Vec<String>>,
    /// Exit codes that do the same (replacing `governor.auth_exit_codes`).
    #[serde(default)]
    pub auth_exit_codes: Option<Vec<i32>>,
    /// Run every new session of this provider in hangar's sandbox, as
    /// `hangar new --sandbox` does (issue 32).
    #[serde(default)]
    pub sandbox: bool,
    /// Where the CLI is installed from: `npm:PACKAGE` or `pypi:PACKAGE`
    /// (an engine's image installs the npm ones).
    #[serde(default)]
    pub package: Option<String>,
    /// How the conversation's id is known (`minted`, `found`, `listed`);
    /// without it hangar resumes only an id it already holds.
    #[serde(default)]
    pub id: Option<IdRule>,
    /// Arguments that start a new conversation holding conversation
    /// `{from}`'s messages (`{id}`: an id hangar mints for it, when the CLI
    /// takes one). Without it the CLI cannot fork.
    #[serde(default)]
    pub fork_args: Option<Vec<String>>,
    /// Where the CLI keeps its state (`{state}` in the arguments).
    #[serde(default)]
    pub state: Option<StateFolder>,
    /// Where the CLI records a conversation, and which fields say what.
    #[serde(default)]
    pub session_files: Option<SessionFiles>,
    /// How hangar reads where the CLI is in its turn.
    #[serde(default)]
    pub activity: Option<Activity>,
    /// Words on screen or in its output that mark a usage-limit refusal.
    #[serde(default)]
    pub limit_patterns: Option<Vec<String>>,
    /// How hangar's MCP server is given to it.
    #[serde(default)]
    pub mcp: Option<McpRule>,
    /// How its version is read, and the versions the suite ran.
    #[serde(default)]
    pub version: Option<VersionProbe>,
}

impl ProviderConfig {
    /// This description with `over`'s keys in place of its own: a
    /// `[providers.NAME]` table over a shipped file. A list left empty in
    /// `over` keeps the file's (an empty list is what an absent key reads
    /// as); `env` is merged, `over`'s values winning.
    pub fn overlaid(&self, over: &ProviderConfig) -> ProviderConfig {
        let list = |mine: &Vec<String>, theirs: &Vec<String>| {
            if theirs.is_empty() {
                mine.clone()
            } else {
                theirs.clone()
            }
        };
        let mut env = self.env.clone();
        env.extend(over.env.clone());
        ProviderConfig {
            program: over.program.clone().or_else(|| self.program.clone()),
            args: list(&self.args, &over.args),
            resume_args: list(&self.resume_args, &over.resume_args),
            dangerous_args: list(&self.dangerous_args, &over.dangerous_args),
            env,
            auth_patterns: over
                .auth_patterns
                .clone()
                .or_else(|| self.auth_patterns.clone()),
            auth_exit_codes: over
                .auth_exit_codes
                .clone()
                .or_else(|| self.auth_exit_codes.clone()),
            sandbox: over.sandbox || self.sandbox,
            package: over.package.clone().or_else(|| self.package.clone()),
            id: over.id.clone().or_else(|| self.id.clone()),
            fork_args: over.fork_args.clone().or_else(|| self.fork_args.clone()),
            state: over.state.clone().or_else(|| self.state.clone()),
            session_files: over
                .session_files
                .clone()
                .or_else(|| self.session_files.clone()),
            activity: over.activity.clone().or_else(|| self.activity.clone()),
            limit_patterns: over
                .limit_patterns
                .clone()
                .or_else(|| self.limit_patterns.clone()),
            mcp: over.mcp.clone().or_else(|| self.mcp.clone()),
            version: over.version.clone().or_else(|| self.version.clone()),
        }
    }
}
