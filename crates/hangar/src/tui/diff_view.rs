//! The TUI's diff view (`D` in command mode, so `Ctrl-b D` while typing):
//! what the focused session changed since its base, as `hangar diff` shows
//! it, with lazygit's keys. First the file list; `Enter` opens a file's
//! hunks; `j`/`k` move, `n`/`p` go to the next/previous hunk, `c` writes a
//! comment on the line under the cursor, `s` sends every comment written
//! as ONE prompt through the daemon's `review` request (the prompt
//! `hangar review ID --comment FILE:LINE TEXT` sends), `q`/Esc go back.
//!
//! The list is read once (`stat`: no patch), so a 10,000-file change lists
//! without its patch; a file's hunks come from the daemon's page of the
//! patch that starts at that file (a page holds the files after it too,
//! kept for when they are opened). File names and patch text are the
//! agent's (rule 11): drawn escaped; a binary file is named, not dumped.

use std::collections::HashMap;

use hangar_core::display;
use hangar_core::patch::{self, LineKind, PatchLine};
use hangar_core::review::ReviewComment;
use hangar_protocol::message as msg;
use hangar_protocol::reply::DiffPage;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::tui::widgets;
use hangar_core::keys::Key;

/// Rows of the box that are not list or patch rows: the heading line and
/// the key line.
const CHROME_ROWS: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Files,
    /// One file's hunks, the cursor on a line of its patch.
    Hunks {
        file: usize,
        cursor: usize,
    },
}

#[derive(Debug)]
pub struct DiffDialog {
    pub session: String,
    /// "provider · title" of the session, for the box's title.
    label: String,
    /// The file list (a `stat` page), once the daemon answered.
    listing: Option<Result<DiffPage, String>>,
    /// Each file's patch read so far, by its index in the list.
    patches: HashMap<usize, Vec<PatchLine>>,
    /// The file whose page of the patch was asked and not answered yet.
    asking: Option<usize>,
    mode: Mode,
    selected: usize,
    /// The first row shown of the list or the patch.
    top: usize,
    /// Rows the list or patch has on screen (from the last frame's size).
    rows: usize,
    /// A comment being typed, on (file, line).
    input: Option<(String, u32, String)>,
    /// Comments written and not sent yet.
    pub comments: Vec<ReviewComment>,
    /// The comments were sent and not answered yet.
    sending: bool,
    /// `q` with comments not sent: a second `q` drops them.
    warned: bool,
    /// The last thing to tell (an error in red).
    note: Option<(String, bool)>,
}

/// What a key asks the app to do.
#[derive(Debug, PartialEq)]
pub enum DiffAction {
    None,
    /// Ask the daemon for a page of the diff.
    Ask(msg::Diff),
    /// Send these comments as one review prompt.
    Send(Vec<ReviewComment>),
    Close,
}

impl DiffDialog {
    /// The view of `session`, and the request for its file list.
    pub fn open(session: String, label: String) -> (DiffDialog, msg::Diff) {
        let ask = msg::Diff {
            session: session.clone(),
            stat: true,
            ..Default::default()
        };
        let d = DiffDialog {
            session,
            label,
            listing: None,
            patches: HashMap::new(),
            asking: None,
            mode: Mode::Files,
            selected: 0,
            top: 0,
            rows: 20,
            input: None,
            comments: Vec::new(),
            sending: false,
            warned: false,
            note: None,
        };
        (d, ask)
    }

    /// The screen's size changed (or is first known): the rows the list
    /// or patch gets in [`draw`]'s box.
    pub fn set_screen(&mut self, screen: Rect) {
        self.rows = list_rows(popup_rect(screen));
        self.top = keep_in_view(self.top, self.cursor(), self.rows);
    }

    fn files(&self) -> &[hangar_core::review::DiffFile] {
        match &self.listing {
            Some(Ok(page)) => &page.files,
            _ => &[],
        }
    }

    fn lines(&self, file: usize) -> Option<&[PatchLine]> {
        self.patches.get(&file).map(Vec::as_slice)
    }

    fn cursor(&self) -> usize {
        match self.mode {
            Mode::Files => self.selected,
            Mode::Hunks { cursor, .. } => cursor,
        }
    }

    fn set_cursor(&mut self, to: usize) {
        match &mut self.mode {
            Mode::Files => self.selected = to,
            Mode::Hunks { cursor, .. } => *cursor = to,
        }
        self.top = keep_in_view(self.top, to, self.rows);
    }

    /// How many rows the cursor moves over: files or patch lines.
    fn length(&self) -> usize {
        match self.mode {
            Mode::Files => self.files().len(),
            Mode::Hunks { file, .. } => self.lines(file).map_or(0, <[PatchLine]>::len),
        }
    }

    pub fn key(&mut self, key: Key) -> DiffAction {
        if self.input.is_some() {
            return self.input_key(key);
        }
        if key != Key::Char('q') && key != Key::Esc {
            self.warned = false;
        }
        let len = self.length();
        let page = self.rows.max(1);
        let step = |c: usize, by: isize| -> usize {
            (c as isize + by).clamp(0, len.saturating_sub(1) as isize) as usize
        };
        let cursor = self.cursor();
        match key {
            Key::Char('j') | Key::Down => self.set_cursor(step(cursor, 1)),
            Key::Char('k') | Key::Up => self.set_cursor(step(cursor, -1)),
            Key::PageDown | Key::Ctrl('d') => self.set_cursor(step(cursor, page as isize)),
            Key::PageUp | Key::Ctrl('u') => self.set_cursor(step(cursor, -(page as isize))),
            Key::Char('g') | Key::Home => self.set_cursor(0),
            Key::Char('G') | Key::End => self.set_cursor(len.saturating_sub(1)),
            Key::Char('s') => return self.send(),
            Key::Char('r') if self.mode == Mode::Files => {
                let (fresh, ask) = DiffDialog::open(self.session.clone(), self.label.clone());
                let comments = std::mem::take(&mut self.comments);
                *self = DiffDialog {
                    comments,
                    rows: self.rows,
                    ..fresh
                };
                return DiffAction::Ask(ask);
            }
            _ => {}
        }
        match (self.mode, key) {
            (Mode::Files, Key::Enter | Key::Char('l') | Key::Right) => {
                return self.open_file(self.selected);
            }
            (Mode::Files, Key::Char('q') | Key::Esc) => {
                if !self.comments.is_empty() && !self.warned {
                    self.warned = true;
                    self.note = Some((
                        format!(
                            "{} comment(s) not sent: s sends them, q again drops them",
                            self.comments.len()
                        ),
                        true,
                    ));
                    return DiffAction::None;
                }
                return DiffAction::Close;
            }
            (Mode::Hunks { .. }, Key::Char('q') | Key::Esc | Key::Char('h') | Key::Left) => {
                self.mode = Mode::Files;
                self.note = None;
                self.top = keep_in_view(0, self.selected, self.rows);
            }
            (Mode::Hunks { file, cursor }, Key::Char('n')) => {
                if let Some(to) = self.lines(file).and_then(|l| patch::next_hunk(l, cursor)) {
                    self.jump(to);
                }
            }
            (Mode::Hunks { file, cursor }, Key::Char('p')) => {
                if let Some(to) = self
                    .lines(file)
                    .and_then(|l| patch::previous_hunk(l, cursor))
                {
                    self.jump(to);
                }
            }
            (Mode::Hunks { file, cursor }, Key::Char('c')) => {
                let target = self
                    .lines(file)
                    .and_then(|l| patch::comment_line(l, cursor));
                match (target, self.files().get(file)) {
                    (Some(line), Some(f)) => {
                        self.input = Some((f.path.clone(), line, String::new()));
                        self.note = None;
                    }
                    _ => {
                        self.note = Some((
                            "move the cursor to a line of a hunk to comment on it".into(),
                            true,
                        ))
                    }
                }
            }
            _ => {}
        }
        DiffAction::None
    }

    /// Put a hunk's header at the top of the patch rows.
    fn jump(&mut self, to: usize) {
        if let Mode::Hunks { cursor, .. } = &mut self.mode {
            *cursor = to;
        }
        self.top = to;
    }

    fn input_key(&mut self, key: Key) -> DiffAction {
        let Some((file, line, text)) = self.input.as_mut() else {
            return DiffAction::None;
        };
        match key {
            Key::Esc => self.input = None,
            Key::Backspace => {
                text.pop();
            }
            Key::Char(c) => text.push(c),
            Key::Tab => text.push(' '),
            Key::Enter => {
                let text = text.trim().to_owned();
                if !text.is_empty() {
                    self.comments.push(ReviewComment {
                        file: file.clone(),
                        line: *line,
                        text,
                    });
                    self.note = Some((
                        format!(
                            "{} comment(s) written: s sends them to the agent as one prompt",
                            self.comments.len()
                        ),
                        false,
                    ));
                }
                self.input = None;
            }
            _ => {}
        }
        DiffAction::None
    }

    fn send(&mut self) -> DiffAction {
        if self.comments.is_empty() {
            self.note = Some(("no comments to send: c writes one".into(), true));
            return DiffAction::None;
        }
        if self.sending {
            return DiffAction::None;
        }
        self.sending = true;
        self.note = Some(("sending…".into(), false));
        DiffAction::Send(self.comments.clone())
    }

    /// Open file `i`'s hunks, asking for its page of the patch when it was
    /// not read yet (a binary file has none to read).
    fn open_file(&mut self, i: usize) -> DiffAction {
        let Some(f) = self.files().get(i) else {
            return DiffAction::None;
        };
        let binary = f.binary;
        self.mode = Mode::Hunks { file: i, cursor: 0 };
        self.top = 0;
        self.note = None;
        if binary || self.patches.contains_key(&i) {
            self.first_hunk(i);
            return DiffAction::None;
        }
        if self.asking.is_some() {
            // One page at a time: the one on its way may hold this file.
            return DiffAction::None;
        }
        let Some(Ok(page)) = &self.listing else {
            return DiffAction::None;
        };
        self.asking = Some(i);
        DiffAction::Ask(msg::Diff {
            session: self.session.clone(),
            from_file: i,
            tree: Some(page.tree.clone()),
            merge_base: Some(page.merge_base.clone()),
            ..Default::default()
        })
    }

    /// The cursor on the first hunk of the file on screen.
    fn first_hunk(&mut self, i: usize) {
        if self.mode == (Mode::Hunks { file: i, cursor: 0 })
            && let Some(to) = self.lines(i).and_then(|l| patch::next_hunk(l, 0))
        {
            self.jump(to);
        }
    }

    /// The daemon answered `asked`.
    pub fn answered(&mut self, asked: &msg::Diff, reply: Result<DiffPage, String>) -> DiffAction {
        if asked.stat {
            self.listing = Some(reply);
            self.selected = 0;
            self.top = 0;
            return DiffAction::None;
        }
        self.asking = None;
        let page = match reply {
            Ok(page) => page,
            Err(e) => {
                self.note = Some((e, true));
                return DiffAction::None;
            }
        };
        let from = asked.from_file;
        let end = page.next_file.unwrap_or(page.files.len());
        let text = page.patch.unwrap_or_default();
        let sections = patch::split_files(&text);
        if sections.len() != end.saturating_sub(from) {
            self.note = Some((
                format!(
                    "the patch's {} file(s) do not match the list's {}: press r to read it again",
                    sections.len(),
                    end.saturating_sub(from)
                ),
                true,
            ));
        }
        for (i, section) in (from..end).zip(sections) {
            self.patches.insert(i, patch::parse_file(section));
        }
        // The file opened meanwhile may still be unread (past this page).
        if let Mode::Hunks { file, .. } = self.mode {
            if self.patches.contains_key(&file) {
                self.first_hunk(file);
            } else if file != from {
                return self.open_file(file);
            }
        }
        DiffAction::None
    }

    /// The daemon answered the review: sent (the comments are done) or
    /// refused (they stay, to send again).
    pub fn sent(&mut self, reply: Result<usize, String>) {
        self.sending = false;
        match reply {
            Ok(n) => {
                self.comments.clear();
                self.warned = false;
                self.note = Some((
                    format!("sent {n} comment(s) to the agent as one prompt"),
                    false,
                ));
            }
            Err(e) => self.note = Some((format!("{e} (the comments are kept)"), true)),
        }
    }
}

/// `top` moved just enough that `cursor` is among `rows` rows from it.
fn keep_in_view(top: usize, cursor: usize, rows: usize) -> usize {
    let rows = rows.max(1);
    if cursor < top {
        cursor
    } else if cursor >= top + rows {
        cursor + 1 - rows
    } else {
        top
    }
}

fn popup_rect(screen: Rect) -> Rect {
    widgets::large(screen, (30, 8), (240, 200))
}

fn list_rows(r: Rect) -> usize {
    widgets::inner_size(r).1.saturating_sub(CHROME_ROWS)
}

/// A line of the patch as a person reads it: escaped, tabs as spaces.
fn shown_line(text: &str) -> String {
    display::body(text).replace('\t', "    ")
}

fn file_row(f: &hangar_core::review::DiffFile, commented: bool, width: usize) -> String {
    let name = match &f.old_path {
        Some(old) => format!("{} → {}", display::name(old), display::name(&f.path)),
        None => display::name(&f.path).into_owned(),
    };
    let change = if f.binary {
        "binary".to_owned()
    } else {
        format!("+{} -{}", f.additions, f.deletions)
    };
    let mark = if commented { '●' } else { ' ' };
    let lead = format!(" {mark}{} ", patch::status_letter(&f.status));
    let room = width.saturating_sub(display::width(&lead) + change.len() + 2);
    let name = display::pad(&display::name_fit(&name, room), room);
    format!("{lead}{name} {change}")
}

fn heading(d: &DiffDialog) -> Line<'static> {
    let dim = Style::new().fg(Color::DarkGray);
    match (&d.listing, d.mode) {
        (None, _) => Line::styled(" reading the diff…", dim),
        (Some(Err(e)), _) => Line::styled(
            format!(" {}", display::name(e)),
            Style::new().fg(Color::Red),
        ),
        (Some(Ok(page)), Mode::Files) => {
            let (adds, dels) = page
                .files
                .iter()
                .fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
            Line::styled(
                format!(
                    " against {} (merge-base {}), HEAD {} · {} file(s), +{adds} -{dels}",
                    display::name(&page.base),
                    short(&page.merge_base),
                    short(&page.head),
                    page.files.len()
                ),
                dim,
            )
        }
        (Some(Ok(page)), Mode::Hunks { file, cursor }) => {
            let Some(f) = page.files.get(file) else {
                return Line::raw("");
            };
            let mut spans = vec![Span::styled(
                format!(" {}", display::name(&f.path)),
                Style::new().add_modifier(Modifier::BOLD),
            )];
            let mut tail = format!(" · {} · file {}/{}", f.status, file + 1, page.files.len());
            if let Some(lines) = d.lines(file) {
                let count = patch::hunk_count(lines);
                let at = lines
                    .iter()
                    .take(cursor + 1)
                    .filter(|l| l.kind == LineKind::Hunk)
                    .count();
                if count > 0 {
                    tail.push_str(&format!(" · hunk {}/{count}", at.max(1)));
                }
                if let Some(line) = patch::comment_line(lines, cursor) {
                    tail.push_str(&format!(" · line {line}"));
                }
            }
            spans.push(Span::styled(tail, dim));
            Line::from(spans)
        }
    }
}

fn short(id: &str) -> String {
    display::name(id).chars().take(7).collect()
}

fn patch_row(l: &PatchLine, at_cursor: bool, commented: bool) -> Line<'static> {
    let style = match l.kind {
        LineKind::Added => Style::new().fg(Color::Green),
        LineKind::Removed => Style::new().fg(Color::Red),
        LineKind::Hunk => Style::new().fg(Color::Cyan),
        LineKind::Header => Style::new().add_modifier(Modifier::BOLD),
        LineKind::Context | LineKind::NoNewline => Style::new(),
    };
    let style = if at_cursor {
        style.add_modifier(Modifier::REVERSED)
    } else {
        style
    };
    let number = |n: Option<u32>| n.map_or_else(|| "    ".to_owned(), |n| format!("{n:>4}"));
    let gutter = format!(
        "{}{} {} ",
        if commented { '●' } else { ' ' },
        number(l.old),
        number(l.new)
    );
    Line::from(vec![
        Span::styled(gutter, Style::new().fg(Color::DarkGray)),
        Span::styled(shown_line(&l.text), style),
    ])
}

fn body(d: &DiffDialog, width: usize) -> Vec<Line<'static>> {
    let Some(Ok(page)) = &d.listing else {
        return Vec::new();
    };
    let rows = d.rows;
    match d.mode {
        Mode::Files => {
            if page.files.is_empty() {
                return vec![Line::styled(
                    " no changes",
                    Style::new().fg(Color::DarkGray),
                )];
            }
            page.files
                .iter()
                .enumerate()
                .skip(d.top)
                .take(rows)
                .map(|(i, f)| {
                    let commented = d.comments.iter().any(|c| c.file == f.path);
                    let text = file_row(f, commented, width);
                    if i == d.selected {
                        Line::styled(text, Style::new().add_modifier(Modifier::REVERSED))
                    } else {
                        Line::raw(text)
                    }
                })
                .collect()
        }
        Mode::Hunks { file, cursor } => {
            let Some(f) = page.files.get(file) else {
                return Vec::new();
            };
            if f.binary {
                return vec![Line::styled(
                    format!(" binary file {}: not shown", display::name(&f.path)),
                    Style::new().fg(Color::Yellow),
                )];
            }
            let Some(lines) = d.lines(file) else {
                return vec![Line::styled(
                    " reading the patch…",
                    Style::new().fg(Color::DarkGray),
                )];
            };
            let mine: Vec<&ReviewComment> =
                d.comments.iter().filter(|c| c.file == f.path).collect();
            lines
                .iter()
                .enumerate()
                .skip(d.top)
                .take(rows)
                .map(|(i, l)| {
                    let commented = l.kind != LineKind::Hunk
                        && l.target.is_some_and(|t| mine.iter().any(|c| c.line == t));
                    patch_row(l, i == cursor, commented)
                })
                .collect()
        }
    }
}

fn key_line(d: &DiffDialog) -> Line<'static> {
    if let Some((file, line, text)) = &d.input {
        return Line::from(vec![
            Span::styled(
                format!(" comment on {}:{line}: ", display::name(file)),
                Style::new().fg(Color::Yellow),
            ),
            Span::styled(
                format!("{}▏", display::name(text)),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                "  Enter: add  Esc: cancel",
                Style::new().fg(Color::DarkGray),
            ),
        ]);
    }
    if let Some((note, error)) = &d.note {
        let color = if *error { Color::Red } else { Color::Yellow };
        return Line::styled(format!(" {}", display::name(note)), Style::new().fg(color));
    }
    let keys = match d.mode {
        Mode::Files => " j/k: move  Enter: hunks  r: read again  q/Esc: close",
        Mode::Hunks { .. } => {
            " j/k: move  n/p: next/previous hunk  c: comment on this line  q/Esc: files"
        }
    };
    let mut spans = vec![Span::styled(keys, Style::new().fg(Color::DarkGray))];
    if !d.comments.is_empty() {
        spans.push(Span::styled(
            format!("  · {} comment(s): s sends them", d.comments.len()),
            Style::new().fg(Color::Yellow),
        ));
    }
    Line::from(spans)
}

pub fn draw(frame: &mut Frame, d: &DiffDialog, area: Rect) {
    let r = popup_rect(area);
    let (width, _) = widgets::inner_size(r);
    let mut lines = vec![heading(d)];
    lines.extend(body(d, width));
    while lines.len() < d.rows + 1 {
        lines.push(Line::raw(""));
    }
    lines.truncate(d.rows + 1);
    lines.push(key_line(d));
    let title = format!(" diff · {} ", display::name_fit(&d.label, 60));
    widgets::popup(frame, r, &title, lines);
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::review::DiffFile;

    fn file(path: &str, binary: bool) -> DiffFile {
        DiffFile {
            path: path.into(),
            old_path: None,
            status: "modified".into(),
            additions: 1,
            deletions: 1,
            binary,
            old_mode: "100644".into(),
            new_mode: "100644".into(),
        }
    }

    fn page(files: Vec<DiffFile>, patch: Option<String>, next: Option<usize>) -> DiffPage {
        DiffPage {
            base: "main".into(),
            merge_base: "m".repeat(40),
            head: "h".repeat(40),
            tree: "t".repeat(40),
            files,
            patch,
            next_file: next,
        }
    }

    fn section(path: &str, line: u32) -> String {
        format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{line},2 +{line},2 @@\n ctx\n-old\n+new\n"
        )
    }

    fn typed(d: &mut DiffDialog, text: &str) {
        for c in text.chars() {
            assert_eq!(d.key(Key::Char(c)), DiffAction::None);
        }
    }

    #[test]
    fn enter_reads_the_files_page_c_comments_the_line_under_the_cursor_and_s_sends_them_all() {
        let (mut d, ask) = DiffDialog::open("s1".into(), "claude · t".into());
        assert!(ask.stat, "the list comes without the patch");
        let files = vec![
            file("a.rs", false),
            file("b.rs", false),
            file("c.png", true),
        ];
        d.answered(&ask, Ok(page(files.clone(), None, None)));
        assert_eq!(d.key(Key::Char('j')), DiffAction::None);
        let DiffAction::Ask(asked) = d.key(Key::Enter) else {
            panic!("Enter asks for b.rs's page");
        };
        assert_eq!((asked.from_file, asked.stat), (1, false));
        assert_eq!(asked.tree.as_deref(), Some("t".repeat(40).as_str()));
        let text = section("b.rs", 10);
        d.answered(&asked, Ok(page(files.clone(), Some(text), Some(2))));
        // The cursor sits on the first hunk's header: `j` twice is `-old`.
        d.key(Key::Char('j'));
        d.key(Key::Char('j'));
        assert_eq!(d.key(Key::Char('c')), DiffAction::None);
        typed(&mut d, "why remove this?");
        d.key(Key::Enter);
        d.key(Key::Char('j'));
        d.key(Key::Char('c'));
        typed(&mut d, "ok");
        d.key(Key::Enter);
        let DiffAction::Send(sent) = d.key(Key::Char('s')) else {
            panic!("s sends");
        };
        assert_eq!(
            sent,
            vec![
                ReviewComment {
                    file: "b.rs".into(),
                    line: 11,
                    text: "why remove this?".into()
                },
                ReviewComment {
                    file: "b.rs".into(),
                    line: 11,
                    text: "ok".into()
                },
            ]
        );
        assert_eq!(d.key(Key::Char('s')), DiffAction::None, "one at a time");
        d.sent(Err("the agent is mid-turn".into()));
        assert_eq!(d.comments.len(), 2, "a refused review keeps its comments");
        assert!(matches!(d.key(Key::Char('s')), DiffAction::Send(_)));
        d.sent(Ok(2));
        assert!(d.comments.is_empty());
        // Back to the list; a binary file is named, nothing is asked.
        d.key(Key::Char('q'));
        d.key(Key::Char('j'));
        assert_eq!(d.key(Key::Enter), DiffAction::None);
        assert_eq!(d.key(Key::Esc), DiffAction::None, "back to the list");
        assert_eq!(d.key(Key::Esc), DiffAction::Close);
    }

    #[test]
    fn n_and_p_move_between_hunks_and_q_with_unsent_comments_asks_twice() {
        let (mut d, ask) = DiffDialog::open("s1".into(), "t".into());
        let files = vec![file("a.rs", false)];
        d.answered(&ask, Ok(page(files.clone(), None, None)));
        let DiffAction::Ask(asked) = d.key(Key::Enter) else {
            panic!()
        };
        let two = format!("{}@@ -40,1 +40,1 @@\n-x\n+y\n", section("a.rs", 1));
        d.answered(&asked, Ok(page(files, Some(two), None)));
        assert_eq!(d.cursor(), 3, "on the first hunk");
        d.key(Key::Char('n'));
        assert_eq!(d.cursor(), 7);
        d.key(Key::Char('n'));
        assert_eq!(d.cursor(), 7, "no hunk after the last");
        d.key(Key::Char('j'));
        d.key(Key::Char('p'));
        assert_eq!(d.cursor(), 7, "p from inside a hunk: its own header");
        d.key(Key::Char('p'));
        assert_eq!(d.cursor(), 3);
        d.key(Key::Char('k'));
        d.key(Key::Char('k'));
        d.key(Key::Char('c'));
        assert!(d.input.is_none(), "no comment on the file's header");
        d.key(Key::Char('n'));
        d.key(Key::Char('c'));
        typed(&mut d, "x");
        d.key(Key::Enter);
        d.key(Key::Char('q'));
        assert_eq!(d.key(Key::Char('q')), DiffAction::None, "warned first");
        assert_eq!(d.key(Key::Char('q')), DiffAction::Close);
    }

    #[test]
    fn a_page_fills_every_file_it_holds_and_the_cursor_stays_in_view() {
        let (mut d, ask) = DiffDialog::open("s1".into(), "t".into());
        let files: Vec<DiffFile> = (0..4).map(|i| file(&format!("f{i}"), false)).collect();
        d.answered(&ask, Ok(page(files.clone(), None, None)));
        let DiffAction::Ask(asked) = d.key(Key::Enter) else {
            panic!()
        };
        let text = format!("{}{}", section("f0", 1), section("f1", 1));
        d.answered(&asked, Ok(page(files, Some(text), Some(2))));
        assert!(d.patches.contains_key(&1) && !d.patches.contains_key(&2));
        d.key(Key::Esc);
        d.key(Key::Char('j'));
        assert_eq!(
            d.key(Key::Enter),
            DiffAction::None,
            "f1 came with f0's page"
        );
        d.key(Key::Esc);
        d.key(Key::Char('j'));
        assert!(matches!(d.key(Key::Enter), DiffAction::Ask(a) if a.from_file == 2));
        assert_eq!(keep_in_view(0, 5, 3), 3);
        assert_eq!(keep_in_view(4, 2, 3), 2);
        assert_eq!(keep_in_view(1, 2, 3), 1);
    }

    #[test]
    fn names_and_lines_are_escaped() {
        let evil = file("evil\u{1b}]0;x\u{7}\u{202e}.txt", false);
        let row = file_row(&evil, false, 80);
        assert!(
            !row.contains('\u{1b}') && !row.contains('\u{202e}'),
            "{row}"
        );
        assert!(row.contains("\\u{1b}"), "{row}");
        assert_eq!(shown_line("+\tx\u{1b}[2J"), "+    x\\u{1b}[2J");
    }
}
