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
//!
//! # Adding a CLI
//!
//! Most CLIs are data: a description file (`described`; `clis/<name>.toml`
//! built in, or `[providers.NAME]` in config.toml, with the same keys) says
//! how to start, resume and fork it, how its conversation's id is known,
//! its state folder and session files, its activity, its MCP server and its
//! version. A shipped file is registered with its `Provider` variant and
//! name in `hangar_core::model` and its line in `described::SHIPPED`.
//!
//! A CLI whose behaviour a file cannot say gets a folder and a registration:
//!
//! 1. `src/<cli>/` with `mod.rs` and `adapter.rs`: a unit struct that
//!    implements [`Adapter`]. Every method has the answer of a CLI that
//!    lacks the feature, so implement only what the CLI has: its launch and
//!    resume arguments (`session_args`), hangar's MCP server (`takes_mcp`,
//!    `with_mcp`), its tested version and npm package, what its `--help`
//!    tells (`reads_help`, `help_facts`, `with_cli_facts`), where its
//!    transcripts are and how to read them (`transcript_state`,
//!    `transcript_dirs`, `transcript_entry_facts`, `find_transcript`,
//!    `transcript_message`, `turn_facts`, `transcript_reading`), its hooks
//!    (`takes_hooks`, `hook_settings`, `hook_settings_args`), what proves
//!    which conversation a session is (`own_record`, `record_dir`,
//!    `holds_transcript_open`, `conversation_in_database`), a resume it
//!    refuses (`resume_refusal`), its permission prompts on screen, its
//!    own sandbox's line in `hangar ls`, and what a sandboxed session's
//!    state folders hold of it (`sandbox_state`, `sandbox_settings`,
//!    `sandbox_trust`). Learn each fact from the real CLI
//!    (docs/src/cli-facts.md: run it against the fake model API) and test it in the
//!    folder.
//! 2. The registration: its `Provider` variant and name in
//!    `hangar_core::model` (`Provider::name`, `FromStr`, `AGENT_CLIS`), and
//!    its line in [`adapter()`].
//!
//! Nothing else matches on a CLI's provider: the daemon, hangar-core and
//! the transcript readers ask the adapter (`.ci/shape` refuses a new
//! `Provider::Claude|Codex|Opencode` outside the adapter folders and the
//! few places the rule lists).

#![forbid(unsafe_code)]

pub mod adapter;
pub mod auth_failure;
pub mod claude;
pub mod cli_facts;
pub mod codex;
pub mod config;
pub mod described;
pub mod failure_reason;
pub mod fork;
pub mod launch;
pub mod opencode;
pub mod sandboxed;
pub mod screen;
pub mod shell;
pub mod transcript;

pub use adapter::{Adapter, HookSettings, SessionArgs, StateDir, adapter, config_folder_var};
pub use config::{ProviderConfig, ProvidersConfig};
