//! Importing Agent Code's `workspace.json` into hangar's model, in every shape
//! Agent Code has written (see `docs/src/agent-code-format.md`, read from
//! Agent Code's own source, Juliusolsson05/agent-code):
//!
//! - envelopes: v1 `{"workspace": PAYLOAD}` (`src/main/storage/workspaceFile.ts`
//!   reads it as v1 whenever `workspace` is an object and there is no
//!   `windows`, whatever `version` sits beside it), v2 and v3
//!   `{"version", "windows": [{windowId, workspace: PAYLOAD, ...}]}`;
//! - payloads: the tabs shape (`tabs`, `detachedSessions`, `buried`,
//!   `dispatchMode`, `tileTabs`) and the stage shape (`projects`, `stage`,
//!   sessions stamped with `projectId`). A payload is the stage shape when it
//!   has a `stage` key (`workspaceShape.ts`, `isStageWorkspace`); a hybrid
//!   keeps its v2 owners for the sessions that carry no `projectId`.
//!
//! Agent Code's own rules decide what is kept (`sessionOwnership.ts`,
//! `legacyWorkspaceV2.ts`): tile leaves, detached records whose tab exists
//! and buried records are owned, as is every stage session whose `projectId`
//! names a project of its window; everything else Agent Code drops itself,
//! and so does this import (each listed with provider, id and folder). What
//! is spawned follows what Agent Code starts: tile leaves (tabs shape), the
//! focused lane's session only (stage shape); every other owned session is
//! parked in its project's tab.
//!
//! An unknown value, field or view-state object never refuses a file: an
//! unknown provider kind becomes a custom provider, an unknown id source
//! counts as durable (Agent Code's `hasDurableProviderSession`: only
//! `proxy-header` is provisional), unknown session fields are kept verbatim
//! in `imported_fields`, and view state hangar cannot show (tile-tabs, lane
//! sizes) is listed in the report. What does refuse it is a value of the
//! wrong type where hangar needs it (a session without a `cwd` string, a
//! broken tile tree), reported at its exact JSON path; nothing is then
//! imported. The import is a pure function of the text (and the clock for
//! undated sessions): a whole workspace or an error, never half of one.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use hangar_core::tile::{Direction, Side, Tile, clamp_ratio};
use hangar_core::{
    BuriedRecord, DispatchLane, IdSource, ParkedRecord, Provider, ProviderSessionId, Relationships,
    SessionId, SessionMeta, Tab, TabId, Workspace,
};

use crate::import::{self, DroppedItem, ImportError, ImportReport, KeptItem};
use crate::json_walk::Node;

/// Session fields this import maps onto hangar's own fields.
const MAPPED_FIELDS: &[&str] = &[
    "cwd",
    "title",
    "kind",
    "providerSessionId",
    "providerSessionIdSource",
    "ccSessionId",
    "linkedParentId",
    "orchestrationParentId",
    "orchestrationRootId",
    "orchestrationRunId",
    "orchestrationRole",
    "projectId",
    "joinedAt",
    "lastUsedAt",
];

/// Session fields Agent Code writes that hangar has no use for: kept
/// verbatim in `imported_fields`, without a note (they are expected).
const VERBATIM_FIELDS: &[&str] = &[
    "tmuxName",
    "builtInMcpDomains",
    "builtInMcpOverrides",
    "userMcpServerIds",
    "providerRuntime",
    "orchestrationBootstrapPromptDelivered",
    "agentNameId",
    "tldrIdentity",
    "browserPocket",
    "agentViewModeOverride",
    "extensionViewId",
];

/// Payload keys Agent Code writes, in either shape.
const PAYLOAD_KEYS: &[&str] = &[
    "tabs",
    "activeTabId",
    "dispatchMode",
    "sessions",
    "detachedSessions",
    "buried",
    "tileTabs",
    "pinnedSessionIds",
    "drafts",
    "projects",
    "activeProjectId",
    "stage",
];

/// `joinedAt` is a time only from this value on (2001-09-09): Agent Code's
/// v2 -> v3 migration gives tile leaves their depth-first ordinal (0, 1,
/// 2...) as `joinedAt`, which is an order, not a date.
const FIRST_PLAUSIBLE_MS: f64 = 1e12;

/// Import Agent Code's `workspace.json`; sessions the file gives no date
/// are dated now.
pub fn import_agent_code(text: &str) -> Result<ImportReport, ImportError> {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    import_agent_code_at(text, now_ms)
}

/// [`import_agent_code`] with an explicit "now" (milliseconds since the
/// epoch) for the sessions the file gives no date.
pub fn import_agent_code_at(text: &str, now_ms: u64) -> Result<ImportReport, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(ImportError::Syntax)?;
    let root = Node::root(&value);
    if !value.is_object() {
        return Err(root.expected("an object (Agent Code's workspace.json)"));
    }
    let mut im = Importer::new(now_ms);
    let source = if root.has_key("windows") {
        let version = match root.opt_field("version")? {
            Some(v) => Some(v.u64()?),
            None => None,
        };
        let windows = root.field("windows")?.array()?;
        match version {
            Some(2 | 3) => {}
            Some(v) => im.kept.push(KeptItem::new(
                "version",
                "format",
                format!(
                    "the file says version {v}, newer than the versions 2 and 3 this import \
                     knows; its windows were read by the shape of their payloads"
                ),
            )),
            None => im.kept.push(KeptItem::new(
                "version",
                "format",
                "the file has windows but no version; read by the shape of its payloads",
            )),
        }
        let mut window_ids = BTreeSet::new();
        for (index, window) in windows.iter().enumerate() {
            let payload = window
                .opt_field("workspace")
                .ok()
                .flatten()
                .filter(|p| p.value().is_object());
            let window_id = window
                .opt_field("windowId")
                .ok()
                .flatten()
                .and_then(|n| n.value().as_str().map(str::to_owned))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("window {}", index + 1));
            let Some(payload) = payload else {
                // Agent Code's `coerceWindow` discards these too.
                im.dropped.push(DroppedItem::new(
                    window_id,
                    "window",
                    format!("{} has no workspace object; skipped", window.path()),
                ));
                continue;
            };
            if !window_ids.insert(window_id.clone()) {
                im.dropped.push(DroppedItem::new(
                    window_id,
                    "window",
                    format!(
                        "{} repeats an earlier window id; the first window was kept, as Agent \
                         Code does",
                        window.path()
                    ),
                ));
                continue;
            }
            im.windows += 1;
            im.read_payload(&payload, &window_id)?;
        }
        format!(
            "agent-code v{} ({} window(s))",
            version.map_or_else(|| "?".to_owned(), |v| v.to_string()),
            im.windows
        )
    } else if root.has_key("workspace") {
        let payload = root.field("workspace")?;
        if !payload.value().is_object() {
            return Err(payload.expected("an object"));
        }
        im.windows = 1;
        im.read_payload(&payload, "window 1")?;
        "agent-code v1".to_owned()
    } else {
        return Err(root.invalid(
            "expected Agent Code's workspace.json: an object with \"workspace\" (v1) or \
             \"windows\" (v2 and v3)",
        ));
    };
    Ok(im.finish(source))
}

/// One `sessions` entry, read.
struct Row {
    meta: SessionMeta,
    /// `kind: "extension-view"`: a view with no process.
    view: Option<String>,
    /// Stage payloads: the project it belongs to, and its order there.
    project: Option<String>,
    joined_at: Option<f64>,
    last_used_at: Option<u64>,
}

/// Where a session of one payload ends up.
enum Home {
    Pane(TabId),
    Parked { tab: TabId, at: Option<u64> },
    Buried(BuriedRecord),
}

struct Importer {
    now_ms: u64,
    ws: Workspace,
    dropped: Vec<DroppedItem>,
    kept: Vec<KeptItem>,
    /// Unknown session field -> how many sessions carried it.
    unknown_fields: BTreeMap<String, usize>,
    /// Custom provider name -> how many sessions use it.
    custom_providers: BTreeMap<String, usize>,
    windows: usize,
}

impl Importer {
    fn new(now_ms: u64) -> Self {
        Importer {
            now_ms,
            ws: Workspace::default(),
            dropped: Vec::new(),
            kept: Vec::new(),
            unknown_fields: BTreeMap::new(),
            custom_providers: BTreeMap::new(),
            windows: 0,
        }
    }

    fn finish(mut self, source: String) -> ImportReport {
        for (name, count) in &self.custom_providers {
            self.kept.push(KeptItem::new(
                name.as_str(),
                "provider",
                format!(
                    "{count} session(s) run {name:?}, which hangar has no built-in adapter for: \
                     define [providers.{name}] in config.toml (program, resume_args) to wake \
                     them; until then a pane of theirs is marked failed with that reason"
                ),
            ));
        }
        for (field, count) in &self.unknown_fields {
            self.kept.push(KeptItem::new(
                field.as_str(),
                "field",
                format!(
                    "session field {field:?} (on {count} session(s)) is not one this import \
                     knows; kept verbatim with the session (shown by `hangar export`)"
                ),
            ));
        }
        let mut report = import::finish(self.ws, self.dropped);
        report.kept = self.kept;
        report.source = Some(source);
        report
    }

    fn read_payload(&mut self, p: &Node<'_>, window: &str) -> Result<(), ImportError> {
        let first_window = self.windows <= 1;
        for key in p.keys() {
            if !PAYLOAD_KEYS.contains(&key) {
                self.kept.push(KeptItem::new(
                    key,
                    "field",
                    format!("{}.{key} is not a key this import knows; ignored", p.path()),
                ));
            }
        }

        let mut rows: BTreeMap<SessionId, Row> = BTreeMap::new();
        if let Some(sessions) = p.opt_field("sessions")? {
            for (key, entry) in sessions.entries()? {
                let id = SessionId::new(key);
                if self.ws.sessions.contains_key(&id) {
                    self.dropped.push(DroppedItem::new(
                        key,
                        "session",
                        format!(
                            "{}: the session is already in an earlier window; the first was kept",
                            entry.path()
                        ),
                    ));
                    continue;
                }
                let row = self.read_row(id.clone(), &entry)?;
                rows.insert(id, row);
            }
        }
        let mut drafts: BTreeMap<SessionId, String> = BTreeMap::new();
        if let Some(node) = p.opt_field("drafts")? {
            for (key, text) in node.entries()? {
                drafts.insert(SessionId::new(key), text.str()?.to_owned());
            }
        }

        let stage_shape = p.has_key("stage");
        // The projects: a v3 list wins; otherwise the v2 tabs (Agent Code's
        // `migrateWorkspaceToStage`, rule 1).
        let tab_nodes = match p.opt_field("tabs")? {
            Some(n) => n.array()?,
            None => Vec::new(),
        };
        let project_nodes = match p.opt_field("projects")? {
            Some(n) => n.array()?,
            None => tab_nodes.clone(),
        };
        // This payload's tab id -> the id it gets in hangar (renamed only when
        // an earlier window already used it).
        let mut tab_ids: BTreeMap<String, TabId> = BTreeMap::new();
        let mut new_tabs: Vec<(Tab, Option<String>)> = Vec::new();
        for node in &project_nodes {
            let id_node = node.field("id")?;
            let id = id_node.str()?;
            if tab_ids.contains_key(id) {
                self.kept.push(KeptItem::new(
                    id,
                    "tab",
                    format!(
                        "{}: repeats an earlier tab id; the first was kept",
                        id_node.path()
                    ),
                ));
                continue;
            }
            let mut hangar_id = TabId::new(id);
            let mut n = 2;
            while self.ws.tab(&hangar_id).is_some() {
                hangar_id = TabId::new(format!("{id}-w{n}"));
                n += 1;
            }
            if hangar_id.as_str() != id {
                self.kept.push(KeptItem::new(
                    id,
                    "tab",
                    format!("tab id {id} of {window} is used by an earlier window; imported as {hangar_id}"),
                ));
            }
            tab_ids.insert(id.to_owned(), hangar_id.clone());
            let title = node.opt_str("title")?.unwrap_or_default().to_owned();
            let cwd = node.opt_str("cwd")?.map(str::to_owned);
            new_tabs.push((Tab::new(hangar_id, title), cwd));
        }
        let active = p
            .opt_str(if stage_shape && p.has_key("activeProjectId") {
                "activeProjectId"
            } else {
                "activeTabId"
            })?
            .and_then(|a| tab_ids.get(a).cloned());

        let mut homes: BTreeMap<SessionId, Home> = BTreeMap::new();
        let mut trees: BTreeMap<TabId, (Option<Tile>, Option<SessionId>)> = BTreeMap::new();
        let mut shown: BTreeSet<SessionId> = BTreeSet::new();

        // v2 owners, in Agent Code's precedence: leaf, then detached, then
        // buried (`legacyMemberships`).
        for node in &tab_nodes {
            let Some(tab) = node.opt_str("id")?.and_then(|id| tab_ids.get(id).cloned()) else {
                continue;
            };
            if trees.contains_key(&tab) {
                continue;
            }
            let root = match node.opt_field("root")? {
                Some(root) => self.read_tile(&root, &tab, &rows, &mut shown)?,
                None => None,
            };
            let focus = node.opt_str("focusedSessionId")?.map(SessionId::new);
            for leaf in root.as_ref().map(Tile::leaves).unwrap_or_default() {
                homes.entry(leaf).or_insert(Home::Pane(tab.clone()));
            }
            trees.insert(tab, (root, focus));
        }
        let rehome = active
            .clone()
            .or_else(|| new_tabs.first().map(|(t, _)| t.id.clone()));
        if let Some(detached) = p.opt_field("detachedSessions")? {
            for (key, entry) in detached.entries()? {
                if !entry.value().is_object() {
                    // A damaged entry still names its session by its key;
                    // Agent Code re-homes it to the active project.
                    let id = SessionId::new(key);
                    if let Some(tab) = &rehome
                        && rows.contains_key(&id)
                        && !homes.contains_key(&id)
                    {
                        self.kept.push(KeptItem::new(
                            key,
                            "parked",
                            format!(
                                "{} is damaged; parked in the active tab {tab}",
                                entry.path()
                            ),
                        ));
                        homes.insert(
                            id,
                            Home::Parked {
                                tab: tab.clone(),
                                at: None,
                            },
                        );
                    }
                    continue;
                }
                let session = SessionId::new(entry.opt_str("sessionId")?.unwrap_or(key));
                let project = entry.field("projectTabId")?.str()?;
                let at = match entry.opt_field("detachedAt")? {
                    Some(at) => Some(at.ms()?),
                    None => None,
                };
                if homes.contains_key(&session) {
                    let reason = if shown.contains(&session) {
                        "session is also shown in a pane"
                    } else {
                        "session is parked twice; the first record was kept"
                    };
                    self.dropped
                        .push(DroppedItem::new(session.as_str(), "parked", reason));
                    continue;
                }
                // A record whose tab is gone is a ghost: parked under the
                // missing id, so pruning drops it with its reason.
                let tab = tab_ids
                    .get(project)
                    .cloned()
                    .unwrap_or_else(|| TabId::new(project));
                homes.insert(session, Home::Parked { tab, at });
            }
        }
        if let Some(buried) = p.opt_field("buried")? {
            for entry in buried.array()? {
                let session = SessionId::new(entry.field("sessionId")?.str()?);
                if let Some(meta_node) = entry.opt_field("sessionMeta")?
                    && !rows.contains_key(&session)
                    && !self.ws.sessions.contains_key(&session)
                {
                    // The `sessions` row may be newer and wins; the record's
                    // snapshot is used only when it is the only metadata.
                    let row = self.read_row(session.clone(), &meta_node)?;
                    rows.insert(session.clone(), row);
                }
                let source = entry.field("sourceTabId")?.str()?;
                let source_tab = tab_ids
                    .get(source)
                    .cloned()
                    .unwrap_or_else(|| TabId::new(source));
                let direction = entry
                    .opt_field("direction")?
                    .map(|n| read_direction(&n))
                    .transpose()?;
                let ratio = entry
                    .opt_field("ratio")?
                    .map(|n| n.f64())
                    .transpose()?
                    .map(|r| clamp_ratio(r as f32));
                let side = entry
                    .opt_field("side")?
                    .map(|n| match n.str()? {
                        "a" => Ok(Side::A),
                        "b" => Ok(Side::B),
                        _ => Err(n.expected(r#""a" or "b""#)),
                    })
                    .transpose()?;
                let sibling = entry.opt_str("siblingLeafId")?.map(SessionId::new);
                let buried_at_ms = match entry.opt_field("buriedAt")? {
                    Some(at) => at.ms()?,
                    None => 0,
                };
                if let Some(note) = entry.opt_str("note")?.filter(|n| !n.is_empty())
                    && let Some(row) = rows.get_mut(&session)
                {
                    row.meta
                        .imported_fields
                        .insert("buriedNote".to_owned(), compact(&Value::from(note)));
                }
                if homes.contains_key(&session) {
                    let reason = if shown.contains(&session) {
                        "session is also shown in a pane"
                    } else {
                        "session is also parked"
                    };
                    self.dropped
                        .push(DroppedItem::new(session.as_str(), "buried", reason));
                    continue;
                }
                homes.insert(
                    session.clone(),
                    Home::Buried(BuriedRecord {
                        session,
                        source_tab,
                        sibling,
                        side,
                        direction,
                        ratio,
                        buried_at_ms,
                    }),
                );
            }
        }

        let project_ids: BTreeSet<TabId> = tab_ids.values().cloned().collect();
        if stage_shape {
            self.place_stage(
                p,
                &rows,
                &tab_ids,
                &project_ids,
                active.as_ref(),
                &mut homes,
                &mut trees,
            )?;
        } else {
            self.read_dispatch(p, first_window);
            if let Some(tt) = p.opt_field("tileTabs")?
                && tt.value().is_object()
            {
                self.kept.push(KeptItem::new(
                    window,
                    "view",
                    "Agent Code showed several tabs side by side (tile-tabs); hangar shows one \
                     tab at a time, so each tab was imported on its own with its panes",
                ));
            }
        }

        // Sessions: owned ones get their dates; unowned ones are inserted
        // too, so pruning drops them and says why.
        for (id, mut row) in rows {
            if let Some(view) = &row.view {
                homes.remove(&id);
                self.dropped.push(
                    DroppedItem::new(
                        id.as_str(),
                        "session",
                        format!(
                            "Agent Code extension view {view:?}: a view with no process, which \
                             hangar cannot show"
                        ),
                    )
                    .with_meta(&row.meta),
                );
                continue;
            }
            if stage_shape && !homes.contains_key(&id) {
                let reason = match &row.project {
                    Some(p) => format!(
                        "its project {p} is not a project of {window}; Agent Code drops it too"
                    ),
                    None => {
                        "it has no project and no other owner; Agent Code drops it too".to_owned()
                    }
                };
                self.dropped
                    .push(DroppedItem::new(id.as_str(), "session", reason).with_meta(&row.meta));
                continue;
            }
            let mut dates: Vec<u64> = Vec::new();
            match homes.get(&id) {
                Some(Home::Parked { at: Some(at), .. }) => dates.push(*at),
                Some(Home::Buried(b)) if b.buried_at_ms > 0 => dates.push(b.buried_at_ms),
                _ => {}
            }
            if let Some(j) = row.joined_at.filter(|j| *j >= FIRST_PLAUSIBLE_MS) {
                dates.push(j as u64);
            }
            row.meta.last_active_ms = row
                .last_used_at
                .or_else(|| dates.iter().copied().max())
                .unwrap_or(self.now_ms);
            row.meta.created_at_ms = dates
                .iter()
                .copied()
                .min()
                .unwrap_or(row.meta.last_active_ms)
                .min(row.meta.last_active_ms);
            if let Some(draft) = drafts.remove(&id).filter(|d| !d.is_empty()) {
                row.meta.draft = Some(draft);
            }
            if let Provider::Custom(name) = &row.meta.provider
                && homes.contains_key(&id)
            {
                *self.custom_providers.entry(name.clone()).or_default() += 1;
            }
            self.ws.sessions.insert(id, row.meta);
        }
        for id in drafts.keys() {
            self.dropped.push(DroppedItem::new(
                id.as_str(),
                "draft",
                "draft of a session that is not in the file",
            ));
        }

        // Tabs, with their trees and folders.
        for (mut tab, cwd) in new_tabs {
            let (root, focus) = trees.remove(&tab.id).unwrap_or((None, None));
            let leaves = root.as_ref().map(Tile::leaves).unwrap_or_default();
            tab.focus = focus
                .filter(|f| leaves.contains(f))
                .or_else(|| leaves.first().cloned());
            tab.root = root;
            tab.cwd = cwd.or_else(|| self.folder_of(&tab, &homes));
            self.ws.tabs.push(tab);
        }
        for (id, home) in homes {
            match home {
                Home::Pane(_) => {}
                Home::Parked { tab, at } => {
                    let parked_at_ms = at.unwrap_or_else(|| {
                        self.ws
                            .sessions
                            .get(&id)
                            .map_or(self.now_ms, |m| m.last_active_ms)
                    });
                    self.ws.parked.insert(
                        id.clone(),
                        ParkedRecord {
                            session: id,
                            tab,
                            parked_at_ms,
                        },
                    );
                }
                Home::Buried(rec) => {
                    self.ws.buried.insert(id, rec);
                }
            }
        }
        if self.ws.active_tab.is_none() {
            self.ws.active_tab = active;
        }

        if let Some(pins) = p.opt_field("pinnedSessionIds")? {
            for pin in pins.array()? {
                let id = SessionId::new(pin.str()?);
                if self.ws.pins.contains(&id) {
                    self.dropped.push(DroppedItem::new(
                        id.as_str(),
                        "pin",
                        "pin repeats an earlier pin",
                    ));
                } else {
                    self.ws.pins.push(id);
                }
            }
        }
        Ok(())
    }

    /// The folder new agents of a tab start in: Agent Code never wrote one
    /// per tab, so it is the folder of the session the tab shows (its focus,
    /// else its first pane), else of its first member.
    fn folder_of(&self, tab: &Tab, homes: &BTreeMap<SessionId, Home>) -> Option<String> {
        let meta = |id: &SessionId| self.ws.sessions.get(id).map(|m| m.cwd.clone());
        if let Some(cwd) = tab.focus.as_ref().and_then(meta) {
            return Some(cwd);
        }
        if let Some(cwd) = tab.leaves().iter().find_map(meta) {
            return Some(cwd);
        }
        let mut members: Vec<(u64, &SessionId)> = homes
            .iter()
            .filter_map(|(id, home)| match home {
                Home::Parked { tab: t, .. } if t == &tab.id => Some(id),
                Home::Buried(b) if b.source_tab == tab.id => Some(id),
                _ => None,
            })
            .filter_map(|id| self.ws.sessions.get(id).map(|m| (m.created_at_ms, id)))
            .collect();
        members.sort();
        members.first().and_then(|(_, id)| meta(id))
    }

    /// Stage payloads: every owned session is parked in its project, but the
    /// focused lane's session, which is the one pane (Agent Code v3 starts
    /// only it at boot).
    #[allow(clippy::too_many_arguments)]
    fn place_stage(
        &mut self,
        p: &Node<'_>,
        rows: &BTreeMap<SessionId, Row>,
        tab_ids: &BTreeMap<String, TabId>,
        project_ids: &BTreeSet<TabId>,
        active: Option<&TabId>,
        homes: &mut BTreeMap<SessionId, Home>,
        trees: &mut BTreeMap<TabId, (Option<Tile>, Option<SessionId>)>,
    ) -> Result<(), ImportError> {
        // v3 membership: a row's own valid `projectId` wins; then the v2
        // owners a hybrid payload still carries (a buried one whose tab is
        // gone goes to the active project); v3 has no trees, detached or
        // buried records, so all of them become project members.
        let mut members: BTreeMap<SessionId, TabId> = BTreeMap::new();
        for (id, row) in rows {
            let stamped = row.project.as_ref().and_then(|p| tab_ids.get(p)).cloned();
            let legacy = match homes.get(id) {
                Some(Home::Pane(t)) => Some(t.clone()),
                Some(Home::Parked { tab, .. }) if project_ids.contains(tab) => Some(tab.clone()),
                Some(Home::Buried(b)) => Some(b.source_tab.clone())
                    .filter(|t| project_ids.contains(t))
                    .or_else(|| active.cloned()),
                _ => None,
            };
            if let Some(tab) = stamped.or(legacy) {
                members.insert(id.clone(), tab);
            }
        }
        let joined = |id: &SessionId| rows.get(id).and_then(|r| r.joined_at);
        homes.clear();
        trees.clear();

        let stage = p.opt_field("stage")?;
        let mut lanes: Vec<Option<SessionId>> = Vec::new();
        let mut focused_lane = 0usize;
        if let Some(stage) = stage.as_ref().filter(|s| s.value().is_object()) {
            if let Some(list) = stage.opt_field("lanes")? {
                for lane in list.array()? {
                    lanes.push(lane.opt_str("selectedSessionId")?.map(SessionId::new));
                }
            }
            focused_lane = match stage.opt_field("focusedLane")? {
                Some(n) => n.u64().map(|n| n as usize).unwrap_or(0),
                None => 0,
            };
            if stage.has_key("rows") || stage.has_key("laneWeights") {
                self.kept.push(KeptItem::new(
                    "stage",
                    "view",
                    "the stage's row heights and lane widths are not represented in hangar",
                ));
            }
        } else {
            self.kept.push(KeptItem::new(
                "stage",
                "view",
                format!("{}.stage is not an object; no lanes were read", p.path()),
            ));
        }

        let focused = lanes.get(focused_lane).cloned().flatten().filter(|id| {
            members.contains_key(id) && rows.get(id).is_some_and(|r| r.view.is_none())
        });
        if let Some(id) = &focused {
            let tab = members[id].clone();
            trees.insert(
                tab.clone(),
                (Some(Tile::leaf(id.clone())), Some(id.clone())),
            );
            homes.insert(id.clone(), Home::Pane(tab));
        }
        let mut noted: BTreeSet<&SessionId> = BTreeSet::new();
        for (n, lane) in lanes.iter().enumerate() {
            if let Some(id) = lane
                && Some(id) != focused.as_ref()
                && members.contains_key(id)
                && noted.insert(id)
            {
                self.kept.push(KeptItem::new(
                    id.as_str(),
                    "lane",
                    format!(
                        "shown in lane {} in Agent Code; parked, because Agent Code starts only \
                         the focused lane's session at boot (wake it with `hangar unpark`)",
                        n + 1
                    ),
                ));
            }
        }
        for (id, tab) in members {
            if homes.contains_key(&id) {
                continue;
            }
            let at = joined(&id)
                .filter(|j| *j >= FIRST_PLAUSIBLE_MS)
                .map(|j| j as u64);
            homes.insert(id, Home::Parked { tab, at });
        }
        // Lanes are pointers, kept as hangar's dispatch lanes.
        if self.ws.dispatch.lanes.is_empty() {
            self.ws.dispatch.selected = focused.clone();
            self.ws.dispatch.lanes = lanes
                .iter()
                .enumerate()
                .map(|(n, lane)| DispatchLane {
                    name: format!("lane {}", n + 1),
                    sessions: lane.iter().cloned().collect(),
                })
                .collect();
        }
        Ok(())
    }

    /// The tabs shape's `dispatchMode` (view state: read leniently). Its lanes
    /// point at parked sessions and are kept as hangar's dispatch lanes.
    fn read_dispatch(&mut self, p: &Node<'_>, first_window: bool) {
        let Some(dispatch) = p.opt_field("dispatchMode").ok().flatten() else {
            return;
        };
        let Some(obj) = dispatch.value().as_object() else {
            self.kept.push(KeptItem::new(
                "dispatchMode",
                "view",
                format!(
                    "{} is not an object; the dispatch view was not read",
                    dispatch.path()
                ),
            ));
            return;
        };
        if !first_window {
            self.kept.push(KeptItem::new(
                "dispatchMode",
                "view",
                format!(
                    "{}: hangar keeps one dispatch view; the first window's was kept",
                    dispatch.path()
                ),
            ));
            return;
        }
        let str_of = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        self.ws.dispatch.mode = str_of(obj.get("scope"));
        self.ws.dispatch.selected = str_of(obj.get("focusedSessionId")).map(SessionId::new);
        let Some(tiled) = obj.get("tiled").and_then(Value::as_object) else {
            return;
        };
        if let Some(lanes) = tiled.get("lanes").and_then(Value::as_array) {
            self.ws.dispatch.lanes = lanes
                .iter()
                .enumerate()
                .map(|(n, lane)| DispatchLane {
                    name: format!("lane {}", n + 1),
                    sessions: str_of(lane.get("selectedSessionId"))
                        .map(SessionId::new)
                        .into_iter()
                        .collect(),
                })
                .collect();
        }
        if ["ratios", "rows", "laneWeights"]
            .iter()
            .any(|k| tiled.contains_key(*k))
        {
            self.kept.push(KeptItem::new(
                "dispatchMode",
                "view",
                "the dispatch lanes' sizes are not represented in hangar; the lanes were kept",
            ));
        }
    }

    /// A `sessions` entry (or a buried record's `sessionMeta`).
    fn read_row(&mut self, id: SessionId, node: &Node<'_>) -> Result<Row, ImportError> {
        let cwd = node.field("cwd")?.str()?;
        let kind = node.opt_str("kind")?;
        let provider = match kind {
            None => Provider::Claude,
            Some("terminal") => Provider::Shell,
            Some(name) => Provider::from_name(name),
        };
        let view = (kind == Some("extension-view")).then(|| {
            node.opt_str("extensionViewId")
                .ok()
                .flatten()
                .unwrap_or("(no extensionViewId)")
                .to_owned()
        });
        let mut meta = SessionMeta::new(id, provider, cwd);
        meta.title = node.opt_str("title")?.unwrap_or_default().to_owned();

        let source_node = node.opt_field("providerSessionIdSource")?;
        let source = match &source_node {
            None => None,
            Some(n) => match n.str()? {
                "jsonl-entry" => Some(IdSource::Transcript),
                "resume-request" => Some(IdSource::ResumeRequest),
                "proxy-header" => Some(IdSource::ProxyHeader),
                // `runtime-start`, `provider-follow` and any later value are
                // durable by Agent Code's own rule; the value is kept below.
                other => {
                    meta.imported_fields.insert(
                        "providerSessionIdSource".to_owned(),
                        compact(&Value::from(other)),
                    );
                    None
                }
            },
        };
        let provider_id = match node.opt_str("providerSessionId")?.filter(|s| !s.is_empty()) {
            Some(id) => Some(id),
            // The April builds' name for it.
            None => node.opt_str("ccSessionId")?.filter(|s| !s.is_empty()),
        };
        meta.provider_session = provider_id.map(|id| ProviderSessionId {
            id: id.to_owned(),
            source,
        });

        let link = |key: &str| -> Result<Option<SessionId>, ImportError> {
            Ok(node
                .opt_str(key)?
                .filter(|s| !s.is_empty())
                .map(SessionId::new))
        };
        let text = |key: &str| -> Result<Option<String>, ImportError> {
            Ok(node
                .opt_str(key)?
                .filter(|s| !s.is_empty())
                .map(str::to_owned))
        };
        meta.relationships = Relationships {
            linked_parent: link("linkedParentId")?,
            orchestration_parent: link("orchestrationParentId")?,
            orchestration_root: link("orchestrationRootId")?,
            run: text("orchestrationRunId")?,
            role: text("orchestrationRole")?,
        };

        // `[]` means the user turned every built-in MCP domain off for this
        // agent: it starts without hangar's MCP server too. Absent means the
        // defaults.
        if let Some(domains) = node.opt_field("builtInMcpDomains")?
            && domains.value().as_array().is_some_and(Vec::is_empty)
        {
            meta.mcp = false;
        }
        if meta.provider == Provider::Shell
            && let Some(name) = node
                .opt_field("tmuxName")?
                .and_then(|n| n.value().as_str())
                .filter(|s| !s.is_empty())
        {
            meta.tmux_session = Some(name.to_owned());
        }

        let project = node.opt_str("projectId")?.map(str::to_owned);
        let joined_at = node.opt_field("joinedAt")?.map(|n| n.f64()).transpose()?;
        let last_used_at = node.opt_field("lastUsedAt")?.map(|n| n.ms()).transpose()?;

        for key in node.keys() {
            if MAPPED_FIELDS.contains(&key) {
                continue;
            }
            if let Some(value) = node.value().get(key) {
                meta.imported_fields.insert(key.to_owned(), compact(value));
            }
            let known = VERBATIM_FIELDS.contains(&key) || key.starts_with("inherited");
            if !known {
                *self.unknown_fields.entry(key.to_owned()).or_default() += 1;
            }
        }
        Ok(Row {
            meta,
            view,
            project,
            joined_at,
            last_used_at,
        })
    }

    /// A tile tree. A leaf shown twice, or showing an extension view, is
    /// dropped (reported) and its split collapses into the other side.
    fn read_tile(
        &mut self,
        node: &Node<'_>,
        tab: &TabId,
        rows: &BTreeMap<SessionId, Row>,
        shown: &mut BTreeSet<SessionId>,
    ) -> Result<Option<Tile>, ImportError> {
        let kind = node.field("type")?;
        match kind.str()? {
            "leaf" => {
                let session = SessionId::new(node.field("sessionId")?.str()?);
                if rows.get(&session).is_some_and(|r| r.view.is_some()) {
                    // Reported with its session below.
                    Ok(None)
                } else if shown.insert(session.clone()) {
                    Ok(Some(Tile::leaf(session)))
                } else {
                    self.dropped.push(DroppedItem::new(
                        session.as_str(),
                        "pane",
                        format!(
                            "session is already shown in another pane (found again in tab {tab})"
                        ),
                    ));
                    Ok(None)
                }
            }
            "split" => {
                let direction = read_direction(&node.field("direction")?)?;
                let ratio = match node.opt_field("ratio")? {
                    Some(r) => r.f64()?,
                    None => 0.5,
                };
                let a = self.read_tile(&node.field("a")?, tab, rows, shown)?;
                let b = self.read_tile(&node.field("b")?, tab, rows, shown)?;
                Ok(match (a, b) {
                    (Some(a), Some(b)) => Some(Tile::Split {
                        direction,
                        ratio: clamp_ratio(ratio as f32),
                        a: Box::new(a),
                        b: Box::new(b),
                    }),
                    (Some(only), None) | (None, Some(only)) => Some(only),
                    (None, None) => None,
                })
            }
            _ => Err(kind.expected(r#""leaf" or "split""#)),
        }
    }
}

fn read_direction(node: &Node<'_>) -> Result<Direction, ImportError> {
    match node.str()? {
        "vertical" => Ok(Direction::Vertical),
        "horizontal" => Ok(Direction::Horizontal),
        _ => Err(node.expected(r#""vertical" or "horizontal""#)),
    }
}

/// A value as compact JSON text.
fn compact(value: &Value) -> String {
    // Cannot fail: a `Value` always serializes.
    serde_json::to_string(value).unwrap_or_default()
}
