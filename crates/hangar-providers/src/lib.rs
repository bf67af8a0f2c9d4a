//! hangar-providers: everything hangar knows about each agent CLI (claude,
//! codex, opencode, and custom providers), as plain functions over files
//! and text.
//!
//! Each CLI has an adapter (`adapter::Adapter`, one folder per CLI:
//! `claude`, `codex`, `opencode`, `shell` for the shell and custom
//! providers) that `adapter::adapter` registers; the modules below ask it.
//!
//! How each is launched and resumed (`launch`, `config`), why a launch
//! failed (`failure_reason`) and whether a failure looks like a lost login
//! (`auth_failure`); where its transcripts are and what they say
//! (`transcript`: discovery, messages, activity, turns); its hooks, its
//! per-process record and its background agents (`claude`); its database
//! (`opencode`); its permission prompts on screen (`screen`); what its
//! `--version` and `--help` say (`cli_facts`); what a sandboxed CLI is
//! given of the person's own settings (`sandboxed`).
//!
//! This crate must never run tokio, hold the daemon's state or write the
//! store: it reads files (and OpenCode's SQLite database, read-only) and
//! answers. The daemon gathers the facts, calls it, and carries out the
//! answer.

pub mod adapter;
pub mod auth_failure;
pub mod claude;
pub mod cli_facts;
pub mod codex;
pub mod config;
pub mod failure_reason;
pub mod fork;
pub mod launch;
pub mod opencode;
pub mod sandboxed;
pub mod screen;
pub mod shell;
pub mod transcript;

pub use adapter::{Adapter, adapter};
pub use config::{ProviderConfig, ProvidersConfig};
