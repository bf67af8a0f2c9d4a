//! What orchestration must remember across a daemon restart: tombstones of
//! closed child agents (kept 24 hours so `list_agents` can still report them)
//! and whether each child's first prompt has been delivered.
//!
//! Kept in one small JSON file, `$HANGAR_HOME/orchestration.json`, mode 0600
//! (a pending first prompt is the agent's own text), replaced atomically on
//! every change. A file that does not parse is set aside and started over:
//! losing tombstones is better than refusing to start. A delivered prompt's
//! text is dropped at once; only the fact of delivery is kept.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A closed child agent, as `list_agents` reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tombstone {
    pub id: String,
    pub title: String,
    pub provider: String,
    pub cwd: String,
    #[serde(default)]
    pub provider_session_id: Option<String>,
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub root: Option<String>,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    /// The project tab it belonged to.
    #[serde(default)]
    pub tab: Option<String>,
    pub closed_at_ms: u64,
}

/// A child's first prompt: pending (with its text), delivered (text gone),
/// or typed but never submitted (text gone, `undelivered` says why).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstPrompt {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub delivered_at_ms: Option<u64>,
    /// Why a typed first prompt was not delivered; it is never typed again
    /// (its text may still sit in the agent's input box).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undelivered: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerData {
    #[serde(default)]
    pub tombstones: BTreeMap<String, Tombstone>,
    #[serde(default)]
    pub first_prompts: BTreeMap<String, FirstPrompt>,
}

impl LedgerData {
    /// Drop tombstones older than `keep_ms`.
    pub fn expire(&mut self, now_ms: u64, keep_ms: u64) -> bool {
        let before = self.tombstones.len();
        self.tombstones
            .retain(|_, t| now_ms.saturating_sub(t.closed_at_ms) < keep_ms);
        before != self.tombstones.len()
    }
}

pub struct Ledger {
    path: PathBuf,
    pub data: LedgerData,
}

impl Ledger {
    /// Load the ledger; a missing file is empty, a damaged one is moved aside.
    pub fn load(path: PathBuf) -> Ledger {
        let data = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(d) => d,
                Err(e) => {
                    let aside = path.with_extension("json.damaged");
                    tracing::warn!(
                        "orchestration ledger {} is damaged ({e}); moved to {}",
                        path.display(),
                        aside.display()
                    );
                    let _ = std::fs::rename(&path, aside);
                    LedgerData::default()
                }
            },
            Err(_) => LedgerData::default(),
        };
        Ledger { path, data }
    }

    /// Write the ledger atomically (temp file, fsync, rename).
    pub fn save(&self) -> std::io::Result<()> {
        crate::paths::write_private(&self.path, &serde_json::to_vec_pretty(&self.data)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tomb(id: &str, at: u64) -> Tombstone {
        Tombstone {
            id: id.into(),
            title: "t".into(),
            provider: "claude".into(),
            cwd: "/w".into(),
            provider_session_id: None,
            parent: Some("p".into()),
            root: Some("p".into()),
            run: Some("r".into()),
            role: None,
            tab: None,
            closed_at_ms: at,
        }
    }

    #[test]
    fn the_ledger_survives_a_reload_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("orchestration.json");
        let mut l = Ledger::load(path.clone());
        l.data.tombstones.insert("a".into(), tomb("a", 5));
        l.data.first_prompts.insert(
            "a".into(),
            FirstPrompt {
                text: None,
                delivered_at_ms: Some(6),
                undelivered: None,
            },
        );
        l.save().unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(Ledger::load(path).data, l.data);
    }

    #[test]
    fn tombstones_expire_after_the_keep_window() {
        let mut d = LedgerData::default();
        d.tombstones.insert("old".into(), tomb("old", 0));
        d.tombstones.insert("new".into(), tomb("new", 90));
        assert!(d.expire(100, 50));
        assert_eq!(d.tombstones.keys().collect::<Vec<_>>(), vec!["new"]);
    }

    #[test]
    fn a_damaged_ledger_is_set_aside_and_started_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("orchestration.json");
        std::fs::write(&path, "{nope").unwrap();
        let l = Ledger::load(path.clone());
        assert_eq!(l.data, LedgerData::default());
        assert!(path.with_extension("json.damaged").exists());
    }
}
