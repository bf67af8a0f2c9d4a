//! Copy mode (`Ctrl-b [`), with tmux's keys: move over a pane's history and
//! screen, search, select and copy.
//!
//! Lines are numbered as the daemon numbers a session's history (the oldest
//! kept is [`PaneLines::first_line`], not always 0: the byte cap drops the
//! oldest) down to the screen's last row; the mode keeps a cursor and the
//! line shown at the top of the pane, and works over anything that can hand
//! it a line's text ([`PaneLines`]), so its keys are tested without a
//! terminal. A search goes through every line back to the first, which a
//! pane reads from the daemon a page at a time.

use hangar_core::keys::Key;

/// What copy mode reads a pane through.
pub trait PaneLines {
    /// One past the last screen row.
    fn total_lines(&self) -> usize;
    /// The oldest line there is.
    fn first_line(&mut self) -> usize {
        0
    }
    /// Rows the pane shows at once.
    fn rows(&self) -> usize;
    /// Columns the pane shows: the cursor never goes past the last.
    fn cols(&self) -> usize;
    /// The text of one line, trailing blanks dropped.
    fn line_text(&mut self, line: usize) -> String;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// The search being typed after `/` or `?`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub forward: bool,
    pub text: String,
}

/// What a key in copy mode asks the TUI to do.
#[derive(Debug, PartialEq, Eq)]
pub enum CopyAction {
    Stay,
    Leave,
    /// Copy this text (to the clipboard) and leave.
    Copy(String),
}

#[derive(Clone, Debug)]
pub struct CopyMode {
    /// The pane's session.
    pub session: String,
    pub cursor: Pos,
    /// The line shown on the pane's first row.
    pub top: usize,
    /// Where the selection started (`v` or Space), if one is being made.
    pub anchor: Option<Pos>,
    pub prompt: Option<Prompt>,
    last_search: Option<(String, bool)>,
    /// A word for the status line ("not found").
    pub note: Option<String>,
}

impl CopyMode {
    /// Enter copy mode on a pane whose view shows `top` first, with the
    /// cursor at the screen row and column the program left it.
    pub fn new(session: String, top: usize, cursor: Pos) -> CopyMode {
        CopyMode {
            session,
            cursor,
            top,
            anchor: None,
            prompt: None,
            last_search: None,
            note: None,
        }
    }

    /// The pane's lines were numbered anew (a resize rewrapped them): move
    /// the view, the cursor and the selection's start with their text.
    pub fn renumber(&mut self, map: impl Fn(usize) -> usize) {
        self.top = map(self.top);
        self.cursor.line = map(self.cursor.line);
        if let Some(a) = &mut self.anchor {
            a.line = map(a.line);
        }
    }

    /// Whether `pos` is inside the selection.
    pub fn selected(&self, pos: Pos) -> bool {
        match self.anchor {
            Some(a) => {
                let (start, end) = if a <= self.cursor {
                    (a, self.cursor)
                } else {
                    (self.cursor, a)
                };
                pos >= start && pos <= end
            }
            None => false,
        }
    }

    /// Keep the cursor inside the text and on screen.
    fn settle(&mut self, pane: &mut impl PaneLines) {
        let total = pane.total_lines().max(1);
        let rows = pane.rows().max(1);
        let first = pane.first_line().min(total - 1);
        self.cursor.line = self.cursor.line.clamp(first, total - 1);
        self.cursor.col = self.cursor.col.min(pane.cols().max(1) - 1);
        if self.cursor.line < self.top {
            self.top = self.cursor.line;
        }
        if self.cursor.line >= self.top + rows {
            self.top = self.cursor.line + 1 - rows;
        }
        self.top = self.top.min(total.saturating_sub(rows)).max(first);
    }

    pub fn key(&mut self, key: Key, pane: &mut impl PaneLines) -> CopyAction {
        if let Some(prompt) = &mut self.prompt {
            match key {
                Key::Esc => self.prompt = None,
                Key::Backspace => {
                    prompt.text.pop();
                }
                Key::Char(c) => prompt.text.push(c),
                Key::Enter => {
                    let Prompt { forward, text } = self.prompt.take().unwrap_or(Prompt {
                        forward: true,
                        text: String::new(),
                    });
                    if !text.is_empty() {
                        self.last_search = Some((text.clone(), forward));
                        self.search(&text, forward, pane);
                    }
                }
                _ => {}
            }
            return CopyAction::Stay;
        }
        self.note = None;
        let rows = pane.rows().max(1);
        let last = pane.total_lines().saturating_sub(1);
        match key {
            // As tmux's vi keys: Esc drops a selection being made (and
            // leaves when there is none), `q` always leaves.
            Key::Esc if self.anchor.is_some() => self.anchor = None,
            Key::Char('q') | Key::Esc => return CopyAction::Leave,
            Key::Up | Key::Char('k') => self.cursor.line = self.cursor.line.saturating_sub(1),
            Key::Down | Key::Char('j') => self.cursor.line = (self.cursor.line + 1).min(last),
            Key::Left | Key::Char('h') => self.cursor.col = self.cursor.col.saturating_sub(1),
            Key::Right | Key::Char('l') => self.cursor.col += 1,
            Key::Char('0') | Key::Home => self.cursor.col = 0,
            Key::Char('$') | Key::End => {
                let len = pane.line_text(self.cursor.line).chars().count();
                self.cursor.col = len.saturating_sub(1);
            }
            Key::PageUp | Key::ShiftPageUp | Key::Ctrl('b') => {
                self.top = self.top.saturating_sub(rows);
                self.cursor.line = self.cursor.line.saturating_sub(rows);
            }
            Key::PageDown | Key::ShiftPageDown | Key::Ctrl('f') => {
                self.top += rows;
                self.cursor.line = (self.cursor.line + rows).min(last);
            }
            Key::Ctrl('u') => {
                self.top = self.top.saturating_sub(rows / 2);
                self.cursor.line = self.cursor.line.saturating_sub(rows / 2);
            }
            Key::Ctrl('d') => {
                self.top += rows / 2;
                self.cursor.line = (self.cursor.line + rows / 2).min(last);
            }
            Key::Char('g') => {
                self.cursor = Pos {
                    line: pane.first_line(),
                    col: 0,
                }
            }
            Key::Char('G') => self.cursor = Pos { line: last, col: 0 },
            Key::Char('/') | Key::Char('?') => {
                self.prompt = Some(Prompt {
                    forward: key == Key::Char('/'),
                    text: String::new(),
                })
            }
            Key::Char('n') | Key::Char('N') => {
                if let Some((text, forward)) = self.last_search.clone() {
                    let forward = if key == Key::Char('n') {
                        forward
                    } else {
                        !forward
                    };
                    self.search(&text, forward, pane);
                }
            }
            Key::Char('v') | Key::Char(' ') => {
                self.anchor = match self.anchor {
                    Some(_) => None,
                    None => Some(self.cursor),
                }
            }
            Key::Enter | Key::Char('y') => return CopyAction::Copy(self.selection(pane)),
            _ => {}
        }
        self.settle(pane);
        CopyAction::Stay
    }

    /// Scroll the view by `lines` (negative: back into history), the cursor
    /// staying on screen: the mouse wheel.
    pub fn scroll(&mut self, lines: isize, pane: &mut impl PaneLines) {
        let rows = pane.rows().max(1);
        self.top = self.top.saturating_add_signed(lines);
        self.top = self.top.min(pane.total_lines().saturating_sub(rows));
        self.cursor.line = self.cursor.line.clamp(self.top, self.top + rows - 1);
        self.settle(pane);
    }

    /// Whether the view is back at the live screen (the wheel scrolled all
    /// the way down).
    pub fn at_bottom(&self, pane: &impl PaneLines) -> bool {
        self.top + pane.rows() >= pane.total_lines()
    }

    /// Move to the next match of `needle` after (or before) the cursor,
    /// wrapping around; case-insensitive unless the needle has a capital.
    fn search(&mut self, needle: &str, forward: bool, pane: &mut impl PaneLines) {
        let fold = !needle.chars().any(char::is_uppercase);
        let needle: Vec<char> = if fold {
            needle.to_lowercase().chars().collect()
        } else {
            needle.chars().collect()
        };
        let total = pane.total_lines().max(1);
        let first = pane.first_line().min(total - 1);
        let count = total - first;
        let start = self.cursor;
        let from = start.line.max(first) - first;
        // Step `count` is the cursor's own line again: a lone match is found
        // again rather than reported missing.
        for step in 0..=count {
            let line = first
                + if forward {
                    (from + step) % count
                } else {
                    (from + 2 * count - step) % count
                };
            let cols = columns_of(&pane.line_text(line), &needle, fold);
            let hit = if forward {
                cols.into_iter().find(|&c| step > 0 || c > start.col)
            } else {
                cols.into_iter().rev().find(|&c| step > 0 || c < start.col)
            };
            if let Some(col) = hit {
                self.cursor = Pos { line, col };
                self.settle(pane);
                return;
            }
        }
        self.note = Some("not found".to_owned());
    }

    /// The selected text (the cursor's line when nothing is selected),
    /// lines joined by newlines.
    fn selection(&self, pane: &mut impl PaneLines) -> String {
        let Some(anchor) = self.anchor else {
            return pane.line_text(self.cursor.line);
        };
        let (start, end) = if anchor <= self.cursor {
            (anchor, self.cursor)
        } else {
            (self.cursor, anchor)
        };
        let mut out = Vec::new();
        for line in start.line..=end.line {
            let text: Vec<char> = pane.line_text(line).chars().collect();
            let from = if line == start.line { start.col } else { 0 };
            let to = if line == end.line {
                (end.col + 1).min(text.len())
            } else {
                text.len()
            };
            out.push(
                text.get(from.min(to)..to)
                    .unwrap_or_default()
                    .iter()
                    .collect::<String>(),
            );
        }
        out.join("\n")
    }
}

/// The columns (in characters) where `needle` starts in `text`.
fn columns_of(text: &str, needle: &[char], fold: bool) -> Vec<usize> {
    let hay: Vec<char> = if fold {
        text.to_lowercase().chars().collect()
    } else {
        text.chars().collect()
    };
    if needle.is_empty() || hay.len() < needle.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| hay[i..i + needle.len()] == *needle)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Lines {
        lines: Vec<String>,
        rows: usize,
    }

    impl PaneLines for Lines {
        fn total_lines(&self) -> usize {
            self.lines.len()
        }
        fn rows(&self) -> usize {
            self.rows
        }
        fn cols(&self) -> usize {
            20
        }
        fn line_text(&mut self, line: usize) -> String {
            self.lines.get(line).cloned().unwrap_or_default()
        }
    }

    fn seq(n: usize, rows: usize) -> Lines {
        Lines {
            lines: (1..=n).map(|i| i.to_string()).collect(),
            rows,
        }
    }

    fn at_bottom(pane: &Lines) -> CopyMode {
        let top = pane.lines.len() - pane.rows;
        CopyMode::new("s".into(), top, Pos { line: top, col: 0 })
    }

    #[test]
    fn g_goes_to_the_first_line_of_history_and_capital_g_to_the_last() {
        let mut pane = seq(5000, 20);
        let mut c = at_bottom(&pane);
        c.key(Key::Char('g'), &mut pane);
        assert_eq!((c.cursor.line, c.top), (0, 0));
        c.key(Key::Char('G'), &mut pane);
        assert_eq!(c.cursor.line, 4999);
        assert_eq!(c.top, 4980);
    }

    /// Lines `first..total`, as a daemon that dropped the oldest to its cap.
    struct Capped {
        first: usize,
        lines: Lines,
    }

    impl PaneLines for Capped {
        fn total_lines(&self) -> usize {
            self.lines.total_lines()
        }
        fn first_line(&mut self) -> usize {
            self.first
        }
        fn rows(&self) -> usize {
            self.lines.rows
        }
        fn cols(&self) -> usize {
            20
        }
        fn line_text(&mut self, line: usize) -> String {
            if line < self.first {
                return String::new();
            }
            self.lines.line_text(line)
        }
    }

    #[test]
    fn g_and_search_stop_at_the_oldest_line_still_kept() {
        let mut pane = Capped {
            first: 1_000,
            lines: seq(30_000, 20),
        };
        let top = 30_000 - 20;
        let mut c = CopyMode::new("s".into(), top, Pos { line: top, col: 0 });
        c.key(Key::Char('g'), &mut pane);
        assert_eq!((c.cursor.line, c.top), (1_000, 1_000));
        assert_eq!(pane.line_text(c.cursor.line), "1001");
        for _ in 0..5 {
            c.key(Key::PageUp, &mut pane);
        }
        assert_eq!(c.top, 1_000, "never above the oldest line");
        // A word on a dropped line (500) and on a kept one (2000): the
        // search finds the kept one, and again after wrapping.
        pane.lines.lines[500] = "needle".into();
        pane.lines.lines[2_000] = "needle".into();
        c.key(Key::Char('G'), &mut pane);
        for k in [Key::Char('?'), Key::Char('n'), Key::Char('e'), Key::Enter] {
            c.key(k, &mut pane);
        }
        assert_eq!((c.cursor.line, c.note.as_deref()), (2_000, None));
        c.key(Key::Char('n'), &mut pane);
        assert_eq!((c.cursor.line, c.note.as_deref()), (2_000, None));
    }

    #[test]
    fn page_up_and_down_move_a_screen_at_a_time() {
        let mut pane = seq(100, 10);
        let mut c = at_bottom(&pane);
        c.key(Key::PageUp, &mut pane);
        assert_eq!(c.top, 80);
        c.key(Key::PageDown, &mut pane);
        assert_eq!(c.top, 90);
        c.key(Key::PageDown, &mut pane);
        assert_eq!(c.top, 90, "never past the live screen");
    }

    #[test]
    fn slash_searches_back_with_question_mark_and_n_repeats() {
        let mut pane = seq(300, 10);
        let mut c = at_bottom(&pane);
        for k in [
            Key::Char('?'),
            Key::Char('1'),
            Key::Char('2'),
            Key::Char('3'),
            Key::Enter,
        ] {
            c.key(k, &mut pane);
        }
        assert_eq!(pane.line_text(c.cursor.line), "123");
        assert!(c.cursor.line >= c.top && c.cursor.line < c.top + 10);
        for k in [
            Key::Char('/'),
            Key::Char('2'),
            Key::Char('9'),
            Key::Char('9'),
            Key::Enter,
        ] {
            c.key(k, &mut pane);
        }
        assert_eq!(pane.line_text(c.cursor.line), "299");
        c.key(Key::Char('n'), &mut pane);
        assert_eq!(
            pane.line_text(c.cursor.line),
            "299",
            "the only match, found again"
        );
        for k in [Key::Char('/'), Key::Char('z'), Key::Enter] {
            c.key(k, &mut pane);
        }
        assert_eq!(c.note.as_deref(), Some("not found"));
    }

    #[test]
    fn v_selects_and_y_copies_the_selection() {
        let mut pane = Lines {
            lines: vec!["hello world".into(), "second line".into(), "third".into()],
            rows: 3,
        };
        let mut c = CopyMode::new("s".into(), 0, Pos { line: 0, col: 6 });
        c.key(Key::Char('v'), &mut pane);
        c.key(Key::Down, &mut pane);
        c.key(Key::Left, &mut pane);
        assert!(c.selected(Pos { line: 0, col: 8 }));
        assert!(!c.selected(Pos { line: 0, col: 2 }));
        let got = c.key(Key::Char('y'), &mut pane);
        assert_eq!(got, CopyAction::Copy("world\nsecond".into()));
    }

    #[test]
    fn enter_without_a_selection_copies_the_cursors_line_and_q_leaves() {
        let mut pane = seq(3, 3);
        let mut c = CopyMode::new("s".into(), 0, Pos { line: 1, col: 0 });
        assert_eq!(c.key(Key::Enter, &mut pane), CopyAction::Copy("2".into()));
        assert_eq!(c.key(Key::Char('q'), &mut pane), CopyAction::Leave);
    }

    #[test]
    fn esc_drops_the_selection_first_and_then_leaves() {
        let mut pane = seq(3, 3);
        let mut c = CopyMode::new("s".into(), 0, Pos { line: 0, col: 0 });
        c.key(Key::Char('v'), &mut pane);
        assert_eq!(c.key(Key::Esc, &mut pane), CopyAction::Stay);
        assert_eq!(c.anchor, None);
        assert_eq!(c.key(Key::Esc, &mut pane), CopyAction::Leave);
    }

    #[test]
    fn the_cursor_stops_at_the_panes_last_column() {
        let mut pane = seq(3, 3);
        let mut c = CopyMode::new("s".into(), 0, Pos { line: 0, col: 0 });
        for _ in 0..50 {
            c.key(Key::Char('l'), &mut pane);
        }
        assert_eq!(c.cursor.col, 19);
        c.key(Key::Char('h'), &mut pane);
        assert_eq!(c.cursor.col, 18, "one step back is one column back");
    }
}
