//! The fast path for a flood of plain text lines: the lines are kept as raw
//! bytes instead of going through alacritty, which is given only what can
//! still be on the screen, and only when something needs the screen.
//!
//! A program that floods plain lines (`cat` of a log) prints, per line,
//! printable ASCII and `\r\n` (the tty's onlcr), the cursor at column 0 of the
//! bottom row. Parsing each line into the grid and then encoding the row it
//! scrolls off into history cost about as much as tmux's whole server
//! (docs/src/benchmarks-history.md, issue 20). Here, while the terminal is in the "simple
//! state" ([`PlainRun::can_start`]), each complete row of a "simple line"
//! (`0x20..=0x7e`, then `\r\n`) is kept in a ring of the last `rows - 1`
//! rows, and the row still being printed is kept too (a 4 KiB read of a PTY
//! almost always ends in the middle of one).
//!
//! A line wider than the screen (base64, minified JSON, long log lines) is,
//! with auto-wrap on, just its rows: each full row is followed by the wrap
//! alacritty's `wrapline` does on the next character, which scrolls the
//! screen exactly as a line feed does. Such a row is kept marked as wrapped,
//! and goes to history as the row it is (history keeps rows, as the slow
//! path does).
//!
//! The slow path would have scrolled the screen's own top `rows - 1` rows into
//! history first, then the run's lines in order. So the first time the ring
//! overflows, those rows go to history exactly as a line feed would have sent
//! them, the grid is blanked (without touching history) and the cursor put
//! home; from then on the row that leaves the ring goes straight into
//! history as its own text, which is what [`crate::encode::write_row`] makes
//! of a row of default-pen ASCII: the text with its trailing blanks dropped.
//!
//! [`PlainRun::materialize`] feeds the kept rows through the parser (a
//! wrapped row without the `\r\n`), on that
//! blank grid from home (or, before any overflow, on the untouched screen), so
//! the screen, the cursor and history end exactly as the slow path leaves them.
//! The terminal materializes before any byte that is not part of a simple
//! line, before a resize and before every query.

use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::{Column, Line, Point};
use alacritty_terminal::term::TermMode;
use alacritty_terminal::term::cell::Cell;
use alacritty_terminal::vte::ansi::{CharsetIndex, Processor, StandardCharset};

use crate::NoSyncHold;
use crate::screen::Screen;

/// The lines of a run that may still be on the screen.
#[derive(Default)]
pub(crate) struct PlainRun {
    /// Complete rows (text without `\r\n`), a ring of at most `rows - 1`:
    /// `slots[head]` is the oldest of `len`. A slot keeps its buffer, so a
    /// flood allocates nothing per line.
    slots: Vec<String>,
    /// Per slot: the row is full and its line goes on on the next row (no
    /// `\r\n` after it).
    wrapped: Vec<bool>,
    head: usize,
    len: usize,
    /// The ring overflowed in this run: the screen's rows went to history
    /// and the grid was blanked, the cursor home.
    overflowed: bool,
    /// The row being printed: at most a screen width of printable ASCII,
    /// maybe then a `\r`.
    partial: String,
    /// The last character of the rows that went to history without the
    /// parser: the parser remembers the last printed character for REP
    /// (`CSI b`), and must still have it after materializing.
    last_direct: Option<u8>,
}

fn printable(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

impl PlainRun {
    /// Whether lines are pending (the grid is not what the screen shows).
    pub(crate) fn active(&self) -> bool {
        self.len > 0 || self.overflowed || !self.partial.is_empty()
    }

    /// Whether a run may start here: the parser is in its ground state (the
    /// caller knows) and printing a simple line now does only what the run
    /// assumes: write default-pen ASCII cells from column 0 of a blank bottom
    /// row, then scroll the whole screen by one, its top row into history.
    /// Each condition is alacritty 0.26's (`Term::input`, `write_at_cursor`,
    /// `carriage_return`, `linefeed`); LNM is not among them because
    /// alacritty's line feed ignores it, and auto-wrap because a run wraps a
    /// row only when the mode is on ([`PlainRun::take`] stops before a wrap
    /// otherwise).
    pub(crate) fn can_start(screen: &Screen, first: u8) -> bool {
        if !(printable(first) || first == b'\r') {
            return false;
        }
        let term = &screen.term;
        let rows = term.screen_lines();
        let grid = term.grid();
        let cursor = &grid.cursor;
        let bottom = Line(rows as i32 - 1);
        cursor.point == Point::new(bottom, Column(0))
            && !cursor.input_needs_wrap
            && screen.region == (0..rows)
            && !term
                .mode()
                .intersects(TermMode::ALT_SCREEN | TermMode::INSERT)
            && cursor.template == Cell::default()
            && [
                CharsetIndex::G0,
                CharsetIndex::G1,
                CharsetIndex::G2,
                CharsetIndex::G3,
            ]
            .into_iter()
            .all(|i| cursor.charsets[i] == StandardCharset::Ascii)
            && grid[bottom][..].iter().all(|c| *c == Cell::default())
    }

    /// Lines [`PlainRun::materialize`] will scroll into history: before the
    /// ring first overflows, each kept line scrolls the screen once (the run
    /// started on the bottom row); after it, the ring is printed from home
    /// on a blank grid and scrolls nothing.
    pub(crate) fn pending_pushes(&self) -> u64 {
        if self.overflowed { 0 } else { self.len as u64 }
    }

    /// Keep the simple lines at the start of `bytes`; returns how many bytes
    /// were kept. Stops before the first byte that is not part of a simple
    /// line (the caller then materializes and parses the rest).
    pub(crate) fn take(&mut self, screen: &mut Screen, bytes: &[u8]) -> usize {
        let cols = screen.term.columns();
        // Auto-wrap cannot change during a run (only a sequence changes it).
        let wraps = screen.term.mode().contains(TermMode::LINE_WRAP);
        let mut i = 0;
        loop {
            if self.partial.ends_with('\r') {
                match bytes.get(i) {
                    Some(b'\n') => {
                        i += 1;
                        self.partial.pop();
                        self.push_row(screen, false);
                    }
                    _ => return i,
                }
            }
            let rest = &bytes[i..];
            let room = cols - self.partial.len();
            let window = &rest[..rest.len().min(room + 1)];
            let text = window
                .iter()
                .position(|&b| !printable(b))
                .unwrap_or(window.len());
            if text > room {
                // Longer than the row: the row is full and the next
                // character wraps, as alacritty's `wrapline` does, scrolling
                // the screen by one exactly as a line feed would.
                if !wraps {
                    return i;
                }
                if let Ok(s) = std::str::from_utf8(&rest[..room]) {
                    self.partial.push_str(s);
                }
                i += room;
                self.push_row(screen, true);
                continue;
            }
            if let Ok(s) = std::str::from_utf8(&rest[..text]) {
                self.partial.push_str(s);
            }
            i += text;
            match bytes.get(i) {
                None => return i,
                Some(b'\r') => {
                    self.partial.push('\r');
                    i += 1;
                }
                Some(_) => return i,
            }
        }
    }

    /// The partial row is complete (`wrapped`: full, and the line goes on
    /// on the next row): into the ring, and the oldest row out of it into
    /// history once the ring is full.
    fn push_row(&mut self, screen: &mut Screen, wrapped: bool) {
        let capacity = screen.term.screen_lines() - 1;
        if self.len < capacity {
            let slot = (self.head + self.len) % capacity;
            if slot == self.slots.len() {
                self.slots.push(String::new());
                self.wrapped.push(false);
            }
            std::mem::swap(&mut self.slots[slot], &mut self.partial);
            self.wrapped[slot] = wrapped;
            self.partial.clear();
            self.len += 1;
            return;
        }
        if !self.overflowed {
            self.overflow(screen);
        }
        if capacity == 0 {
            Self::to_history(screen, &self.partial, wrapped, &mut self.last_direct);
            self.partial.clear();
            return;
        }
        Self::to_history(
            screen,
            &self.slots[self.head],
            self.wrapped[self.head],
            &mut self.last_direct,
        );
        std::mem::swap(&mut self.slots[self.head], &mut self.partial);
        self.wrapped[self.head] = wrapped;
        self.partial.clear();
        self.head = (self.head + 1) % capacity;
    }

    /// What the slow path would have sent to history before the run's first
    /// line: the screen's top `rows - 1` rows, as a line feed sends them.
    /// Then the grid is blanked (its rows are in history now) and the cursor
    /// put home, where [`PlainRun::materialize`] will print the ring.
    fn overflow(&mut self, screen: &mut Screen) {
        let rows = screen.term.screen_lines();
        screen.keep_top_rows(rows - 1);
        let grid = screen.term.grid_mut();
        grid.reset_region(..);
        grid.cursor.point = Point::new(Line(0), Column(0));
        self.overflowed = true;
    }

    /// A line of default-pen ASCII into history as `Screen::keep_top_rows`
    /// encodes its row: the text, trailing blanks dropped unless the row
    /// is wrapped (full: its blanks are part of the line).
    fn to_history(screen: &mut Screen, line: &str, wrapped: bool, last_direct: &mut Option<u8>) {
        if wrapped {
            screen.history.push_row(line, true);
        } else {
            screen.history.push(line.trim_end_matches(' '));
        }
        if let Some(&last) = line.as_bytes().last() {
            *last_direct = Some(last);
        }
    }

    /// Feed the pending lines through the parser (in its ground state), so
    /// the grid, the cursor and history are what the slow path would have
    /// left, and end the run.
    pub(crate) fn materialize(&mut self, screen: &mut Screen, parser: &mut Processor<NoSyncHold>) {
        if !self.active() {
            return;
        }
        // The ring's size is the screen's (a resize settles first).
        let capacity = (screen.term.screen_lines() - 1).max(1);
        let ring = (0..self.len).map(|k| (self.head + k) % capacity);
        let nothing_printed =
            ring.clone().all(|s| self.slots[s].is_empty()) && !self.partial.bytes().any(printable);
        if self.overflowed
            && nothing_printed
            && let Some(c) = self.last_direct
        {
            // Print the last character on the blank grid and erase it
            // again, for the parser to remember it as the slow path's did.
            parser.advance(screen, &[c, b'\r']);
            screen.term.grid_mut()[Line(0)][Column(0)] = Cell::default();
        }
        for s in ring {
            parser.advance(screen, self.slots[s].as_bytes());
            // A wrapped row goes on with the next one's first character.
            if !self.wrapped[s] {
                parser.advance(screen, b"\r\n");
            }
        }
        parser.advance(screen, self.partial.as_bytes());
        self.head = 0;
        self.len = 0;
        self.overflowed = false;
        self.partial.clear();
        self.last_direct = None;
    }
}
