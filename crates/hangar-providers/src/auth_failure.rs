//! Whether a failed start looks like an expired or missing login, which
//! counts toward the wake queue's breaker (a fleet of agents that cannot log
//! in must not be woken one after another).

use hangar_core::Provider;

use crate::config::ProvidersConfig;

/// The rules every provider without its own uses: `[governor]
/// auth_patterns` (with the defaults filled in) and `auth_exit_codes`.
#[derive(Clone, Copy, Debug)]
pub struct AuthRules<'a> {
    pub patterns: &'a [String],
    pub exit_codes: &'a [i32],
}

/// Whether a failed start's screen or exit code looks like an expired or
/// missing login. Only agent CLIs log in: a shell or custom command that
/// fails to start never counts toward the breaker, unless its
/// `[providers.NAME]` table names its own `auth_patterns`/`auth_exit_codes`
/// (which then replace the global ones for that provider).
pub fn looks_like_auth_failure(
    providers: &ProvidersConfig,
    global: AuthRules<'_>,
    provider: &Provider,
    screen: &str,
    code: i32,
) -> bool {
    let own = providers.get(provider.name());
    let own_patterns = own.and_then(|p| p.auth_patterns.as_deref());
    let own_codes = own.and_then(|p| p.auth_exit_codes.as_deref());
    if own_patterns.is_none() && own_codes.is_none() && !provider.is_agent() {
        return false;
    }
    let patterns = own_patterns.unwrap_or(global.patterns);
    let codes = own_codes.unwrap_or(global.exit_codes);
    codes.contains(&code) || hangar_core::governor::looks_like_auth_failure(screen, patterns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    #[test]
    fn a_providers_own_rules_replace_the_global_ones() {
        let patterns = vec!["401 unauthorized".to_owned()];
        let global = AuthRules {
            patterns: &patterns,
            exit_codes: &[77],
        };
        let mut providers = ProvidersConfig::default();
        assert!(looks_like_auth_failure(
            &providers,
            global,
            &Provider::Codex,
            "",
            77
        ));
        providers.insert(
            "codex".into(),
            ProviderConfig {
                auth_exit_codes: Some(vec![3]),
                ..ProviderConfig::default()
            },
        );
        assert!(!looks_like_auth_failure(
            &providers,
            global,
            &Provider::Codex,
            "",
            77
        ));
        assert!(looks_like_auth_failure(
            &providers,
            global,
            &Provider::Codex,
            "",
            3
        ));
        // Its patterns were not replaced: the global ones still apply.
        assert!(looks_like_auth_failure(
            &providers,
            global,
            &Provider::Codex,
            "HTTP 401 Unauthorized",
            1
        ));
    }
}
