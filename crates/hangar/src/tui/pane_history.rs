//! A pane's history above its screen, read from the daemon a page at a time.
//!
//! The daemon keeps each session's whole history (up to `[terminal]
//! history_bytes`) and numbers its lines from the first it ever held, so a
//! number names one line for as long as it is kept (the `history` request).
//! A pane does not keep a second copy: it keeps the pages it showed lately
//! ([`KEPT_PAGES`]) and asks for the others by number when copy mode, the
//! wheel or a search reaches them. Nine panes of 10,000 wide lines held
//! hundreds of MB in the TUI's own parsers (docs/src/benchmarks-history.md, session 5).
//!
//! The pane's screen's top row is line [`PaneHistory::end`]: the attach reply
//! names the end at the screen it sends, and the daemon's `history` event
//! names it again after any output that moved it, exact for the bytes sent
//! before it ([`PaneHistory::rebase`]; counting lines in the TUI's own
//! terminal would drift on every clear of a screen it joined late). A resize
//! rewraps the daemon's history for the new width and numbers its lines anew,
//! above every number used before, so a page kept never names another line. Lines printed while a person reads move `end` and never what they
//! read. A session that ended is read from its saved history, numbered from
//! 0: the pane learns that numbering once ([`PaneHistory::renumber`]).
//!
//! No I/O here: pages come from a [`PageSource`], so the paging is tested
//! without a daemon.

use std::collections::HashMap;

/// Lines in one page: a wheel notch or a page key within it costs nothing; the
/// next page is one local socket round trip of about 50 KB.
pub const PAGE_LINES: u64 = 500;

/// Pages a pane keeps: about eight screens of a tall pane around what it
/// shows, a few MB at most, whatever the daemon holds.
pub const KEPT_PAGES: usize = 16;

/// What the daemon answered to a `history` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The oldest line it keeps.
    pub first: u64,
    /// One past its newest line.
    pub end: u64,
    /// The number of `lines[0]`.
    pub start: u64,
    /// With their SGR colour sequences.
    pub lines: Vec<String>,
}

/// Where pages come from (the daemon, in a pane).
pub trait PageSource {
    /// Up to `lines` lines ending just before `before` (`None`: the newest).
    /// `None` when the daemon cannot be asked (the view shows blank lines).
    fn page(&mut self, before: Option<u64>, lines: u64) -> Option<Page>;
}

#[derive(Debug)]
struct Kept {
    /// The number of `lines[0]`.
    start: u64,
    lines: Vec<String>,
    /// The daemon's end when it was fetched: a page cut by it is fetched
    /// again once the pane's end has passed it.
    upto: u64,
    used: u64,
}

#[derive(Debug)]
pub struct PaneHistory {
    /// The number of the line on the screen's top row, in the pane's
    /// numbering.
    end: u64,
    /// The oldest line the daemon keeps, as last heard (0 until then).
    first: u64,
    /// The daemon's number of a line is the pane's minus this (a session
    /// that ended is read from its saved history, numbered from 0).
    offset: u64,
    /// The numbering must be learnt again before the next page.
    renumber: bool,
    /// The first page was asked for (so `first` is known).
    heard: bool,
    pages: HashMap<u64, Kept>,
    clock: u64,
    /// A resize was sent while a view was frozen: (first, end) before it,
    /// until the daemon's rewrapped numbering is seen.
    rewrap: Option<(u64, u64)>,
    /// `end` moved since the rewrap was last looked for.
    moved: bool,
}

/// Old line numbers to new ones, after the daemon rewrapped its history for a
/// new width and numbered its lines anew above the old ones: a line keeps its
/// place in proportion, so a view frozen on it shows the same text, rewrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Renumbering {
    old_first: u64,
    old_end: u64,
    new_first: u64,
    new_end: u64,
}

impl Renumbering {
    pub fn map(&self, line: u64) -> u64 {
        if line >= self.old_end {
            // A screen row: as far below the history as it was.
            return self.new_end + (line - self.old_end);
        }
        let old = self.old_end.saturating_sub(self.old_first).max(1);
        let new = self.new_end.saturating_sub(self.new_first);
        let at = line.saturating_sub(self.old_first);
        self.new_first + (u128::from(at) * u128::from(new) / u128::from(old)) as u64
    }
}

impl PaneHistory {
    /// History ending at `end` (the attach reply's `history_end`).
    pub fn new(end: u64) -> PaneHistory {
        PaneHistory {
            end,
            first: 0,
            offset: 0,
            renumber: false,
            heard: false,
            pages: HashMap::new(),
            clock: 0,
            rewrap: None,
            moved: false,
        }
    }

    /// One past the newest history line: the screen's top row.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The daemon says its history ends at `end` after the output the pane
    /// was sent (its `history` event): the screen starts there.
    pub fn rebase(&mut self, end: u64) {
        self.end = end + self.offset;
        self.moved = true;
    }

    /// A resize was sent while a view is frozen: the daemon may rewrap its
    /// history and number it anew ([`PaneHistory::rewrapped`] tells).
    pub fn expect_rewrap(&mut self, source: &mut impl PageSource) {
        if self.rewrap.is_none() {
            let first = self.first(source);
            self.rewrap = Some((first, self.end));
            self.moved = false;
        }
    }

    /// Nothing frozen any more: a rewrap no longer needs following.
    pub fn forget_rewrap(&mut self) {
        self.rewrap = None;
    }

    /// After [`PaneHistory::expect_rewrap`], once the daemon's history end
    /// moved (or `anyway`: a resize that prints nothing sends no end):
    /// whether it numbered its lines anew (every kept line above the old
    /// end), and how old numbers map to new ones. The pages kept (of the old
    /// width) are dropped then.
    pub fn rewrapped(&mut self, source: &mut impl PageSource, anyway: bool) -> Option<Renumbering> {
        let (old_first, old_end) = self.rewrap?;
        if !std::mem::take(&mut self.moved) && !anyway {
            return None;
        }
        let newest = source.page(None, 0)?;
        let (new_first, new_end) = (newest.first + self.offset, newest.end + self.offset);
        if new_first < old_end || new_first == new_end {
            // Not (yet) rewrapped, or nothing kept to map to.
            return None;
        }
        self.rewrap = None;
        self.pages.clear();
        self.first = new_first;
        self.end = self.end.max(new_end);
        Some(Renumbering {
            old_first,
            old_end,
            new_first,
            new_end,
        })
    }

    /// The daemon's numbering changed (the session ended: its saved
    /// history is numbered from 0); learn it again before the next page.
    pub fn renumber(&mut self) {
        self.renumber = true;
    }

    /// The oldest line there is (asks the daemon the first time).
    pub fn first(&mut self, source: &mut impl PageSource) -> u64 {
        if !self.heard || self.renumber {
            self.fetch(self.end.saturating_sub(1) / PAGE_LINES, source);
        }
        self.first.min(self.end)
    }

    /// Line `n`'s text with its colours; `None` above the oldest line, at or
    /// below `end`, or when the daemon cannot be asked.
    pub fn line(&mut self, n: u64, source: &mut impl PageSource) -> Option<&str> {
        if n >= self.end {
            return None;
        }
        let index = n / PAGE_LINES;
        let fresh = self
            .pages
            .get(&index)
            .is_some_and(|k| !self.renumber && (n < k.upto || k.upto >= self.end));
        if !fresh {
            self.fetch(index, source);
        }
        if n < self.first {
            return None;
        }
        self.clock += 1;
        let kept = self.pages.get_mut(&index)?;
        kept.used = self.clock;
        let at = n.checked_sub(kept.start)?;
        kept.lines.get(at as usize).map(String::as_str)
    }

    fn fetch(&mut self, index: u64, source: &mut impl PageSource) {
        if self.renumber {
            let Some(newest) = source.page(None, 0) else {
                return;
            };
            // The newest line the daemon has is the one above our screen.
            self.offset = self.end.saturating_sub(newest.end);
            self.pages.clear();
            self.renumber = false;
        }
        let from = index * PAGE_LINES;
        let before = (from + PAGE_LINES).min(self.end);
        let asked = before.saturating_sub(from);
        let Some(page) = source.page(Some(before - self.offset.min(before)), asked) else {
            return;
        };
        self.heard = true;
        self.first = page.first + self.offset;
        self.clock += 1;
        self.pages.insert(
            index,
            Kept {
                start: page.start + self.offset,
                lines: page.lines,
                upto: page.end + self.offset,
                used: self.clock,
            },
        );
        while self.pages.len() > KEPT_PAGES {
            let Some(oldest) = self
                .pages
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(&i, _)| i)
            else {
                break;
            };
            self.pages.remove(&oldest);
        }
    }

    /// Pages held.
    #[cfg(test)]
    fn kept_pages(&self) -> usize {
        self.pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A daemon's history: line `n` is "n" (numbered from `dropped`, the
    /// lines before it gone to the cap), counting the requests.
    struct Daemon {
        dropped: u64,
        end: u64,
        asked: usize,
    }

    impl PageSource for Daemon {
        fn page(&mut self, before: Option<u64>, lines: u64) -> Option<Page> {
            self.asked += 1;
            let to = before.unwrap_or(self.end).clamp(self.dropped, self.end);
            let start = to.saturating_sub(lines).max(self.dropped);
            Some(Page {
                first: self.dropped,
                end: self.end,
                start,
                lines: (start..to).map(|n| n.to_string()).collect(),
            })
        }
    }

    fn daemon(end: u64) -> Daemon {
        Daemon {
            dropped: 0,
            end,
            asked: 0,
        }
    }

    #[test]
    fn every_line_back_to_the_first_is_read_a_page_at_a_time() {
        let mut d = daemon(30_000);
        let mut h = PaneHistory::new(30_000);
        assert_eq!(h.first(&mut d), 0);
        for n in (0..30_000).rev() {
            assert_eq!(h.line(n, &mut d), Some(n.to_string().as_str()));
        }
        assert_eq!(d.asked, 60, "one request a page of {PAGE_LINES}");
        assert!(h.kept_pages() <= KEPT_PAGES);
        assert_eq!(h.line(30_000, &mut d), None, "line `end` is the screen's");
    }

    #[test]
    fn lines_printed_meanwhile_do_not_shift_a_page_and_a_cut_page_is_completed() {
        let mut d = daemon(1_250);
        let mut h = PaneHistory::new(1_250);
        assert_eq!(h.line(1_249, &mut d), Some("1249"));
        assert_eq!(h.line(100, &mut d), Some("100"));
        let asked = d.asked;
        // 300 more lines scroll off the screen; the daemon says so.
        d.end += 300;
        h.rebase(d.end);
        assert_eq!(h.line(100, &mut d), Some("100"), "kept, not asked again");
        assert_eq!(d.asked, asked);
        assert_eq!(
            h.line(1_300, &mut d),
            Some("1300"),
            "the cut page, fetched again"
        );
        assert_eq!(h.line(1_549, &mut d), Some("1549"));
    }

    #[test]
    fn lines_the_daemon_dropped_are_not_there_and_first_follows_the_cap() {
        let mut d = daemon(5_000);
        d.dropped = 1_234;
        let mut h = PaneHistory::new(5_000);
        assert_eq!(h.first(&mut d), 1_234);
        assert_eq!(h.line(1_233, &mut d), None);
        assert_eq!(h.line(1_234, &mut d), Some("1234"));
    }

    #[test]
    fn a_session_that_ended_is_read_in_its_saved_numbering_without_moving_the_view() {
        let mut d = daemon(8_000);
        d.dropped = 2_000;
        let mut h = PaneHistory::new(8_000);
        assert_eq!(h.line(7_999, &mut d), Some("7999"));
        // Saved, its history is numbered from 0: line 2000 is now 0.
        let mut saved = daemon(6_000);
        h.renumber();
        assert_eq!(h.line(7_999, &mut saved), Some("5999"));
        assert_eq!(h.line(2_000, &mut saved), Some("0"));
        assert_eq!(h.first(&mut saved), 2_000, "the first line keeps its place");
    }

    #[test]
    fn a_rewrap_for_a_new_width_maps_a_frozen_line_to_the_same_text_and_drops_old_pages() {
        // 1,000 lines of 100 characters at 150 columns ...
        let mut d = daemon(1_000);
        let mut h = PaneHistory::new(1_000);
        assert_eq!(h.line(500, &mut d), Some("500"));
        h.expect_rewrap(&mut d);
        // ... rewrapped at 80: each line two rows, numbered from 1,000 on.
        d.dropped = 1_000;
        d.end = 3_000;
        assert_eq!(
            h.rewrapped(&mut d, false),
            None,
            "nothing heard from the daemon yet"
        );
        h.rebase(3_000);
        let map = h.rewrapped(&mut d, false).expect("renumbered");
        assert_eq!(map.map(500), 2_000, "line 500's first row, in the middle");
        assert_eq!(map.map(0), 1_000);
        assert_eq!(map.map(1_003), 3_003, "a screen row stays a screen row");
        assert_eq!(
            h.line(2_000, &mut d),
            Some("2000"),
            "read anew, not the old page"
        );
        assert_eq!(h.rewrapped(&mut d, true), None, "followed once");
    }

    #[test]
    fn a_rewrap_that_printed_nothing_is_found_when_looked_for_anyway() {
        let mut d = daemon(1_000);
        let mut h = PaneHistory::new(1_000);
        h.expect_rewrap(&mut d);
        d.dropped = 1_000;
        d.end = 3_000;
        assert_eq!(h.rewrapped(&mut d, false), None);
        assert!(h.rewrapped(&mut d, true).is_some());
    }

    #[test]
    fn a_resize_that_rewraps_nothing_keeps_the_numbers() {
        let mut d = daemon(1_000);
        let mut h = PaneHistory::new(1_000);
        h.expect_rewrap(&mut d);
        // Output moved the end; the numbering is the same.
        d.end = 1_010;
        h.rebase(1_010);
        assert_eq!(h.rewrapped(&mut d, false), None);
        assert_eq!(h.rewrapped(&mut d, true), None);
        assert_eq!(h.line(500, &mut d), Some("500"));
    }

    #[test]
    fn a_resync_puts_the_screen_where_the_daemon_says() {
        let mut d = daemon(100);
        let mut h = PaneHistory::new(100);
        d.end = 5_000;
        h.rebase(5_000);
        assert_eq!(h.end(), 5_000);
        assert_eq!(h.line(4_999, &mut d), Some("4999"));
    }
}
