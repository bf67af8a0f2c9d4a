//! Drawing the TUI: tab bar, panes (each session's screen from its own
//! terminal, the daemon's engine), side list, status line, and the help and dialog overlays.
//!
//! Rendering reads the app and never changes it; every visible word comes
//! from the workspace mirror or the pane screens, so the same state always
//! draws the same screen (the snapshot tests rely on it).
//!
//! Metadata text (titles, tab names, folders, reasons, messages carrying
//! them) comes from agents and files and is shown through `shown` /
//! `hangar_core::display`: ratatui would drop a control character
//! silently and pass a bidi control to the terminal raw; a person sees its
//! escape instead. A pane's own screen is the agent's terminal, emulated
//! server-side, and is drawn cell by cell as it is.

use hangar_core::SessionId;
use hangar_core::display;
use hangar_terminal::CellColor;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};

use crate::tui::app::{
    App, Dialog, FIELD_BRANCH, FIELD_FOLDER, FIELD_PROVIDER, FIELD_WORKTREE, PROVIDERS, SideKind,
};
use crate::tui::copy::Pos;
use crate::tui::help::KEYS;
use crate::tui::layout::{ScreenLayout, inner};
use crate::tui::pane::{Pane, PaneStatus};
use crate::tui::widgets;

/// Columns a tab name may take in the tab bar, and a session's name in a
/// pane's border, before they are cut with a marker.
const TAB_NAME_COLS: usize = 30;
const PANE_NAME_COLS: usize = 120;

/// Untrusted one-line text as the TUI shows it.
fn shown(text: &str) -> String {
    display::name(text).into_owned()
}

pub fn draw(frame: &mut Frame, app: &App, layout: &ScreenLayout, now_ms: u64) {
    draw_tab_bar(frame, app, layout.tab_bar);
    let focus = app.focus();
    if layout.panes.is_empty() {
        draw_empty(frame, app, layout.body);
    }
    for (id, area) in &layout.panes {
        draw_pane(frame, app, id, *area, focus.as_ref() == Some(id));
    }
    if let Some(side) = layout.side {
        draw_side(frame, app, side, now_ms);
    }
    draw_status(frame, app, layout.status);
    if app.help {
        draw_help(frame, app, frame.area());
    }
    if let Some(d) = &app.dialog {
        draw_dialog(frame, app, d, frame.area());
    }
}

fn draw_tab_bar(frame: &mut Frame, app: &App, area: Rect) {
    let active = app.active_tab().map(|t| t.id.clone());
    let mut spans = vec![Span::styled(
        " hangar ",
        Style::new().fg(Color::Black).bg(Color::Cyan),
    )];
    if let Some(bar) = &app.host_bar {
        host_spans(&mut spans, bar);
    }
    if app.snap.ws.tabs.is_empty() {
        spans.push(Span::raw(" no tabs"));
    }
    for (i, tab) in app.snap.ws.tabs.iter().enumerate() {
        // With several hosts, each tab says whose it is.
        let name = display::name_fit(&tab.title, TAB_NAME_COLS);
        let label = match app.host_name() {
            Some(host) => format!("{}:{name}@{}", i + 1, shown(host)),
            None => format!("{}:{name}", i + 1),
        };
        if Some(&tab.id) == active.as_ref() {
            spans.push(Span::styled(
                format!(" [{label}] "),
                Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            ));
        } else {
            spans.push(Span::raw(format!("  {label}  ")));
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The host switcher: every host, the one on screen highlighted, one that
/// cannot be reached marked so.
fn host_spans(spans: &mut Vec<Span<'static>>, bar: &crate::tui::hosts::HostBar) {
    for (i, row) in bar.rows.iter().enumerate() {
        let (mark, color) = match row.reachable {
            Some(true) => ("", Color::Green),
            Some(false) => (" unreachable", Color::Red),
            None => (" ?", Color::DarkGray),
        };
        let text = format!(" {}{mark} ", row.name);
        let style = if i == bar.current {
            Style::new()
                .fg(Color::Black)
                .bg(color)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(color)
        };
        spans.push(Span::styled(text, style));
    }
    spans.push(Span::raw(" |"));
}

fn draw_empty(frame: &mut Frame, app: &App, area: Rect) {
    let connecting = match (&app.daemon_lost, app.host_name()) {
        (Some(e), Some(host)) => format!("host {host} is unreachable: {}", shown(e)),
        (None, Some(host)) if host != hangar_core::hosts::LOCAL => {
            format!("connecting to host {host}...")
        }
        _ => "connecting to the hangar daemon...".to_owned(),
    };
    let text = if !app.have_snapshot {
        connecting.as_str()
    } else if app.snap.ws.tabs.is_empty() {
        "No agents yet. Press n to start one, ? for help."
    } else {
        "This tab has no panes. Press n for a new agent, u to bring one back, ? for help."
    };
    let block = Block::bordered().border_type(BorderType::Plain);
    let inner_area = block.inner(area);
    frame.render_widget(block, area);
    let y = inner_area.y + inner_area.height / 2;
    // Up to 4 lines: why a host cannot be reached is worth reading whole.
    let line = Rect {
        y,
        height: 4.min(inner_area.height.saturating_sub(inner_area.height / 2)),
        ..inner_area
    };
    frame.render_widget(
        Paragraph::new(text)
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true }),
        line,
    );
}

fn state_of(app: &App, id: &SessionId) -> String {
    let pane_status = app.panes.get(id.as_str()).map(|p| &p.status);
    match pane_status {
        Some(PaneStatus::Connecting { .. }) => "waking".into(),
        Some(PaneStatus::Failed(_)) => "failed".into(),
        Some(PaneStatus::Lost(_)) => "reconnecting".into(),
        Some(PaneStatus::Exited(_)) => app
            .view(id)
            .map(|v| v.state.clone())
            .unwrap_or_else(|| "exited".into()),
        _ => app
            .view(id)
            .map(|v| v.state.clone())
            .unwrap_or_else(|| "unknown".into()),
    }
}

fn draw_pane(frame: &mut Frame, app: &App, id: &SessionId, area: Rect, focused: bool) {
    let mut title = String::from(" ");
    if app.is_pinned(id) {
        title.push_str("★ ");
    }
    title.push_str(&display::name_fit(&app.describe(id), PANE_NAME_COLS));
    title.push_str(" · ");
    title.push_str(&state_of(app, id));
    title.push_str(" · ");
    match app.view(id).and_then(|v| v.limit.as_ref()) {
        // A usage limit stopped it (issue 29): until when, in local time.
        Some(limit) => title.push_str(&format!(
            "limited {}",
            crate::usage::until_text(limit.resets_at)
        )),
        None => title.push_str(app.activity(id)),
    }
    if let Some(goal) = app.view(id).and_then(|v| v.goal.as_ref()) {
        // The goal hangar keeps it on (issue 29): turns and state.
        title.push_str(&format!(
            " · goal {}/{} {}",
            goal.turns,
            goal.max_turns,
            display::name(&goal.state)
        ));
    }
    if app.zoomed.as_ref() == Some(id) {
        title.push_str(" [zoom]");
    }
    title.push(' ');
    let (border_type, style) = if focused {
        (
            BorderType::Double,
            Style::new().fg(if app.passthrough {
                Color::Green
            } else {
                Color::Cyan
            }),
        )
    } else {
        (BorderType::Plain, Style::new().fg(Color::DarkGray))
    };
    let block = Block::bordered()
        .border_type(border_type)
        .border_style(style)
        .title(Span::styled(
            title,
            if focused {
                style.add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            },
        ));
    frame.render_widget(block, area);
    let body = inner(area);
    let Some(pane) = app.panes.get(id.as_str()) else {
        return;
    };
    match &pane.status {
        PaneStatus::Live => {
            draw_screen(frame.buffer_mut(), pane, body);
            draw_copy_mode(frame.buffer_mut(), app, id, body);
            if focused && app.passthrough && pane.term.cursor_visible() {
                let (row, col) = pane.term.cursor_position();
                if row < body.height && col < body.width {
                    frame.set_cursor_position((body.x + col, body.y + row));
                }
            }
        }
        PaneStatus::Connecting { saved } => {
            let lines: Vec<Line> = saved
                .as_deref()
                .unwrap_or_default()
                .lines()
                .map(|l| Line::styled(l.to_owned(), Style::new().fg(Color::DarkGray)))
                .collect();
            let text_area = Rect {
                height: body.height.saturating_sub(1),
                ..body
            };
            frame.render_widget(Paragraph::new(lines), text_area);
            note(frame, body, "waking...", Color::Yellow);
        }
        PaneStatus::Lost(reason) => {
            let lines = vec![
                Line::styled(
                    "connection lost; the session keeps running, reconnecting...",
                    Style::new().fg(Color::Yellow).bold(),
                ),
                Line::raw(shown(reason)),
            ];
            frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
        }
        PaneStatus::Failed(reason) => {
            let mut lines = vec![Line::styled(
                "failed to start:",
                Style::new().fg(Color::Red).bold(),
            )];
            lines.extend(
                display::body(reason)
                    .lines()
                    .map(|l| Line::raw(l.replace('\t', "    "))),
            );
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "press w to retry",
                Style::new().fg(Color::Yellow),
            ));
            frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
        }
        PaneStatus::Exited(code) => {
            draw_screen(frame.buffer_mut(), pane, body);
            draw_copy_mode(frame.buffer_mut(), app, id, body);
            let text = match app.view(id).map(|v| v.state.as_str()) {
                Some("hibernated") => "hibernated; press w to wake".to_owned(),
                _ if *code >= 0 => format!("exited (code {code}); press w to restart"),
                _ => "exited; press w to restart".to_owned(),
            };
            note(frame, body, &text, Color::Yellow);
        }
    }
}

/// A one-line note on the last row of a pane.
fn note(frame: &mut Frame, body: Rect, text: &str, color: Color) {
    if body.height == 0 {
        return;
    }
    let line = Rect {
        y: body.y + body.height - 1,
        height: 1,
        ..body
    };
    frame.render_widget(Clear, line);
    frame.render_widget(
        Paragraph::new(Span::styled(text.to_owned(), Style::new().fg(color).bold())),
        line,
    );
}

/// Copy mode's selection (reversed) and cursor (yellow) over a pane.
fn draw_copy_mode(buf: &mut Buffer, app: &App, id: &SessionId, area: Rect) {
    let Some(c) = app.copy.as_ref().filter(|c| c.session == id.as_str()) else {
        return;
    };
    for row in 0..area.height {
        let line = c.top + usize::from(row);
        for col in 0..area.width {
            let pos = Pos {
                line,
                col: usize::from(col),
            };
            let Some(cell) = buf.cell_mut((area.x + col, area.y + row)) else {
                continue;
            };
            if pos == c.cursor {
                cell.set_style(Style::new().fg(Color::Black).bg(Color::Yellow));
            } else if c.selected(pos) {
                cell.set_style(Style::new().add_modifier(Modifier::REVERSED));
            }
        }
    }
}

/// Copy a session's screen into the frame, cell by cell.
fn draw_screen(buf: &mut Buffer, pane: &Pane, area: Rect) {
    let screen = pane.shown_screen();
    let mut symbol = String::new();
    for row in 0..area.height {
        for col in 0..area.width {
            let Some(cell) = screen.cell(row, col) else {
                continue;
            };
            // The second column of a wide character is drawn by its first.
            if cell.spacer && !leading_spacer(screen, row, col) {
                continue;
            }
            let Some(out) = buf.cell_mut((area.x + col, area.y + row)) else {
                continue;
            };
            if cell.zerowidth.is_empty() {
                out.set_char(if cell.spacer { ' ' } else { cell.c });
            } else {
                symbol.clear();
                symbol.push(cell.c);
                symbol.extend(cell.zerowidth);
                out.set_symbol(&symbol);
            }
            let mut m = Modifier::empty();
            for (on, modifier) in [
                (cell.bold, Modifier::BOLD),
                (cell.dim, Modifier::DIM),
                (cell.italic, Modifier::ITALIC),
                (cell.underline, Modifier::UNDERLINED),
                (cell.inverse, Modifier::REVERSED),
                (cell.hidden, Modifier::HIDDEN),
                (cell.strikeout, Modifier::CROSSED_OUT),
            ] {
                if on {
                    m |= modifier;
                }
            }
            out.set_style(
                Style::new()
                    .fg(color(cell.fg))
                    .bg(color(cell.bg))
                    .add_modifier(m),
            );
        }
    }
}

/// Whether the spacer at `row`, `col` is the blank left at the right edge
/// before a wide character that did not fit (drawn as a blank), not the
/// second column of one (drawn by the character).
fn leading_spacer(screen: &hangar_terminal::Terminal, row: u16, col: u16) -> bool {
    col == 0 || screen.cell(row, col - 1).is_none_or(|left| !left.wide)
}

fn color(c: CellColor) -> Color {
    match c {
        CellColor::Default => Color::Reset,
        CellColor::Indexed(i) => Color::Indexed(i),
        CellColor::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

/// "12s", "3m", "2h", "4d": how long ago.
pub fn age(now_ms: u64, then_ms: u64) -> String {
    if then_ms == 0 {
        return "-".into();
    }
    let s = now_ms.saturating_sub(then_ms) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

fn short_state(state: &str) -> &str {
    match state {
        "hibernated" => "hib",
        "spawning" => "spawn",
        other => other,
    }
}

/// Four columns at most, so the parked list keeps room for names.
fn short_activity(activity: &str) -> &str {
    match activity {
        "waiting" => "wait",
        "working" => "work",
        "idle" => "idle",
        "limited" => "lim",
        _ => "?",
    }
}

fn draw_side(frame: &mut Frame, app: &App, area: Rect, now_ms: u64) {
    let block = Block::bordered()
        .border_style(Style::new().fg(Color::DarkGray))
        .title(" parked & buried ");
    let body = block.inner(area);
    frame.render_widget(block, area);
    let width = body.width as usize;
    let row = |marker: &str, id: &SessionId| -> String {
        let state = app
            .view(id)
            .map(|v| short_state(&v.state).to_owned())
            .unwrap_or_default();
        let last = app
            .snap
            .ws
            .sessions
            .get(id)
            .map(|m| age(now_ms, m.last_active_ms))
            .unwrap_or_default();
        let activity = short_activity(app.activity(id));
        let tail = format!(" {state} {activity:<4} {last:>3}");
        let pin = if app.is_pinned(id) { "★" } else { "" };
        let room = width.saturating_sub(tail.chars().count());
        let lead = format!("{marker}{pin}");
        let described = app.describe(id);
        let name = display::name_fit(&described, room.saturating_sub(display::width(&lead)));
        let name = format!("{lead}{name}");
        let name: String = name.chars().take(room).collect();
        format!("{}{tail}", display::pad(&name, room))
    };
    let heading = |t: &str| Line::styled(t.to_owned(), Style::new().fg(Color::Cyan).bold());
    let mut lines = Vec::new();
    if !app.snap.ws.pins.is_empty() {
        lines.push(heading("pinned"));
        for (i, id) in app.snap.ws.pins.iter().enumerate().take(9) {
            lines.push(Line::raw(row(&format!("{} ", i + 1), id)));
        }
    }
    let entries = app.side_entries();
    for kind in [SideKind::Parked, SideKind::Buried] {
        let group: Vec<_> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == kind)
            .collect();
        lines.push(heading(match kind {
            SideKind::Parked => "parked",
            SideKind::Buried => "buried",
        }));
        if group.is_empty() {
            lines.push(Line::styled("  (none)", Style::new().fg(Color::DarkGray)));
        }
        for (i, e) in group {
            let selected = i == app.side_selected;
            let text = row(if selected { "> " } else { "  " }, &e.session);
            lines.push(if selected {
                Line::styled(text, Style::new().add_modifier(Modifier::REVERSED))
            } else {
                Line::raw(text)
            });
        }
    }
    frame.render_widget(Paragraph::new(lines), body);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    if let Some(c) = &app.copy {
        let total = app.panes.get(&c.session).map_or(0, |p| p.total_lines());
        let mut spans = vec![
            Span::styled(" COPY ", Style::new().fg(Color::Black).bg(Color::Yellow)),
            Span::raw(format!(" line {}/{} ", c.cursor.line + 1, total)),
        ];
        match (&c.prompt, &c.note) {
            (Some(p), _) => spans.push(Span::styled(
                format!(" {}{}", if p.forward { '/' } else { '?' }, shown(&p.text)),
                Style::new().bold(),
            )),
            (None, Some(note)) => spans.push(Span::styled(
                format!(" {note}"),
                Style::new().fg(Color::Red),
            )),
            (None, None) => spans.push(Span::raw(
                " arrows/hjkl move  g/G top/bottom  / ? search  v select  y copy  q leave",
            )),
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    let mode = if app.passthrough {
        Span::styled(
            format!(" TYPING ({} leaves) ", app.prefix_name()),
            Style::new().fg(Color::Black).bg(Color::Green),
        )
    } else {
        Span::styled(" COMMAND ", Style::new().fg(Color::Black).bg(Color::Cyan))
    };
    let message = match (&app.daemon_lost, &app.message) {
        (Some(e), _) => Span::styled(
            match app.host_name() {
                Some(host) if host != hangar_core::hosts::LOCAL => {
                    format!(" host {} unreachable: {}", shown(host), shown(e))
                }
                _ => format!(" daemon unreachable: {}", shown(e)),
            },
            Style::new().fg(Color::Red),
        ),
        (None, Some((m, true))) => {
            Span::styled(format!(" {}", shown(m)), Style::new().fg(Color::Red))
        }
        (None, Some((m, false))) => Span::raw(format!(" {}", shown(m))),
        (None, None) => Span::raw(""),
    };
    frame.render_widget(Paragraph::new(Line::from(vec![mode, message])), area);
    let hint = " ? help  q quit ";
    let w = hint.len() as u16;
    if area.width > w + 30 {
        let r = Rect {
            x: area.x + area.width - w,
            width: w,
            ..area
        };
        frame.render_widget(Paragraph::new(hint), r);
    }
    // Only under a memory budget: the figure against it is what a person
    // acts on (`hangar status` gives it always).
    if let Some(b) = app
        .snap
        .budget
        .as_ref()
        .filter(|b| b.max_memory_bytes.is_some())
    {
        let text = format!(" mem {} ", fleet_memory_short(b));
        let mw = text.chars().count() as u16;
        if area.width > w + mw + 40 {
            let r = Rect {
                x: area.x + area.width - w - mw,
                width: mw,
                ..area
            };
            let style = if b.over_budget || !b.waiting_for_memory.is_empty() {
                Style::new().fg(Color::Red)
            } else {
                Style::new().fg(Color::DarkGray)
            };
            frame.render_widget(Paragraph::new(Span::styled(text, style)), r);
        }
    }
}

/// The live agents' memory against the budget, short enough for the
/// status line: `820/1500 MiB` (`820 MiB` without a budget), and how many
/// wakes wait for room.
fn fleet_memory_short(b: &hangar_protocol::view::BudgetView) -> String {
    let mib = |bytes: u64| bytes / (1024 * 1024);
    let mut text = match b.max_memory_bytes {
        Some(max) => format!("{}/{} MiB", mib(b.memory_bytes), mib(max)),
        None => format!("{} MiB", mib(b.memory_bytes)),
    };
    if !b.waiting_for_memory.is_empty() {
        text.push_str(&format!(", {} waiting", b.waiting_for_memory.len()));
    }
    text
}

fn draw_help(frame: &mut Frame, app: &App, area: Rect) {
    // The table names the default prefix; show the configured one.
    let prefix = app.prefix_name();
    let keys: Vec<(String, String)> = KEYS
        .iter()
        .map(|(k, what)| {
            (
                k.replace("Ctrl-b", &prefix),
                what.replace("Ctrl-b", &prefix),
            )
        })
        .collect();
    let key_w = keys.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let lines: Vec<Line> = keys
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(
                    format!(" {k:<key_w$}  "),
                    Style::new().fg(Color::Cyan).bold(),
                ),
                Span::raw(what.clone()),
            ])
        })
        .collect();
    let width = keys
        .iter()
        .map(|(_, w)| w.len() + key_w + 5)
        .max()
        .unwrap_or(40) as u16;
    let r = widgets::centered(area, width + 2, lines.len() as u16 + 2);
    widgets::popup(frame, r, " keys (Esc closes) ", lines);
}

/// How many provider names the new-agent dialog shows at once.
const PROVIDER_WINDOW: usize = 6;

/// The indices of a list of `len` names shown around the chosen one
/// (`width` of them), the chosen one always among them.
fn provider_window(len: usize, chosen: usize, width: usize) -> std::ops::Range<usize> {
    if len <= width {
        return 0..len;
    }
    let start = chosen.saturating_sub(width / 2).min(len - width);
    start..start + width
}

fn draw_dialog(frame: &mut Frame, app: &App, dialog: &Dialog, area: Rect) {
    let (title, lines) = match dialog {
        Dialog::NewAgent {
            provider,
            cwd,
            field,
            split,
            worktree,
            branch,
        } => {
            let sel = |on: bool| {
                if on {
                    Style::new().add_modifier(Modifier::REVERSED)
                } else {
                    Style::new()
                }
            };
            let where_ = match split {
                Some((_, hangar_core::Direction::Vertical)) => "to the right of the focused pane",
                Some((_, hangar_core::Direction::Horizontal)) => "below the focused pane",
                None => "in this tab",
            };
            let mut providers = vec![Span::raw(" provider: ")];
            // Thirteen names do not fit a dialog: the chosen one and its
            // neighbours, with an ellipsis where the list goes on.
            let shown_providers = provider_window(PROVIDERS.len(), *provider, PROVIDER_WINDOW);
            if shown_providers.start > 0 {
                providers.push(Span::raw(" …"));
            }
            for (i, p) in PROVIDERS.iter().enumerate() {
                if !shown_providers.contains(&i) {
                    continue;
                }
                providers.push(Span::styled(
                    format!(" {p} "),
                    if i == *provider {
                        sel(true).add_modifier(Modifier::BOLD)
                    } else {
                        Style::new()
                    },
                ));
            }
            if shown_providers.end < PROVIDERS.len() {
                providers.push(Span::raw("… "));
            }
            let mark = |f: usize| if *field == f { ">" } else { " " };
            providers.insert(0, Span::raw(mark(FIELD_PROVIDER)));
            let folder = Line::from(vec![
                Span::raw(format!("{} folder:   ", mark(FIELD_FOLDER))),
                Span::styled(shown(cwd), sel(*field == FIELD_FOLDER)),
            ]);
            let worktree_line = Line::from(vec![
                Span::raw(format!("{} worktree: ", mark(FIELD_WORKTREE))),
                Span::styled(
                    if *worktree {
                        "[x] a new git worktree"
                    } else {
                        "[ ] no (the folder itself)"
                    },
                    sel(*field == FIELD_WORKTREE),
                ),
            ]);
            let branch_line = Line::from(vec![
                Span::raw(format!("{} branch:   ", mark(FIELD_BRANCH))),
                if branch.is_empty() && *field != FIELD_BRANCH {
                    Span::styled("(from the title)", Style::new().fg(Color::DarkGray))
                } else {
                    Span::styled(shown(branch), sel(*field == FIELD_BRANCH))
                },
            ]);
            (
                " new agent ".to_owned(),
                vec![
                    Line::raw(format!("  {where_}")),
                    Line::raw(""),
                    Line::from(providers),
                    folder,
                    worktree_line,
                    branch_line,
                    Line::raw(""),
                    Line::styled(
                        "  Tab: field  ←/→: choose  Space: worktree  Enter: start  Esc: cancel",
                        Style::new().fg(Color::DarkGray),
                    ),
                ],
            )
        }
        Dialog::TabTitle { rename, value } => (
            if rename.is_some() {
                " rename tab ".to_owned()
            } else {
                " new tab ".to_owned()
            },
            vec![
                Line::from(vec![
                    Span::raw("  title: "),
                    Span::styled(shown(value), Style::new().add_modifier(Modifier::REVERSED)),
                ]),
                Line::raw(""),
                Line::styled(
                    "  Enter: save  Esc: cancel",
                    Style::new().fg(Color::DarkGray),
                ),
            ],
        ),
        Dialog::Search(d) => return crate::tui::search::draw(frame, d, area),
        Dialog::Usage(d) => return crate::tui::usage_view::draw(frame, d, area),
        Dialog::Overview(d) => return crate::tui::overview::draw(frame, d, area),
        Dialog::Diff(d) => return crate::tui::diff_view::draw(frame, d, area),
        Dialog::Confirm { message, items, .. } => {
            let mut lines = vec![Line::raw(format!("  {}", shown(message)))];
            lines.extend(
                items
                    .iter()
                    .map(|i| Line::raw(format!("    {}", display::name_fit(i, PANE_NAME_COLS)))),
            );
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "  y: close them all   n / Esc: cancel",
                Style::new().fg(Color::Yellow),
            ));
            (" confirm ".to_owned(), lines)
        }
    };
    let _ = app;
    let width = lines.iter().map(|l| l.width()).max().unwrap_or(20) as u16 + 4;
    let r = widgets::centered(area, width.max(40), lines.len() as u16 + 2);
    widgets::popup(frame, r, &title, lines);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_a_person_would_say_them() {
        assert_eq!(age(10_000, 0), "-");
        assert_eq!(age(70_000, 10_000), "1m");
        assert_eq!(age(5_000, 1_000), "4s");
        assert_eq!(age(3 * 86_400_000, 1), "2d");
    }

    #[test]
    fn the_new_agent_dialog_offers_every_agent_cli_in_the_default_order() {
        let agents: Vec<&str> = hangar_core::Provider::AGENT_CLIS
            .iter()
            .map(|p| p.name())
            .collect();
        assert_eq!(PROVIDERS[0], "auto");
        assert_eq!(&PROVIDERS[1..PROVIDERS.len() - 1], agents.as_slice());
        assert_eq!(PROVIDERS[PROVIDERS.len() - 1], "shell");
    }

    #[test]
    fn the_status_line_shows_fleet_memory_against_the_budget_and_the_wakes_waiting() {
        let mib = 1024 * 1024;
        let mut b = hangar_protocol::view::BudgetView {
            memory_bytes: 820 * mib,
            resident_bytes: 2100 * mib,
            ..Default::default()
        };
        assert_eq!(fleet_memory_short(&b), "820 MiB");
        b.max_memory_bytes = Some(1500 * mib);
        assert_eq!(fleet_memory_short(&b), "820/1500 MiB");
        b.waiting_for_memory = vec!["a".into(), "b".into()];
        assert_eq!(fleet_memory_short(&b), "820/1500 MiB, 2 waiting");
    }

    #[test]
    fn the_provider_window_always_holds_the_chosen_one() {
        for chosen in 0..13 {
            let w = provider_window(13, chosen, 6);
            assert_eq!(w.len(), 6);
            assert!(w.contains(&chosen), "{chosen}: {w:?}");
        }
        assert_eq!(provider_window(13, 0, 6), 0..6);
        assert_eq!(provider_window(13, 12, 6), 7..13);
        assert_eq!(provider_window(4, 3, 6), 0..4);
    }
}
