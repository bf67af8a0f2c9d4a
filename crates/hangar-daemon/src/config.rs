//! `$HANGAR_HOME/config.toml`: provider programs, custom providers, restore
//! limits.
//!
//! A missing file is the defaults. A file that does not parse is an error the
//! daemon reports at start (it refuses to run on a config it cannot read,
//! rather than silently ignoring what the user asked for).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub restore: RestoreConfig,
    #[serde(default)]
    pub attach: AttachConfig,
}

/// A provider's program, or a whole custom provider.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The program to run (a path, or a name looked up on PATH).
    pub program: Option<String>,
    /// Arguments always passed (custom providers).
    #[serde(default)]
    pub args: Vec<String>,
    /// Arguments to resume a provider session; `{id}` is replaced by the id
    /// (custom providers).
    #[serde(default)]
    pub resume_args: Vec<String>,
    /// Arguments added in dangerous mode (custom providers).
    #[serde(default)]
    pub dangerous_args: Vec<String>,
    /// Extra environment for the program.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreConfig {
    /// How many spawns run at once during a restore.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// How long an agent may take to show its first output.
    #[serde(default = "default_timeout")]
    pub spawn_timeout_secs: u64,
}

impl Default for RestoreConfig {
    fn default() -> Self {
        RestoreConfig {
            concurrency: default_concurrency(),
            spawn_timeout_secs: default_timeout(),
        }
    }
}

fn default_concurrency() -> usize {
    4
}
fn default_timeout() -> u64 {
    30
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachConfig {
    /// The detach sequence: a prefix key then a key, tmux style.
    #[serde(default = "default_detach")]
    pub detach_key: String,
}

impl Default for AttachConfig {
    fn default() -> Self {
        AttachConfig {
            detach_key: default_detach(),
        }
    }
}

fn default_detach() -> String {
    "C-b d".to_owned()
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
        Ok(config)
    }

    pub fn spawn_timeout(&self) -> Duration {
        Duration::from_secs(self.restore.spawn_timeout_secs.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_config_file_is_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load(&dir.path().join("config.toml")).unwrap();
        assert_eq!(c.restore.concurrency, 4);
        assert_eq!(c.restore.spawn_timeout_secs, 30);
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
    fn an_unparsable_config_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "[restore\n").unwrap();
        let e = Config::load(&p).unwrap_err().to_string();
        assert!(e.contains("config.toml"), "{e}");
    }
}
