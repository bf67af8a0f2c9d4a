//! `[governor]`: the live budget, the wake queue and its breaker, what a
//! failed start's authentication failure looks like, eviction's TTL. A leaf:
//! the spawner reads the breaker and the auth rules from it without
//! depending on the governor, which sits on the spawner.

use hangar_core::Provider;
use hangar_providers::ProvidersConfig;
use serde::Deserialize;

/// Whether a failed start looks like an expired or missing login
/// (`hangar_providers::auth_failure`), by `[providers.NAME]` and the
/// `[governor]` rules.
pub fn looks_like_auth_failure(
    governor: &GovernorConfig,
    providers: &ProvidersConfig,
    provider: &Provider,
    screen: &str,
    code: i32,
) -> bool {
    governor
        .start_rules()
        .looks_like_auth_failure(providers, provider, screen, code)
}

/// The resource governor: the live budget, the wake queue, eviction.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GovernorConfig {
    /// Most live agent sessions at once (unlimited when absent).
    #[serde(default)]
    pub max_live: Option<usize>,
    /// Most memory of all live agents' process trees, in MiB, as their
    /// proportional set size (a page shared by many processes counted once
    /// across the fleet). A wake that would go over it first hibernates the
    /// least recently used idle agent not in a pane, or waits until there
    /// is room.
    #[serde(default)]
    pub max_memory_mb: Option<u64>,
    /// Wakes running at once.
    #[serde(default = "default_wake_concurrency")]
    pub wake_concurrency: usize,
    /// Minimum gap between two wake starts.
    #[serde(default = "default_wake_spacing")]
    pub wake_spacing_ms: u64,
    /// Consecutive auth-like failures that pause the wake queue.
    #[serde(default = "default_breaker")]
    pub breaker_threshold: u32,
    /// Output patterns (case-insensitive) that mark a failed start as an
    /// authentication failure; the defaults cover claude and codex.
    #[serde(default)]
    pub auth_patterns: Option<Vec<String>>,
    /// Exit codes that mark a failed start as an authentication failure.
    #[serde(default)]
    pub auth_exit_codes: Vec<i32>,
    /// Evict parked records untouched for this long (e.g. "7d"); off when
    /// absent.
    #[serde(default)]
    pub parked_ttl: Option<String>,
    /// How often memory is sampled while `max_memory_mb` is set (and a
    /// parked TTL or an over-budget fleet looked at again); other checks
    /// follow the fleet's changes.
    #[serde(default = "default_check_interval")]
    pub check_interval_ms: u64,
}

impl Default for GovernorConfig {
    fn default() -> Self {
        GovernorConfig {
            max_live: None,
            max_memory_mb: None,
            wake_concurrency: default_wake_concurrency(),
            wake_spacing_ms: default_wake_spacing(),
            breaker_threshold: default_breaker(),
            auth_patterns: None,
            auth_exit_codes: Vec::new(),
            parked_ttl: None,
            check_interval_ms: default_check_interval(),
        }
    }
}

fn default_wake_concurrency() -> usize {
    2
}
fn default_wake_spacing() -> u64 {
    500
}
fn default_breaker() -> u32 {
    3
}
fn default_check_interval() -> u64 {
    2000
}

impl GovernorConfig {
    pub fn budget(&self) -> hangar_core::governor::Budget {
        hangar_core::governor::Budget {
            max_live: self.max_live,
            max_memory_bytes: self.max_memory_mb.map(|m| m * 1024 * 1024),
        }
    }

    pub fn queue_limits(&self) -> hangar_core::governor::QueueLimits {
        hangar_core::governor::QueueLimits {
            max_running: self.wake_concurrency.max(1),
            spacing_ms: self.wake_spacing_ms,
            breaker_threshold: self.breaker_threshold.max(1),
        }
    }

    /// What the spawner takes of it: the breaker and the auth rules.
    pub fn start_rules(&self) -> crate::spawn::StartRules {
        crate::spawn::StartRules {
            breaker_threshold: self.breaker_threshold,
            auth_patterns: self.auth_patterns(),
            auth_exit_codes: self.auth_exit_codes.clone(),
        }
    }

    pub fn auth_patterns(&self) -> Vec<String> {
        self.auth_patterns
            .clone()
            .unwrap_or_else(hangar_core::governor::default_auth_patterns)
    }

    /// The parked TTL, validated.
    pub fn parked_ttl(&self) -> Result<Option<std::time::Duration>, String> {
        self.parked_ttl
            .as_deref()
            .map(|t| {
                humantime::parse_duration(t).map_err(|e| format!("governor.parked_ttl {t:?}: {e}"))
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_providers::ProviderConfig;

    /// The two sections the check reads.
    #[derive(Default)]
    struct Sections {
        governor: GovernorConfig,
        providers: ProvidersConfig,
    }

    fn looks_like_auth_failure(
        config: &Sections,
        provider: &Provider,
        screen: &str,
        code: i32,
    ) -> bool {
        super::looks_like_auth_failure(&config.governor, &config.providers, provider, screen, code)
    }

    #[test]
    fn only_agent_clis_or_providers_with_their_own_patterns_count_as_auth_failures() {
        let mut config = Sections::default();
        let deploy = Provider::Custom("deploy".into());
        let screen = "GET /status: 401 Unauthorized";
        assert!(looks_like_auth_failure(
            &config,
            &Provider::Claude,
            screen,
            1
        ));
        assert!(!looks_like_auth_failure(
            &config,
            &Provider::Shell,
            screen,
            1
        ));
        assert!(!looks_like_auth_failure(&config, &deploy, screen, 1));
        config.providers.insert(
            "deploy".into(),
            ProviderConfig {
                auth_patterns: Some(vec!["token expired".into()]),
                ..ProviderConfig::default()
            },
        );
        assert!(looks_like_auth_failure(
            &config,
            &deploy,
            "Token expired",
            1
        ));
        assert!(!looks_like_auth_failure(&config, &deploy, screen, 1));
    }
}
