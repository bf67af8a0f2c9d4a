//! What an agent CLI's `--version` and `--help` output tells about an
//! installed one, and how it compares with the version hangar is tested
//! with (each CLI's tested version is its adapter's, in hangar-providers:
//! `Adapter::tested_version`).
//!
//! The conformance suite (`crates/hangar/tests/it/real_cli_*.rs`) runs
//! those exact versions; docs/src/testing.md names them. A newer CLI may still work,
//! but these CLIs change weekly, so a person is told which version was
//! tested.
//! Output shapes were read from the real CLIs: `claude --version` prints
//! `2.1.197 (Claude Code)`, `codex --version` prints `codex-cli 0.171.0`,
//! `opencode --version` prints `1.18.33`.

/// A `major.minor.patch` version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u64, pub u64, pub u64);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The first `N.N.N` in a CLI's `--version` output.
pub fn parse_version(output: &str) -> Option<Version> {
    output.split(|c: char| c.is_whitespace()).find_map(|word| {
        let word = word.trim_start_matches('v');
        let mut parts = word.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch: String = parts
            .next()?
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        Some(Version(major, minor, patch.parse().ok()?))
    })
}

/// How an installed version compares with the tested one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tested {
    /// The tested version, or an older one.
    Covered,
    /// Newer than any version the suite ran.
    Newer { installed: Version, tested: Version },
    /// No version could be read, or the provider has no tested version.
    Unknown,
}

/// `installed` beside the CLI's `tested` version (`None`: it has none).
pub fn compare(tested: Option<Version>, installed: Option<Version>) -> Tested {
    match (installed, tested) {
        (Some(i), Some(t)) if i > t => Tested::Newer {
            installed: i,
            tested: t,
        },
        (Some(_), Some(_)) => Tested::Covered,
        _ => Tested::Unknown,
    }
}

/// The line a person sees for a CLI newer than any tested (`hangar status`
/// notices, `hangar doctor`), for CLI `name` installed from npm `package`.
pub fn newer_notice(
    name: &str,
    package: Option<&str>,
    installed: Version,
    tested: Version,
) -> String {
    let pkg = package.unwrap_or("");
    format!(
        "{name} {installed} is newer than the newest version hangar is tested with ({tested}); \
         it usually works, but if sessions fail to start, resume or report their id, \
         install the tested one (`npm install -g {pkg}@{tested}`) or report it"
    )
}

/// Whether a codex `--help` offers `--no-daemon` (0.17x): run with it,
/// codex keeps its app-server inside the session's own process.
pub fn codex_has_no_daemon(help: &str) -> bool {
    help.split(|c: char| c.is_whitespace() || c == ',')
        .any(|w| w == "--no-daemon")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_version_outputs_parse() {
        assert_eq!(
            parse_version("2.1.197 (Claude Code)\n"),
            Some(Version(2, 1, 197))
        );
        assert_eq!(
            parse_version("codex-cli 0.171.0\n"),
            Some(Version(0, 171, 0))
        );
        assert_eq!(parse_version("1.18.33\n"), Some(Version(1, 18, 33)));
        assert_eq!(parse_version("v1.2.3-beta.1"), Some(Version(1, 2, 3)));
        assert_eq!(parse_version("no version here"), None);
    }

    #[test]
    fn only_a_newer_version_than_tested_gets_a_notice() {
        let tested = Some(Version(0, 171, 0));
        assert_eq!(compare(tested, Some(Version(0, 171, 0))), Tested::Covered);
        assert_eq!(compare(tested, Some(Version(0, 170, 9))), Tested::Covered);
        assert_eq!(
            compare(tested, Some(Version(0, 172, 0))),
            Tested::Newer {
                installed: Version(0, 172, 0),
                tested: Version(0, 171, 0)
            }
        );
        assert_eq!(compare(None, Some(Version(9, 9, 9))), Tested::Unknown);
        assert_eq!(compare(tested, None), Tested::Unknown);
        let line = newer_notice(
            "claude",
            Some("@anthropic-ai/claude-code"),
            Version(2, 2, 0),
            Version(2, 1, 197),
        );
        assert!(line.contains("claude 2.2.0 is newer"));
        assert!(line.contains("@anthropic-ai/claude-code@2.1.197"));
    }

    #[test]
    fn no_daemon_is_recognised_only_as_a_whole_flag() {
        // From `codex --help` of 0.171.0.
        let help = "      --no-daemon\n          Run without the shared background server, even if it is already running\n";
        assert!(codex_has_no_daemon(help));
        assert!(!codex_has_no_daemon("      --no-daemonize\n"));
        assert!(!codex_has_no_daemon("Usage: codex [OPTIONS] [PROMPT]"));
    }
}
