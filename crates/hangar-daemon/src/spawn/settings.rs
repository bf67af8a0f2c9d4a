//! `[restore]`: how a start's restore paces its agents. A leaf the spawner
//! holds a `Section` of and config.rs assembles, so neither reaches back.

use hangar_core::Provider;
use hangar_providers::ProvidersConfig;
use serde::Deserialize;

/// What the spawner takes of `[governor]`, fixed at start: the breaker's
/// threshold and what a failed start's authentication failure looks like.
/// lib.rs hands it over (`GovernorConfig::start_rules`), so the spawner
/// never imports the governor that sits above it.
#[derive(Clone, Debug)]
pub struct StartRules {
    /// Consecutive auth-like failures that pause the wake queue.
    pub breaker_threshold: u32,
    /// Output patterns (case-insensitive) of an authentication failure.
    pub auth_patterns: Vec<String>,
    /// Exit codes of an authentication failure.
    pub auth_exit_codes: Vec<i32>,
}

impl StartRules {
    /// Whether a failed start looks like an expired or missing login
    /// (`hangar_providers::auth_failure`), by `[providers.NAME]` and these
    /// rules.
    pub fn looks_like_auth_failure(
        &self,
        providers: &ProvidersConfig,
        provider: &Provider,
        screen: &str,
        code: i32,
    ) -> bool {
        let global = hangar_providers::auth_failure::AuthRules {
            patterns: &self.auth_patterns,
            exit_codes: &self.auth_exit_codes,
        };
        hangar_providers::auth_failure::looks_like_auth_failure(
            providers, global, provider, screen, code,
        )
    }
}

/// `[restore]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreConfig {
    /// How many agents of a restore boot at once (forked, no first output
    /// yet; `start_slot.rs`).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// How long an agent may take to show its first output.
    #[serde(default = "default_timeout")]
    pub spawn_timeout_secs: u64,
    /// How long an agent that has shown its first output is watched before
    /// it counts as started: one that fails its login prints, then exits
    /// within it. Settles overlap; they hold no restore slot.
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
}

impl RestoreConfig {
    pub fn settle(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.settle_ms)
    }
}

impl Default for RestoreConfig {
    fn default() -> Self {
        RestoreConfig {
            concurrency: default_concurrency(),
            spawn_timeout_secs: default_timeout(),
            settle_ms: default_settle_ms(),
        }
    }
}

fn default_concurrency() -> usize {
    4
}
/// Two minutes: a CLI shows its first output within about 2 s with every
/// core busy (bench/cli_first_output.py), but on a machine loaded with many
/// node processes and disk work an OpenCode wake took over 30 s and Kilo's
/// first start 40 s; a false `failed` costs a person more than a hung agent
/// noticed later (issue 44 part 7; BENCHMARKS.md).
fn default_timeout() -> u64 {
    120
}
fn default_settle_ms() -> u64 {
    300
}
