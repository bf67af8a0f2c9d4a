//! Settings reloads: config.toml read again by `hangar reload` and by a
//! retry of a failed session, and the config facts the restart set
//! (`hangar_core::reload_plan`) needs.
//!
//! A reload restarts live agent sessions only (DESIGN.md rule 7); a custom
//! provider counts as one when it defines `dangerous_args`, since the
//! dangerous setting changes its command line too. This never starts a
//! hibernated session and never applies a config file that does not parse.
//!
//! Plain functions of what they read: a reload holds no state of its own.

use std::path::Path;

use crate::config::{LiveConfig, ReloadOutcome};
use crate::errors::ApiError;
use hangar_providers::ProvidersConfig;

/// Read config.toml (at `path`) again and take what can change while
/// running; a file that does not parse is an error and changes nothing.
pub fn reload_config(config: &LiveConfig, path: &Path) -> Result<ReloadOutcome, ApiError> {
    let outcome = config
        .reload(path)
        .map_err(|e| ApiError::invalid(format!("{e}; the daemon keeps the settings it has")))?;
    if outcome.changed {
        tracing::info!(
            "read {} again{}",
            path.display(),
            if outcome.needs_restart.is_empty() {
                String::new()
            } else {
                format!(
                    "; [{}] take effect after a daemon restart",
                    outcome.needs_restart.join("], [")
                )
            }
        );
    }
    Ok(outcome)
}

/// Whether custom provider `name` defines `dangerous_args`, so the
/// dangerous setting changes its command line and a reload restarts it
/// (`hangar_core::reload_plan`).
pub fn has_dangerous_args(providers: &ProvidersConfig, name: &str) -> bool {
    providers
        .get(name)
        .is_some_and(|c| !c.dangerous_args.is_empty())
}
