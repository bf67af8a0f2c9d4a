//! `[providers.NAME]` in config.toml: a provider's program, or a whole
//! custom provider. The daemon's config.rs reads the section and hands it to
//! `launch` and `auth_failure`; its keys must never be renamed.

use std::collections::BTreeMap;

use serde::Deserialize;

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
}
