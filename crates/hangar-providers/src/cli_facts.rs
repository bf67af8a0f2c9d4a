//! What an installed agent CLI says about itself: its version (from
//! `--version`) and, for codex, whether it takes `--no-daemon` (from
//! `--help`). Running the program and caching the answer per program file
//! is the daemon's (`cli_probe`); this module only reads the outputs, with
//! `hangar_core::cli_versions`' parsers.

use hangar_core::Provider;
use hangar_core::cli_versions::{self, Tested, Version};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliFacts {
    pub version: Option<Version>,
    /// codex only: `--no-daemon` is accepted.
    pub no_daemon: bool,
}

/// Whether `provider`'s `--help` must be read too (a flag its launch
/// depends on: `Adapter::reads_help`).
pub fn reads_help(provider: &Provider) -> bool {
    crate::adapter::adapter(provider).reads_help()
}

/// The newest version of `provider`'s CLI the conformance suite ran.
pub fn tested(provider: &Provider) -> Option<Version> {
    crate::adapter::adapter(provider).tested_version()
}

/// How an installed version of `provider`'s CLI compares with the tested one.
pub fn compare(provider: &Provider, installed: Option<Version>) -> Tested {
    cli_versions::compare(tested(provider), installed)
}

/// The line a person sees for a CLI newer than any tested.
pub fn newer_notice(provider: &Provider, installed: Version, tested: Version) -> String {
    let package = crate::adapter::adapter(provider).npm_package();
    cli_versions::newer_notice(provider.name(), package, installed, tested)
}

impl CliFacts {
    /// The facts in a CLI's `--version` output and, when `reads_help`, its
    /// `--help` output (`None` otherwise).
    pub fn from_outputs(provider: &Provider, version: &str, help: Option<&str>) -> CliFacts {
        let adapter = crate::adapter::adapter(provider);
        let mut facts = CliFacts {
            version: adapter.version_in(version),
            no_daemon: false,
        };
        if let Some(help) = help.filter(|_| adapter.reads_help()) {
            adapter.help_facts(help, &mut facts);
        }
        facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_newer_version_than_the_adapters_tested_one_gets_a_notice() {
        assert_eq!(
            compare(&Provider::Codex, Some(Version(0, 171, 0))),
            Tested::Covered
        );
        assert_eq!(
            compare(&Provider::Claude, Some(Version(2, 2, 0))),
            Tested::Newer {
                installed: Version(2, 2, 0),
                tested: Version(2, 1, 197)
            }
        );
        assert_eq!(
            compare(&Provider::Shell, Some(Version(9, 9, 9))),
            Tested::Unknown
        );
        assert_eq!(compare(&Provider::Opencode, None), Tested::Unknown);
        let line = newer_notice(&Provider::Claude, Version(2, 2, 0), Version(2, 1, 197));
        assert!(line.contains("claude 2.2.0 is newer"));
        assert!(line.contains("@anthropic-ai/claude-code@2.1.197"));
    }

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
