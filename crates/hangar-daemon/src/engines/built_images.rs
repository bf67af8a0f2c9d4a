//! The images `hangar engine image build NAME --provider P` made, kept per
//! engine and provider in `HANGAR_HOME/engines/images.json`: the image a
//! session of provider P on engine NAME runs when neither `hangar new
//! --image` nor the engine's `image` in config.toml names one. So a build
//! is enough to start `hangar new --engine NAME`; config.toml still wins.
//!
//! A build for several providers (`--provider claude,codex@0.171.0`) is
//! each one's default; a build with no provider is the `shell`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Image by provider, by engine.
type Table = BTreeMap<String, BTreeMap<String, String>>;

pub struct BuiltImages {
    file: PathBuf,
    table: Mutex<Table>,
}

/// The provider names a build's `--provider` value names (`claude@2.1.197,
/// codex` is claude and codex; none is the shell).
pub fn providers_of(spec: Option<&str>) -> Vec<String> {
    let named: Vec<String> = spec
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('@').map_or(p, |(name, _)| name).to_owned())
        .collect();
    if named.is_empty() {
        vec!["shell".to_owned()]
    } else {
        named
    }
}

impl BuiltImages {
    /// The record under `home`; a missing or unreadable file is an empty
    /// record (said in the log when it is unreadable).
    pub fn load(home: &Path) -> BuiltImages {
        let file = home.join("engines").join("images.json");
        let table = match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(
                    "{} is not a record of built images ({e}); builds are recorded anew",
                    file.display()
                );
                Table::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Table::new(),
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", file.display());
                Table::new()
            }
        };
        BuiltImages {
            file,
            table: Mutex::new(table),
        }
    }

    /// The image built for `provider` on `engine`, if any.
    pub fn get(&self, engine: &str, provider: &str) -> Option<String> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.get(engine)?.get(provider).cloned()
    }

    /// Record `image` as built on `engine` for `providers`, and save.
    pub fn record(&self, engine: &str, providers: &[String], image: &str) -> std::io::Result<()> {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let row = table.entry(engine.to_owned()).or_default();
        for p in providers {
            row.insert(p.clone(), image.to_owned());
        }
        let bytes = serde_json::to_vec_pretty(&*table).map_err(std::io::Error::other)?;
        if let Some(dir) = self.file.parent() {
            hangar_protocol::paths::ensure_private_dir(dir)?;
        }
        hangar_protocol::paths::write_private(&self.file, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_names_each_provider_it_holds_and_the_shell_when_none() {
        assert_eq!(providers_of(None), ["shell"]);
        assert_eq!(providers_of(Some(" ")), ["shell"]);
        assert_eq!(
            providers_of(Some("claude@2.1.197, codex")),
            ["claude", "codex"]
        );
    }

    #[test]
    fn a_recorded_build_is_read_back_by_the_next_daemon() {
        let home = tempfile::TempDir::new().expect("home");
        let built = BuiltImages::load(home.path());
        assert_eq!(built.get("pod", "claude"), None);
        built
            .record(
                "pod",
                &providers_of(Some("claude,codex@0.171.0")),
                "localhost/hangar-pod-claude-codex",
            )
            .expect("record");
        built
            .record("pod", &providers_of(None), "localhost/hangar-pod-shell")
            .expect("record");
        let again = BuiltImages::load(home.path());
        assert_eq!(
            again.get("pod", "codex").as_deref(),
            Some("localhost/hangar-pod-claude-codex")
        );
        assert_eq!(
            again.get("pod", "shell").as_deref(),
            Some("localhost/hangar-pod-shell")
        );
        assert_eq!(again.get("other", "claude"), None);
        // Another build for claude replaces its default only.
        again
            .record("pod", &["claude".to_owned()], "localhost/newer")
            .expect("record");
        assert_eq!(
            again.get("pod", "claude").as_deref(),
            Some("localhost/newer")
        );
        assert_eq!(
            again.get("pod", "codex").as_deref(),
            Some("localhost/hangar-pod-claude-codex")
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.path().join("engines"))
            .expect("folder")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_damaged_record_is_an_empty_one() {
        let home = tempfile::TempDir::new().expect("home");
        std::fs::create_dir_all(home.path().join("engines")).expect("dir");
        std::fs::write(home.path().join("engines/images.json"), b"{not json").expect("write");
        assert_eq!(BuiltImages::load(home.path()).get("pod", "shell"), None);
    }
}
