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
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::real_cli_support::{FakeApi, REAL_DEADLINE, cache_dir};
use crate::support::Hangar;

/// A pinned npm package and the program it installs.
#[derive(Clone, Copy, Debug)]
pub struct NpmCli {
    pub package: &'static str,
    pub version: &'static str,
    pub bin: &'static str,
}

/// Installs `cli` (once per cache, under a lock of its own), or says why not.
pub fn install(cli: NpmCli) -> Result<PathBuf, String> {
    let npm = find_on_path("npm").ok_or("npm is not on PATH (install Node.js and npm)")?;
    let cache = cache_dir();
    fs::create_dir_all(&cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let prefix = cache.join(format!(
        "{}@{}",
        cli.package.replace(['/', '@'], "_"),
        cli.version
    ));
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(cache.join(format!(".install-{}.lock", cli.bin)))
        .map_err(|e| format!("cannot open the install lock: {e}"))?;
    // SAFETY: flock on an fd we own; released when `lock` is dropped.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!(
            "cannot lock the install: {}",
            std::io::Error::last_os_error()
        ));
    }
    let bin = prefix.join("node_modules").join(".bin").join(cli.bin);
    let done = prefix.join(".installed");
    if done.is_file() && bin.exists() {
        return Ok(bin);
    }
    fs::create_dir_all(&prefix).map_err(|e| format!("cannot create {}: {e}", prefix.display()))?;
    let spec = format!("{}@{}", cli.package, cli.version);
    let out = Command::new(npm)
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&prefix)
        .arg(&spec)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run npm: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!(
            "`npm install {spec}` failed ({}): {last}",
            out.status
        ));
    }
    let version = Command::new(&bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{} does not run: {e}", bin.display()))?;
    // Pi prints its version on stderr.
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&version.stdout),
        String::from_utf8_lossy(&version.stderr)
    );
    if !shown.contains(cli.version) {
        return Err(format!(
            "{} --version printed {:?}, not {}",
            bin.display(),
            shown.trim(),
            cli.version
        ));
    }
    fs::write(&done, &spec).map_err(|e| format!("cannot mark the install done: {e}"))?;
    Ok(bin)
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The installed program, or `None` after saying why (a failure under
/// `HANGAR_TESTS_REQUIRED=1`).
pub fn installed_or_skip(cli: NpmCli) -> Option<PathBuf> {
    match install(cli) {
        Ok(bin) => Some(bin),
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
