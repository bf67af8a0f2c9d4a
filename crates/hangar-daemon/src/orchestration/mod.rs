//! Orchestration over MCP: agents that create, prompt, read, wait for and
//! close their own child agents through `hangar mcp`.
//!
//! Every call names its caller (the session `hangar mcp` was launched for)
//! and carries that session's token, minted here at each spawn and handed to
//! the agent only through its MCP configuration (a 0600 file, or codex's
//! `-c` overrides). The caller's identity is never taken from a tool
//! argument, and a token is never logged or journaled. What an agent may see
//! and close is decided by `hangar_core::orchestration`; this module gathers
//! the facts and carries the answers out, journaling every action with the
//! calling session.
//!
//! Two parts: `Orchestration`, the tokens, turn marks and ledger (a leaf the
//! spawner mints tokens in and the close path writes tombstones to), and
//! `AgentTools`, the tools' work (tools.rs), on top of the governor; this
//! file never names tools.rs's types, so the leaf stays a leaf.

pub mod ledger;
pub mod token;
pub(crate) mod tools;

pub use tools::AgentTools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use hangar_core::{SessionId, SessionMeta, Workspace};
use serde::Deserialize;

use hangar_providers::launch::{LaunchSpec, McpServer, with_mcp};
use hangar_providers::transcript::turns::TurnMark;
use ledger::{Ledger, Tombstone};

use crate::os::Clock;

/// `[mcp]` in config.toml.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Give claude, codex and OpenCode sessions the orchestration MCP server.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// When a person hibernates a parent, also hibernate its idle children.
    #[serde(default = "yes")]
    pub hibernate_idle_children: bool,
    /// How long closed children are reported as tombstones.
    #[serde(default = "default_tombstone_hours")]
    pub tombstone_hours: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            enabled: true,
            hibernate_idle_children: true,
            tombstone_hours: default_tombstone_hours(),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_tombstone_hours() -> u64 {
    24
}

impl McpConfig {
    pub fn tombstone_keep_ms(&self) -> u64 {
        self.tombstone_hours.saturating_mul(3_600_000)
    }
}

/// The daemon's orchestration state: tokens and turn marks in memory, the
/// ledger (tombstones, first prompts) on disk.
pub struct Orchestration {
    home: PathBuf,
    clock: Arc<dyn Clock>,
    tokens: Mutex<HashMap<SessionId, String>>,
    turns: Mutex<HashMap<SessionId, TurnMark>>,
    ledger: Mutex<Ledger>,
}

impl Orchestration {
    pub fn new(home: PathBuf, clock: Arc<dyn Clock>) -> Orchestration {
        let ledger = Ledger::load(home.join("orchestration.json"));
        Orchestration {
            home,
            clock,
            tokens: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
            ledger: Mutex::new(ledger),
        }
    }

    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        // Plain data, consistent between statements: a panic elsewhere must
        // not wedge orchestration.
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        Self::lock(&self.ledger)
    }

    pub(crate) fn turns(&self) -> MutexGuard<'_, HashMap<SessionId, TurnMark>> {
        Self::lock(&self.turns)
    }

    /// The folder of the per-session MCP config files.
    pub fn config_dir(&self) -> PathBuf {
        self.home.join("mcp")
    }

    pub fn config_file(&self, id: &SessionId) -> PathBuf {
        self.config_dir().join(format!("{id}.json"))
    }

    /// Does `token` belong to `caller`'s current spawn?
    pub fn token_matches(&self, caller: &SessionId, token: &str) -> bool {
        Self::lock(&self.tokens)
            .get(caller)
            .is_some_and(|t| token::same(t, token))
    }

    /// Remember closed sessions that were orchestration children as
    /// tombstones, and forget their tokens and config files. Called with the
    /// model still holding them, right before they are removed.
    pub fn remember_closed(&self, ws: &Workspace, ids: &[SessionId], keep_ms: u64) {
        let now = self.clock.now_ms();
        {
            let mut tokens = Self::lock(&self.tokens);
            let mut turns = Self::lock(&self.turns);
            for id in ids {
                tokens.remove(id);
                turns.remove(id);
                let _ = std::fs::remove_file(self.config_file(id));
            }
        }
        let mut ledger = self.ledger();
        let mut changed = ledger.data.expire(now, keep_ms);
        for id in ids {
            changed |= ledger.data.first_prompts.remove(id.as_str()).is_some();
            let Some(meta) = ws.sessions.get(id) else {
                continue;
            };
            let rel = &meta.relationships;
            if rel.orchestration_parent.is_none() {
                continue;
            }
            ledger.data.tombstones.insert(
                id.to_string(),
                Tombstone {
                    id: id.to_string(),
                    title: meta.title.clone(),
                    provider: meta.provider.name().to_owned(),
                    cwd: meta.cwd.clone(),
                    provider_session_id: meta.provider_session.as_ref().map(|p| p.id.clone()),
                    parent: rel.orchestration_parent.as_ref().map(|s| s.to_string()),
                    root: rel.orchestration_root.as_ref().map(|s| s.to_string()),
                    run: rel.run.clone(),
                    role: rel.role.clone(),
                    tab: hangar_core::orchestration::project_tab(ws, id).map(|t| t.to_string()),
                    closed_at_ms: now,
                },
            );
            changed = true;
        }
        if changed && let Err(e) = ledger.save() {
            tracing::warn!("cannot save the orchestration ledger: {e}");
        }
    }
}

impl Orchestration {
    /// Add hangar's MCP server to a launch when the session and `[mcp]`
    /// allow it: mint the spawn's token, write the session's MCP config
    /// file, and pass it the provider's way. A file that cannot be written
    /// starts the agent without orchestration rather than not at all.
    pub fn with_orchestration_mcp(
        &self,
        meta: &SessionMeta,
        spec: LaunchSpec,
        config: &McpConfig,
    ) -> LaunchSpec {
        if !config.enabled || !meta.mcp || !hangar_providers::adapter(&meta.provider).takes_mcp() {
            return spec;
        }
        let orch = self;
        let token = token::mint();
        // Inside a sandbox: hangar's binary where the sandbox shows it (its
        // HANGAR_HOME holds only the session's own socket back).
        let command = if meta.sandbox.is_some() {
            PathBuf::from(hangar_core::sandbox::INSIDE_HANGAR)
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hangar"))
        };
        let home = self.home.clone();
        let server = McpServer {
            command,
            args: vec!["mcp".into(), "--session".into(), meta.id.to_string()],
            env: [
                ("HANGAR_MCP_TOKEN".to_owned(), token.clone()),
                ("HANGAR_HOME".to_owned(), home.display().to_string()),
            ]
            .into(),
            config_file: orch.config_file(&meta.id),
        };
        if let Err(e) = token::write_config(&orch.config_dir(), &server) {
            tracing::warn!(
                "cannot write the MCP config of {}: {e}; it starts without orchestration",
                meta.id
            );
            return spec;
        }
        Orchestration::lock(&orch.tokens).insert(meta.id.clone(), token);
        with_mcp(spec, &meta.provider, &server)
    }
}

/// The MCP server each launch gets (`spawn::LaunchMcp`), with `[mcp]` as
/// it is at that start.
pub struct McpForLaunches {
    pub orchestration: Arc<Orchestration>,
    pub mcp: crate::section::Section<McpConfig>,
}

impl crate::spawn::LaunchMcp for McpForLaunches {
    fn with_mcp(&self, meta: &SessionMeta, spec: LaunchSpec) -> LaunchSpec {
        self.orchestration
            .with_orchestration_mcp(meta, spec, self.mcp.get())
    }
}
