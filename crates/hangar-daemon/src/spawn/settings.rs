//! `[restore]`: how a start's restore paces its agents. A leaf the spawner
//! holds a `Section` of and config.rs assembles, so neither reaches back.

use serde::Deserialize;

/// `[restore]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreConfig {
    /// How many agents of a restore boot at once (forked, no first output
    /// yet; `start_slot.rs`).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// How long an agent may take to show its first output.
    #[serde(default = "default_timeout")]
    pub spawn_timeout_secs: u64,
    /// How long an agent that has shown its first output is watched before
    /// it counts as started: one that fails its login prints, then exits
    /// within it. Settles overlap; they hold no restore slot.
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
}

impl RestoreConfig {
    pub fn settle(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.settle_ms)
    }
}

impl Default for RestoreConfig {
    fn default() -> Self {
        RestoreConfig {
            concurrency: default_concurrency(),
            spawn_timeout_secs: default_timeout(),
            settle_ms: default_settle_ms(),
        }
    }
}

fn default_concurrency() -> usize {
    4
}
fn default_timeout() -> u64 {
    30
}
fn default_settle_ms() -> u64 {
    300
}
