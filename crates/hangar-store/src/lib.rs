//! hangar-store: crash-safe persistence of the hangar workspace (SQLite) and
//! its JSON export/import, including Agent Code's `workspace.json`.
//!
//! This crate decides nothing about the workspace's rules: every repair it
//! applies (on load, on import) is `hangar_core::prune`. What it guarantees
//! is that a save is one transaction, that a save can never drop a session
//! it was not told to remove (rule 5 of DESIGN.md), and that no store file
//! is ever deleted or rewritten when it is damaged or newer than this build.

#![forbid(unsafe_code)]

mod agent_code;
mod diff;
mod error;
mod export;
mod first_look;
mod import;
mod json_walk;
mod salvage;
mod schema;
mod screen;
mod store;
mod usage_ledger;

pub use agent_code::{import_agent_code, import_agent_code_at};
pub use error::StoreError;
pub use export::{EXPORT_FORMAT, EXPORT_VERSION, export_document, export_json, import_hangar_json};
pub use first_look::{FirstLook, FullLoad, RestOfStore, read_rest};
pub use import::{DroppedItem, ImportCounts, ImportError, ImportReport, KeptItem};
pub use schema::SUPPORTED_VERSION;
pub use screen::{SavedScreen, Screens};
pub use store::{Opened, RecordedProcess, Recovery, SaveStats, SkippedRow, Store};
pub use usage_ledger::{AccountWindow, UsageLedger};
