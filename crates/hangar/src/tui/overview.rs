//! The TUI's overview of every machine (`A` in command mode, issue 47):
//! this machine's and every configured host's agents in one list, those
//! waiting for you first, then the working ones, then the rest; Enter goes
//! to the chosen agent wherever it runs (the view switches to its host and
//! its pane is focused, or it is selected in its tab's parked list, as a
//! search result is).
//!
//! Asked in the background as `hangar ls --all-hosts` is
//! (`remote::all_hosts::ask`: every host at once, each within its bound),
//! so a host that is down is listed as down with its reason and never
//! holds up the screen or the others; asked again every
//! `REFRESH_EVERY` while the list is open (an agent that starts waiting
//! moves up by itself), and at once with `r`. Titles are agents' text and
//! reasons carry ssh's words: both are drawn escaped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use hangar_core::display;
use hangar_core::keys::Key;
use hangar_protocol::paths::Paths;
use hangar_protocol::view::SessionView;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::api;
use crate::remote::all_hosts::{self, Down};
use crate::tui::events::Event;
use crate::tui::widgets;

/// Columns a session's title takes in a row.
const TITLE_COLS: usize = 24;

/// How often the open list is asked again.
const REFRESH_EVERY: Duration = Duration::from_secs(5);

/// One agent of the list.
#[derive(Clone, Debug, PartialEq)]
pub struct OverviewRow {
    pub host: String,
    pub id: String,
    pub title: String,
    pub provider: String,
    pub state: String,
    pub activity: String,
}

#[derive(Debug)]
pub struct OverviewDialog {
    /// None until every host has answered or been given up on.
    rows: Option<Vec<OverviewRow>>,
    down: Vec<Down>,
    selected: usize,
    /// The list is open: its background asking goes on (cleared when the
    /// dialog is dropped).
    open: Arc<AtomicBool>,
}

impl Default for OverviewDialog {
    fn default() -> OverviewDialog {
        OverviewDialog {
            rows: None,
            down: Vec::new(),
            selected: 0,
            open: Arc::new(AtomicBool::new(true)),
        }
    }
}

impl Drop for OverviewDialog {
    fn drop(&mut self) {
        self.open.store(false, Ordering::SeqCst);
    }
}

/// What a key asks the app to do.
#[derive(Debug, PartialEq, Eq)]
pub enum OverviewAction {
    None,
    /// `r`: ask every host again.
    Refresh,
    /// Go to this session on this host.
    Go {
        host: String,
        session: String,
    },
}

/// Where an agent comes in the list: waiting for a person, then working,
/// then every other live one, then the rest.
fn rank(row: &OverviewRow) -> u8 {
    match (row.activity.as_str(), row.state.as_str()) {
        ("waiting", _) => 0,
        ("working", _) => 1,
        (_, "live") => 2,
        _ => 3,
    }
}

/// Every host's sessions as rows, in list order (hosts in the order they
/// were asked within each rank).
pub fn rows_of(answered: &[(String, Vec<SessionView>)]) -> Vec<OverviewRow> {
    let mut rows: Vec<OverviewRow> = answered
        .iter()
        .flat_map(|(host, sessions)| {
            sessions.iter().map(move |s| OverviewRow {
                host: host.clone(),
                id: s.id.clone(),
                title: s.title.clone(),
                provider: s.provider.clone(),
                state: s.state.clone(),
                activity: s.activity.clone(),
            })
        })
        .collect();
    rows.sort_by_key(rank);
    rows
}

impl OverviewDialog {
    /// A new answer; the chosen agent stays chosen where it moved to.
    pub fn answered(&mut self, answered: Vec<(String, Vec<SessionView>)>, down: Vec<Down>) {
        let rows = rows_of(&answered);
        let chosen = self
            .rows
            .as_ref()
            .and_then(|r| r.get(self.selected))
            .map(|r| (r.host.clone(), r.id.clone()));
        self.selected = chosen
            .and_then(|(host, id)| rows.iter().position(|r| r.host == host && r.id == id))
            .unwrap_or(self.selected)
            .min(rows.len().saturating_sub(1));
        self.rows = Some(rows);
        self.down = down;
    }

    pub fn key(&mut self, key: Key) -> OverviewAction {
        let count = self.rows.as_ref().map_or(0, Vec::len);
        match key {
            Key::Up | Key::Char('k') | Key::Ctrl('p') => {
                self.selected = self.selected.saturating_sub(1);
                OverviewAction::None
            }
            Key::Down | Key::Char('j') | Key::Ctrl('n') | Key::Tab => {
                if self.selected + 1 < count {
                    self.selected += 1;
                }
                OverviewAction::None
            }
            Key::Char('r') => {
                self.rows = None;
                OverviewAction::Refresh
            }
            Key::Enter => match self.rows.as_ref().and_then(|r| r.get(self.selected)) {
                Some(row) => OverviewAction::Go {
                    host: row.host.clone(),
                    session: row.id.clone(),
                },
                None => OverviewAction::None,
            },
            _ => OverviewAction::None,
        }
    }
}

impl OverviewDialog {
    /// Ask every host now and every `REFRESH_EVERY` while this list is
    /// open, off the UI thread.
    pub fn watch(&self, paths: &Paths, events: Sender<Event>) {
        let (paths, open) = (paths.clone(), self.open.clone());
        std::thread::spawn(move || {
            while open.load(Ordering::SeqCst) {
                if !ask_now(&paths, &events) {
                    return;
                }
                std::thread::sleep(REFRESH_EVERY);
            }
        });
    }
}

/// Ask every host once, off the UI thread (`r`).
pub fn ask(paths: &Paths, events: Sender<Event>) {
    let paths = paths.clone();
    std::thread::spawn(move || ask_now(&paths, &events));
}

/// Every host's sessions, sent as `Event::Overview` on `events` (the
/// view's own channel: a view switched away from drops it); `false` when
/// nobody takes it any more.
fn ask_now(paths: &Paths, events: &Sender<Event>) -> bool {
    let answer = all_hosts::ask(paths, |t| {
        let mut c = all_hosts::bounded(t.connect()?, t)?;
        api::list(&mut c)
    })
    .map(all_hosts::split)
    .map_err(|e| format!("{e:#}"));
    // Only reading config.toml fails here: said as this machine's answer.
    let (answered, down) = answer.unwrap_or_else(|e| {
        (
            Vec::new(),
            vec![Down {
                host: hangar_core::hosts::LOCAL.to_owned(),
                reason: e,
            }],
        )
    });
    events.send(Event::Overview { answered, down }).is_ok()
}

fn row_line(r: &OverviewRow, selected: bool, host_cols: usize) -> Line<'static> {
    let base = if selected {
        Style::new().add_modifier(Modifier::REVERSED)
    } else {
        Style::new()
    };
    let activity = match r.activity.as_str() {
        "waiting" => base.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        "working" => base.fg(Color::Green),
        _ => base.fg(Color::DarkGray),
    };
    let id: String = r.id.chars().take(8).collect();
    Line::from(vec![
        Span::styled(
            format!(" {} ", display::pad(&display::name(&r.host), host_cols)),
            base.fg(Color::Cyan),
        ),
        Span::styled(format!("{} ", display::name(&id)), base),
        Span::styled(
            format!("{} ", display::pad(&display::name(&r.activity), 8)),
            activity,
        ),
        Span::styled(
            format!("{} ", display::pad(&display::name(&r.state), 11)),
            base,
        ),
        Span::styled(
            format!("{} ", display::pad(&display::name(&r.provider), 9)),
            base,
        ),
        Span::styled(
            display::pad(&display::name_fit(&r.title, TITLE_COLS), TITLE_COLS),
            base,
        ),
    ])
}

pub fn draw(frame: &mut Frame, d: &OverviewDialog, area: Rect) {
    let r = widgets::large(area, (30, 6), (120, 30));
    let (_, inner_h) = widgets::inner_size(r);
    let mut lines = Vec::new();
    let mut footer: Vec<Line> = d
        .down
        .iter()
        .map(|down| {
            Line::styled(
                format!(
                    " {} is down: {}",
                    display::name(&down.host),
                    display::name(&down.reason)
                ),
                Style::new().fg(Color::Red),
            )
        })
        .collect();
    footer.push(Line::styled(
        " ↑/↓: choose  Enter: go to the agent on its host  r: ask again  Esc: close",
        Style::new().fg(Color::DarkGray),
    ));
    let list_rows = inner_h.saturating_sub(footer.len() + 1);
    match &d.rows {
        None => lines.push(Line::styled(
            " asking every host…",
            Style::new().fg(Color::DarkGray),
        )),
        Some(rows) if rows.is_empty() => lines.push(Line::styled(
            " no sessions on any host that answered",
            Style::new().fg(Color::DarkGray),
        )),
        Some(rows) => {
            let host_cols = rows
                .iter()
                .map(|r| display::width(&display::name(&r.host)))
                .max()
                .unwrap_or(5)
                .max(5);
            let first = (d.selected + 1).saturating_sub(list_rows);
            lines.extend(
                rows.iter()
                    .enumerate()
                    .skip(first)
                    .take(list_rows)
                    .map(|(i, r)| row_line(r, i == d.selected, host_cols)),
            );
        }
    }
    while lines.len() < list_rows + 1 {
        lines.push(Line::raw(""));
    }
    lines.extend(footer);
    widgets::popup(frame, r, " every host's agents ", lines);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(id: &str, state: &str, activity: &str) -> SessionView {
        serde_json::from_value(json!({
            "id": id, "provider": "claude", "cwd": "/w", "title": id,
            "placement": "pane", "tab": null, "state": state, "pid": null,
            "provider_session_id": null, "pinned": false, "activity": activity,
        }))
        .expect("a session view")
    }

    #[test]
    fn waiting_agents_come_first_then_working_ones_wherever_they_run() {
        let answered = vec![
            (
                "local".to_owned(),
                vec![
                    session("idle-here", "live", "idle"),
                    session("asleep", "hibernated", "unknown"),
                ],
            ),
            (
                "build".to_owned(),
                vec![
                    session("working-there", "live", "working"),
                    session("waits-there", "live", "waiting"),
                ],
            ),
            (
                "gpu".to_owned(),
                vec![session("waits-gpu", "live", "waiting")],
            ),
        ];
        let order: Vec<(String, String)> = rows_of(&answered)
            .into_iter()
            .map(|r| (r.host, r.id))
            .collect();
        let pair = |h: &str, i: &str| (h.to_owned(), i.to_owned());
        assert_eq!(
            order,
            vec![
                pair("build", "waits-there"),
                pair("gpu", "waits-gpu"),
                pair("build", "working-there"),
                pair("local", "idle-here"),
                pair("local", "asleep"),
            ]
        );
    }

    #[test]
    fn enter_goes_to_the_chosen_agent_on_its_host_and_r_asks_again() {
        let mut d = OverviewDialog::default();
        assert_eq!(d.key(Key::Enter), OverviewAction::None, "nothing yet");
        d.answered(
            vec![(
                "build".to_owned(),
                vec![
                    session("b1", "live", "waiting"),
                    session("b2", "live", "idle"),
                ],
            )],
            vec![Down {
                host: "gpu".into(),
                reason: "cannot reach host \"gpu\"".into(),
            }],
        );
        assert_eq!(d.key(Key::Down), OverviewAction::None);
        assert_eq!(d.key(Key::Down), OverviewAction::None, "stays on the last");
        assert_eq!(
            d.key(Key::Enter),
            OverviewAction::Go {
                host: "build".into(),
                session: "b2".into()
            }
        );
        // A new answer where another agent started waiting: b2 stays
        // chosen where it moved to.
        d.answered(
            vec![(
                "build".to_owned(),
                vec![
                    session("b1", "live", "waiting"),
                    session("b2", "live", "idle"),
                    session("b0", "live", "waiting"),
                ],
            )],
            vec![],
        );
        assert_eq!(
            d.key(Key::Enter),
            OverviewAction::Go {
                host: "build".into(),
                session: "b2".into()
            }
        );
        assert_eq!(d.key(Key::Char('r')), OverviewAction::Refresh);
        assert_eq!(d.key(Key::Enter), OverviewAction::None, "asked again");
    }
}
