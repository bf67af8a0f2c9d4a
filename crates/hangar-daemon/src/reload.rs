//! Settings reloads: config.toml read again by `hangar reload` and by a
//! retry of a failed session, and which live sessions a reload restarts.
//!
//! A reload restarts live agent sessions only (DESIGN.md rule 7); a custom
//! provider counts as one when it defines `dangerous_args`, since the
//! dangerous setting changes its command line too. This never starts a
//! hibernated session and never applies a config file that does not parse.

use hangar_core::Provider;

use crate::Daemon;
use crate::config::ReloadOutcome;
use crate::errors::ApiError;

impl Daemon {
    /// Read config.toml again and take what can change while running; a
    /// file that does not parse is an error and changes nothing.
    pub fn reload_config(&self) -> Result<ReloadOutcome, ApiError> {
        let outcome = self
            .config
            .reload(&self.paths.config())
            .map_err(|e| ApiError::invalid(format!("{e}; the daemon keeps the settings it has")))?;
        if outcome.changed {
            tracing::info!(
                "read {} again{}",
                self.paths.config().display(),
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

    /// Whether a reload restarts a live session of `provider`: the agent
    /// CLIs, and custom providers whose command line the dangerous setting
    /// changes.
    pub fn restarts_on_reload(&self, provider: &Provider) -> bool {
        match provider {
            Provider::Custom(name) => self
                .config
                .providers
                .get(name)
                .is_some_and(|c| !c.dangerous_args.is_empty()),
            other => other.is_agent(),
        }
    }
}
