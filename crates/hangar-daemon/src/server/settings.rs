//! `[attach]`: how an attached client detaches. A leaf config.rs assembles;
//! the attach reads it through the daemon's `Section` of it.

use serde::Deserialize;

/// `[attach]`.
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
