//! A session's history: the lines that scrolled off its screen, oldest first,
//! capped in bytes.
//!
//! Each line is kept as its text with the SGR sequences that colour it (the
//! way tmux keeps lazily sized lines), not as a row of fixed-size cells: a
//! five-character line costs a few bytes, not a screen width of cells. The cap
//! counts what the lines really hold plus a fixed overhead per line, so a
//! program that floods empty lines or redraws forever can never grow a
//! session's memory past it; the oldest lines go first.

use std::collections::VecDeque;

/// What one kept line costs beyond its bytes (its slot in the ring and the
/// boxed string's header), so a flood of empty lines is bounded too.
pub const LINE_OVERHEAD: usize = std::mem::size_of::<Box<str>>() + 8;

/// The smallest cap accepted: a few screens of wide lines.
pub const MIN_HISTORY_BYTES: usize = 64 * 1024;

#[derive(Clone, Debug, Default)]
pub struct History {
    lines: VecDeque<Box<str>>,
    bytes: usize,
    cap: usize,
}

impl History {
    pub fn new(cap: usize) -> History {
        History {
            lines: VecDeque::new(),
            bytes: 0,
            cap: cap.max(MIN_HISTORY_BYTES),
        }
    }

    /// Append a line (its text with SGR sequences), dropping the oldest lines
    /// while the total is over the cap.
    pub fn push(&mut self, line: String) {
        self.bytes += line.len() + LINE_OVERHEAD;
        self.lines.push_back(line.into_boxed_str());
        while self.bytes > self.cap {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len() + LINE_OVERHEAD,
                None => break,
            }
        }
    }

    pub fn clear(&mut self) {
        self.lines.clear();
        self.lines.shrink_to_fit();
        self.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.lines.len()
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

    /// Line `i` (0 is the oldest kept) with its SGR sequences.
    pub fn formatted(&self, i: usize) -> Option<&str> {
        self.lines.get(i).map(|l| &**l)
    }

    /// Every kept line with its SGR sequences, oldest first.
    pub fn iter_formatted(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.lines.iter().map(|l| &**l)
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
            h.push(line.clone());
        }
        assert!(h.bytes() <= h.cap());
        let per = 1000 + LINE_OVERHEAD;
        assert_eq!(h.len(), MIN_HISTORY_BYTES / per);
    }

    #[test]
    fn a_flood_of_empty_lines_is_bounded_by_the_per_line_overhead() {
        let mut h = History::new(MIN_HISTORY_BYTES);
        for _ in 0..100_000 {
            h.push(String::new());
        }
        assert!(h.bytes() <= MIN_HISTORY_BYTES);
        assert_eq!(h.len(), MIN_HISTORY_BYTES / LINE_OVERHEAD);
    }

    #[test]
    fn plain_text_drops_the_colours() {
        assert_eq!(plain("\x1b[0;1;31mred\x1b[0m and plain"), "red and plain");
        assert_eq!(plain("no escapes"), "no escapes");
    }
}
