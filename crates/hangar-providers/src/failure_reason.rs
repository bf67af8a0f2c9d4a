//! The reason a session shows when its program cannot be started: what to
//! change, and the command that retries.
//!
//! The daemon reads `HANGAR_<P>_BIN` from its own environment, fixed when it
//! started, and config.toml again on `hangar reload` and on `hangar wake` of
//! a failed session. So the advice must name the step that actually works
//! from where the person is: edit config.toml and wake, or (when the
//! environment variable is what points at the missing program) restart the
//! daemon. It never advises something the running daemon cannot see.

use std::path::Path;

use hangar_core::Provider;

use crate::launch::LaunchError;

/// The advice for a launch that could not find its program. `id` is the
/// session id as people type it (its short form).
pub fn launch_failure(e: &LaunchError, provider: &Provider, home: &Path, id: &str) -> String {
    let config = home.join("config.toml");
    let config = config.display();
    let name = provider.name();
    match e {
        LaunchError::ProgramNotFound {
            program,
            where_,
            var,
        } => {
            if where_.contains(var.as_str()) {
                // The variable wins over config.toml, and the daemon's
                // environment only changes with a restart.
                format!(
                    "program `{program}` (from {var}) not found; {var} is read from the daemon's environment and wins over config.toml: restart the daemon (`hangar shutdown`) with {var} pointing at the program, or unset to use [providers.{name}] program in {config}"
                )
            } else if where_.contains("config.toml") {
                format!(
                    "program `{program}` (from [providers.{name}] program in {config}) not found; fix it there and run `hangar wake {id}` (or restart the daemon with {var} set)"
                )
            } else {
                format!(
                    "program `{program}` not found{where_}; set [providers.{name}] program in {config} and run `hangar wake {id}` (or restart the daemon with {var} set)"
                )
            }
        }
        LaunchError::UnknownProvider(p) => format!(
            "provider `{p}` is not defined; add [providers.{p}] with its program to {config} and run `hangar wake {id}`"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProvidersConfig;
    use crate::launch::{LaunchEnv, resolve_program};

    fn reason(provider: Provider, config: &ProvidersConfig, vars: &[(&str, &str)]) -> String {
        let var = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        };
        let mint = || "minted".to_owned();
        let env = LaunchEnv {
            providers: config,
            var: &var,
            dangerous: false,
            mint: &mint,
            fork_from: None,
        };
        let e = resolve_program(&provider, &env).unwrap_err();
        launch_failure(&e, &provider, Path::new("/h"), "abcd1234")
    }

    #[test]
    fn a_program_missing_from_path_advises_config_and_wake() {
        let r = reason(
            Provider::Opencode,
            &ProvidersConfig::default(),
            &[("PATH", "/none")],
        );
        assert_eq!(
            r,
            "program `opencode` not found on PATH; set [providers.opencode] program in /h/config.toml and run `hangar wake abcd1234` (or restart the daemon with HANGAR_OPENCODE_BIN set)"
        );
    }

    #[test]
    fn a_missing_program_named_by_the_environment_advises_a_restart() {
        let r = reason(
            Provider::Codex,
            &ProvidersConfig::default(),
            &[("HANGAR_CODEX_BIN", "/gone/codex")],
        );
        assert!(r.contains("(from HANGAR_CODEX_BIN)"), "{r}");
        assert!(r.contains("restart the daemon"), "{r}");
        assert!(!r.contains("hangar wake"), "a wake cannot help: {r}");
    }

    #[test]
    fn a_missing_program_named_by_config_advises_fixing_it_and_waking() {
        let mut config = ProvidersConfig::default();
        config.insert(
            "claude".into(),
            crate::config::ProviderConfig {
                program: Some("/gone/claude".into()),
                ..Default::default()
            },
        );
        let r = reason(Provider::Claude, &config, &[]);
        assert!(
            r.contains("[providers.claude] program in /h/config.toml"),
            "{r}"
        );
        assert!(r.contains("`hangar wake abcd1234`"), "{r}");
    }

    #[test]
    fn an_undefined_custom_provider_advises_defining_it() {
        let r = reason(
            Provider::Custom("aider".into()),
            &ProvidersConfig::default(),
            &[],
        );
        assert!(r.contains("add [providers.aider]"), "{r}");
        assert!(r.contains("`hangar wake abcd1234`"), "{r}");
    }
}
