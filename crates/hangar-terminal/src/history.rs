//! A session's history: the lines that scrolled off its screen, oldest first,
//! capped in bytes.
//!
//! Each line is kept as its text with the SGR sequences that colour it (the
//! way tmux keeps lazily sized lines), not as a row of fixed-size cells: a
//! five-character line costs a few bytes, not a screen width of cells. The cap
//! counts what the lines really hold plus a fixed overhead per line, so a
//! program that floods empty lines or redraws forever can never grow a
//! session's memory past it; the oldest lines go first.
//!
//! The lines' text is packed back to back into a few large blocks instead of
//! one allocation per line: a program printing plain lines scrolls one line
//! into history for every line it prints, and each line paid an allocation,
//! a shrinking reallocation and later a free, plus the allocator's own
//! bytes per line (docs/src/benchmarks-history.md, issue 20). A block is freed once its last
//! line is dropped.

use std::collections::VecDeque;

use crate::reflow;

/// What one kept line costs beyond its bytes (where it is), so a flood of
/// empty lines is bounded too.
pub const LINE_OVERHEAD: usize = std::mem::size_of::<Span>();

/// The smallest cap accepted: a few screens of wide lines.
pub const MIN_HISTORY_BYTES: usize = 64 * 1024;

/// The first block's size; each next one doubles, up to [`MAX_BLOCK`]: a
/// session with a little history holds a little memory.
const FIRST_BLOCK: usize = 4 * 1024;
const MAX_BLOCK: usize = 64 * 1024;

/// Where a line is: its block (counted from the first block ever made) and
/// its byte range in it.
#[derive(Clone, Copy, Debug)]
struct Span {
    block: u64,
    start: u32,
    /// The line's length in bytes, and in its top bit [`WRAPPED`].
    len: u32,
}

/// In [`Span::len`]: the row was full and its line goes on on the next
/// row (a soft wrap), so a reflow joins them again. A row is far below
/// 2 GiB, so the bit is free.
const WRAPPED: u32 = 1 << 31;

impl Span {
    fn bytes(&self) -> usize {
        (self.len & !WRAPPED) as usize
    }

    fn wrapped(&self) -> bool {
        self.len & WRAPPED != 0
    }
}

#[derive(Clone, Debug, Default)]
pub struct History {
    /// The text of the kept lines, in blocks; `blocks[0]` is block number
    /// `first_block`.
    blocks: VecDeque<String>,
    first_block: u64,
    lines: VecDeque<Span>,
    bytes: usize,
    cap: usize,
    /// Lines ever pushed: the number the next line gets. A line's number
    /// never changes while it is kept, so a client that reads history a page
    /// at a time asks by number, and lines printed meanwhile (or the oldest
    /// dropped) do not shift the page it gets.
    pushed: u64,
}

impl History {
    pub fn new(cap: usize) -> History {
        History {
            cap: cap.max(MIN_HISTORY_BYTES),
            ..History::default()
        }
    }

    /// Append a line (its text with SGR sequences), dropping the oldest lines
    /// while the total is over the cap.
    pub fn push(&mut self, line: &str) {
        self.push_row(line, false);
    }

    /// Append a row of a line that goes on on the next row when `wrapped`
    /// (a soft wrap: the row filled the screen's width, its trailing
    /// blanks kept), so [`History::reflow`] can join them again.
    pub fn push_row(&mut self, line: &str, wrapped: bool) {
        let fits = self
            .blocks
            .back()
            .is_some_and(|b| b.capacity() - b.len() >= line.len());
        if !fits {
            let size = self
                .blocks
                .back()
                .map_or(FIRST_BLOCK, |b| (b.capacity() * 2).min(MAX_BLOCK))
                .max(line.len());
            self.blocks.push_back(String::with_capacity(size));
        }
        let block_index = self.blocks.len() - 1;
        let block = &mut self.blocks[block_index];
        let start = block.len();
        block.push_str(line);
        self.lines.push_back(Span {
            block: self.first_block + block_index as u64,
            // A block holds at most MAX_BLOCK bytes or one line; a line is a
            // screen row, far below 4 GiB.
            start: start as u32,
            len: (line.len() as u32 & !WRAPPED) | if wrapped { WRAPPED } else { 0 },
        });
        self.bytes += line.len() + LINE_OVERHEAD;
        self.pushed += 1;
        while self.bytes > self.cap {
            if !self.pop_oldest() {
                break;
            }
        }
    }

    /// Drop the oldest line, and the blocks no kept line is in any more.
    fn pop_oldest(&mut self) -> bool {
        let Some(old) = self.lines.pop_front() else {
            return false;
        };
        self.bytes -= old.bytes() + LINE_OVERHEAD;
        let keep_from = self
            .lines
            .front()
            .map_or(self.first_block + self.blocks.len() as u64, |l| l.block);
        while self.first_block < keep_from && !self.blocks.is_empty() {
            self.blocks.pop_front();
            self.first_block += 1;
        }
        true
    }

    /// Rewrap for a screen `cols` wide (a resize), as tmux does: the rows
    /// of each soft-wrapped line joined and split again at the new width.
    /// When anything changed, the lines get new numbers, above every number
    /// used before, so a number a client kept never names another line.
    /// Returns whether anything changed.
    pub fn reflow(&mut self, cols: usize) -> bool {
        let cols = cols.max(1);
        let changes = self
            .lines
            .iter()
            .any(|l| l.wrapped() || (l.bytes() > cols && reflow::width(self.text(l)) > cols));
        if !changes {
            return false;
        }
        let mut out = History::new(self.cap);
        let mut line = String::new();
        let mut open = false;
        for span in &self.lines {
            line.push_str(self.text(span));
            open = span.wrapped();
            if !open {
                reflow::split(&line, cols, |row, wrapped| out.push_row(row, wrapped));
                line.clear();
            }
        }
        if open {
            // The last row's line goes on on the screen.
            reflow::split(&line, cols, |row, _| out.push_row(row, true));
        }
        out.pushed = self.pushed + out.lines.len() as u64;
        *self = out;
        true
    }

    pub fn clear(&mut self) {
        self.first_block += self.blocks.len() as u64;
        self.blocks = VecDeque::new();
        self.lines = VecDeque::new();
        self.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// The number the next line pushed gets (one past the newest kept).
    pub fn end_number(&self) -> u64 {
        self.pushed
    }

    /// The number of the oldest line kept (`end_number` when none is).
    pub fn first_number(&self) -> u64 {
        self.pushed - self.lines.len() as u64
    }

    /// The kept lines numbered `from..to` (clamped to what is kept), with
    /// their SGR sequences, oldest first.
    pub fn numbered(&self, from: u64, to: u64) -> impl Iterator<Item = &str> {
        let first = self.first_number();
        let start = from.clamp(first, self.pushed) - first;
        let end = to.clamp(first, self.pushed) - first;
        let (start, end) = (start as usize, end.max(start) as usize);
        self.lines.range(start..end).map(|l| self.text(l))
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Bytes held, as counted against the cap.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    fn text(&self, span: &Span) -> &str {
        let block = &self.blocks[(span.block - self.first_block) as usize];
        let start = span.start as usize;
        &block[start..start + span.bytes()]
    }

    /// Line `i` (0 is the oldest kept) with its SGR sequences.
    pub fn formatted(&self, i: usize) -> Option<&str> {
        self.lines.get(i).map(|l| self.text(l))
    }

    /// Every kept line with its SGR sequences, oldest first.
    pub fn iter_formatted(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.lines.iter().map(|l| self.text(l))
    }
}

/// The plain text of a line this crate encoded: its SGR sequences removed.
/// (The encoder writes no other escape sequence into a line.)
pub fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(esc) = rest.find('\x1b') {
        out.push_str(&rest[..esc]);
        let after = &rest[esc..];
        match after.find('m') {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_lines_go_first_once_the_cap_is_reached() {
        let mut h = History::new(MIN_HISTORY_BYTES);
        let line = "x".repeat(1000);
        for _ in 0..1000 {
            h.push(&line);
        }
        assert!(h.bytes() <= h.cap());
        let per = 1000 + LINE_OVERHEAD;
        assert_eq!(h.len(), MIN_HISTORY_BYTES / per);
    }

    #[test]
    fn a_flood_of_empty_lines_is_bounded_by_the_per_line_overhead() {
        let mut h = History::new(MIN_HISTORY_BYTES);
        for _ in 0..100_000 {
            h.push("");
        }
        assert!(h.bytes() <= MIN_HISTORY_BYTES);
        assert_eq!(h.len(), MIN_HISTORY_BYTES / LINE_OVERHEAD);
    }

    #[test]
    fn lines_read_back_in_order_across_blocks_and_dropped_blocks_are_freed() {
        let mut h = History::new(MIN_HISTORY_BYTES);
        for i in 0..20_000 {
            h.push(&format!("line {i} {}", "y".repeat(i % 300)));
        }
        assert!(h.bytes() <= h.cap());
        let last = h.formatted(h.len() - 1).unwrap();
        assert!(last.starts_with("line 19999 "), "{last}");
        let kept: Vec<usize> = h
            .iter_formatted()
            .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
            .collect();
        assert!(kept.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(*kept.last().unwrap(), 19_999);
        // Only the blocks the kept lines are in stay.
        let held: usize = h.blocks.iter().map(String::capacity).sum();
        assert!(held <= h.cap() + 2 * MAX_BLOCK, "{held} bytes of blocks");
        h.clear();
        assert!(h.is_empty() && h.blocks.is_empty());
        h.push("again");
        assert_eq!(h.formatted(0), Some("again"));
    }

    #[test]
    fn a_line_longer_than_a_block_gets_a_block_of_its_own() {
        let mut h = History::new(4 * MAX_BLOCK);
        let long = "z".repeat(MAX_BLOCK + 10);
        h.push("short");
        h.push(&long);
        h.push("after");
        assert_eq!(h.len(), 3);
        assert!(
            h.formatted(1) == Some(long.as_str()),
            "the long line reads back whole"
        );
        assert_eq!(h.formatted(2), Some("after"));
        assert_eq!(h.blocks.len(), 3);
    }

    #[test]
    fn line_numbers_stay_put_when_older_lines_are_dropped_or_cleared() {
        let mut h = History::new(MIN_HISTORY_BYTES);
        let line = "n".repeat(1000);
        for i in 0..200 {
            h.push(&format!("{i:04} {line}"));
        }
        assert_eq!(h.end_number(), 200);
        let first = h.first_number();
        assert!(first > 0, "the cap dropped the oldest lines");
        assert_eq!(first + h.len() as u64, 200);
        let page: Vec<&str> = h.numbered(150, 153).collect();
        assert_eq!(page.len(), 3);
        assert!(page[0].starts_with("0150 "), "{}", &page[0][..8]);
        assert_eq!(
            h.numbered(0, first + 1).count(),
            1,
            "clamped to what is kept"
        );
        assert_eq!(h.numbered(300, 400).count(), 0);
        h.clear();
        assert_eq!((h.first_number(), h.end_number()), (200, 200));
        h.push("after");
        assert_eq!(h.numbered(200, 201).collect::<Vec<_>>(), ["after"]);
    }

    #[test]
    fn a_reflow_rewraps_wide_lines_joins_wrapped_ones_and_numbers_them_anew() {
        let mut h = History::new(MIN_HISTORY_BYTES);
        h.push(&"x".repeat(10));
        h.push_row("abcd", true);
        h.push_row("ef", false);
        h.push("short");
        assert_eq!(h.end_number(), 4);
        assert!(h.reflow(4));
        let rows: Vec<&str> = h.iter_formatted().collect();
        assert_eq!(rows, ["xxxx", "xxxx", "xx", "abcd", "ef", "shor", "t"]);
        assert_eq!((h.first_number(), h.end_number()), (4, 11));
        // Wider again: the rows of each line join.
        assert!(h.reflow(20));
        let rows: Vec<&str> = h.iter_formatted().collect();
        assert_eq!(rows, ["x".repeat(10).as_str(), "abcdef", "short"]);
        assert_eq!(h.first_number(), 11);
        // Nothing to rewrap: the numbers stay.
        assert!(!h.reflow(30));
        assert_eq!(h.first_number(), 11);
    }

    #[test]
    fn plain_text_drops_the_colours() {
        assert_eq!(plain("\x1b[0;1;31mred\x1b[0m and plain"), "red and plain");
        assert_eq!(plain("no escapes"), "no escapes");
    }
}
