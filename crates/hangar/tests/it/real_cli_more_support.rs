//! The harness for the CLIs beyond Claude Code, Codex and OpenCode
//! (docs/clis/): installs one pinned npm package into the real-CLI cache,
//! starts the fake model API, and runs the CLI as a hangar custom provider
//! (`[providers.NAME] program = ...`), its offline setup given as files and
//! variables exactly as its page in docs/clis/ records them. The provider
//! names end in `-as-custom` so that they never meet the built-in adapters
//! of the same CLIs (issue 45) and their own arguments.
//!
//! Like `real_cli_support`, a CLI that cannot be installed here (no npm, no
//! registry) skips with one line on the terminal, and fails instead under
//! `HANGAR_TESTS_REQUIRED=1` (CI).

#![allow(dead_code)] // each CLI's module uses a part

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::time::Instant;

use serde_json::Value;

use crate::real_cli_support::{FakeApi, REAL_DEADLINE};
use crate::support::Hangar;

/// A pinned npm package and the program it installs.
pub use crate::real_cli_support::Cli as NpmCli;
use crate::real_cli_support::install;

/// The installed program, or `None` after saying why (a failure under
/// `HANGAR_TESTS_REQUIRED=1`).
pub fn installed_or_skip(cli: NpmCli) -> Option<PathBuf> {
    match install(cli) {
        Ok(bin) => {
            crate::real_cli_support::say_versions(&[cli]);
            Some(bin)
        }
        Err(why) => {
            if hangar_testkit::required::required() {
                panic!("real-cli conformance required (HANGAR_TESTS_REQUIRED=1) but: {why}");
            }
            // Straight to fd 2: the test harness captures eprintln!.
            let _ = writeln!(
                std::io::stderr(),
                "real-cli conformance of {} skipped: {why}",
                cli.package
            );
            None
        }
    }
}

/// One test's world: a hangar fixture and the fake API its CLI talks to.
pub struct World {
    /// Dropped first: the daemon and every agent end before the API does.
    pub hangar: Hangar,
    pub api: FakeApi,
}

impl World {
    pub fn start() -> World {
        let hangar = Hangar::with_env(&[]);
        let api = FakeApi::start(&hangar.root.join("fake-api"));
        World { hangar, api }
    }

    /// `hangar screen ID` once it shows `needle`; panics after the real-CLI
    /// deadline with the screen and what the fake API was asked.
    pub fn wait_screen(&self, id: &str, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let out = self.hangar.run(&["screen", id]);
            let screen = String::from_utf8_lossy(&out.stdout).into_owned();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < REAL_DEADLINE,
                "timed out after {REAL_DEADLINE:?} waiting until session {id}'s screen shows \
                 {needle:?}; screen:\n{screen}\nfake API requests (api, target, turn): {:?}",
                self.api
                    .requests()
                    .iter()
                    .map(|r| (r["api"].clone(), r["target"].clone(), r["turn"].clone()))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }

    /// Waits until the screen shows `needle` and then stays the same for
    /// `quiet`: a CLI that draws its input box before it finished starting
    /// (Gemini CLI 0.61 under load) drops what is typed meanwhile, and a
    /// custom provider's send cannot see that (`confirmed: false`).
    pub fn wait_screen_settled(&self, id: &str, needle: &str, quiet: std::time::Duration) {
        let mut last = self.wait_screen(id, needle);
        let mut since = Instant::now();
        let start = Instant::now();
        while since.elapsed() < quiet {
            assert!(
                start.elapsed() < REAL_DEADLINE,
                "session {id}'s screen never held still for {quiet:?}:\n{last}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
            let now =
                String::from_utf8_lossy(&self.hangar.run(&["screen", id]).stdout).into_owned();
            if now != last {
                last = now;
                since = Instant::now();
            }
        }
    }

    /// The first request the fake API got whose turn is `text`.
    pub fn wait_turn(&self, text: &str) -> Value {
        self.api
            .wait_request(&format!("a model request for the turn {text:?}"), |r| {
                r["turn"] == text
            })
    }
}

/// Writes `value` as pretty JSON at `path`, making its folder.
pub fn write_json(path: &Path, value: &Value) {
    fs::create_dir_all(path.parent().expect("a folder")).expect("create folder");
    fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write json");
}
