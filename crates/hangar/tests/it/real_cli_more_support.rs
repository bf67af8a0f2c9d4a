//! The harness for the CLIs beyond Claude Code, Codex and OpenCode
//! (docs/clis/): installs one pinned package (npm, or PyPI into a venv)
//! into the real-CLI cache, starts the fake model API, and gives each CLI
//! its offline setup (`offline`) as files and variables exactly as its page
//! in docs/clis/ records them. The conformance suite runs the shipped
//! providers (`--provider NAME`); the older single tests run some as custom
//! providers named `NAME-as-custom`, which never meet the shipped adapters'
//! own arguments.
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

/// Each CLI's offline setup, as its page in docs/clis/ records it: the
/// files and variables a person would give it. Each returns its state
/// folder.
pub mod offline {
    use std::path::PathBuf;

    use serde_json::json;

    use super::{World, write_json};

    /// docs/clis/copilot.md: offline (`COPILOT_OFFLINE`) with a BYOK
    /// provider on chat completions; the folder trusted in its config
    /// (without it: "Confirm folder trust ... Do you trust the files in
    /// this folder?").
    pub fn copilot(world: &mut World) -> PathBuf {
        let home = world.hangar.root.join("copilot-home");
        write_json(
            &home.join("config.json"),
            &json!({"trustedFolders": [world.hangar.work.display().to_string()]}),
        );
        for (k, v) in [
            ("COPILOT_HOME", home.display().to_string()),
            ("COPILOT_OFFLINE", "true".to_owned()),
            (
                "COPILOT_PROVIDER_BASE_URL",
                format!("{}/v1", world.api.http_url()),
            ),
            ("COPILOT_PROVIDER_TYPE", "openai".to_owned()),
            ("COPILOT_PROVIDER_API_KEY", "sk-fake-copilot".to_owned()),
            ("COPILOT_MODEL", "fake-model".to_owned()),
        ] {
            world.hangar.set_env(k, v);
        }
        home
    }

    /// docs/clis/gemini.md: `GOOGLE_GEMINI_BASE_URL` and an API key; its
    /// auth and folder-trust dialogs answered in its settings, session
    /// cleanup off (or a resumed conversation can be deleted). Returns
    /// `$GEMINI_CLI_HOME/.gemini`.
    pub fn gemini(world: &mut World) -> PathBuf {
        let home = world.hangar.root.join("gemini-home");
        let state = home.join(".gemini");
        write_json(
            &state.join("settings.json"),
            &json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
                    "general": {"sessionRetention": {"enabled": false}}}),
        );
        write_json(
            &state.join("trustedFolders.json"),
            &json!({ world.hangar.work.display().to_string(): "TRUST_FOLDER" }),
        );
        world.hangar.set_env("GEMINI_CLI_HOME", home);
        let url = world.api.http_url();
        world.hangar.set_env("GOOGLE_GEMINI_BASE_URL", url);
        world.hangar.set_env("GEMINI_API_KEY", "fake-gemini-key");
        state
    }

    /// docs/clis/pi.md: Anthropic Messages from its own models file, offline
    /// (`PI_OFFLINE`). Returns `PI_CODING_AGENT_DIR`.
    pub fn pi(world: &mut World) -> PathBuf {
        let dir = world.hangar.root.join("pi-agent");
        write_json(
            &dir.join("models.json"),
            &json!({"providers": {"fake": {"baseUrl": world.api.http_url(),
                "api": "anthropic-messages", "apiKey": "sk-ant-fake-pi",
                "models": [{"id": "fake-model"}]}}}),
        );
        world.hangar.set_env("PI_CODING_AGENT_DIR", dir.clone());
        world.hangar.set_env("PI_OFFLINE", "1");
        dir
    }

    /// docs/clis/qwen.md: its API is given by flags (the caller's); its
    /// follow-up suggestions off, or Qwen Code shows the model's guess of
    /// the next prompt (the fake's `ANSWER(...)`) in its input box.
    /// Returns `QWEN_HOME`.
    pub fn qwen(world: &mut World) -> PathBuf {
        let home = world.hangar.root.join("qwen-home");
        write_json(
            &home.join("settings.json"),
            &json!({"ui": {"enableFollowupSuggestions": false}}),
        );
        world.hangar.set_env("QWEN_HOME", home.clone());
        home
    }
}
