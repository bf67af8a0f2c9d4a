//! The TUI's search dialog (`/` in command mode, so `Ctrl-b /` from a
//! pane): a query searched in every session's history, screen and
//! transcript as it is typed, the matching lines listed, arrows to choose
//! one, Enter to go to its session.
//!
//! Listing never wakes anything: the daemon answers from terminals, saved
//! screens and transcript files. Going to a hibernated pane shows it, and
//! the pane's normal attach wakes it then, as focusing it by hand would.
//! Every excerpt and title is an agent's text: the daemon strips escape
//! sequences from excerpts, and both are drawn escaped.

use hangar_core::display;
use hangar_protocol::view::{SearchMatchView, SearchView};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::tui::widgets;
use hangar_core::keys::Key;

/// Columns a session's title takes in a result row.
const TITLE_COLS: usize = 20;

#[derive(Debug, Default)]
pub struct SearchDialog {
    pub query: String,
    /// The reply for the query as it was when it was asked.
    shown: Option<(String, SearchView)>,
    /// The daemon's refusal of the last query (an older daemon, ...).
    error: Option<String>,
    selected: usize,
    /// A query asked and not answered yet. One at a time: a search over
    /// thousands of sessions takes a while, and a reply to every keystroke
    /// would queue behind the others; the text typed meanwhile is asked
    /// when the answer comes.
    in_flight: bool,
    /// Enter was pressed before the answer to the query typed had come: it
    /// chooses the first match of that answer when it comes (a person who
    /// types a word and Enter at once means its first match), and is
    /// forgotten when the query changes.
    enter_waits: bool,
}

/// What a key asks the app to do.
#[derive(Debug, PartialEq, Eq)]
pub enum SearchAction {
    None,
    /// The query changed: ask the daemon.
    Ask(String),
    /// Go to this session.
    Jump(String),
}

impl SearchDialog {
    pub fn key(&mut self, key: Key) -> SearchAction {
        match key {
            Key::Char(c) => {
                self.query.push(c);
                self.enter_waits = false;
                self.ask()
            }
            Key::Backspace => {
                self.query.pop();
                self.enter_waits = false;
                self.ask()
            }
            Key::Up | Key::Ctrl('p') => {
                self.selected = self.selected.saturating_sub(1);
                SearchAction::None
            }
            Key::Down | Key::Ctrl('n') | Key::Tab => {
                if self.selected + 1 < self.matches().len() {
                    self.selected += 1;
                }
                SearchAction::None
            }
            Key::Enter => match self.matches().get(self.selected) {
                Some(m) => SearchAction::Jump(m.session.clone()),
                None => {
                    // Dropped without a word, an Enter typed a moment too
                    // soon looked like a TUI that ignores keys.
                    self.enter_waits = self.awaits_answer();
                    SearchAction::None
                }
            },
            _ => SearchAction::None,
        }
    }

    fn ask(&mut self) -> SearchAction {
        self.error = None;
        if self.query.trim().is_empty() {
            self.shown = None;
            return SearchAction::None;
        }
        if self.in_flight {
            return SearchAction::None;
        }
        self.in_flight = true;
        SearchAction::Ask(self.query.clone())
    }

    /// The daemon answered `query`: shown while it is still the query
    /// typed; otherwise what is typed now is asked next.
    pub fn answered(&mut self, query: &str, reply: Result<SearchView, String>) -> SearchAction {
        self.in_flight = false;
        if query != self.query {
            return self.ask();
        }
        let enter = std::mem::take(&mut self.enter_waits);
        match reply {
            Ok(view) => {
                self.shown = Some((query.to_owned(), view));
                self.error = None;
                self.selected = 0;
            }
            Err(e) => {
                self.error = Some(e);
                self.shown = None;
            }
        }
        match self.matches().first() {
            Some(m) if enter => SearchAction::Jump(m.session.clone()),
            _ => SearchAction::None,
        }
    }

    /// An answer to the query typed now is on its way (asked, or to be
    /// asked when the one in flight comes back).
    fn awaits_answer(&self) -> bool {
        self.in_flight && !self.query.trim().is_empty()
    }

    /// An Enter is waiting for the answer (said on the status line).
    pub fn enter_waits(&self) -> bool {
        self.enter_waits
    }

    fn matches(&self) -> &[SearchMatchView] {
        match &self.shown {
            Some((q, v)) if *q == self.query => &v.matches,
            _ => &[],
        }
    }
}

fn row(m: &SearchMatchView, selected: bool, width: usize) -> Line<'static> {
    let base = if selected {
        Style::new().add_modifier(Modifier::REVERSED)
    } else {
        Style::new()
    };
    let title = display::pad(&display::name_fit(&m.title, TITLE_COLS), TITLE_COLS);
    let id: String = m.session.chars().take(8).collect();
    let head = format!(
        " {} {title} {:<10} ",
        display::name(&id),
        format!("{}:{}", m.source, m.line)
    );
    let room = width.saturating_sub(display::width(&head) + 1);
    let chars: Vec<char> = m.text.chars().collect();
    let (start, end) = (
        m.column.min(chars.len()),
        (m.column + m.length).min(chars.len()),
    );
    // Keep the match in view on a narrow dialog: cut the start away first.
    let skip = (end + 1).saturating_sub(room).min(start);
    let piece =
        |a: usize, b: usize| display::body(&chars[a..b].iter().collect::<String>()).into_owned();
    let mut spans = vec![
        Span::styled(head, base.fg(Color::Cyan)),
        Span::styled(piece(skip, start), base),
        Span::styled(
            piece(start, end),
            base.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
    ];
    let after_room = room.saturating_sub(end - skip);
    let tail = (end + after_room).min(chars.len());
    spans.push(Span::styled(piece(end, tail), base));
    Line::from(spans)
}

pub fn draw(frame: &mut Frame, d: &SearchDialog, area: Rect) {
    let r = widgets::large(area, (20, 6), (140, 30));
    let (inner_w, inner_h) = widgets::inner_size(r);
    let list_rows = inner_h.saturating_sub(3);
    let mut lines = vec![Line::from(vec![
        Span::raw(" search: "),
        Span::styled(
            format!("{}▏", display::name(&d.query)),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ])];
    let matches = d.matches();
    let status = match (&d.error, &d.shown) {
        (Some(e), _) => Span::styled(
            format!(" {}", display::name(e)),
            Style::new().fg(Color::Red),
        ),
        _ if d.query.trim().is_empty() => Span::styled(
            " type a word: every session's history, screen and transcript (nothing is woken)",
            Style::new().fg(Color::DarkGray),
        ),
        (None, Some((q, v))) if *q == d.query => Span::styled(
            format!(
                " {} match{}{}",
                v.matches.len(),
                if v.matches.len() == 1 { "" } else { "es" },
                if v.truncated {
                    " (more not shown: narrow the query)"
                } else {
                    ""
                }
            ),
            Style::new().fg(Color::DarkGray),
        ),
        _ if d.enter_waits() => Span::styled(
            " searching… (Enter goes to the first match when it comes)",
            Style::new().fg(Color::DarkGray),
        ),
        _ => Span::styled(" searching…", Style::new().fg(Color::DarkGray)),
    };
    lines.push(Line::from(status));
    let first = (d.selected + 1).saturating_sub(list_rows);
    lines.extend(
        matches
            .iter()
            .enumerate()
            .skip(first)
            .take(list_rows)
            .map(|(i, m)| row(m, i == d.selected, inner_w)),
    );
    while lines.len() < list_rows + 2 {
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled(
        " ↑/↓: choose  Enter: go to the session  Esc: close",
        Style::new().fg(Color::DarkGray),
    ));
    widgets::popup(frame, r, " search sessions ", lines);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(sessions: &[&str]) -> SearchView {
        SearchView {
            query: "x".into(),
            case_sensitive: false,
            matches: sessions
                .iter()
                .map(|s| SearchMatchView {
                    session: (*s).into(),
                    title: "t".into(),
                    tab: None,
                    source: "history".into(),
                    line: 1,
                    text: "x".into(),
                    column: 0,
                    length: 1,
                    state: "live".into(),
                })
                .collect(),
            truncated: false,
            unreadable: Vec::new(),
        }
    }

    #[test]
    fn one_query_is_asked_at_a_time_and_only_the_reply_to_what_is_typed_now_is_shown() {
        let mut d = SearchDialog::default();
        assert_eq!(d.key(Key::Char('a')), SearchAction::Ask("a".into()));
        assert_eq!(d.key(Key::Char('b')), SearchAction::None, "a waits");
        assert_eq!(d.key(Key::Char('c')), SearchAction::None);
        assert_eq!(
            d.answered("a", Ok(view(&["old"]))),
            SearchAction::Ask("abc".into()),
            "what is typed now is asked once the first answer comes"
        );
        assert_eq!(d.key(Key::Enter), SearchAction::None, "a stale reply");
        assert!(d.enter_waits(), "the Enter waits for abc's answer");
        assert_eq!(d.key(Key::Backspace), SearchAction::None, "still waiting");
        assert!(!d.enter_waits(), "a changed query forgets it");
        assert_eq!(
            d.answered("abc", Ok(view(&["stale"]))),
            SearchAction::Ask("ab".into())
        );
        assert_eq!(
            d.answered("ab", Ok(view(&["s1", "s2"]))),
            SearchAction::None
        );
        assert_eq!(d.key(Key::Down), SearchAction::None);
        assert_eq!(d.key(Key::Down), SearchAction::None, "stays on the last");
        assert_eq!(d.key(Key::Enter), SearchAction::Jump("s2".into()));
        assert_eq!(d.key(Key::Up), SearchAction::None);
        assert_eq!(d.key(Key::Enter), SearchAction::Jump("s1".into()));
        assert_eq!(d.key(Key::Backspace), SearchAction::Ask("a".into()));
        assert_eq!(d.key(Key::Enter), SearchAction::None, "ab's list is gone");
        assert_eq!(d.key(Key::Backspace), SearchAction::None, "nothing to ask");
    }

    #[test]
    fn an_enter_typed_before_the_answer_goes_to_its_first_match_when_it_comes() {
        let mut d = SearchDialog::default();
        for c in "okapi".chars() {
            d.key(Key::Char(c));
        }
        assert_eq!(d.key(Key::Enter), SearchAction::None, "no answer yet");
        assert!(d.enter_waits());
        assert_eq!(
            d.answered("o", Ok(view(&["stale"]))),
            SearchAction::Ask("okapi".into()),
            "an older query's answer does not take the Enter"
        );
        assert!(d.enter_waits(), "still waiting for okapi's answer");
        assert_eq!(
            d.answered("okapi", Ok(view(&["s1", "s2"]))),
            SearchAction::Jump("s1".into())
        );
        assert!(!d.enter_waits());
    }

    #[test]
    fn an_early_enter_whose_answer_has_no_match_leaves_the_dialog_open() {
        let mut d = SearchDialog::default();
        d.key(Key::Char('x'));
        d.key(Key::Enter);
        assert_eq!(d.answered("x", Ok(view(&[]))), SearchAction::None);
        assert!(!d.enter_waits(), "used up");
        assert_eq!(d.key(Key::Char('y')), SearchAction::Ask("xy".into()));
        assert_eq!(
            d.answered("xy", Ok(view(&["s"]))),
            SearchAction::None,
            "an Enter is never carried to another query's answer"
        );
    }

    #[test]
    fn an_enter_with_nothing_asked_waits_for_nothing() {
        let mut d = SearchDialog::default();
        assert_eq!(d.key(Key::Enter), SearchAction::None);
        assert!(!d.enter_waits());
    }
}
