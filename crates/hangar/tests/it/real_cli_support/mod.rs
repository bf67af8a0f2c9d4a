//! The real-CLI conformance harness: the published Claude Code, Codex and
//! OpenCode, installed from npm at pinned versions, run by a real hangar
//! daemon against `hangar-fake-model-api` on loopback.
//!
//! A test does:
//!
//! ```ignore
//! mod support;
//! mod real_cli_support;
//! let Some(rc) = real_cli_support::RealCli::start() else { return };
//! let id = rc.hangar.new_agent(&["--provider", "claude"]);
//! rc.wait_ready(&id);
//! rc.hangar.ok(&["send", &id, "hello"]);
//! rc.wait_screen(&id, "ANSWER(hello)");
//! ```
//!
//! `RealCli::start` returns `None` (after printing one line,
//! `real-cli conformance skipped: <why>`, straight to the terminal so the
//! test harness cannot swallow it) when npm or the registry cannot be
//! reached; with `HANGAR_TESTS_REQUIRED=1` (CI) that is a failure
//! instead. The CLIs are installed once into `$HANGAR_REAL_CLI_CACHE`
//! (default: `real-cli-cache` in the cargo target folder), under a lock
//! file, so parallel test binaries share one install.
//!
//! Each CLI's offline configuration follows docs/src/cli-facts.md
//! ("Running them offline"), which records what was observed running these
//! versions: claude's `.claude.json` with the approved key and trusted
//! folders, codex's `config.toml` with a `fake` provider and trusted
//! projects, opencode's `opencode.json` with an openai-compatible provider.
//!
//! Hooks for other tests (transcript discovery in odd folders, `/clear`,
//! outside writers): `folder` makes and trusts a folder for all three CLIs,
//! `claude_settings` writes `$CLAUDE_CONFIG_DIR/settings.json` (e.g.
//! `disableAllHooks`), `outside` gives a command running a CLI as a person
//! would in their own terminal (same config, none of hangar's variables).

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, Hangar};

/// The versions hangar is tested with (docs/src/testing.md says the same).
pub const CLAUDE: Cli = Cli {
    package: "@anthropic-ai/claude-code",
    version: "2.1.197",
    bin: "claude",
};
pub const CODEX: Cli = Cli {
    package: "@openai/codex",
    version: "0.171.0",
    bin: "codex",
};
pub const OPENCODE: Cli = Cli {
    package: "opencode-ai",
    version: "1.18.33",
    bin: "opencode",
};

/// A real CLI's npm package.
#[derive(Clone, Copy, Debug)]
pub struct Cli {
    /// An npm package, or `pypi:NAME` for a Python one.
    pub package: &'static str,
    pub version: &'static str,
    pub bin: &'static str,
}

/// Waits on real CLIs are long: they start in seconds, not milliseconds
/// (opencode takes ~15 s on a busy 2-core machine), and the suite shares
/// the cores with builds.
pub const REAL_DEADLINE: Duration = Duration::from_secs(120);

/// The fake API key claude is given (its last 20 characters are
/// pre-approved in `.claude.json`, as claude asks otherwise).
pub const ANTHROPIC_KEY: &str = "sk-ant-api03-hangar-fake-key-0123456789abcdefghij";
/// The variable codex reads its key from (`env_key` in its config).
pub const OPENAI_KEY_VAR: &str = "HANGAR_FAKE_OPENAI_KEY";
pub const OPENAI_KEY: &str = "sk-hangar-fake-openai";
pub const OPENCODE_KEY: &str = "sk-hangar-fake-opencode";

/// The installed CLIs' programs.
#[derive(Clone, Debug)]
pub struct Installed {
    pub claude: PathBuf,
    pub codex: PathBuf,
    pub opencode: PathBuf,
}

/// Installs (once per test binary, and once per cache across binaries) the
/// pinned CLIs; `Err` says why they cannot be had.
pub fn installed() -> Result<&'static Installed, String> {
    static ONCE: OnceLock<Result<Installed, String>> = OnceLock::new();
    ONCE.get_or_init(install_all).as_ref().map_err(Clone::clone)
}

/// The cache folder the CLIs are installed into.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HANGAR_REAL_CLI_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // target/<profile>/hangar -> target/real-cli-cache
    support::hangar_bin()
        .parent()
        .and_then(Path::parent)
        .map(|t| t.join("real-cli-cache"))
        .unwrap_or_else(|| std::env::temp_dir().join("hangar-real-cli-cache"))
}

fn install_all() -> Result<Installed, String> {
    Ok(Installed {
        claude: install(CLAUDE)?,
        codex: install(CODEX)?,
        opencode: install(OPENCODE)?,
    })
}

fn support_find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether the suite runs the registry's newest version of every CLI
/// instead of the pinned one (`HANGAR_REAL_CLI_LATEST=1`: CI's second leg,
/// issue 46).
pub fn latest_wanted() -> bool {
    std::env::var_os("HANGAR_REAL_CLI_LATEST").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The version of `cli` this run installs: the pinned one, or the
/// registry's `latest` (asked once per package and run).
pub fn version_of(cli: Cli) -> Result<String, String> {
    if !latest_wanted() {
        return Ok(cli.version.to_owned());
    }
    static ASKED: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, v)) = asked.iter().find(|(p, _)| *p == cli.package) {
        return Ok(v.clone());
    }
    let version = match cli.package.strip_prefix("pypi:") {
        Some(name) => pypi_latest(name)?,
        None => npm_latest(cli.package)?,
    };
    asked.push((cli.package, version.clone()));
    Ok(version)
}

fn npm_latest(package: &str) -> Result<String, String> {
    let npm = support_find("npm").ok_or("npm is not on PATH (install Node.js and npm)")?;
    let out = Command::new(npm)
        .args(["view", package, "version"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run npm: {e}"))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || version.is_empty() {
        return Err(format!(
            "`npm view {package} version` did not answer ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(version)
}

/// PyPI's newest version of `name`: pip prints `NAME (X.Y.Z)` first.
fn pypi_latest(name: &str) -> Result<String, String> {
    let out = Command::new("python3")
        .args(["-m", "pip", "index", "versions", name])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3 -m pip: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .and_then(|l| l.split_once('(')?.1.split_once(')'))
        .map(|(v, _)| v.to_owned())
        .filter(|_| out.status.success())
        .ok_or_else(|| {
            format!(
                "`pip index versions {name}` did not answer ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
}

/// Names the versions this test runs (captured, so shown with a failure):
/// a break in the registry's latest says which version broke (issue 46).
pub fn say_versions(clis: &[Cli]) {
    let versions: Vec<String> = clis
        .iter()
        .map(|c| {
            let v = version_of(*c).unwrap_or_else(|e| e);
            format!("{} {v}", c.bin)
        })
        .collect();
    let which = if latest_wanted() {
        "the registry's latest"
    } else {
        "pinned"
    };
    eprintln!("real CLIs ({which}): {}", versions.join(", "));
}

/// `npm install` of one package, at the version this run wants
/// (`version_of`), into its own prefix in the cache, unless a finished
/// install is already there; under a lock of its own, so test binaries
/// running at once install each package once.
pub fn install(cli: Cli) -> Result<PathBuf, String> {
    let cache = cache_dir();
    fs::create_dir_all(&cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let version = version_of(cli)?;
    let prefix = cache.join(format!(
        "{}@{}",
        cli.package.replace(['/', '@', ':'], "_"),
        version
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
    let pypi = cli.package.strip_prefix("pypi:");
    let bin = match pypi {
        // A venv of its own: `DIR/bin/NAME`.
        Some(_) => prefix.join("bin").join(cli.bin),
        None => prefix.join("node_modules").join(".bin").join(cli.bin),
    };
    let done = prefix.join(".installed");
    if done.is_file() && bin.exists() {
        return Ok(bin);
    }
    fs::create_dir_all(&prefix).map_err(|e| format!("cannot create {}: {e}", prefix.display()))?;
    let spec = match pypi {
        Some(name) => {
            pip_install(&prefix, name, &version)?;
            format!("{name}=={version}")
        }
        None => {
            npm_install(&prefix, cli.package, &version)?;
            format!("{}@{version}", cli.package)
        }
    };
    let shown = Command::new(&bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{} does not run: {e}", bin.display()))?;
    // Pi prints its version on stderr.
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&shown.stdout),
        String::from_utf8_lossy(&shown.stderr)
    );
    if !shown.contains(&version) {
        return Err(format!(
            "{} --version printed {:?}, not {version}",
            bin.display(),
            shown.trim(),
        ));
    }
    fs::write(&done, &spec).map_err(|e| format!("cannot mark the install done: {e}"))?;
    Ok(bin)
}

/// `python3 -m venv PREFIX` and `pip install NAME==VERSION` in it.
fn pip_install(prefix: &Path, name: &str, version: &str) -> Result<(), String> {
    let venv = Command::new("python3")
        .args(["-m", "venv"])
        .arg(prefix)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !venv.status.success() {
        return Err(format!(
            "`python3 -m venv` failed ({}): {} (Debian: apt install python3-venv)",
            venv.status,
            String::from_utf8_lossy(&venv.stderr).trim()
        ));
    }
    let spec = format!("{name}=={version}");
    let out = Command::new(prefix.join("bin").join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", &spec])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run pip: {e}"))?;
    succeeded(&format!("pip install {spec}"), &out)
}

fn npm_install(prefix: &Path, package: &str, version: &str) -> Result<(), String> {
    let npm = support_find("npm").ok_or("npm is not on PATH (install Node.js and npm)")?;
    let spec = format!("{package}@{version}");
    let out = Command::new(npm)
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(prefix)
        .arg(&spec)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run npm: {e}"))?;
    succeeded(&format!("npm install {spec}"), &out)
}

/// `Err` naming `what` and the last line it printed on stderr, unless it
/// succeeded.
fn succeeded(what: &str, out: &std::process::Output) -> Result<(), String> {
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(format!("`{what}` failed ({}): {last}", out.status))
}

/// Says once, on the terminal itself, that the suite is skipped, or fails
/// when the suite is required.
fn skip(why: &str) {
    if hangar_testkit::required::required() {
        panic!("real-cli conformance required (HANGAR_TESTS_REQUIRED=1) but: {why}");
    }
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        // Straight to fd 2: the test harness captures eprintln!.
        let _ = writeln!(std::io::stderr(), "real-cli conformance skipped: {why}");
    });
}

/// A running `hangar-fake-model-api`: hangar-testkit's, shared
/// with the usage and limit tests.
pub use hangar_testkit::fake_api::FakeApi;

/// One test's real-CLI world: a hangar fixture whose providers are the
/// real CLIs, their offline config, and the fake API they talk to.
pub struct RealCli {
    /// Dropped first: the daemon and every agent end before the API does.
    pub hangar: Hangar,
    pub api: FakeApi,
    pub clis: &'static Installed,
    /// `XDG_CONFIG_HOME` (opencode's config), `XDG_DATA_HOME` (its
    /// sessions database) and friends live under here.
    pub xdg: PathBuf,
    /// Folders trusted so far (claude and codex ask otherwise).
    trusted: std::sync::Mutex<Vec<PathBuf>>,
    /// Codex and OpenCode reach the fake API's HTTPS side (see `use_https_api`).
    https: std::sync::atomic::AtomicBool,
    /// OpenCode's `cost` of its model (see `price_opencode_model`).
    opencode_cost: std::sync::Mutex<Option<Value>>,
    /// More of the person's `opencode.json` (see `opencode_settings`).
    opencode_extra: std::sync::Mutex<Option<Value>>,
}

impl RealCli {
    /// The world, or `None` (after one line saying why) when the CLIs
    /// cannot be installed here.
    pub fn start() -> Option<RealCli> {
        Self::start_with(&[])
    }

    /// Like `start`, with extra variables for hangar (and so its agents).
    pub fn start_with(extra: &[(&str, &str)]) -> Option<RealCli> {
        let clis = match installed() {
            Ok(c) => c,
            Err(why) => {
                skip(&why);
                return None;
            }
        };
        say_versions(&[CLAUDE, CODEX, OPENCODE]);
        let mut hangar = Hangar::with_env(extra);
        let api = FakeApi::start(&hangar.root.join("fake-api"));
        let xdg = hangar.root.join("xdg");
        let node_dir = support_find("node")
            .and_then(|n| n.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("/usr/bin"));
        let path = std::env::join_paths(
            std::iter::once(node_dir).chain(
                std::env::var_os("PATH")
                    .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
        )
        .expect("PATH");
        let vars: Vec<(&str, OsString)> = vec![
            ("PATH", path),
            ("HANGAR_CLAUDE_BIN", clis.claude.clone().into()),
            ("HANGAR_CODEX_BIN", clis.codex.clone().into()),
            ("HANGAR_OPENCODE_BIN", clis.opencode.clone().into()),
            // Claude Code, offline (docs/src/cli-facts.md).
            ("ANTHROPIC_BASE_URL", api.http_url().into()),
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY.into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
            ("DISABLE_AUTOUPDATER", "1".into()),
            // Codex reads its key from the variable its config names.
            (OPENAI_KEY_VAR, OPENAI_KEY.into()),
            // OpenCode keeps config and sessions under the XDG folders.
            ("XDG_CONFIG_HOME", xdg.join("config").into()),
            ("XDG_DATA_HOME", xdg.join("data").into()),
            ("XDG_STATE_HOME", xdg.join("state").into()),
            ("XDG_CACHE_HOME", xdg.join("cache").into()),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
            ("OPENCODE_DISABLE_SHARE", "1".into()),
        ];
        for (k, v) in vars {
            if !extra.iter().any(|(ek, _)| *ek == k) {
                hangar.set_env(k, v);
            }
        }
        let rc = RealCli {
            hangar,
            api,
            clis,
            xdg,
            trusted: Default::default(),
            https: Default::default(),
            opencode_cost: Default::default(),
            opencode_extra: Default::default(),
        };
        rc.hangar_config("");
        rc.write_codex_config();
        rc.write_opencode_config();
        rc.trust(&rc.hangar.work.clone());
        Some(rc)
    }

    /// Makes `root/<name>` (any name: odd characters are the point of some
    /// tests) and trusts it for claude and codex.
    pub fn folder(&self, name: &str) -> PathBuf {
        let dir = self.hangar.root.join(name);
        fs::create_dir_all(&dir).expect("create folder");
        let dir = fs::canonicalize(&dir).expect("canonical folder");
        self.trust(&dir);
        dir
    }

    /// Trusts `dir` for claude (`.claude.json` projects) and codex
    /// (`[projects."<dir>"]`). Call before a session starts there: the
    /// CLIs rewrite their own files while they run.
    pub fn trust(&self, dir: &Path) {
        let mut trusted = self.trusted.lock().unwrap();
        if !trusted.iter().any(|d| d == dir) {
            trusted.push(dir.to_path_buf());
        }
        let claude_json = self.hangar.claude_dir.join(".claude.json");
        let mut doc: Value = fs::read(&claude_json)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({}));
        doc["hasCompletedOnboarding"] = json!(true);
        let key_tail: String = {
            let chars: Vec<char> = ANTHROPIC_KEY.chars().collect();
            chars[chars.len() - 20..].iter().collect()
        };
        doc["customApiKeyResponses"] = json!({"approved": [key_tail], "rejected": []});
        if !doc["projects"].is_object() {
            doc["projects"] = json!({});
        }
        for d in trusted.iter() {
            let key = d.display().to_string();
            if !doc["projects"][&key].is_object() {
                doc["projects"][&key] = json!({});
            }
            doc["projects"][&key]["hasTrustDialogAccepted"] = json!(true);
        }
        fs::write(&claude_json, serde_json::to_vec_pretty(&doc).expect("json"))
            .expect("write .claude.json");
        drop(trusted);
        self.write_codex_config();
    }

    /// Points codex's and OpenCode's configs at the fake API's HTTPS side
    /// (127.0.0.2, in no agent's `NO_PROXY`: it stands for a remote API, so
    /// their traffic goes through hangar's proxy); claude's is its
    /// `ANTHROPIC_BASE_URL`, set by the test.
    pub fn use_https_api(&self) {
        self.https.store(true, std::sync::atomic::Ordering::SeqCst);
        self.write_codex_config();
        self.write_opencode_config();
    }

    /// Gives OpenCode's model a price of its own (`cost` in its
    /// `opencode.json`, USD per million tokens: `{"input": .., "output": ..,
    /// "cache_read": .., "cache_write": ..}`), as a person does for a model
    /// OpenCode's model list does not know.
    pub fn price_opencode_model(&self, cost: Value) {
        *self.opencode_cost.lock().unwrap() = Some(cost);
        self.write_opencode_config();
    }

    /// Adds `extra`'s top-level keys to the person's `opencode.json`
    /// (e.g. `{"permission": {"*": "ask"}}`).
    pub fn opencode_settings(&self, extra: Value) {
        *self.opencode_extra.lock().unwrap() = Some(extra);
        self.write_opencode_config();
    }

    fn api_url(&self) -> String {
        if self.https.load(std::sync::atomic::Ordering::SeqCst) {
            self.api.https_url()
        } else {
            self.api.http_url()
        }
    }

    fn write_codex_config(&self) {
        let mut text = format!(
            "# Written by the real-CLI harness, as docs/src/cli-facts.md says codex runs offline.\n\
             model = \"fake-model\"\n\
             model_provider = \"fake\"\n\n\
             [model_providers.fake]\n\
             name = \"fake\"\n\
             base_url = \"{}/v1\"\n\
             env_key = \"{OPENAI_KEY_VAR}\"\n\
             wire_api = \"responses\"\n",
            self.api_url()
        );
        for d in self.trusted.lock().unwrap().iter() {
            text.push_str(&format!(
                "\n[projects.{}]\ntrust_level = \"trusted\"\n",
                toml_quote(&d.display().to_string())
            ));
        }
        fs::write(self.hangar.codex_home.join("config.toml"), text).expect("write codex config");
    }

    fn write_opencode_config(&self) {
        let dir = self.xdg.join("config").join("opencode");
        fs::create_dir_all(&dir).expect("opencode config dir");
        let mut model = json!({"name": "Fake model"});
        if let Some(cost) = self.opencode_cost.lock().unwrap().clone() {
            model["cost"] = cost;
        }
        let mut doc = json!({
            "$schema": "https://opencode.ai/config.json",
            "model": "fake/fake-model",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": format!("{}/v1", self.api_url()), "apiKey": OPENCODE_KEY},
                "models": {"fake-model": model}
            }}
        });
        if let Some(Value::Object(extra)) = self.opencode_extra.lock().unwrap().clone() {
            for (k, v) in extra {
                doc[k] = v;
            }
        }
        fs::write(
            dir.join("opencode.json"),
            serde_json::to_vec_pretty(&doc).expect("json"),
        )
        .expect("write opencode.json");
    }

    /// Writes `$CLAUDE_CONFIG_DIR/settings.json` (e.g. `{"disableAllHooks": true}`).
    pub fn claude_settings(&self, settings: Value) {
        fs::write(
            self.hangar.claude_dir.join("settings.json"),
            serde_json::to_vec_pretty(&settings).expect("json"),
        )
        .expect("write claude settings");
    }

    /// `config.toml`: `text`. The CLIs start with the product's own spawn
    /// timeout (issue 44 part 7: the default is what a loaded machine
    /// needs; these tests once raised it for themselves).
    pub fn hangar_config(&self, text: &str) {
        self.hangar.write_config(text);
    }

    /// A command running `program` as a person would in their own terminal:
    /// the same CLI config and API, none of hangar's variables.
    pub fn outside(&self, program: &Path, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .current_dir(cwd)
            .stdin(Stdio::null())
            .env("TERM", "xterm-256color");
        for (k, v) in self.hangar.env_vars() {
            if !k.starts_with("HANGAR_") || k == OPENAI_KEY_VAR {
                cmd.env(k, v);
            }
        }
        cmd
    }

    /// Waits until the session's CLI has drawn its input prompt.
    pub fn wait_ready(&self, id: &str) -> String {
        let provider = self.hangar.session(id)["provider"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        // Claude Code 2.1.197 shows "? for shortcuts" under its box; 2.1.33x
        // starts in auto mode and shows "auto mode on (shift+tab to cycle)"
        // there instead (observed with 2.1.337, issue 46).
        let markers: &[&str] = match provider.as_str() {
            "claude" => &["? for shortcuts", "(shift+tab to cycle)"],
            "codex" => &["? for shortcuts"],
            "opencode" => &["ctrl+p commands"],
            _ => &[""],
        };
        self.wait_screen_any(id, markers, REAL_DEADLINE)
    }

    /// Waits until `needle` is on session `id`'s screen (real-CLI deadline).
    pub fn wait_screen(&self, id: &str, needle: &str) -> String {
        self.wait_screen_for(id, needle, REAL_DEADLINE)
    }

    pub fn wait_screen_for(&self, id: &str, needle: &str, timeout: Duration) -> String {
        self.wait_screen_any(id, &[needle], timeout)
    }

    /// Waits until one of `needles` is on session `id`'s screen.
    pub fn wait_screen_any(&self, id: &str, needles: &[&str], timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let out = self.hangar.run(&["screen", id]);
            let last = String::from_utf8_lossy(&out.stdout).into_owned();
            if needles.iter().any(|n| last.contains(n)) {
                return last;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out after {timeout:?} waiting until session {id}'s screen shows one of {needles:?}; screen:\n{last}\nfake API requests (api, turn): {:?}\nsession: {}\nclaude transcripts: {:?}",
                self.api
                    .requests()
                    .iter()
                    .map(|r| format!("{} {}", r["api"], r["turn"]))
                    .collect::<Vec<_>>(),
                self.hangar.session(id),
                self.claude_transcripts()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Types `text` into a ready session and returns the model request of
    /// that turn.
    ///
    /// Enter is never pressed again here (issue 44): `hangar send` exits 0
    /// only once it saw the turn start (or says, `confirmed: false`, that it
    /// cannot see this session's turns), and a turn it called delivered
    /// must reach the model. Pressing Enter again here hid exactly the case
    /// delivery exists to catch.
    pub fn submit(&self, id: &str, text: &str) -> Value {
        self.submit_sent(id, text).1
    }

    /// `submit`, returning `hangar send`'s reply too.
    pub fn submit_sent(&self, id: &str, text: &str) -> (Value, Value) {
        let sent = self.hangar.json(&["send", id, text]);
        let start = Instant::now();
        while start.elapsed() < REAL_DEADLINE {
            if let Some(r) = self.api.requests().into_iter().find(|r| r["turn"] == text) {
                return (sent, r);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let seen: Vec<String> = self
            .api
            .requests()
            .iter()
            .map(|r| {
                format!(
                    "{} {} turn={:?} reply={}",
                    r["method"], r["target"], r["turn"], r["reply"]
                )
            })
            .collect();
        panic!(
            "`hangar send` answered {sent} but the turn {text:?} of session {id} never reached the \
             model within {REAL_DEADLINE:?}; requests: {seen:#?}\nscreen:\n{}",
            String::from_utf8_lossy(&self.hangar.run(&["screen", id]).stdout)
        );
    }

    /// The model request whose reply calls `tool`, among those after the
    /// first `after` requests. Claude Code 2.1.197 offers MCP tools in the
    /// prompt's own request; 2.1.33x names them as deferred and the fake,
    /// as a model does, loads the tool through `ToolSearch` first, so the
    /// call comes a request later (issue 46).
    pub fn wait_tool_call(&self, tool: &str, after: usize) -> Value {
        let start = Instant::now();
        loop {
            let requests = self.api.requests();
            if let Some(r) = requests
                .iter()
                .skip(after)
                .find(|r| r["reply"]["tool"] == tool)
            {
                return r.clone();
            }
            assert!(
                start.elapsed() < REAL_DEADLINE,
                "no request's reply called {tool} within {REAL_DEADLINE:?}; replies: {:?}",
                requests
                    .iter()
                    .skip(after)
                    .map(|r| r["reply"].clone())
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until claude asks before running a tool, and returns with
    /// its "Do you want to proceed?" on screen. Claude Code 2.1.33x in its
    /// default auto mode, behind an API that is not Anthropic's (here the
    /// fake), first says "Auto mode can't check actions in this session"
    /// and offers "Enter to stay in auto mode" (approving each action that
    /// needs the check by hand): that Enter is the person's choice made
    /// here, and the question for the tool follows (issue 46).
    pub fn wait_tool_question(&self, id: &str) {
        let asked = self.wait_screen_any(
            id,
            &["Do you want to proceed?", "Enter to stay in auto mode"],
            REAL_DEADLINE,
        );
        if !asked.contains("Do you want to proceed?") {
            eprintln!("claude's auto-mode dialog: Enter stays in auto mode");
            self.hangar.ok(&["send", id, ""]);
            self.wait_screen(id, "Do you want to proceed?");
        }
    }

    /// Answers claude's tool question "Yes", as a person does: Enter when
    /// "Yes" is the highlighted choice (Claude Code 2.1.197: `❯ 1. Yes`),
    /// else Down, then Enter (2.1.337 lists `❯ No` first, then `Yes`, seen
    /// 2026-12-07), typed through an attach: a paste cannot carry an arrow
    /// key.
    pub fn approve_tool(&self, id: &str) {
        let screen = String::from_utf8_lossy(&self.hangar.run(&["screen", id]).stdout).into_owned();
        let choices: Vec<&str> = screen
            .lines()
            .skip_while(|l| !l.contains("Do you want to proceed?"))
            .collect();
        let highlighted = choices
            .iter()
            .find(|l| l.trim_start().starts_with('❯'))
            .unwrap_or_else(|| panic!("no highlighted choice under the question:\n{screen}"));
        if highlighted.contains("Yes") {
            self.hangar.ok(&["send", id, ""]);
            return;
        }
        assert!(
            highlighted.contains("No"),
            "an unknown choice: {highlighted}\n{screen}"
        );
        let mut term =
            crate::pty_screen::PtyApp::spawn(self.hangar.command(&["attach", id]), 40, 120);
        let start = Instant::now();
        while !term.text().contains("Do you want to proceed?") {
            assert!(
                start.elapsed() < REAL_DEADLINE,
                "the attach never showed the question:\n{}",
                term.text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        term.keys(&[b"\x1b[B"]);
        let start = Instant::now();
        while !term
            .text()
            .lines()
            .any(|l| l.trim_start().starts_with('❯') && l.contains("Yes"))
        {
            assert!(
                start.elapsed() < REAL_DEADLINE,
                "Down never highlighted Yes:\n{}",
                term.text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        term.keys(&[b"\r", b"\x02d"]);
        assert_eq!(term.wait_exit(), Some(0), "the attach detaches");
    }

    /// Every hangar MCP tool a request offers the model or names as
    /// deferred (Claude Code 2.1.33x lists deferred tools by name in a
    /// message: "The following deferred tools are now available via
    /// ToolSearch ...").
    pub fn hangar_tools_named(request: &Value) -> Vec<String> {
        let mut names: Vec<String> = request["body"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .filter(|n| n.starts_with("mcp__hangar__"))
            .collect();
        let text = request["body"]["messages"].to_string();
        for (at, _) in text.match_indices("mcp__hangar__") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Every file under `$CLAUDE_CONFIG_DIR/projects`, and under each
    /// sandboxed session's own claude folder (for failure messages).
    pub fn claude_transcripts(&self) -> Vec<PathBuf> {
        let sandboxes = fs::read_dir(self.hangar.home.join("sandbox"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("claude").join("projects"));
        std::iter::once(self.hangar.claude_dir.join("projects"))
            .chain(sandboxes)
            .flat_map(|root| support::files_under(&root))
            .collect()
    }

    /// Types `text` into a ready session and waits for the model's answer
    /// (the fake's default reply, `ANSWER(<text>)`) on its screen; Enter is
    /// pressed once, by `hangar send` (see `submit`).
    pub fn ask(&self, id: &str, text: &str) -> String {
        self.submit(id, text);
        let answer = format!("ANSWER({text})");
        let screen = self.wait_screen(id, &answer);
        if self.hangar.session(id)["provider"] == "claude" {
            // Claude Code writes its transcript after drawing the answer; a
            // test that stops it sooner tests the machine's load, not hangar.
            support::wait_until(
                "claude's transcript holds the answer",
                REAL_DEADLINE,
                || {
                    self.claude_transcripts()
                        .iter()
                        .any(|p| fs::read_to_string(p).is_ok_and(|t| t.contains(&answer)))
                },
            );
        }
        screen
    }

    /// Waits until `id` has a durable provider id (from its transcript, a
    /// hook, or the id hangar chose), and returns it.
    pub fn wait_provider_id(&self, id: &str) -> String {
        let mut found = None;
        support::wait_until(
            &format!("session {id} has a durable provider id"),
            REAL_DEADLINE,
            || {
                let (p, s) = self.hangar.provider_id(id);
                if s.as_deref() != Some("proxy-header") {
                    found = p;
                }
                found.is_some()
            },
        );
        found.expect("found once the wait ends")
    }

    /// After a person's own conversation (its first prompt was "outside
    /// one") appeared in session `id`'s folder: the session keeps its id
    /// `own` through a turn of its own ("inside two"), a hibernate and a
    /// wake, and the wake resumes its own conversation, not the person's.
    pub fn keeps_its_own_conversation_beside(&self, id: &str, own: &str, api: &str) {
        self.ask(id, "inside two");
        assert_eq!(self.hangar.provider_id(id).0.as_deref(), Some(own));
        self.hangar.ok(&["hibernate", id]);
        self.wait_state(id, "hibernated");
        assert_eq!(
            self.hangar.provider_id(id).0.as_deref(),
            Some(own),
            "the person's conversation was adopted"
        );
        self.hangar.ok(&["wake", id]);
        self.wait_state(id, "live");
        self.wait_ready(id);
        self.ask(id, "inside three");
        let req = self.api.wait_request("the turn after the wake", |r| {
            r["api"] == api && r["turn"] == "inside three"
        });
        let body = req["body"].to_string();
        assert!(
            body.contains("ANSWER(inside two)"),
            "not its own conversation"
        );
        assert!(
            !body.contains("ANSWER(outside one)"),
            "the wake resumed the person's conversation"
        );
    }

    /// Waits until session `id` is in `state` (real-CLI deadline).
    pub fn wait_state(&self, id: &str, state: &str) -> Value {
        let mut row = Value::Null;
        support::wait_until(&format!("session {id} is {state}"), REAL_DEADLINE, || {
            row = self.hangar.session(id);
            row["state"] == state
        });
        row
    }

    /// Every running process of this test (counted from /proc: it carries
    /// this test's `HANGAR_HOME`) whose command line contains `needle`.
    pub fn processes_matching(&self, needle: &str) -> Vec<i32> {
        self.hangar
            .pids_for_home()
            .into_iter()
            .filter(|&p| support::is_running(p) && support::cmdline(p).join(" ").contains(needle))
            .collect()
    }
}

/// The real CLIs start helpers of their own outside hangar's reach when run
/// by `outside` (claude's background-agent supervisor, codex's app-server):
/// they carry this test's CLI folders in their environment, which no other
/// test shares, and are killed here, after the daemon is asked to stop.
impl Drop for RealCli {
    fn drop(&mut self) {
        if self.hangar.daemon_pid_opt().is_some() {
            // Let the daemon end its sessions itself first (bounded by
            // `hangar shutdown`'s own wait).
            let _ = self.hangar.run(&["shutdown"]);
        }
        let marks = [
            format!("CLAUDE_CONFIG_DIR={}", self.hangar.claude_dir.display()),
            format!("CODEX_HOME={}", self.hangar.codex_home.display()),
            format!("XDG_DATA_HOME={}", self.xdg.join("data").display()),
        ];
        for _ in 0..5 {
            let pids: Vec<i32> = support::all_pids()
                .into_iter()
                .filter(|&p| {
                    let env = support::environ(p);
                    marks.iter().any(|m| env.contains(m))
                })
                .collect();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                // SAFETY: kill has no memory effects; only processes
                // carrying this test's unique temp folders are named.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A TOML basic string for a table key.
fn toml_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
