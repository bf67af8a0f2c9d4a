//! The TUI's state and what each key does to it.
//!
//! The daemon owns the workspace; this is a mirror refreshed by the control
//! thread, plus what only the screen has (modes, the dialog, the zoomed
//! pane, the side-list selection). Every change to the workspace goes to the
//! daemon as a request; only focus moves and ratios are also applied here at
//! once so the screen does not lag behind the keys. Nothing here stops a
//! session: quitting only drops the attach connections.

use std::collections::HashMap;
use std::sync::mpsc::Sender;

use hangar_core::{Direction, FocusMove, Placement, SessionId, Tab, TabId};
use hangar_protocol::message::{self as msg, ErrorBody, Request, codes};
use hangar_protocol::reply;
use hangar_protocol::view::SessionView;
use hangar_terminal::MouseMode;

use crate::conn::Target;
use crate::tui::clipboard;
use crate::tui::control::{Command, Outcome, Snapshot};
use crate::tui::copy::{CopyAction, CopyMode, Pos};
use crate::tui::diff_view::{DiffAction, DiffDialog};
use crate::tui::events::Event;
use crate::tui::layout::{self, ScreenLayout};
use crate::tui::overview::{OverviewAction, OverviewDialog};
use crate::tui::pane::{Pane, PaneEvent, PaneStatus};
use crate::tui::pane_mouse;
use crate::tui::search::{SearchAction, SearchDialog};
use crate::tui::usage_view::UsageDialog;
use hangar_core::keys::{self, Decoder, Key, Mouse, MouseKind, PassThroughFilter};

/// Providers offered by the new-agent dialog; `auto` lets the daemon pick
/// (the first agent CLI found, in `Provider::AGENT_CLIS`' order), then every
/// agent CLI in that order, then the shell.
pub const PROVIDERS: &[&str] = &[
    "auto", "claude", "codex", "opencode", "gemini", "pi", "qwen", "copilot", "crush", "kilo",
    "aider", "kimi", "shell",
];

/// The new-agent dialog's fields, in Tab order.
pub const FIELD_PROVIDER: usize = 0;
pub const FIELD_FOLDER: usize = 1;
pub const FIELD_WORKTREE: usize = 2;
pub const FIELD_BRANCH: usize = 3;
const NEW_AGENT_FIELDS: usize = 4;

/// How much one resize key moves a divider.
const RATIO_STEP: f32 = 0.05;
/// Lines one turn of the mouse wheel scrolls.
const WHEEL_LINES: isize = 3;

pub enum Dialog {
    NewAgent {
        provider: usize,
        cwd: String,
        /// Which field has the keys: one of the `FIELD_*` constants.
        field: usize,
        /// Split this pane in this direction instead of the tab's automatic spot.
        split: Option<(String, Direction)>,
        /// Start it in a new git worktree of the folder's repository.
        worktree: bool,
        /// The worktree's new branch; empty: the daemon makes one from the title.
        branch: String,
    },
    TabTitle {
        /// `None`: a new tab; `Some(id)`: rename that tab.
        rename: Option<String>,
        value: String,
    },
    Confirm {
        message: String,
        items: Vec<String>,
        request: Request,
    },
    /// `/`: search every session's text and go to one.
    Search(SearchDialog),
    /// `$`: the last 24 hours of usage, per session and account.
    Usage(UsageDialog),
    /// `D`: the focused session's diff, and review comments on it.
    Diff(DiffDialog),
    /// `A`: every host's agents, waiting ones first.
    Overview(OverviewDialog),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideKind {
    Parked,
    Buried,
}

/// A row of the side list.
#[derive(Clone, Debug)]
pub struct SideEntry {
    pub session: SessionId,
    pub kind: SideKind,
}

/// Input that came before the first snapshot, in order.
enum HeldInput {
    Bytes(Vec<u8>),
    /// The escape time passed here with no byte.
    Quiet,
}

/// A new agent on its way to its pane, which will get the keyboard.
struct NewPaneTyping {
    /// Its id, once the daemon answered.
    session: Option<String>,
    /// What was typed before its pane was live: the pane's, then.
    early: Vec<u8>,
    /// A new agent (not an existing pane still being attached).
    fresh: bool,
}

pub struct App {
    target: Target,
    events: Sender<Event>,
    commands: Sender<Command>,
    pub snap: Snapshot,
    pub have_snapshot: bool,
    /// Keys typed before the first snapshot: held, not lost. Handled
    /// before it, an Enter had no pane to type into and did nothing (the
    /// TUI tests pressed it again; a person would have too).
    held_input: Option<Vec<HeldInput>>,
    pub views: HashMap<String, SessionView>,
    pub panes: HashMap<String, Pane>,
    next_generation: u64,
    pub zoomed: Option<SessionId>,
    pub passthrough: bool,
    filter: PassThroughFilter,
    /// Command mode's keys, decoded across reads.
    decoder: Decoder,
    /// The prefix byte (Ctrl-b unless `[attach] detach_key` names another),
    /// learnt from the daemon when a pane attaches.
    pub prefix: u8,
    /// The prefix key just left pass-through: a second one sends it literally.
    armed: bool,
    pub help: bool,
    pub dialog: Option<Dialog>,
    pub side_selected: usize,
    pub message: Option<(String, bool)>,
    /// Commands sent but not answered: snapshots are held back meanwhile so
    /// a poll taken before a command does not undo what the keys just did.
    pending: usize,
    pub daemon_lost: Option<String>,
    pub quit: bool,
    /// This machine and the configured hosts (None when there are none).
    pub host_bar: Option<crate::tui::hosts::HostBar>,
    /// The person asked for the previous (-1) or next (1) host's view.
    pub switch_host: Option<isize>,
    /// A session to go to in the view of the host switched to (the
    /// overview's Enter on another host's agent), once it is shown.
    pub go_to_after_switch: Option<String>,
    /// The folder new agents default to when the tab names none.
    pub home_cwd: String,
    /// Copy mode, on one pane.
    pub copy: Option<CopyMode>,
    /// Copy mode was entered from typing: leaving it types again.
    copy_from_typing: bool,
    /// A new agent asked for in the dialog gets the keyboard once its pane
    /// is live, as a new tmux pane does.
    new_typing: Option<NewPaneTyping>,
    /// The last text copied (`]` types it into the focused pane).
    pub copied: Option<String>,
    /// Bytes for the outer terminal itself (OSC 52), written after a frame.
    pub terminal_out: Vec<u8>,
    /// The layout last drawn, for finding what the mouse points at.
    last_layout: Option<ScreenLayout>,
    /// A divider being dragged: the pane on its left (or above) and where
    /// the mouse was.
    drag: Option<(SessionId, Direction, u16)>,
    /// The pane whose program got a button press: its drags and release go
    /// there too, wherever the mouse went, until the release.
    mouse_grab: Option<SessionId>,
    /// The outer terminal reports motion without a button (1003) because a
    /// visible pane's program asked for it.
    outer_motion: bool,
}

impl App {
    pub fn new(target: Target, events: Sender<Event>, commands: Sender<Command>) -> App {
        App {
            target,
            events,
            commands,
            snap: Snapshot::default(),
            have_snapshot: false,
            held_input: Some(Vec::new()),
            views: HashMap::new(),
            panes: HashMap::new(),
            next_generation: 1,
            zoomed: None,
            passthrough: false,
            filter: PassThroughFilter::default(),
            decoder: Decoder::default(),
            prefix: keys::PREFIX,
            armed: false,
            help: false,
            dialog: None,
            side_selected: 0,
            message: None,
            pending: 0,
            daemon_lost: None,
            quit: false,
            host_bar: None,
            switch_host: None,
            go_to_after_switch: None,
            home_cwd: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "/".into()),
            copy: None,
            copy_from_typing: false,
            new_typing: None,
            copied: None,
            terminal_out: Vec::new(),
            last_layout: None,
            drag: None,
            mouse_grab: None,
            outer_motion: false,
        }
    }

    /// The host this view shows, when hosts are configured.
    pub fn host_name(&self) -> Option<&str> {
        self.host_bar.as_ref().map(|b| b.current().name.as_str())
    }

    // ---- reading the mirror ----

    pub fn active_tab(&self) -> Option<&Tab> {
        let ws = &self.snap.ws;
        ws.active_tab
            .as_ref()
            .and_then(|t| ws.tab(t))
            .or_else(|| ws.tabs.first())
    }

    pub fn focus(&self) -> Option<SessionId> {
        let tab = self.active_tab()?;
        let root = tab.root.as_ref()?;
        Some(
            tab.focus
                .clone()
                .filter(|f| root.contains(f))
                .unwrap_or_else(|| root.first_leaf().clone()),
        )
    }

    pub fn view(&self, id: &SessionId) -> Option<&SessionView> {
        self.views.get(id.as_str())
    }

    /// The session's activity as the daemon reports it: `working`,
    /// `waiting`, `idle` or `unknown` (also for a session it has not
    /// described yet).
    pub fn activity(&self, id: &SessionId) -> &str {
        self.view(id)
            .map(|v| v.activity.as_str())
            .filter(|a| !a.is_empty())
            .unwrap_or("unknown")
    }

    pub fn is_pinned(&self, id: &SessionId) -> bool {
        self.snap.ws.is_pinned(id)
    }

    /// The active tab's parked agents, then its buried panes, most recent
    /// first in each group.
    pub fn side_entries(&self) -> Vec<SideEntry> {
        let Some(tab) = self.active_tab() else {
            return Vec::new();
        };
        let ws = &self.snap.ws;
        let mut parked: Vec<_> = ws.parked.values().filter(|p| p.tab == tab.id).collect();
        // Agents waiting for the person come first (issue 11).
        parked.sort_by_key(|p| {
            let waiting = self.activity(&p.session) == "waiting";
            (!waiting, std::cmp::Reverse(p.parked_at_ms))
        });
        let mut buried: Vec<_> = ws
            .buried
            .values()
            .filter(|b| b.source_tab == tab.id)
            .collect();
        buried.sort_by_key(|b| std::cmp::Reverse(b.buried_at_ms));
        parked
            .into_iter()
            .map(|p| SideEntry {
                session: p.session.clone(),
                kind: SideKind::Parked,
            })
            .chain(buried.into_iter().map(|b| SideEntry {
                session: b.session.clone(),
                kind: SideKind::Buried,
            }))
            .collect()
    }

    pub fn layout(&self, area: ratatui::layout::Rect) -> ScreenLayout {
        layout::compute(area, self.active_tab(), self.zoomed.as_ref())
    }

    // ---- events from the other threads ----

    pub fn apply_snapshot(&mut self, snap: Snapshot) {
        self.daemon_lost = None;
        if self.pending > 0 {
            return;
        }
        self.views = snap
            .sessions
            .iter()
            .map(|v| (v.id.clone(), v.clone()))
            .collect();
        self.snap = snap;
        self.have_snapshot = true;
        self.release_held_input();
        let n = self.side_entries().len();
        if self.side_selected >= n {
            self.side_selected = n.saturating_sub(1);
        }
        if let Some(z) = &self.zoomed
            && !self.active_tab().is_some_and(|t| t.contains_leaf(z))
        {
            self.zoomed = None;
        }
        self.settle_new_typing();
    }

    /// The new agent's pane is live and focused: it gets what was typed
    /// for it and the keyboard; a help line says how to get back.
    fn settle_new_typing(&mut self) {
        let Some(id) = self.new_typing.as_ref().and_then(|w| w.session.clone()) else {
            return;
        };
        let focused = self.focus().is_some_and(|f| f.as_str() == id);
        match self.panes.get(&id).map(|p| &p.status) {
            Some(PaneStatus::Live) if focused => {
                let fresh = self.new_typing.as_ref().is_some_and(|w| w.fresh);
                let early = self.new_typing.take().map(|w| w.early).unwrap_or_default();
                if let Some(p) = self.panes.get_mut(&id) {
                    p.type_bytes(&early);
                }
                let what = if fresh {
                    "the new agent".to_owned()
                } else {
                    self.describe(&SessionId::new(&id))
                };
                self.message = Some((
                    format!(
                        "typing into {what}: {} goes back to commands",
                        self.prefix_name()
                    ),
                    false,
                ));
            }
            Some(PaneStatus::Failed(_) | PaneStatus::Lost(_) | PaneStatus::Exited(_)) => {
                self.new_typing = None;
                self.passthrough = false;
            }
            _ => {}
        }
    }

    /// The prefix key as a person reads it: `Ctrl-b`.
    pub fn prefix_name(&self) -> String {
        format!("Ctrl-{}", keys::ctrl_letter(self.prefix))
    }

    pub fn apply_pane_event(&mut self, session: &str, generation: u64, event: PaneEvent) {
        if let PaneEvent::Attached {
            detach_key: Some(spec),
            ..
        } = &event
        {
            let prefix = hangar_core::keys::DetachKey::parse(spec).prefix;
            if prefix != self.prefix && !self.passthrough {
                self.prefix = prefix;
            }
        }
        if let Some(p) = self.panes.get_mut(session)
            && p.generation == generation
        {
            p.apply(event);
            // A new agent's pane on its way to live keeps the typing
            // started for it.
            let awaited = self
                .new_typing
                .as_ref()
                .is_some_and(|w| w.session.as_deref() == Some(session));
            if p.status != PaneStatus::Live
                && !awaited
                && self.focus().is_some_and(|f| f.as_str() == session)
            {
                self.passthrough = false;
            }
        }
        self.settle_new_typing();
    }

    pub fn apply_outcome(&mut self, outcome: Outcome) {
        self.pending = self.pending.saturating_sub(1);
        if let (Request::New(_), Some(w)) = (&outcome.command.request, self.new_typing.as_mut()) {
            match &outcome.result {
                Ok(body) => {
                    w.session = serde_json::from_value::<reply::Created>(body.clone())
                        .ok()
                        .map(|c| c.id)
                }
                Err(_) => {
                    self.new_typing = None;
                    self.passthrough = false;
                }
            }
        }
        if let Request::Usage(_) = &outcome.command.request {
            if let Some(Dialog::Usage(d)) = self.dialog.as_mut() {
                d.reply = Some(outcome.result.map_err(|e| e.message));
            }
            return;
        }
        if let Request::Diff(asked) = &outcome.command.request {
            if let Some(Dialog::Diff(d)) = self.dialog.as_mut()
                && d.session == asked.session
            {
                let reply = match outcome.result {
                    Ok(v) => serde_json::from_value(v).map_err(|e| format!("bad reply: {e}")),
                    Err(e) => Err(e.message),
                };
                let next = d.answered(asked, reply);
                self.diff_action(next);
            }
            return;
        }
        if let Request::Review(asked) = &outcome.command.request
            && let Some(Dialog::Diff(d)) = self.dialog.as_mut()
            && d.session == asked.session
        {
            d.sent(match outcome.result {
                Ok(v) => serde_json::from_value::<reply::Reviewed>(v)
                    .map(|r| r.comments)
                    .map_err(|e| format!("bad reply: {e}")),
                Err(e) => Err(e.message),
            });
            return;
        }
        if let Request::Search(asked) = &outcome.command.request {
            if let Some(Dialog::Search(d)) = self.dialog.as_mut() {
                let reply = match outcome.result {
                    Ok(v) => serde_json::from_value(v).map_err(|e| format!("bad reply: {e}")),
                    Err(e) if e.code == codes::UNKNOWN_KIND => Err(crate::search::older_daemon()),
                    Err(e) => Err(e.message),
                };
                let next = d.answered(&asked.query, reply);
                self.search_action(next);
            }
            return;
        }
        match outcome.result {
            Ok(body) => {
                self.message = Some(match kept_worktrees(&body) {
                    // Work that exists nowhere else stays on disk: say where.
                    Some(kept) => (format!("{}; {kept}", outcome.command.label), true),
                    None => (outcome.command.label, false),
                })
            }
            Err(e) if e.code == codes::NEEDS_CONFIRMATION => {
                self.confirm(outcome.command.request, e)
            }
            Err(e) => {
                self.message = Some((format!("{}: {}", outcome.command.label, e.message), true))
            }
        }
        self.settle_new_typing();
    }

    fn confirm(&mut self, request: Request, e: ErrorBody) {
        let request = match request {
            Request::Close(c) => Request::Close(msg::Close { yes: true, ..c }),
            Request::TabClose(c) => Request::TabClose(msg::TabClose { yes: true, ..c }),
            other => {
                self.message = Some((e.message, true));
                let _ = other;
                return;
            }
        };
        let items = e.detail["would_close"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str())
                    .map(|id| self.describe(&SessionId::new(id)))
                    .collect()
            })
            .unwrap_or_default();
        let message = match &request {
            Request::TabClose(_) => "Close this tab and these sessions?".to_owned(),
            _ => "Closing it also closes linked sessions:".to_owned(),
        };
        self.dialog = Some(Dialog::Confirm {
            message,
            items,
            request,
        });
    }

    /// "provider · title" for a session, as lists show it.
    pub fn describe(&self, id: &SessionId) -> String {
        match self.snap.ws.sessions.get(id) {
            Some(m) if !m.title.is_empty() && m.title != m.provider.name() => {
                format!("{} · {}", m.provider.name(), m.title)
            }
            Some(m) => m.provider.name().to_owned(),
            None => id.as_str().get(..8).unwrap_or(id.as_str()).to_owned(),
        }
    }

    /// Draw each frozen pane view (reading the history pages it shows),
    /// before a frame is rendered.
    pub fn prepare_views(&mut self) {
        for pane in self.panes.values_mut() {
            pane.prepare_view();
            // A resize rewrapped what copy mode is reading: its positions
            // follow the text.
            if let Some(map) = pane.take_renumbering()
                && let Some(c) = self.copy.as_mut().filter(|c| c.session == pane.session)
            {
                c.renumber(|line| map.map(line as u64) as usize);
            }
        }
    }

    /// Keep one attached pane per leaf of the active tab, each sized to its
    /// inner area; drop the others (their sessions keep running).
    pub fn sync_panes(&mut self, layout: &ScreenLayout) {
        self.last_layout = Some(layout.clone());
        if let Some(Dialog::Diff(d)) = self.dialog.as_mut() {
            let s = layout.status;
            d.set_screen(ratatui::layout::Rect::new(0, 0, s.width, s.y + s.height));
        }
        self.follow_outer_motion(layout);
        if let Some(c) = &self.copy
            && !layout.panes.iter().any(|(id, _)| id.as_str() == c.session)
        {
            // Its pane left the screen (another tab, zoom, closed).
            self.copy = None;
        }
        let Some(tab) = self.active_tab() else {
            self.panes.clear();
            return;
        };
        let leaves = tab.leaves();
        self.panes
            .retain(|id, _| leaves.iter().any(|l| l.as_str() == id));
        let default = layout::inner(layout.body);
        for leaf in &leaves {
            let area = layout
                .panes
                .iter()
                .find(|(id, _)| id == leaf)
                .map(|(_, r)| layout::inner(*r));
            let state = self.view(leaf).map(|v| (v.state.clone(), v.reason.clone()));
            let pane = self.panes.entry(leaf.to_string()).or_insert_with(|| {
                let r = area.unwrap_or(default);
                let mut p = Pane::new(leaf.to_string(), r.height, r.width);
                p.generation = 0;
                p
            });
            if let Some(r) = area {
                pane.resize(r.height, r.width);
            }
            let first_time = pane.generation == 0;
            let (state, reason) = state.unwrap_or_default();
            if first_time {
                match state.as_str() {
                    // A failed pane waits for the retry key instead of
                    // waking again on its own.
                    "failed" => {
                        pane.generation = u64::MAX;
                        pane.status =
                            PaneStatus::Failed(reason.unwrap_or_else(|| "failed to start".into()));
                        continue;
                    }
                    "exited" => {
                        pane.generation = u64::MAX;
                        pane.status = PaneStatus::Exited(-1);
                        continue;
                    }
                    _ => {}
                }
            } else if pane.is_connected() || state != "live" || !pane.may_retry_on_its_own() {
                continue;
            }
            // New, or someone else woke it: attach.
            let generation = self.next_generation;
            self.next_generation += 1;
            pane.connect(&self.target, &self.events, generation);
        }
    }

    /// Attach again to the focused pane (which wakes it).
    fn retry_focused(&mut self) {
        let Some(focus) = self.focus() else { return };
        let generation = self.next_generation;
        self.next_generation += 1;
        if let Some(p) = self.panes.get_mut(focus.as_str()) {
            p.connect(&self.target, &self.events, generation);
            self.message = Some((format!("waking {}", self.describe(&focus)), false));
        }
    }

    fn send(&mut self, request: Request, label: impl Into<String>) {
        self.pending += 1;
        let _ = self.commands.send(Command {
            request,
            label: label.into(),
        });
    }

    // ---- input ----

    pub fn handle_input(&mut self, bytes: &[u8]) {
        if let Some(held) = self.held_input.as_mut() {
            held.push(HeldInput::Bytes(bytes.to_vec()));
            return;
        }
        self.input(bytes.to_vec(), false);
    }

    /// The escape time passed with no byte (the input thread's
    /// `InputQuiet`).
    pub fn input_quiet(&mut self) {
        if let Some(held) = self.held_input.as_mut() {
            held.push(HeldInput::Quiet);
            return;
        }
        if self.input_pending() {
            self.flush_input()
        }
    }

    /// The daemon cannot be reached: said on screen, and keys are handled
    /// as they come (`q` still quits).
    pub fn lost_daemon(&mut self, why: String) {
        self.daemon_lost = Some(why);
        self.release_held_input();
    }

    /// The workspace is known (or the daemon cannot be reached): keys typed
    /// before are handled now, in order, each escape time where it fell.
    fn release_held_input(&mut self) {
        for held in self.held_input.take().unwrap_or_default() {
            match held {
                HeldInput::Bytes(bytes) => self.input(bytes, false),
                HeldInput::Quiet => {
                    if self.input_pending() {
                        self.flush_input()
                    }
                }
            }
        }
    }

    /// Input that waits for the rest of a key (an escape sequence or a
    /// UTF-8 character a read cut off).
    pub fn input_pending(&self) -> bool {
        if self.passthrough {
            self.filter.pending()
        } else {
            self.decoder.pending()
        }
    }

    /// No byte came for the escape time: what waits is taken as it is (a
    /// lone ESC is the Esc key, or the pane's).
    pub fn flush_input(&mut self) {
        self.input(Vec::new(), true);
    }

    fn input(&mut self, mut bytes: Vec<u8>, flush: bool) {
        loop {
            if self.passthrough {
                let mut out = self.filter.feed(&bytes);
                if flush && out.left.is_none() {
                    out.forward.extend(self.filter.flush());
                }
                if let Some(w) = self.new_typing.as_mut() {
                    w.early.extend_from_slice(&out.forward);
                } else if let Some(focus) = self.focus()
                    && let Some(p) = self.panes.get_mut(focus.as_str())
                {
                    p.type_bytes(&out.forward);
                }
                for m in out.mouse {
                    self.mouse(m);
                }
                let Some(rest) = out.left else { return };
                self.passthrough = false;
                // The prefix asks for commands: the new pane, when it comes,
                // is focused but not typed into.
                self.new_typing = None;
                self.armed = true;
                // Scrolling back from typing comes back to typing.
                self.copy_from_typing = rest.starts_with(b"\x1b[5;2~");
                bytes = rest;
                continue;
            }
            self.decoder.push(&bytes);
            loop {
                let key = if flush {
                    self.decoder.flush_key()
                } else {
                    self.decoder.next_key()
                };
                let Some(key) = key else { return };
                self.handle_key(key);
                if self.passthrough {
                    // Bytes that followed the switch to typing are typed.
                    bytes = self.decoder.take_bytes();
                    break;
                }
            }
        }
    }

    pub fn handle_key(&mut self, key: Key) {
        let armed = std::mem::take(&mut self.armed);
        if self.dialog.is_some() {
            self.dialog_key(key);
            return;
        }
        if self.help {
            if matches!(key, Key::Esc | Key::Char('?') | Key::Char('q') | Key::Enter) {
                self.help = false;
            }
            return;
        }
        if let Key::Mouse(m) = key {
            self.mouse(m);
            return;
        }
        if self.copy.is_some() {
            self.copy_key(key);
            return;
        }
        match key {
            Key::Ctrl(c) if armed && c == keys::ctrl_letter(self.prefix) => {
                let prefix = self.prefix;
                if let Some(focus) = self.focus()
                    && let Some(p) = self.panes.get_mut(focus.as_str())
                {
                    p.type_bytes(&[prefix]);
                }
                self.enter_passthrough();
            }
            Key::Ctrl(c) if c == keys::ctrl_letter(self.prefix) => {}
            Key::Char('q') => self.quit = true,
            Key::Char('?') => self.help = true,
            Key::Esc => self.message = None,
            Key::Enter | Key::Char('i') => self.enter_passthrough(),
            Key::Char('n') => self.open_new_agent(None),
            Key::Char('%') | Key::Char('|') => self.open_split(Direction::Vertical),
            Key::Char('"') | Key::Char('-') => self.open_split(Direction::Horizontal),
            Key::Up | Key::Char('k') => self.move_focus(FocusMove::Up),
            Key::Down | Key::Char('j') => self.move_focus(FocusMove::Down),
            Key::Left | Key::Char('h') => self.move_focus(FocusMove::Left),
            Key::Right | Key::Char('l') => self.move_focus(FocusMove::Right),
            Key::Char('H') | Key::ShiftLeft => self.resize(Direction::Vertical, -RATIO_STEP),
            Key::Char('L') | Key::ShiftRight => self.resize(Direction::Vertical, RATIO_STEP),
            Key::Char('K') | Key::ShiftUp => self.resize(Direction::Horizontal, -RATIO_STEP),
            Key::Char('J') | Key::ShiftDown => self.resize(Direction::Horizontal, RATIO_STEP),
            Key::Char('z') => {
                self.zoomed = match self.zoomed {
                    Some(_) => None,
                    None => self.focus(),
                }
            }
            Key::Char('p') => self.on_focused(|id| Request::Park(sref(id)), "parked"),
            // A fork opens in a split beside its parent (`hangar fork`).
            Key::Char('F') => self.on_focused(
                |id| {
                    Request::Fork(msg::Fork {
                        session: id,
                        ..Default::default()
                    })
                },
                "forked",
            ),
            Key::Char('b') => self.on_focused(|id| Request::Bury(sref(id)), "buried"),
            Key::Char('x') => self.on_focused(
                |id| {
                    Request::Close(msg::Close {
                        session: id,
                        yes: false,
                        ..Default::default()
                    })
                },
                "closed",
            ),
            Key::Char('*') => {
                if let Some(f) = self.focus() {
                    let pinned = self.is_pinned(&f);
                    let req = if pinned {
                        Request::Unpin(sref(f.to_string()))
                    } else {
                        Request::Pin(sref(f.to_string()))
                    };
                    self.send(req, if pinned { "unpinned" } else { "pinned" });
                }
            }
            Key::Char(c @ '1'..='9') => self.go_to_pin(c as usize - '1' as usize),
            Key::Tab => self.select_side(1),
            Key::BackTab => self.select_side(-1),
            Key::Char('u') => {
                if let Some(e) = self.side_entries().get(self.side_selected).cloned() {
                    self.bring_back(&e.session);
                }
            }
            Key::Char('U') => {
                if let Some(e) = self
                    .side_entries()
                    .into_iter()
                    .find(|e| e.kind == SideKind::Buried)
                {
                    self.bring_back(&e.session);
                }
            }
            Key::Char('w') => self.retry_focused(),
            Key::Char('t') => {
                self.dialog = Some(Dialog::TabTitle {
                    rename: None,
                    value: String::new(),
                })
            }
            Key::Char('r') => {
                if let Some(t) = self.active_tab() {
                    self.dialog = Some(Dialog::TabTitle {
                        rename: Some(t.id.to_string()),
                        value: t.title.clone(),
                    })
                }
            }
            Key::Char('X') => {
                if let Some(t) = self.active_tab() {
                    let tab = t.id.to_string();
                    self.send(
                        Request::TabClose(msg::TabClose { tab, yes: false }),
                        "closed tab",
                    );
                }
            }
            Key::Char('{') if self.host_bar.is_some() => self.switch_host = Some(-1),
            Key::Char('}') if self.host_bar.is_some() => self.switch_host = Some(1),
            Key::Char('(') => self.switch_tab(-1),
            Key::Char(')') => self.switch_tab(1),
            Key::Char('[') => {
                // `Ctrl-b [` while typing: `q` comes back to typing, as
                // tmux's copy mode gives the pane back.
                self.copy_from_typing |= armed;
                self.enter_copy_mode(None)
            }
            Key::Char('/') => self.dialog = Some(Dialog::Search(SearchDialog::default())),
            Key::Char('D') => self.open_diff(),
            Key::Char('$') => {
                self.dialog = Some(Dialog::Usage(UsageDialog::default()));
                self.ask_usage();
            }
            Key::Char('A') => {
                let overview = OverviewDialog::default();
                overview.watch(&self.target.paths, self.events.clone());
                self.dialog = Some(Dialog::Overview(overview));
            }
            Key::PageUp | Key::ShiftPageUp => {
                self.copy_from_typing |= armed;
                self.enter_copy_mode(Some(key))
            }
            Key::Char(']') => self.paste_copied(),
            _ => {}
        }
    }

    /// Copy mode on the focused pane; `first` is a key to apply at once
    /// (Page Up when scrolling back started it).
    fn enter_copy_mode(&mut self, first: Option<Key>) {
        let from_typing = std::mem::take(&mut self.copy_from_typing);
        let Some(focus) = self.focus() else { return };
        self.enter_copy_mode_on(focus.as_str(), from_typing);
        if let Some(k) = first {
            self.copy_key(k);
        }
    }

    fn enter_copy_mode_on(&mut self, session: &str, from_typing: bool) -> bool {
        let Some(pane) = self.panes.get(session) else {
            return false;
        };
        if !matches!(pane.status, PaneStatus::Live | PaneStatus::Exited(_)) {
            return false;
        }
        let history = pane.history_end();
        let cursor = match pane.view_top() {
            None => {
                let (row, col) = pane.term.cursor_position();
                Pos {
                    line: history + usize::from(row),
                    col: usize::from(col),
                }
            }
            Some(top) => Pos { line: top, col: 0 },
        };
        let top = pane.view_top().unwrap_or(history);
        self.copy = Some(CopyMode::new(session.to_owned(), top, cursor));
        if let Some(pane) = self.panes.get_mut(session) {
            // Frozen from here: output printed in copy mode moves nothing.
            pane.set_view_top(Some(top));
        }
        self.copy_from_typing = from_typing;
        self.passthrough = false;
        true
    }

    fn leave_copy_mode(&mut self) {
        if let Some(c) = self.copy.take()
            && let Some(p) = self.panes.get_mut(&c.session)
        {
            p.set_view_top(None);
        }
        if std::mem::take(&mut self.copy_from_typing) {
            self.enter_passthrough();
        }
    }

    fn copy_key(&mut self, key: Key) {
        let Some(session) = self.copy.as_ref().map(|c| c.session.clone()) else {
            return;
        };
        let (Some(c), Some(pane)) = (self.copy.as_mut(), self.panes.get_mut(&session)) else {
            self.copy = None;
            return;
        };
        let action = c.key(key, pane);
        show_copy_view(c, pane);
        match action {
            CopyAction::Stay => {}
            CopyAction::Leave => self.leave_copy_mode(),
            CopyAction::Copy(text) => {
                self.copy_text(text);
                self.leave_copy_mode();
            }
        }
    }

    /// Put text on the clipboard: the outer terminal's (OSC 52, which
    /// reaches the person's machine even over SSH) and the system one when
    /// a clipboard program is there.
    fn copy_text(&mut self, text: String) {
        self.terminal_out
            .extend_from_slice(&clipboard::osc52(&text));
        clipboard::to_system(&text);
        self.message = Some((format!("copied {} characters", text.chars().count()), false));
        self.copied = Some(text);
    }

    /// Type the last copied text into the focused pane, as a paste.
    fn paste_copied(&mut self) {
        let Some(text) = self.copied.clone() else {
            self.message = Some(("nothing copied yet (Ctrl-b [ to copy)".into(), true));
            return;
        };
        if let Some(focus) = self.focus()
            && let Some(p) = self.panes.get_mut(focus.as_str())
        {
            let mut bytes = b"\x1b[200~".to_vec();
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(b"\x1b[201~");
            p.type_bytes(&bytes);
        }
    }

    /// The pane (outer rectangle) under a cell.
    fn pane_at(&self, col: u16, row: u16) -> Option<(SessionId, ratatui::layout::Rect)> {
        let layout = self.last_layout.as_ref()?;
        layout
            .panes
            .iter()
            .find(|(_, r)| col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height)
            .cloned()
    }

    /// A divider under a cell: the pane left of (or above) it, and which
    /// way the divider runs.
    fn divider_at(&self, col: u16, row: u16) -> Option<(SessionId, Direction)> {
        let layout = self.last_layout.as_ref()?;
        let (id, r) = self.pane_at(col, row)?;
        let right_edge = col + 1 == r.x + r.width;
        let bottom_edge = row + 1 == r.y + r.height;
        let left_edge = col == r.x;
        let top_edge = row == r.y;
        let neighbour = |x: u16, y: u16| {
            layout
                .panes
                .iter()
                .find(|(_, o)| x >= o.x && x < o.x + o.width && y >= o.y && y < o.y + o.height)
                .map(|(id, _)| id.clone())
        };
        if right_edge && neighbour(col + 1, row).is_some() {
            return Some((id, Direction::Vertical));
        }
        if left_edge
            && col > 0
            && let Some(left) = neighbour(col - 1, row)
        {
            return Some((left, Direction::Vertical));
        }
        if bottom_edge && neighbour(col, row + 1).is_some() {
            return Some((id, Direction::Horizontal));
        }
        if top_edge
            && row > 0
            && let Some(above) = neighbour(col, row - 1)
        {
            return Some((above, Direction::Horizontal));
        }
        None
    }

    /// Ask the outer terminal for motion without a button (1003) while a
    /// visible pane's program wants it, and stop when none does.
    fn follow_outer_motion(&mut self, layout: &ScreenLayout) {
        let want = pane_mouse::outer_motion(layout.panes.iter().filter_map(|(id, _)| {
            let p = self.panes.get(id.as_str())?;
            Some(p.term.mouse_mode())
        }));
        if want != self.outer_motion {
            self.outer_motion = want;
            // Leaving 1003 leaves mouse reporting: the TUI's own 1002 again.
            self.terminal_out.extend_from_slice(if want {
                b"\x1b[?1003h"
            } else {
                b"\x1b[?1003l\x1b[?1002h"
            });
        }
    }

    /// The inner area (inside the border) of a pane on screen.
    fn pane_inner(&self, id: &SessionId) -> Option<ratatui::layout::Rect> {
        let layout = self.last_layout.as_ref()?;
        let (_, outer) = layout.panes.iter().find(|(p, _)| p == id)?;
        Some(layout::inner(*outer))
    }

    /// A mouse event for a pane's own program (tmux's `mouse on` rules,
    /// `pane_mouse`): inside a pane whose program asked for the mouse, the
    /// event is passed on at the pane-relative cell, and a press also
    /// focuses the pane; the wheel over a full-screen program that did not
    /// ask for it types arrows. Returns false when the event stays the
    /// TUI's: borders and dividers, a pane in copy mode, a program that did
    /// not ask (its history scrolls instead).
    fn mouse_for_program(&mut self, m: Mouse) -> bool {
        let grabbed = self.mouse_grab.clone();
        let was_grabbed = grabbed.is_some();
        if m.released {
            self.mouse_grab = None;
        }
        let (id, area) = match grabbed {
            Some(id) => match self.pane_inner(&id) {
                Some(area) => (id, area),
                None => return false,
            },
            None => match self.pane_at(m.col, m.row) {
                Some((id, outer)) => (id, layout::inner(outer)),
                None => return false,
            },
        };
        let inside = m.col >= area.x
            && m.col < area.x + area.width
            && m.row >= area.y
            && m.row < area.y + area.height;
        if self.copy.as_ref().is_some_and(|c| c.session == id.as_str()) {
            return false;
        }
        let Some(pane) = self.panes.get_mut(id.as_str()) else {
            return false;
        };
        if pane.status != PaneStatus::Live {
            return false;
        }
        let (mode, encoding) = (pane.term.mouse_mode(), pane.term.mouse_encoding());
        if mode == MouseMode::None {
            if !inside || !pane.term.alternate_screen() {
                return false;
            }
            return match pane_mouse::wheel_arrows(&m) {
                Some(arrows) => {
                    pane.type_bytes(&arrows);
                    true
                }
                None => false,
            };
        }
        if !inside {
            // Off the pane while a button is held: dropped, as tmux does;
            // a border without a grab stays the TUI's.
            return was_grabbed;
        }
        let (col, row) = (m.col - area.x, m.row - area.y);
        if let Some(bytes) = pane_mouse::encode(&m, col, row, mode, encoding) {
            pane.send_raw(&bytes);
        }
        if pane_mouse::is_press(&m) && !pane_mouse::is_wheel(&m) {
            self.mouse_grab = Some(id.clone());
            if self.focus().as_ref() != Some(&id) {
                self.focus_pane(&id);
            }
        }
        true
    }

    /// The mouse: inside a pane whose program asked for it, the program's
    /// (`mouse_for_program`); otherwise the wheel scrolls a pane's history,
    /// a click focuses a pane, dragging a divider resizes its split.
    fn mouse(&mut self, m: Mouse) {
        if self.drag.is_none() && self.mouse_for_program(m) {
            return;
        }
        match m.kind {
            MouseKind::WheelUp | MouseKind::WheelDown => {
                let Some((id, _)) = self.pane_at(m.col, m.row) else {
                    return;
                };
                let lines = if m.kind == MouseKind::WheelUp {
                    -WHEEL_LINES
                } else {
                    WHEEL_LINES
                };
                if self.copy.as_ref().is_none_or(|c| c.session != id.as_str()) {
                    if lines > 0 {
                        return;
                    }
                    let typing = self.passthrough;
                    self.leave_copy_mode();
                    if !self.enter_copy_mode_on(id.as_str(), typing) {
                        return;
                    }
                }
                if let (Some(c), Some(pane)) = (self.copy.as_mut(), self.panes.get_mut(id.as_str()))
                {
                    c.scroll(lines, pane);
                    show_copy_view(c, pane);
                    if lines > 0 && c.at_bottom(pane) && c.anchor.is_none() {
                        self.leave_copy_mode();
                    }
                }
            }
            MouseKind::Press => {
                if let Some((id, direction)) = self.divider_at(m.col, m.row) {
                    let at = match direction {
                        Direction::Vertical => m.col,
                        Direction::Horizontal => m.row,
                    };
                    self.drag = Some((id, direction, at));
                    return;
                }
                if let Some((id, _)) = self.pane_at(m.col, m.row)
                    && self.focus().as_ref() != Some(&id)
                {
                    self.focus_pane(&id);
                }
            }
            MouseKind::Drag => {
                let Some((id, direction, from)) = self.drag.clone() else {
                    return;
                };
                let at = match direction {
                    Direction::Vertical => m.col,
                    Direction::Horizontal => m.row,
                };
                let Some(body) = self.last_layout.as_ref().map(|l| l.body) else {
                    return;
                };
                let span = match direction {
                    Direction::Vertical => body.width,
                    Direction::Horizontal => body.height,
                };
                if at == from || span == 0 {
                    return;
                }
                // The divider follows the mouse by the body's share it moved
                // (exact for a split spanning the body, proportional inside).
                let delta = (f32::from(at) - f32::from(from)) / f32::from(span);
                self.drag = Some((id.clone(), direction, at));
                self.resize_pane(&id, direction, delta);
            }
            MouseKind::Release => self.drag = None,
            MouseKind::Other => {}
        }
    }

    fn focus_pane(&mut self, id: &SessionId) {
        let Some(tab) = self.active_tab().map(|t| t.id.clone()) else {
            return;
        };
        let _ = self.snap.ws.set_focus(&tab, id);
        // Typing goes on into the pane clicked, as with tmux's and zellij's
        // mouse; a pane with no live program to type to leaves typing.
        if self.passthrough
            && self.panes.get(id.as_str()).map(|p| &p.status) != Some(&PaneStatus::Live)
        {
            self.passthrough = false;
        }
        self.send(
            Request::Focus(msg::Focus {
                tab: Some(tab.to_string()),
                session: Some(id.to_string()),
            }),
            format!("focus {}", self.describe(id)),
        );
    }

    fn enter_passthrough(&mut self) {
        let Some(focus) = self.focus() else { return };
        match self.panes.get(focus.as_str()).map(|p| &p.status) {
            Some(PaneStatus::Live) => {
                self.passthrough = true;
                self.filter = PassThroughFilter::new(self.prefix);
            }
            Some(PaneStatus::Failed(_) | PaneStatus::Lost(_) | PaneStatus::Exited(_)) => {
                self.retry_focused()
            }
            // Still being attached (a hibernated agent waking): typing
            // starts now and what is typed is kept for the pane until it is
            // live, as for a new agent. Dropping the Enter left a person
            // pressing it again (and the TUI tests did).
            Some(PaneStatus::Connecting { .. }) => {
                self.new_typing = Some(NewPaneTyping {
                    session: Some(focus.to_string()),
                    early: Vec::new(),
                    fresh: false,
                });
                self.passthrough = true;
                self.filter = PassThroughFilter::new(self.prefix);
                self.message = Some((
                    format!(
                        "{} is starting: what you type goes to it once it is live; {} goes back to commands",
                        self.describe(&focus),
                        self.prefix_name()
                    ),
                    false,
                ));
                self.settle_new_typing();
            }
            None => {}
        }
    }

    fn on_focused(&mut self, make: impl FnOnce(String) -> Request, label: &str) {
        if let Some(f) = self.focus() {
            let label = format!("{label} {}", self.describe(&f));
            self.send(make(f.to_string()), label);
        }
    }

    fn open_new_agent(&mut self, split: Option<(String, Direction)>) {
        let cwd = self
            .active_tab()
            .and_then(|t| t.cwd.clone())
            .unwrap_or_else(|| self.home_cwd.clone());
        self.dialog = Some(Dialog::NewAgent {
            provider: 0,
            cwd,
            field: FIELD_PROVIDER,
            split,
            worktree: false,
            branch: String::new(),
        });
    }

    fn open_split(&mut self, direction: Direction) {
        let split = self.focus().map(|f| (f.to_string(), direction));
        self.open_new_agent(split);
    }

    fn move_focus(&mut self, dir: FocusMove) {
        let Some(tab) = self.active_tab().map(|t| t.id.clone()) else {
            return;
        };
        if let Some(t) = self.snap.ws.tab_mut(&tab)
            && t.focus.is_none()
        {
            t.focus = t.root.as_ref().map(|r| r.first_leaf().clone());
        }
        if let Some(next) = self.snap.ws.move_focus(&tab, dir) {
            self.zoomed = None;
            self.send(
                Request::Focus(msg::Focus {
                    tab: Some(tab.to_string()),
                    session: Some(next.to_string()),
                }),
                format!("focus {}", self.describe(&next)),
            );
        }
    }

    /// Move the nearest divider of direction `want` around the focused pane
    /// (an ancestor split when the pane's own split runs the other way).
    fn resize(&mut self, want: Direction, delta: f32) {
        let Some(focus) = self.focus() else { return };
        self.resize_pane(&focus, want, delta);
    }

    /// Move the nearest divider of direction `want` around a pane.
    fn resize_pane(&mut self, focus: &SessionId, want: Direction, delta: f32) {
        let focus = focus.clone();
        let Some(ratio) = self
            .active_tab()
            .and_then(|t| t.root.as_ref())
            .and_then(|r| r.enclosing_ratio(&focus, want))
        else {
            self.message = Some(("no split that way around this pane".into(), true));
            return;
        };
        let ratio = hangar_core::clamp_ratio(ratio + delta);
        if self.snap.ws.set_split_ratio(&focus, want, ratio) == Ok(true) {
            self.send(
                Request::Ratio(msg::Ratio {
                    session: focus.to_string(),
                    ratio,
                    direction: Some(direction_name(want).to_owned()),
                }),
                "resized",
            );
        }
    }

    fn select_side(&mut self, step: isize) {
        let n = self.side_entries().len();
        if n == 0 {
            return;
        }
        self.side_selected = (self.side_selected as isize + step).rem_euclid(n as isize) as usize;
    }

    /// Unpark (beside the focused pane) or unbury (where it was) a session.
    fn bring_back(&mut self, id: &SessionId) {
        let label = self.describe(id);
        match self.snap.ws.placement_of(id).map(|(p, _)| p) {
            Some(Placement::Parked) => {
                let tab = self.active_tab().map(|t| t.id.to_string());
                let split = self.focus().map(|f| f.to_string());
                let direction = split.as_ref().map(|_| "vertical".to_owned());
                self.send(
                    Request::Unpark(msg::Unpark {
                        session: id.to_string(),
                        tab,
                        split,
                        direction,
                    }),
                    format!("unparked {label}"),
                );
            }
            Some(Placement::Buried) => {
                self.send(
                    Request::Unbury(sref(id.to_string())),
                    format!("unburied {label}"),
                );
            }
            Some(Placement::Pane) => {
                if let Some(tab) = self.snap.ws.pane_tab(id).map(|t| t.id.clone()) {
                    let _ = self.snap.ws.set_active_tab(&tab);
                    let _ = self.snap.ws.set_focus(&tab, id);
                    self.zoomed = None;
                    self.send(
                        Request::Focus(msg::Focus {
                            tab: Some(tab.to_string()),
                            session: Some(id.to_string()),
                        }),
                        format!("focus {label}"),
                    );
                }
            }
            None => {}
        }
    }

    /// `D`: the focused session's diff.
    fn open_diff(&mut self) {
        let Some(focus) = self.focus() else {
            self.message = Some(("no focused pane to diff".into(), true));
            return;
        };
        let (mut d, ask) = DiffDialog::open(focus.to_string(), self.describe(&focus));
        if let Some(l) = &self.last_layout {
            let s = l.status;
            d.set_screen(ratatui::layout::Rect::new(0, 0, s.width, s.y + s.height));
        }
        self.dialog = Some(Dialog::Diff(d));
        self.diff_action(DiffAction::Ask(ask));
    }

    fn diff_action(&mut self, action: DiffAction) {
        match action {
            DiffAction::None => {}
            DiffAction::Ask(ask) => self.send(Request::Diff(ask), "diff"),
            DiffAction::Send(comments) => {
                if let Some(Dialog::Diff(d)) = &self.dialog {
                    let session = d.session.clone();
                    let label = format!("sent {} review comment(s)", comments.len());
                    self.send(Request::Review(msg::Review { session, comments }), label);
                }
            }
            DiffAction::Close => self.dialog = None,
        }
    }

    fn ask_usage(&mut self) {
        let day_ago = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
            - 24 * 3_600_000;
        self.send(
            Request::Usage(msg::UsageQuery {
                since_ms: day_ago,
                session: None,
            }),
            "usage",
        );
    }

    fn ask_search(&mut self, query: String) {
        let request = Request::Search(msg::Search {
            query,
            ..Default::default()
        });
        self.send(request, "search");
    }

    fn search_action(&mut self, action: SearchAction) {
        match action {
            SearchAction::None => {}
            SearchAction::Ask(query) => self.ask_search(query),
            SearchAction::Jump(session) => {
                self.dialog = None;
                self.go_to_session(&SessionId::new(&session));
            }
        }
    }

    /// Where a search result leads: a pane is focused (its tab made
    /// active); a parked or buried session is selected in its tab's side
    /// list, where `u` brings it back. Nothing is woken here.
    fn go_to_session(&mut self, id: &SessionId) {
        match self.snap.ws.placement_of(id) {
            Some((Placement::Pane, _)) => self.bring_back(id),
            Some((kind, tab)) => {
                if self.active_tab().map(|t| &t.id) != Some(&tab) {
                    let _ = self.snap.ws.set_active_tab(&tab);
                    self.zoomed = None;
                    self.send(
                        Request::Focus(msg::Focus {
                            tab: Some(tab.to_string()),
                            session: None,
                        }),
                        "switched tab",
                    );
                }
                if let Some(i) = self.side_entries().iter().position(|e| e.session == *id) {
                    self.side_selected = i;
                }
                let how = if kind == Placement::Parked {
                    "parked"
                } else {
                    "buried"
                };
                self.message = Some((
                    format!("{} is {how}: u brings it here", self.describe(id)),
                    false,
                ));
            }
            None => {
                self.message = Some((format!("{} is in no tab", self.describe(id)), true));
            }
        }
    }

    /// The overview's answer, for the overview when it is still open.
    pub fn overview_answered(
        &mut self,
        answered: Vec<(String, Vec<SessionView>)>,
        down: Vec<crate::remote::all_hosts::Down>,
    ) {
        if let Some(Dialog::Overview(d)) = self.dialog.as_mut() {
            d.answered(answered, down);
        }
    }

    /// Go to `session` on `host`: here at once; on another host, its view
    /// is switched to and the session gone to there when it is shown.
    fn go_to_on_host(&mut self, host: &str, session: String) {
        let here = self.host_name().unwrap_or(hangar_core::hosts::LOCAL);
        if host == here {
            self.go_to_session(&SessionId::new(&session));
            return;
        }
        let Some(bar) = &self.host_bar else { return };
        let Some(at) = bar.rows.iter().position(|r| r.name == host) else {
            self.message = Some((
                format!("no host {} here", hangar_core::display::name(host)),
                true,
            ));
            return;
        };
        self.switch_host = Some(at as isize - bar.current as isize);
        self.go_to_after_switch = Some(session);
    }

    /// The session the overview chose on this host, once this view's
    /// first snapshot shows it.
    pub fn go_to_when_shown(&mut self) {
        if !self.have_snapshot {
            return;
        }
        if let Some(session) = self.go_to_after_switch.take() {
            self.go_to_session(&SessionId::new(&session));
        }
    }

    fn go_to_pin(&mut self, index: usize) {
        match self.snap.ws.pins.get(index).cloned() {
            Some(id) => self.bring_back(&id),
            None => self.message = Some((format!("no pin {}", index + 1), true)),
        }
    }

    fn switch_tab(&mut self, step: isize) {
        let tabs: Vec<TabId> = self.snap.ws.tabs.iter().map(|t| t.id.clone()).collect();
        if tabs.len() < 2 {
            return;
        }
        let current = self
            .active_tab()
            .and_then(|a| tabs.iter().position(|t| *t == a.id))
            .unwrap_or(0);
        let next = tabs[(current as isize + step).rem_euclid(tabs.len() as isize) as usize].clone();
        let _ = self.snap.ws.set_active_tab(&next);
        self.zoomed = None;
        self.side_selected = 0;
        self.send(
            Request::Focus(msg::Focus {
                tab: Some(next.to_string()),
                session: None,
            }),
            "switched tab",
        );
    }

    fn dialog_key(&mut self, key: Key) {
        let Some(dialog) = self.dialog.as_mut() else {
            return;
        };
        if let Dialog::Diff(d) = dialog {
            // Esc goes back a step (the comment, the hunks) before closing.
            let next = d.key(key);
            self.diff_action(next);
            return;
        }
        if key == Key::Esc {
            self.dialog = None;
            return;
        }
        match dialog {
            Dialog::NewAgent {
                provider,
                cwd,
                field,
                split,
                worktree,
                branch,
            } => match key {
                Key::Tab | Key::Down => *field = (*field + 1) % NEW_AGENT_FIELDS,
                Key::BackTab | Key::Up => {
                    *field = (*field + NEW_AGENT_FIELDS - 1) % NEW_AGENT_FIELDS
                }
                Key::Left if *field == FIELD_PROVIDER => {
                    *provider = (*provider + PROVIDERS.len() - 1) % PROVIDERS.len()
                }
                Key::Right | Key::Char(' ') if *field == FIELD_PROVIDER => {
                    *provider = (*provider + 1) % PROVIDERS.len()
                }
                Key::Backspace if *field == FIELD_FOLDER => {
                    cwd.pop();
                }
                Key::Char(c) if *field == FIELD_FOLDER => cwd.push(c),
                Key::Left | Key::Right | Key::Char(' ') if *field == FIELD_WORKTREE => {
                    *worktree = !*worktree
                }
                Key::Backspace if *field == FIELD_BRANCH => {
                    branch.pop();
                }
                // Naming a branch asks for a worktree.
                Key::Char(c) if *field == FIELD_BRANCH => {
                    branch.push(c);
                    *worktree = true;
                }
                Key::Enter => {
                    let provider = match PROVIDERS[*provider] {
                        "auto" => None,
                        p => Some(p.to_owned()),
                    };
                    let (split, direction) = match split.take() {
                        Some((s, d)) => (Some(s), Some(direction_name(d).to_owned())),
                        None => (None, None),
                    };
                    let cwd = cwd.trim().to_owned();
                    let branch = branch.trim().to_owned();
                    // As `hangar new --worktree [BRANCH]` asks for it.
                    let worktree = *worktree;
                    let request = Request::New(msg::NewSession {
                        provider,
                        cwd: (!cwd.is_empty()).then_some(cwd),
                        tab: self.active_tab().map(|t| t.id.to_string()),
                        split,
                        direction,
                        fallback_cwd: Some(self.home_cwd.clone()),
                        worktree,
                        worktree_branch: (worktree && !branch.is_empty()).then_some(branch),
                        ..Default::default()
                    });
                    self.dialog = None;
                    let label = if worktree {
                        "started a new agent in a new worktree"
                    } else {
                        "started a new agent"
                    };
                    self.send(request, label);
                    // Typing starts now: what is typed before the pane is
                    // live is kept for it, never taken as commands.
                    self.new_typing = Some(NewPaneTyping {
                        session: None,
                        early: Vec::new(),
                        fresh: true,
                    });
                    self.passthrough = true;
                    self.filter = PassThroughFilter::new(self.prefix);
                }
                _ => {}
            },
            Dialog::TabTitle { rename, value } => match key {
                Key::Backspace => {
                    value.pop();
                }
                Key::Char(c) => value.push(c),
                Key::Enter => {
                    let title = value.trim().to_owned();
                    let request = match rename.take() {
                        Some(tab) => Request::TabRename(msg::TabRename { tab, title }),
                        None => Request::TabNew(msg::TabNew {
                            title,
                            cwd: self
                                .active_tab()
                                .and_then(|t| t.cwd.clone())
                                .or_else(|| Some(self.home_cwd.clone())),
                        }),
                    };
                    self.dialog = None;
                    self.send(request, "tab saved");
                }
                _ => {}
            },
            Dialog::Search(d) => {
                let next = d.key(key);
                self.search_action(next);
            }
            Dialog::Diff(_) => {}
            Dialog::Overview(d) => match d.key(key) {
                OverviewAction::None => {}
                OverviewAction::Refresh => {
                    crate::tui::overview::ask(&self.target.paths, self.events.clone())
                }
                OverviewAction::Go { host, session } => {
                    self.dialog = None;
                    self.go_to_on_host(&host, session);
                }
            },
            Dialog::Usage(d) => {
                if key == Key::Char('r') {
                    d.reply = None;
                    self.ask_usage();
                }
            }
            Dialog::Confirm { request, .. } => match key {
                Key::Char('y') | Key::Char('Y') => {
                    let request = request.clone();
                    self.dialog = None;
                    self.send(request, "closed");
                }
                Key::Char('n') | Key::Char('N') | Key::Char('q') => self.dialog = None,
                _ => {}
            },
        }
    }
}

/// Freeze a pane's view on what copy mode shows (output printed meanwhile
/// then moves neither).
fn show_copy_view(c: &CopyMode, pane: &mut Pane) {
    pane.set_view_top(Some(c.top));
}

/// "kept worktree PATH: WHY" for each worktree a close left on disk, or
/// `None` when it kept none.
fn kept_worktrees(reply: &serde_json::Value) -> Option<String> {
    let kept: Vec<String> = reply["kept_worktrees"]
        .as_array()?
        .iter()
        .map(|w| {
            format!(
                "kept worktree {}: {}",
                w["path"].as_str().unwrap_or("?"),
                w["reason"].as_str().unwrap_or("it holds work")
            )
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("; "))
}

fn sref(session: String) -> msg::SessionRef {
    msg::SessionRef { session }
}

/// A direction as the protocol spells it.
fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Vertical => "vertical",
        Direction::Horizontal => "horizontal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_that_kept_a_worktree_says_where_and_why() {
        let reply = serde_json::json!({
            "closed": ["s"],
            "kept_worktrees": [{"id": "s", "path": "/w/fix", "reason": "1 uncommitted file(s)"}],
        });
        assert_eq!(
            kept_worktrees(&reply).as_deref(),
            Some("kept worktree /w/fix: 1 uncommitted file(s)")
        );
        assert_eq!(
            kept_worktrees(&serde_json::json!({"kept_worktrees": []})),
            None
        );
    }
}
