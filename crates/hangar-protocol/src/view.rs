//! The JSON shapes the command-line contract promises (DESIGN.md section 4).
//!
//! `hangar ls --json`, `hangar status --json` and `hangar tab ls --json` print
//! these exactly. Fields are only ever added, never renamed or removed.

use serde::{Deserialize, Serialize};

/// One row of `hangar ls`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub id: String,
    pub provider: String,
    pub cwd: String,
    pub title: String,
    /// `pane`, `parked` or `buried`.
    pub placement: String,
    pub tab: Option<String>,
    /// `live`, `spawning`, `hibernated`, `failed` or `exited`.
    pub state: String,
    pub pid: Option<u32>,
    pub provider_session_id: Option<String>,
    /// `resume-request`, `transcript`, `proxy-header`, or null.
    #[serde(default)]
    pub provider_session_source: Option<String>,
    pub pinned: bool,
    pub parent: Option<String>,
    pub root: Option<String>,
    pub run: Option<String>,
    #[serde(default)]
    pub linked_parent: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    /// Why the session is `failed` (or how it exited), for a person to read.
    #[serde(default)]
    pub reason: Option<String>,
    /// How the last start went: `fresh` (no durable provider id to resume)
    /// or `resumed`.
    #[serde(default)]
    pub started: Option<String>,
    #[serde(default)]
    pub dangerous: bool,
    #[serde(default)]
    pub exit_code: Option<i32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonView {
    pub pid: u32,
    pub version: String,
    #[serde(default)]
    pub home: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCounts {
    pub total: usize,
    pub panes: usize,
    pub parked: usize,
    pub buried: usize,
    pub live: usize,
    pub hibernated: usize,
    pub failed: usize,
    #[serde(default)]
    pub spawning: usize,
    #[serde(default)]
    pub exited: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RestoreView {
    /// The live set size: pane sessions the restore had to spawn.
    pub expected: usize,
    pub restored: usize,
    pub hibernated: usize,
    pub failed: usize,
    /// Every expected spawn has finished, whether it succeeded or failed.
    pub complete: bool,
    pub duration_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusView {
    pub daemon: DaemonView,
    pub sessions: SessionCounts,
    pub restore: RestoreView,
    #[serde(default)]
    pub dangerous: bool,
    /// Problems a person should know about (a store moved aside, ...).
    #[serde(default)]
    pub notices: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TabView {
    pub id: String,
    pub title: String,
    pub cwd: Option<String>,
    pub active: bool,
    pub panes: Vec<String>,
    pub parked: Vec<String>,
    pub focus: Option<String>,
}
