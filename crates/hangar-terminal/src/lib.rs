//! A session's server-side terminal: what a program printed, as a screen, a
//! history capped in bytes, and the modes a client must be put in to show it.
//!
//! Bytes go in through [`Terminal::feed`]; out come the visible screen as text
//! ([`Terminal::screen_text`]), as bytes that redraw it on a fresh terminal
//! with every mode restored ([`Terminal::redraw`]), the last lines of history
//! ([`Terminal::scrollback`]), a search over history and screen, and a compact
//! saved form for hibernation, restarts and export ([`Terminal::save`],
//! [`Terminal::restore`]).
//!
//! The screen is alacritty's `Term` (parsing ~3x faster than `vt100`; see
//! docs/src/benchmarks-history.md); the history is this crate's own, kept as SGR-coloured text
//! and capped in bytes, so memory stays bounded whatever a program prints.
//! A flood of plain lines skips alacritty ([`plain`]): the queries take
//! `&mut self` because they first give it the lines it has not seen yet.
//! No I/O, no async, never panics on any input (a property test feeds it
//! arbitrary bytes).

#![forbid(unsafe_code)]

mod cells;
mod encode;
pub mod history;
mod modes;
mod osc_guard;
mod plain;
mod reflow;
mod saved;
mod screen;

use alacritty_terminal::Term;
use alacritty_terminal::event::VoidListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Line;
use alacritty_terminal::term::{Config as TermConfig, TermMode};
use alacritty_terminal::vte::ansi::{Processor, Timeout};

pub use cells::{CellColor, MouseEncoding, MouseMode, ShownCell};
pub use history::History;
pub use modes::Modes;

use crate::osc_guard::OscGuard;
use crate::plain::PlainRun;
use crate::screen::Screen;

/// `[terminal] history_bytes` when config.toml says nothing: 4 MiB, about
/// 40,000 lines of typical agent output.
pub const DEFAULT_HISTORY_BYTES: usize = 4 * 1024 * 1024;

/// The size a screen saved without one (by an older hangar) is read back at.
pub const FALLBACK_ROWS: u16 = 50;
pub const FALLBACK_COLS: u16 = 200;

/// What a terminal is built with (the `[terminal]` section of config.toml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// History kept per session, in bytes; the oldest lines go first.
    pub history_bytes: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            history_bytes: DEFAULT_HISTORY_BYTES,
        }
    }
}

/// A match of [`Terminal::search`]: `line` counts from the oldest history line
/// (0) through history and on into the screen; `column` is in characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchMatch {
    pub line: usize,
    pub column: usize,
}

/// A page of history ([`Terminal::history_page`]): lines are numbered from
/// the first line the terminal's history ever held, so a number names the
/// same line for as long as it is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryPage {
    /// The oldest line kept.
    pub first: u64,
    /// One past the newest line kept: the screen's top row is line `end`.
    pub end: u64,
    /// The number of `lines[0]`.
    pub start: u64,
    /// The lines with their SGR sequences, oldest first.
    pub lines: Vec<String>,
}

/// Synchronized updates (`CSI ? 2026 h`) are not held back: a server-side
/// screen must always show what was printed, and each client's own terminal
/// does the holding back when it draws.
#[derive(Default)]
struct NoSyncHold;

impl Timeout for NoSyncHold {
    fn set_timeout(&mut self, _: std::time::Duration) {}
    fn clear_timeout(&mut self) {}
    fn pending_timeout(&self) -> bool {
        false
    }
}

#[derive(Clone, Copy)]
struct Size {
    rows: usize,
    cols: usize,
}

impl Dimensions for Size {
    fn total_lines(&self) -> usize {
        self.rows
    }
    fn screen_lines(&self) -> usize {
        self.rows
    }
    fn columns(&self) -> usize {
        self.cols
    }
}

fn size(rows: u16, cols: u16) -> Size {
    // alacritty needs two columns for a wide character.
    Size {
        rows: usize::from(rows.max(1)),
        cols: usize::from(cols.max(2)),
    }
}

pub struct Terminal {
    screen: Screen,
    parser: Processor<NoSyncHold>,
    osc: OscGuard,
    /// The parser is known to be in its ground state, with no half-read
    /// UTF-8 character: where a run of plain lines may start.
    ground: bool,
    /// Plain lines kept back from the parser ([`plain`]).
    plain: PlainRun,
    /// Off only in tests, which compare the fast path with the slow one.
    fast_plain_lines: bool,
}

impl Terminal {
    pub fn new(rows: u16, cols: u16, config: Config) -> Terminal {
        let term_config = TermConfig {
            scrolling_history: 0,
            ..TermConfig::default()
        };
        let term = Term::new(term_config, &size(rows, cols), VoidListener);
        Terminal {
            screen: Screen::new(term, History::new(config.history_bytes)),
            parser: Processor::new(),
            osc: OscGuard::default(),
            ground: true,
            plain: PlainRun::default(),
            fast_plain_lines: true,
        }
    }

    /// Feed what the program printed.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(&first) = bytes.first() {
            if self.fast_plain_lines
                && (self.plain.active()
                    || (self.ground
                        && self.osc.is_ground()
                        && PlainRun::can_start(&self.screen, first)))
            {
                let kept = self.plain.take(&mut self.screen, bytes);
                bytes = &bytes[kept..];
                if bytes.is_empty() {
                    return;
                }
                self.settle();
            }
            // Parsed a line at a time: a run may start after any of them.
            let end = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
            self.parse(&bytes[..end]);
            bytes = &bytes[end..];
        }
    }

    /// Give the parser what the program printed, and find out whether it is
    /// left in its ground state. vte leaves the ground state only on ESC,
    /// and prints (calls `input`) only in it; so it is there at the end if
    /// it printed after the last ESC, or if there was no ESC and it was there
    /// already. A last byte that is not ASCII may be half a character.
    fn parse(&mut self, bytes: &[u8]) {
        let Terminal {
            screen,
            parser,
            osc,
            ground,
            ..
        } = self;
        osc.filter(bytes, |part| {
            let Some(&last) = part.last() else {
                return;
            };
            let printed = screen.printed;
            match memchr::memrchr(0x1b, part) {
                Some(esc) => {
                    parser.advance(screen, &part[..=esc]);
                    let printed = screen.printed;
                    parser.advance(screen, &part[esc + 1..]);
                    *ground = screen.printed != printed;
                }
                None => {
                    parser.advance(screen, part);
                    *ground = *ground || screen.printed != printed;
                }
            }
            *ground &= last.is_ascii();
        });
    }

    /// Give the parser the plain lines kept back from it, so the screen and
    /// history are what it shows.
    fn settle(&mut self) {
        self.plain.materialize(&mut self.screen, &mut self.parser);
    }

    /// Turn the plain-line fast path off (tests compare it with the slow
    /// path).
    #[cfg(test)]
    pub(crate) fn without_fast_plain_lines(mut self) -> Terminal {
        self.fast_plain_lines = false;
        self
    }

    pub fn rows(&self) -> u16 {
        u16::try_from(self.screen.term.screen_lines()).unwrap_or(u16::MAX)
    }

    pub fn cols(&self) -> u16 {
        u16::try_from(self.screen.term.columns()).unwrap_or(u16::MAX)
    }

    /// Resize the screen. Lines the reflow pushes off the top go to history.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.settle();
        let new = size(rows, cols);
        let term = &mut self.screen.term;
        if new.rows == term.screen_lines() && new.cols == term.columns() {
            return;
        }
        let cols_changed = new.cols != term.columns();
        // For the reflow alone, let the Term keep what it pushes off; then
        // move that into our history and give the Term's rows back.
        let reflow_room = term.screen_lines() + new.rows;
        term.grid_mut().update_history(reflow_room);
        term.resize(new);
        let grid = term.grid();
        let pushed = grid.history_size();
        let columns = grid.columns();
        let mut lines: Vec<(String, bool)> = (1..=pushed)
            .rev()
            .map(|i| {
                let row = &grid[Line(-(i as i32))];
                let wrapped = encode::is_wrapped(row, columns);
                let min_len = if wrapped { columns } else { 0 };
                (encode::row_through(row, columns, min_len), wrapped)
            })
            .collect();
        let grid = self.screen.term.grid_mut();
        grid.update_history(0);
        grid.truncate();
        self.screen.full_region();
        // alacritty's reflow pushes the top rows up into history even when
        // rows below the cursor are free: a long first line rewrapped for a
        // narrower pane vanished from the screen on every attach. Give the
        // screen back as many of them as there is room for (as tmux does).
        let back = lines.len().min(self.free_rows_below_cursor());
        let returned = lines.split_off(lines.len() - back);
        // History rewrapped for the new width, as tmux does, before the
        // rows the screen's reflow pushed (already at that width).
        if cols_changed {
            self.screen.history.reflow(new.cols);
        }
        for (line, wrapped) in &lines {
            self.screen.history.push_row(line, *wrapped);
        }
        if !returned.is_empty() {
            let mut bytes = format!("\x1b7\x1b[{}T", returned.len());
            for (i, (line, _)) in returned.iter().enumerate() {
                bytes.push_str(&format!("\x1b[{};1H{line}\x1b[0m", i + 1));
            }
            bytes.push_str(&format!("\x1b8\x1b[{}B", returned.len()));
            // A parser of its own: the session's may be in the middle of a
            // sequence the program has not finished printing.
            let mut parser = Processor::<NoSyncHold>::new();
            parser.advance(&mut self.screen, bytes.as_bytes());
        }
        self.screen.mark_rows_written();
    }

    /// Blank rows at the bottom of the screen, below the cursor.
    fn free_rows_below_cursor(&self) -> usize {
        let grid = self.screen.term.grid();
        let rows = grid.screen_lines();
        let cursor = usize::try_from(grid.cursor.point.line.0).unwrap_or(0);
        let columns = grid.columns();
        let used = (0..rows)
            .rev()
            .find(|&i| !encode::row(&grid[Line(i as i32)], columns).is_empty())
            .map_or(0, |i| i + 1)
            .max(cursor + 1);
        rows.saturating_sub(used)
    }

    /// The visible screen as text: one line per row, trailing blanks
    /// dropped, but the cursor's row runs up to the cursor, as in the
    /// redraw: a prompt's printed blank (`> `) is part of what a script
    /// waiting for that prompt reads (vt100, before, kept it too).
    pub fn screen_lines(&mut self) -> Vec<String> {
        self.settle();
        self.settled_screen_lines()
    }

    fn settled_screen_lines(&self) -> Vec<String> {
        let grid = self.screen.term.grid();
        let columns = grid.columns();
        let cursor = grid.cursor.point;
        (0..grid.screen_lines())
            .map(|i| {
                let upto = if cursor.line.0 == i as i32 {
                    cursor.column.0
                } else {
                    0
                };
                history::plain(&encode::row_through(&grid[Line(i as i32)], columns, upto))
            })
            .collect()
    }

    /// The visible screen as text, rows joined by newlines, trailing empty
    /// rows dropped.
    pub fn screen_text(&mut self) -> String {
        let mut lines = self.screen_lines();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines.join("\n")
    }

    /// The last non-empty line of the screen (for failure reasons).
    pub fn last_line(&mut self) -> Option<String> {
        self.screen_lines()
            .into_iter()
            .rev()
            .map(|l| l.trim().to_owned())
            .find(|l| !l.is_empty())
    }

    /// The modes the program set (alternate screen, mouse, paste, cursor,
    /// keys, title). (Plain lines change none, so nothing needs settling.)
    pub fn modes(&self) -> Modes {
        Modes::of(&self.screen)
    }

    pub fn bracketed_paste(&self) -> bool {
        self.screen.term.mode().contains(TermMode::BRACKETED_PASTE)
    }

    /// Bytes that draw the screen on any terminal and put it in the
    /// program's modes: for a fresh attach and for resyncing a client that
    /// fell behind.
    pub fn redraw(&mut self) -> Vec<u8> {
        self.settle();
        modes::redraw(&self.screen)
    }

    /// Like [`Terminal::redraw`], but first prints up to `lines` lines of
    /// history and scrolls them off, so a client that keeps its own
    /// scrollback (the TUI) has the history above the screen.
    pub fn redraw_with_history(&mut self, lines: usize) -> Vec<u8> {
        self.settle();
        let mut out = modes::history_prelude(&self.screen, lines);
        out.extend_from_slice(&self.redraw());
        out
    }

    /// Lines of history kept.
    pub fn history_len(&mut self) -> usize {
        self.settle();
        self.screen.history.len()
    }

    /// Bytes of history kept, as counted against `history_bytes`.
    pub fn history_bytes(&mut self) -> usize {
        self.settle();
        self.screen.history.bytes()
    }

    /// The last `n` lines of history as text, oldest first.
    pub fn scrollback(&mut self, n: usize) -> Vec<String> {
        self.settle();
        let h = &self.screen.history;
        let skip = h.len().saturating_sub(n);
        h.iter_formatted().skip(skip).map(history::plain).collect()
    }

    /// Up to `lines` lines of history ending just before line `before`
    /// (`None`: the newest), with their colours.
    pub fn history_page(&mut self, before: Option<u64>, lines: usize) -> HistoryPage {
        self.settle();
        let h = &self.screen.history;
        let (first, end) = (h.first_number(), h.end_number());
        let to = before.unwrap_or(end).clamp(first, end);
        let start = to.saturating_sub(lines as u64).max(first);
        HistoryPage {
            first,
            end,
            start,
            lines: h.numbered(start, to).map(str::to_owned).collect(),
        }
    }

    /// One past the newest history line's number ([`HistoryPage::end`]),
    /// counting the lines a run of plain lines will push: asked after every
    /// batch of output sent to the TUI, it must not end the run (settling
    /// each batch cost the flood its fast path).
    pub fn history_end(&self) -> u64 {
        self.screen.history.end_number() + self.plain.pending_pushes()
    }

    /// Every occurrence of `needle` in history and on the screen, oldest
    /// first. Case-sensitive when the needle has an upper-case letter (as
    /// tmux's and vim's smart case).
    pub fn search(&mut self, needle: &str) -> Vec<SearchMatch> {
        if needle.is_empty() {
            return Vec::new();
        }
        self.settle();
        let fold = !needle.chars().any(char::is_uppercase);
        let needle = if fold {
            needle.to_lowercase()
        } else {
            needle.to_owned()
        };
        let history = self.screen.history.iter_formatted().map(history::plain);
        let screen = self.settled_screen_lines().into_iter();
        let mut found = Vec::new();
        for (line, text) in history.chain(screen).enumerate() {
            let hay = if fold { text.to_lowercase() } else { text };
            for (byte, _) in hay.match_indices(&needle) {
                found.push(SearchMatch {
                    line,
                    column: hay[..byte].chars().count(),
                });
            }
        }
        found
    }

    /// Screen, history and modes in a compact form that
    /// [`Terminal::restore`] reads back (kept as a hibernated session's last
    /// screen, through restarts and export/import).
    pub fn save(&mut self) -> Vec<u8> {
        saved::save(self)
    }

    /// A terminal as [`Terminal::save`] left it. Bytes that are not a saved
    /// terminal (a last screen saved by an older hangar) are fed as output.
    pub fn restore(saved: &[u8], config: Config) -> Terminal {
        saved::restore(saved, config)
    }

    /// The terminal of a session woken from hibernation: what it saved
    /// (screen and history) becomes history above a fresh screen of this
    /// size, and the modes of the program that saved it are dropped (the new
    /// process sets its own).
    pub fn resume(saved: &[u8], rows: u16, cols: u16, config: Config) -> Terminal {
        let mut t = Terminal::restore(saved, config);
        // Off the alternate screen, the screen into history (a clear of the
        // primary screen keeps it), then a reset, which keeps history.
        t.feed(b"\x1b[?1049l\x1b[H\x1b[2J\x1bc");
        t.resize(rows, cols);
        t
    }

    pub(crate) fn history_mut(&mut self) -> &mut History {
        self.settle();
        &mut self.screen.history
    }

    pub(crate) fn history(&mut self) -> &History {
        self.settle();
        &self.screen.history
    }
}

#[cfg(test)]
mod plain_tests;
#[cfg(test)]
mod tests;
