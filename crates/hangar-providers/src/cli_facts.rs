//! What an installed agent CLI says about itself: its version (from
//! `--version`) and, for codex, whether it takes `--no-daemon` (from
//! `--help`). Running the program and caching the answer per program file
//! is the daemon's (`cli_probe`); this module only reads the outputs, with
//! `hangar_core::cli_versions`' parsers.

use hangar_core::Provider;
use hangar_core::cli_versions::{self, Version};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliFacts {
    pub version: Option<Version>,
    /// codex only: `--no-daemon` is accepted.
    pub no_daemon: bool,
}

/// Whether `provider`'s `--help` must be read too (only codex has a flag
/// hangar looks for).
pub fn reads_help(provider: &Provider) -> bool {
    *provider == Provider::Codex
}

impl CliFacts {
    /// The facts in a CLI's `--version` output and, when `reads_help`, its
    /// `--help` output (`None` otherwise).
    pub fn from_outputs(provider: &Provider, version: &str, help: Option<&str>) -> CliFacts {
        CliFacts {
            version: cli_versions::parse_version(version),
            no_daemon: reads_help(provider) && help.is_some_and(cli_versions::codex_has_no_daemon),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_codex_is_asked_for_its_help_and_only_its_help_names_no_daemon() {
        let help = "      --no-daemon\n          Run without the shared background server\n";
        let codex = CliFacts::from_outputs(&Provider::Codex, "codex-cli 0.171.0", Some(help));
        assert_eq!(
            codex,
            CliFacts {
                version: Some(Version(0, 171, 0)),
                no_daemon: true
            }
        );
        assert!(!reads_help(&Provider::Claude));
        let claude = CliFacts::from_outputs(&Provider::Claude, "2.1.197 (Claude Code)", Some(help));
        assert!(!claude.no_daemon);
        assert_eq!(claude.version, Some(Version(2, 1, 197)));
    }
}
