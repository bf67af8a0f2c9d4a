//! Bringing sessions to life and ending their processes.
//!
//! `wake.rs` is the single-flight wake (DESIGN.md rule 6), `launch.rs` starts
//! one process, `stop.rs` ends one and watches exits, `restore.rs` spawns the
//! visible panes at start (`start_slot.rs` is what its concurrency bound
//! counts), `queue.rs` is the wake queue that paces spawns and holds them
//! behind the authentication breaker.
//!
//! All of it is the `Spawner`'s: it wakes without looking at the budget
//! (the governor, a layer up, makes room after a wake). Every decision of a
//! start is `hangar_core::launch_plan`'s; where the process runs is its
//! place's (`crate::places`); what happened to a session is announced on
//! `crate::lifecycle`, where identity's and activity's watchers and a
//! fork's handoff prompt listen, so this module imports none of them. It
//! is built from what a launch needs: the session owner, the journal, the
//! OS, the wake queue, the activity monitor (hook settings, a stop's wait
//! for the transcript), the CLI probe, proxy grants and orchestration's
//! tokens, `[governor]`'s breaker and authentication rules (`StartRules`,
//! fixed at start) and the reloadable sections a spawn reads when it
//! begins.

mod launch;
pub mod queue;
pub mod restore;
mod settings;
pub mod start_slot;
mod stop;
#[cfg(test)]
mod tests;
mod wake;

pub use settings::{RestoreConfig, StartRules};

use std::sync::Arc;

use hangar_core::SessionMeta;
use hangar_providers::ProvidersConfig;
use hangar_providers::launch::LaunchSpec;

use crate::Paths;
use crate::activity::Monitor;
use crate::cli_probe::CliProbe;
use crate::journal::Journal;
use crate::os::Os;
use crate::proxy_observer::ProxyGrants;
use crate::pty::TerminalConfig;
use crate::section::Section;
use crate::sessions::Sessions;
use queue::WakeQueue;

/// What a launch asks of orchestration: the session's MCP server added to
/// its command (a token minted, its config written) when `[mcp]` and the
/// session allow it. `orchestration` implements it, so the spawner imports
/// nothing of the layer that wakes through it.
pub trait LaunchMcp: Send + Sync {
    fn with_mcp(&self, meta: &SessionMeta, spec: LaunchSpec) -> LaunchSpec;
}

/// Brings sessions to life and ends their processes.
pub struct Spawner {
    /// Where a session's process runs: this machine, the sandbox, an
    /// engine (issue 43).
    pub(crate) places: Arc<crate::places::Places>,
    pub(crate) paths: Paths,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) journal: Arc<Journal>,
    pub(crate) os: Arc<dyn Os>,
    pub(crate) queue: Arc<WakeQueue>,
    pub(crate) monitor: Arc<Monitor>,
    pub(crate) cli_probe: Arc<CliProbe>,
    pub(crate) grants: Arc<ProxyGrants>,
    /// The orchestration MCP server a launch gets (a token minted at each
    /// spawn), with `[mcp]` as it is then.
    pub(crate) mcp: Arc<dyn LaunchMcp>,
    /// `[governor]` as at start: the breaker and what an auth failure is.
    pub(crate) start_rules: StartRules,
    pub(crate) providers: Section<ProvidersConfig>,
    /// `[accounts.NAME]`: a session's account adds its credential at each
    /// start, as config.toml says then.
    pub(crate) accounts: Section<hangar_core::accounts::AccountsConfig>,
    pub(crate) restore: Section<RestoreConfig>,
    pub(crate) terminal: Section<TerminalConfig>,
    /// Where what happens to a session is announced (identity's and
    /// activity's watchers, a fork's handoff prompt listen).
    pub(crate) lifecycle: Arc<crate::lifecycle::Lifecycle>,
}
