//! hangar-core: the workspace model and every rule over it, as pure functions
//! over plain data.
//!
//! Nothing in this crate touches a file, a process, a clock or a socket. The
//! daemon gathers facts, calls into here for every decision ("which sessions
//! does a restore spawn", "what does pruning drop", "may this close cascade"),
//! and carries the answer out. Times are passed in as milliseconds since the
//! Unix epoch by the caller.

#![forbid(unsafe_code)]

pub mod accounts;
pub mod activity;
pub mod activity_debounce;
pub mod auto_prompt;
pub mod budget;
pub mod claude_slug;
pub mod cli_versions;
pub mod display;
pub mod engine;
#[doc(hidden)]
pub mod fixtures;
pub mod fork;
pub mod found_identity;
pub mod goal;
pub mod governor;
pub mod hosts;
pub mod import_merge;
pub mod in_use;
pub mod input_box;
pub mod keys;
pub mod launch_plan;
pub mod ledger;
pub mod lookup;
pub mod model;
pub mod new_session;
pub mod opencode_identity;
pub mod orchestration;
pub mod ownership;
pub mod patch;
pub mod placement;
pub mod prompt_match;
pub mod prune;
pub mod reload_plan;
pub mod restore_plan;
pub mod review;
pub mod sandbox;
pub mod search;
pub mod session_id;
pub mod stop_gate;
pub mod tile;
pub mod usage;
pub mod usage_limits;
pub mod wake_decision;
pub mod work_in_flight;
pub mod worktree;

#[cfg(test)]
mod test_support;

pub use model::*;
pub use ownership::{live_set, owned_set, unowned_sessions};
pub use placement::{PanePosition, PlacementError};
pub use prune::{PruneReport, is_closed, prune};
pub use restore_plan::RestorePlan;
pub use tile::{Direction, FocusMove, LeafRemoval, Region, Side, Tile, TileError, clamp_ratio};
