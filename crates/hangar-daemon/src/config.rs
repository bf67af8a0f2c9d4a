//! `$HANGAR_HOME/config.toml`, assembled from the sections each owner
//! defines beside its code (`[governor]` in governor.rs, `[restore]` in
//! spawn/restore.rs, `[attach]` in server/attach.rs, `[worktree]` in
//! worktree.rs, `[providers.*]` in hangar-providers, `[proxy]` in
//! hangar-proxy, `[activity]`, `[notify]`, `[mcp]` in theirs).
//!
//! A missing file is the defaults. A file that does not parse is an error the
//! daemon reports at start (it refuses to run on a config it cannot read,
//! rather than silently ignoring what the user asked for).
//!
//! `hangar reload` (and `hangar wake` of a failed session) read the file
//! again: the sections read at each use (providers, restore, attach,
//! worktree, notify, mcp) take effect at once; the sections that built
//! running machinery at start (governor, proxy, activity) are kept and named
//! as needing a daemon restart. A reload never applies a file that does not
//! parse: the daemon keeps the settings it has.
//!
//! The root of the crate's imports: it names every owner's section type, and
//! no owner imports it (a subsystem holds a generic `section::Section`); only
//! lib.rs, the handlers and reload.rs see the whole `Config` (`.ci/shape`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use serde::Deserialize;

use crate::governor::GovernorConfig;
use crate::pty::TerminalConfig;
use crate::section::Section;
use crate::server::AttachConfig;
use crate::spawn::RestoreConfig;
use crate::worktree::WorktreeConfig;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub providers: hangar_providers::ProvidersConfig,
    #[serde(default)]
    pub restore: RestoreConfig,
    #[serde(default)]
    pub attach: AttachConfig,
    #[serde(default)]
    pub governor: GovernorConfig,
    #[serde(default)]
    pub worktree: WorktreeConfig,
    #[serde(default)]
    pub proxy: hangar_proxy::ProxyConfig,
    /// `[activity]`: the sources of working/waiting/idle and the debounce.
    #[serde(default)]
    pub activity: crate::activity::ActivityConfig,
    /// `[notify]`: how the person is told an agent waits or finished.
    #[serde(default)]
    pub notify: crate::activity::notify::NotifyConfig,
    /// `[mcp]`: orchestration over MCP (on by default).
    #[serde(default)]
    pub mcp: crate::orchestration::McpConfig,
    /// `[hosts.NAME]`: other machines' hangars, reached over SSH by the
    /// CLI's `--host NAME`; the daemon itself never connects to them.
    #[serde(default)]
    pub hosts: BTreeMap<String, hangar_core::hosts::HostConfig>,
    /// `[terminal]`: each session's server-side terminal.
    #[serde(default)]
    pub terminal: TerminalConfig,
    /// `[usage]`: prices and budgets (issue 29).
    #[serde(default)]
    pub usage: crate::usage::UsageConfig,
    /// `[limits]`: carrying on by itself after a usage limit (issue 29).
    #[serde(default)]
    pub limits: crate::usage::LimitsConfig,
    /// `[engines.NAME]`: container engines sessions may run on (issue 32).
    #[serde(default)]
    pub engines: crate::engines::EnginesConfig,
    /// `[sandbox]`: the walls around sandboxed sessions (issue 32).
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxConfig,
    /// `[accounts.NAME]`: provider accounts a session may run under
    /// (`hangar new --account`, issue 47).
    #[serde(default)]
    pub accounts: hangar_core::accounts::AccountsConfig,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config {path} is not valid: {message}; fix or remove it")]
    Parse { path: String, message: String },
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let mut config: Config = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        config.restore.concurrency = config.restore.concurrency.max(1);
        config
            .governor
            .parked_ttl()
            .map_err(|message| ConfigError::Parse {
                path: path.display().to_string(),
                message,
            })?;
        if let Some(max) = config.usage.max_cost_usd_per_day {
            crate::usage::budget::check_fleet_budget(
                max,
                &config.usage.prices,
                &path.with_file_name("state.db"),
                // Read before the daemon (and its `Os`) exists: the clock
                // it will start from.
                i64::try_from(crate::now_ms()).unwrap_or(i64::MAX),
            )
            .map_err(|message| ConfigError::Parse {
                path: path.display().to_string(),
                message,
            })?;
        }
        for (name, host) in &config.hosts {
            hangar_core::hosts::validate(name, host).map_err(|e| ConfigError::Parse {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(config)
    }
}

/// The daemon's settings, replaced whole when config.toml is read again.
///
/// A request takes one [`LiveConfig::snapshot`] and hands each subsystem the
/// section it needs; a subsystem that reads a reloadable section on its own
/// (a spawn, a notification) holds a [`Section`] of it. It also derefs to
/// the current `Config`, for the tests. Each version is leaked on purpose: a reference taken
/// before a reload (held across an await, say) must stay valid, and a
/// version is only made when the file changed (a few KB per edit a person
/// made), so the leak is bounded by the edits of one daemon's life.
pub struct LiveConfig {
    current: RwLock<&'static Config>,
}

/// What reading config.toml again changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// Whether the file differed from the settings in use.
    pub changed: bool,
    /// Sections that changed but only take effect after a daemon restart.
    pub needs_restart: Vec<&'static str>,
}

impl LiveConfig {
    pub fn new(config: Config) -> LiveConfig {
        LiveConfig {
            current: RwLock::new(Box::leak(Box::new(config))),
        }
    }

    /// The settings in use now: taken once per request, so one request
    /// never mixes two versions.
    pub fn snapshot(&self) -> &'static Config {
        // A poisoned lock still holds a valid reference.
        *self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Read `path` again and take its reloadable sections; a file that does
    /// not parse changes nothing.
    pub fn reload(&self, path: &Path) -> Result<ReloadOutcome, ConfigError> {
        let fresh = Config::load(path)?;
        let mut slot = self.current.write().unwrap_or_else(|p| p.into_inner());
        let old: &Config = *slot;
        let (merged, needs_restart) = old.merged_with(fresh);
        let changed = !same_text(old, &merged);
        if changed {
            *slot = Box::leak(Box::new(merged));
        }
        Ok(ReloadOutcome {
            changed,
            needs_restart,
        })
    }
}

impl std::ops::Deref for LiveConfig {
    type Target = Config;
    fn deref(&self) -> &Config {
        self.snapshot()
    }
}

impl LiveConfig {
    /// A subsystem's view of one section, e.g. `live.section(|c| &c.notify)`.
    pub fn section<T: 'static>(self: &Arc<Self>, pick: fn(&Config) -> &T) -> Section<T> {
        let live = self.clone();
        Section::new(move || pick(live.snapshot()))
    }
}

/// Compared through `Debug`: the config types are plain data and several
/// live in other modules without `PartialEq`.
fn same_text<T: std::fmt::Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

impl Config {
    /// `fresh` with the sections that built running machinery at start kept
    /// from `self`; also names those that differ (they need a restart).
    pub fn merged_with(&self, mut fresh: Config) -> (Config, Vec<&'static str>) {
        let mut needs_restart = Vec::new();
        if !same_text(&self.governor, &fresh.governor) {
            needs_restart.push("governor");
        }
        if !same_text(&self.proxy, &fresh.proxy) {
            needs_restart.push("proxy");
        }
        if !same_text(&self.activity, &fresh.activity) {
            needs_restart.push("activity");
        }
        fresh.governor = self.governor.clone();
        fresh.proxy = self.proxy.clone();
        fresh.activity = self.activity.clone();
        (fresh, needs_restart)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_and_a_bad_one_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "[hosts.build]\nssh = \"me@build\"\nport = 2222\nhome = \"~/.hangar\"\n",
        )
        .unwrap();
        let c = Config::load(&p).unwrap();
        assert_eq!(c.hosts["build"].ssh, "me@build");
        assert_eq!(c.hosts["build"].port, Some(2222));
        std::fs::write(&p, "[hosts.build]\nssh = \"-oProxyCommand=x\"\n").unwrap();
        let e = Config::load(&p).unwrap_err().to_string();
        assert!(e.contains("[hosts.build]"), "{e}");
        std::fs::write(&p, "[hosts.build]\nssh = \"me@build\"\nprot = 22\n").unwrap();
        let e = Config::load(&p).unwrap_err().to_string();
        assert!(e.contains("prot"), "{e}");
    }

    #[test]
    fn a_missing_config_file_is_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load(&dir.path().join("config.toml")).unwrap();
        assert_eq!(c.restore.concurrency, 4);
        assert_eq!(c.restore.spawn_timeout_secs, 120);
    }

    #[test]
    fn custom_providers_and_limits_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "[providers.aider]\nprogram = \"aider\"\nargs = [\"--no-git\"]\n[restore]\nconcurrency = 2\n",
        )
        .unwrap();
        let c = Config::load(&p).unwrap();
        assert_eq!(c.restore.concurrency, 2);
        assert_eq!(c.providers["aider"].args, vec!["--no-git"]);
    }

    #[test]
    fn the_worktree_section_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "[worktree]\nfolder = \"~/wt/{repo}/{branch}\"\nsetup_command = \"make setup\"\n",
        )
        .unwrap();
        let c = Config::load(&p).unwrap();
        assert_eq!(c.worktree.folder.as_deref(), Some("~/wt/{repo}/{branch}"));
        assert_eq!(c.worktree.setup_command.as_deref(), Some("make setup"));
        assert_eq!(c.worktree.setup_timeout_secs, 600);
    }

    #[test]
    fn an_unparsable_config_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "[restore\n").unwrap();
        let e = Config::load(&p).unwrap_err().to_string();
        assert!(e.contains("config.toml"), "{e}");
    }

    #[test]
    fn a_reload_takes_new_providers_and_keeps_the_machinery_sections() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "[governor]\nmax_live = 3\n").unwrap();
        let live = LiveConfig::new(Config::load(&p).unwrap());
        std::fs::write(
            &p,
            "[providers.aider]\nprogram = \"aider\"\n[governor]\nmax_live = 5\n[restore]\nspawn_timeout_secs = 7\n",
        )
        .unwrap();
        let outcome = live.reload(&p).unwrap();
        assert!(outcome.changed);
        assert_eq!(outcome.needs_restart, vec!["governor"]);
        assert!(live.providers.contains_key("aider"));
        assert_eq!(live.restore.spawn_timeout_secs, 7);
        assert_eq!(live.governor.max_live, Some(3), "kept until a restart");
    }

    #[test]
    fn a_reload_of_a_broken_file_keeps_the_settings_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "[providers.aider]\nprogram = \"aider\"\n").unwrap();
        let live = LiveConfig::new(Config::load(&p).unwrap());
        let before = live.snapshot() as *const Config;
        std::fs::write(&p, "[providers.aider\n").unwrap();
        assert!(live.reload(&p).is_err());
        assert!(live.providers.contains_key("aider"));
        std::fs::write(&p, "[providers.aider]\nprogram = \"aider\"\n").unwrap();
        assert!(!live.reload(&p).unwrap().changed);
        assert_eq!(live.snapshot() as *const Config, before, "no new version");
    }
}
