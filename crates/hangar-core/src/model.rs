//! The persisted workspace: sessions' metadata and the records that own them.
//!
//! These are plain data types. They say nothing about processes: whether a
//! session is live, spawning or failed is runtime state kept by the daemon,
//! never part of what is saved. That separation is what makes rule 5 of
//! DESIGN.md hold by construction: a restore in which spawns failed cannot
//! produce a smaller `Workspace`, because spawning never edits this model.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::session_id::SessionId;
use crate::tile::{Direction, Side, Tile};

/// A tab's id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TabId(pub String);

impl TabId {
    pub fn new(id: impl Into<String>) -> Self {
        TabId(id.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TabId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for TabId {
    fn from(s: &str) -> Self {
        TabId(s.to_owned())
    }
}

/// What a session runs. Serialized as its name: `claude`, `codex`,
/// `opencode`, `shell`, or the name of a custom provider from config.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provider {
    Claude,
    Codex,
    Opencode,
    /// The CLIs hangar knows from a description file shipped in
    /// hangar-providers (`clis/<name>.toml`, issue 45).
    Gemini,
    Pi,
    Qwen,
    Copilot,
    Crush,
    Kilo,
    Aider,
    Kimi,
    Shell,
    Custom(String),
}

impl Provider {
    /// Every agent CLI hangar knows, in the order `new` prefers them when
    /// none is named (`new_session::default_provider`). A new CLI is added
    /// here, in `name` and `from_name`, and as an adapter in hangar-providers
    /// (its crate docs: "Adding a CLI"); these are the only places in
    /// hangar-core that name one (`.ci/shape`).
    /// The file-described CLIs follow the three with adapters of their own,
    /// in the order issue 45 lists them.
    pub const AGENT_CLIS: [Provider; 11] = [
        Provider::Claude,
        Provider::Codex,
        Provider::Opencode,
        Provider::Gemini,
        Provider::Pi,
        Provider::Qwen,
        Provider::Copilot,
        Provider::Crush,
        Provider::Kilo,
        Provider::Aider,
        Provider::Kimi,
    ];

    pub fn name(&self) -> &str {
        match self {
            Provider::Claude => "claude",
            Provider::Codex => "codex",
            Provider::Opencode => "opencode",
            Provider::Gemini => "gemini",
            Provider::Pi => "pi",
            Provider::Qwen => "qwen",
            Provider::Copilot => "copilot",
            Provider::Crush => "crush",
            Provider::Kilo => "kilo",
            Provider::Aider => "aider",
            Provider::Kimi => "kimi",
            Provider::Shell => "shell",
            Provider::Custom(name) => name,
        }
    }

    pub fn from_name(name: &str) -> Provider {
        match name {
            "claude" => Provider::Claude,
            "codex" => Provider::Codex,
            "opencode" => Provider::Opencode,
            "gemini" => Provider::Gemini,
            "pi" => Provider::Pi,
            "qwen" => Provider::Qwen,
            "copilot" => Provider::Copilot,
            "crush" => Provider::Crush,
            "kilo" => Provider::Kilo,
            "aider" => Provider::Aider,
            "kimi" => Provider::Kimi,
            "shell" | "terminal" => Provider::Shell,
            other => Provider::Custom(other.to_owned()),
        }
    }

    /// Agent providers are restarted by a settings reload; shells and custom
    /// commands are not agents and keep running.
    pub fn is_agent(&self) -> bool {
        Provider::AGENT_CLIS.contains(self)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Provider {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Provider {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ok(Provider::from_name(&name))
    }
}

/// Where a provider session id came from. Only durable sources are used to
/// resume a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdSource {
    /// hangar asked the provider to use this id (`--session-id`) or resumed it.
    ResumeRequest,
    /// Read from the provider's own transcript files.
    Transcript,
    /// Seen in an API request header by the capture proxy: provisional.
    ProxyHeader,
}

/// The provider's own conversation id for a session.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProviderSessionId {
    pub id: String,
    /// `None` when imported from a file that never recorded a source; such
    /// ids count as durable because older files never recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<IdSource>,
}

impl ProviderSessionId {
    pub fn new(id: impl Into<String>, source: IdSource) -> Self {
        ProviderSessionId {
            id: id.into(),
            source: Some(source),
        }
    }

    pub fn is_durable(&self) -> bool {
        !matches!(self.source, Some(IdSource::ProxyHeader))
    }
}

/// Links between sessions. Every field names another session (or a run);
/// pruning removes links to sessions that no longer exist.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Relationships {
    /// Manual link: closing the parent closes its linked children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_parent: Option<SessionId>,
    /// The agent that created this one through MCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orchestration_parent: Option<SessionId>,
    /// The top of the orchestration tree this session belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orchestration_root: Option<SessionId>,
    /// The orchestration run id, shared by siblings created together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// A free-form role given at creation ("reviewer", "tester").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

impl Relationships {
    /// The links that name another session (`run` and `role` do not).
    pub fn session_links(&self) -> [&Option<SessionId>; 3] {
        [
            &self.linked_parent,
            &self.orchestration_parent,
            &self.orchestration_root,
        ]
    }

    /// Clear every session link whose target `gone` accepts; returns how
    /// many were cleared.
    pub fn clear_links_where(&mut self, mut gone: impl FnMut(&SessionId) -> bool) -> usize {
        let mut cleared = 0;
        for link in [
            &mut self.linked_parent,
            &mut self.orchestration_parent,
            &mut self.orchestration_root,
        ] {
            if link.as_ref().is_some_and(&mut gone) {
                *link = None;
                cleared += 1;
            }
        }
        cleared
    }
}

/// Everything hangar knows about one session, live or not. `Hash` is what
/// the store fingerprints a saved row with (hangar-store's `diff.rs`).
/// The records few sessions have (a worktree, a git base, an engine, a fork
/// origin) are boxed: inline they were ~280 of its ~650 bytes, paid by each
/// of 10,000 hibernated sessions (issue 48, docs/src/benchmarks-history.md).
#[derive(Clone, Debug, PartialEq, Hash, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: SessionId,
    pub provider: Provider,
    pub cwd: String,
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_session: Option<ProviderSessionId>,
    /// Whether this session was last started in dangerous mode.
    #[serde(default)]
    pub dangerous: bool,
    #[serde(default)]
    pub relationships: Relationships,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub created_at_ms: u64,
    /// Last time a person or agent used the session; drives eviction.
    #[serde(default)]
    pub last_active_ms: u64,
    /// Text typed into hangar for this session but not yet sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<String>,
    /// Whether the capture proxy is used for this session.
    #[serde(default = "default_true")]
    pub capture: bool,
    /// Whether this session is given the orchestration MCP server.
    #[serde(default = "default_true")]
    pub mcp: bool,
    /// Every change of the durable provider session id, oldest first
    /// (bounded; see `ledger::HISTORY_LIMIT`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_id_history: Vec<IdChange>,
    /// The git worktree this session runs in, when it was started with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Box<crate::worktree::WorktreeInfo>>,
    /// A tmux session this shell attaches to (`tmux attach`) instead of
    /// starting a fresh shell: an Agent Code tmux-backed terminal adopted on
    /// import. Without it, a migrating user's long-running terminal (a dev
    /// server, a build) would be replaced by an empty shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_session: Option<String>,
    /// Fields of the file this session was imported from that hangar has no
    /// use for (Agent Code's naming, view and per-agent MCP state), by field
    /// name, each as compact JSON text: kept so an import loses nothing the
    /// user had, and shown by `hangar export`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub imported_fields: BTreeMap<String, String>,
    /// Where this session's git work started (its worktree's base, else
    /// the checkout's HEAD at its start): what `hangar diff` compares with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_base: Option<Box<crate::review::GitBase>>,
    /// The container engine this session runs on (`hangar new --engine`):
    /// it never runs outside it (DESIGN.md rule 14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Box<crate::engine::EngineBinding>>,
    /// The session's sandbox folder under `HANGAR_HOME` when it runs in
    /// hangar's sandbox (issue 32): its CLI's state (transcripts included)
    /// lives there, not in the person's own folders. Decided when the
    /// session is made and never dropped: a sandboxed session is never
    /// started without its walls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The session this one was forked from (`hangar fork`), and how it
    /// carries that conversation on (`crate::fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<Box<ForkOrigin>>,
    /// The `[accounts.NAME]` it runs under (`hangar new --account`); `None`:
    /// the provider's own login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The config folder its CLI runs with when that is its account's own
    /// (`[accounts.NAME].folder`, Claude's `CLAUDE_CONFIG_DIR`, Codex's
    /// `CODEX_HOME`) rather than the one the daemon's environment names:
    /// where its conversations are read. Set with the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_folder: Option<Box<str>>,
}

fn default_true() -> bool {
    true
}

impl SessionMeta {
    pub fn new(id: SessionId, provider: Provider, cwd: impl Into<String>) -> Self {
        SessionMeta {
            id,
            provider,
            cwd: cwd.into(),
            title: String::new(),
            provider_session: None,
            dangerous: false,
            relationships: Relationships::default(),
            created_at_ms: 0,
            last_active_ms: 0,
            draft: None,
            capture: true,
            mcp: true,
            provider_id_history: Vec::new(),
            worktree: None,
            tmux_session: None,
            imported_fields: BTreeMap::new(),
            git_base: None,
            engine: None,
            sandbox: None,
            forked_from: None,
            account: None,
            state_folder: None,
        }
    }

    /// The provider session id to resume with, if a durable one is known.
    pub fn durable_provider_id(&self) -> Option<&str> {
        self.provider_session
            .as_ref()
            .filter(|p| p.is_durable())
            .map(|p| p.id.as_str())
    }
}

/// A project tab with its tile tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tab {
    pub id: TabId,
    pub title: String,
    /// The project folder new agents in this tab start in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `None` for a tab without panes (its parked pool may still be full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<Tile>,
    /// Always a leaf of `root` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<SessionId>,
}

impl Tab {
    pub fn new(id: TabId, title: impl Into<String>) -> Self {
        Tab {
            id,
            title: title.into(),
            cwd: None,
            root: None,
            focus: None,
        }
    }

    /// The sessions shown in this tab's panes, in reading order.
    pub fn leaves(&self) -> Vec<SessionId> {
        self.root.as_ref().map(Tile::leaves).unwrap_or_default()
    }

    pub fn contains_leaf(&self, id: &SessionId) -> bool {
        self.root.as_ref().is_some_and(|r| r.contains(id))
    }
}

/// A session moved out of the grid into its project tab's dispatch pool.
#[derive(Clone, Debug, PartialEq, Hash, Serialize, Deserialize)]
pub struct ParkedRecord {
    pub session: SessionId,
    /// The project tab that owns it. If that tab is gone the record is a
    /// ghost and is dropped by pruning.
    pub tab: TabId,
    #[serde(default)]
    pub parked_at_ms: u64,
}

/// A pane removed from the grid with enough placement data to put it back
/// where it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuriedRecord {
    pub session: SessionId,
    pub source_tab: TabId,
    /// The leaf it was split from, to be put back beside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sibling: Option<SessionId>,
    /// Which side of that split the buried pane was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f32>,
    #[serde(default)]
    pub buried_at_ms: u64,
}

/// A named lane of the dispatch view: an ordered list of session pointers.
/// Lanes point at sessions; they never own them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchLane {
    pub name: String,
    #[serde(default)]
    pub sessions: Vec<SessionId>,
}

/// The dispatch view's layout and its current selection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<DispatchLane>,
}

/// Workspace-wide settings that change how agents are started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Start agents with their provider's "skip permissions" flag.
    #[serde(default)]
    pub dangerous: bool,
}

/// The whole persisted workspace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Workspace {
    /// Tabs in display order.
    #[serde(default)]
    pub tabs: Vec<Tab>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_tab: Option<TabId>,
    /// Metadata of every session, keyed by local id.
    #[serde(default)]
    pub sessions: BTreeMap<SessionId, SessionMeta>,
    /// Parked records keyed by their own session id.
    #[serde(default)]
    pub parked: BTreeMap<SessionId, ParkedRecord>,
    /// Buried records keyed by their own session id.
    #[serde(default)]
    pub buried: BTreeMap<SessionId, BuriedRecord>,
    /// Ordered quick-access list. A pin is a pointer, not ownership.
    #[serde(default)]
    pub pins: Vec<SessionId>,
    #[serde(default)]
    pub dispatch: Dispatch,
    #[serde(default)]
    pub settings: Settings,
}

/// Where an owned session currently sits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    Pane,
    Parked,
    Buried,
}

impl Placement {
    pub fn name(&self) -> &'static str {
        match self {
            Placement::Pane => "pane",
            Placement::Parked => "parked",
            Placement::Buried => "buried",
        }
    }
}

impl Workspace {
    pub fn tab(&self, id: &TabId) -> Option<&Tab> {
        self.tabs.iter().find(|t| &t.id == id)
    }

    pub fn tab_mut(&mut self, id: &TabId) -> Option<&mut Tab> {
        self.tabs.iter_mut().find(|t| &t.id == id)
    }

    /// The tab whose tile tree shows this session, if any.
    pub fn pane_tab(&self, id: &SessionId) -> Option<&Tab> {
        self.tabs.iter().find(|t| t.contains_leaf(id))
    }

    /// Where the session sits and which tab it belongs to. `None` for a
    /// session no owner holds (or one that does not exist).
    pub fn placement_of(&self, id: &SessionId) -> Option<(Placement, TabId)> {
        if let Some(tab) = self.pane_tab(id) {
            return Some((Placement::Pane, tab.id.clone()));
        }
        if let Some(p) = self.parked.get(id)
            && self.tab(&p.tab).is_some()
        {
            return Some((Placement::Parked, p.tab.clone()));
        }
        if let Some(b) = self.buried.get(id) {
            return Some((Placement::Buried, b.source_tab.clone()));
        }
        None
    }

    pub fn is_pinned(&self, id: &SessionId) -> bool {
        self.pins.contains(id)
    }
}

/// One change of a session's provider session id, kept in
/// `SessionMeta::provider_id_history`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IdChange {
    /// The id before the change (`None`: there was none).
    #[serde(default)]
    pub from: Option<String>,
    /// The id after the change (`None`: forgotten, the next wake starts fresh).
    #[serde(default)]
    pub to: Option<String>,
    /// Where the new id came from (`None` when it was forgotten).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<IdSource>,
    /// Milliseconds since the epoch.
    pub at_ms: u64,
    /// Set when the conversation itself was carried to another account's
    /// config folder (`from` and `to` are then its one id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_move: Option<Box<AccountMove>>,
}

/// A conversation carried from one `[accounts.NAME]` to another (`None`:
/// the provider's own login, in the daemon's folder).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AccountMove {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
}

#[cfg(test)]
mod short_id_tests {
    use super::SessionId;

    #[test]
    fn a_short_id_is_its_first_eight_characters_or_all_of_a_shorter_one() {
        assert_eq!(SessionId::from("0123456789abcdef").short(), "01234567");
        assert_eq!(SessionId::from("abc").short(), "abc");
        // Counted in bytes, as ids are ASCII; an imported id that is not
        // is never cut inside a character: it is shown whole instead.
        assert_eq!(SessionId::from("ééééé").short(), "éééé");
        assert_eq!(SessionId::from("aéééé").short(), "aéééé");
    }
}

/// Where a forked session came from (`hangar fork`, rules in `crate::fork`).
/// Kept for the session's whole life: `ls` shows it, and the ledger refuses
/// the origin's id with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The parent session's local id (it may be closed since).
    pub session: SessionId,
    /// The parent's provider at the fork.
    pub provider: Provider,
    /// The parent's conversation the fork carries on: the id the CLI's own
    /// fork starts from. `None` for a handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_session_id: Option<String>,
    /// Forked into another CLI: started fresh with a handoff prompt.
    #[serde(default)]
    pub handoff: bool,
    /// The handoff prompt, until it is typed into the new agent (a parked
    /// fork gets it at its first wake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_prompt: Option<String>,
    /// When the fork was made (ms since the epoch).
    #[serde(default)]
    pub at_ms: u64,
}
