//! Behaviour of the terminal model, and the property that its history is
//! exactly what alacritty's own scrollback would have kept.

use super::*;
use alacritty_terminal::index::Column;
use proptest::prelude::*;

fn term(rows: u16, cols: u16) -> Terminal {
    Terminal::new(rows, cols, Config::default())
}

fn seq(n: usize) -> Vec<u8> {
    (1..=n)
        .map(|i| format!("{i}\r\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn history_reaches_line_1_of_seq_1_5000() {
    let mut t = term(50, 200);
    t.feed(&seq(5000));
    let back = t.scrollback(10_000);
    assert_eq!(back.first().map(String::as_str), Some("1"));
    assert_eq!(back.len(), 5000 - 49);
    assert_eq!(t.screen_lines()[0], (5000 - 48).to_string());
}

#[test]
fn a_history_page_asked_by_number_is_the_same_lines_after_more_output() {
    let mut t = term(10, 40);
    t.feed(&seq(1000));
    let newest = t.history_page(None, 5);
    assert_eq!(newest.end, 1000 - 9);
    assert_eq!(newest.start, newest.end - 5);
    assert_eq!(newest.lines.last().map(String::as_str), Some("991"));
    let page = t.history_page(Some(100), 3);
    assert_eq!(
        (page.start, page.lines.clone()),
        (97, vec!["98".into(), "99".into(), "100".into()])
    );
    // The plain-line fast path and the parser both count what they push.
    t.feed(b"\x1b[1mbold\x1b[0m\r\n");
    t.feed(&seq(50));
    assert_eq!(
        t.history_page(Some(100), 3),
        HistoryPage {
            end: t.history_end(),
            ..page
        }
    );
    assert_eq!(
        t.history_page(Some(2), 10).lines,
        ["1", "2"],
        "the first line is 1"
    );
    assert_eq!(t.history_page(None, 0).lines.len(), 0);
}

#[test]
fn the_history_end_counts_a_plain_run_without_ending_it() {
    for lines in [1, 5, 9, 10, 11, 25, 300] {
        let mut t = term(10, 40);
        t.feed(b"\x1b[10;1H");
        t.feed(&seq(3));
        let base = t.history_end();
        // A run of plain lines, kept back from the parser.
        t.feed(&seq(lines));
        t.feed(b"partial");
        let counted = t.history_end();
        assert!(t.plain.active(), "{lines}: still a run");
        assert_eq!(counted, t.history_page(None, 0).end, "{lines}: as settled");
        assert_eq!(counted, base + lines as u64, "{lines}");
    }
}

#[test]
fn history_never_grows_past_its_byte_cap_under_a_flood() {
    let cap = 256 * 1024;
    let mut t = Terminal::new(50, 200, Config { history_bytes: cap });
    let line = format!("\x1b[1;32m{}\x1b[0m\r\n", "y".repeat(190));
    let chunk = line.repeat(100);
    for _ in 0..2000 {
        t.feed(chunk.as_bytes());
        assert!(t.history_bytes() <= cap);
    }
    assert!(t.history_len() > 100, "the cap still keeps recent lines");
    let last = t.scrollback(1);
    assert_eq!(last[0], "y".repeat(190));
}

#[test]
fn a_redraw_thrashing_program_keeps_history_within_the_cap() {
    let cap = 128 * 1024;
    let mut t = Terminal::new(20, 80, Config { history_bytes: cap });
    for frame in 0..20_000 {
        let mut out = String::from("\x1b[H\x1b[2J");
        for row in 0..20 {
            out.push_str(&format!("frame {frame} row {row}\r\n"));
        }
        t.feed(out.as_bytes());
    }
    assert!(t.history_bytes() <= cap);
}

#[test]
fn colours_survive_history_and_redraw() {
    let mut t = term(3, 20);
    t.feed(b"\x1b[1;31mred\x1b[0m plain\r\n2\r\n3\r\n4");
    assert_eq!(t.scrollback(5), vec!["red plain".to_owned()]);
    assert!(
        t.history()
            .formatted(0)
            .is_some_and(|l| l.contains("\x1b[0;1;31mred"))
    );
    let mut copy = term(3, 20);
    copy.feed(&t.redraw());
    assert_eq!(copy.screen_lines(), t.screen_lines());
}

#[test]
fn modes_are_tracked_and_replayed_on_a_fresh_terminal() {
    let mut t = term(10, 40);
    t.feed(
        b"\x1b[?1049h\x1b[?1002h\x1b[?1006h\x1b[?2004h\x1b[?25l\x1b[?1h\x1b=\x1b]0;my agent\x07\x1b[5;7Hhi",
    );
    let m = t.modes();
    assert!(m.alternate_screen && m.mouse && m.mouse_drag && m.mouse_sgr);
    assert!(m.bracketed_paste && !m.cursor_visible);
    assert!(m.application_cursor && m.application_keypad);
    assert_eq!(m.title.as_deref(), Some("my agent"));

    let mut fresh = term(10, 40);
    fresh.feed(&t.redraw());
    assert_eq!(fresh.modes(), m);
    assert_eq!(fresh.screen_lines(), t.screen_lines());
    let cursor = fresh.screen.term.grid().cursor.point;
    assert_eq!((cursor.line.0, cursor.column.0), (4, 8));
}

#[test]
fn a_redraw_takes_a_client_off_the_alternate_screen_it_missed_leaving() {
    let mut client = term(5, 20);
    client.feed(b"\x1b[?1049h\x1b[?1000h");
    let mut t = term(5, 20);
    client.feed(&t.redraw());
    assert_eq!(client.modes(), t.modes());
}

#[test]
fn a_title_cannot_smuggle_control_characters_into_a_redraw() {
    let mut t = term(5, 20);
    t.feed(b"\x1b]0;evil\x1b[31m\x07");
    let redraw = String::from_utf8(t.redraw()).unwrap_or_default();
    let title_at = redraw.find("\x1b]0;").unwrap_or(0);
    let title = &redraw[title_at + 4..];
    let end = title.find('\x07').unwrap_or(title.len());
    assert!(!title[..end].chars().any(char::is_control));
}

#[test]
fn the_alternate_screen_never_enters_history() {
    let mut t = term(3, 20);
    t.feed(b"\x1b[?1049h");
    t.feed(&seq(100));
    assert_eq!(t.history_len(), 0);
    t.feed(b"\x1b[?1049l");
    t.feed(&seq(10));
    assert_eq!(t.history_len(), 8);
}

#[test]
fn a_status_line_below_the_scrolling_region_stays_out_of_history() {
    let mut t = term(5, 20);
    t.feed(b"\x1b[5;1Hstatus\x1b[1;4r\x1b[1;1H");
    t.feed(&seq(20));
    let back = t.scrollback(100);
    assert!(back.iter().all(|l| l != "status"));
    assert_eq!(back.first().map(String::as_str), Some("1"));
    assert_eq!(t.screen_lines()[4], "status");
}

#[test]
fn clearing_the_screen_keeps_it_in_history_and_erase_saved_lines_drops_history() {
    let mut t = term(5, 20);
    t.feed(b"one\r\ntwo\r\n\x1b[H\x1b[2J");
    assert_eq!(t.scrollback(10), vec!["one".to_owned(), "two".to_owned()]);
    t.feed(b"\x1b[3J");
    assert_eq!(t.history_len(), 0);
}

#[test]
fn a_reset_keeps_history() {
    let mut t = term(3, 20);
    t.feed(&seq(10));
    let before = t.scrollback(100);
    t.feed(b"\x1bc");
    assert_eq!(t.scrollback(100), before);
}

#[test]
fn shrinking_the_screen_moves_the_top_lines_into_history() {
    let mut t = term(10, 20);
    t.feed(&seq(9));
    t.resize(4, 20);
    let back = t.scrollback(100);
    assert_eq!(back.first().map(String::as_str), Some("1"));
    assert_eq!(t.rows(), 4);
    assert!(t.screen_text().contains('9'));
    t.feed(&seq(3));
    assert_eq!(t.screen_lines()[3], "");
}

#[test]
fn narrowing_the_screen_keeps_a_rewrapped_first_line_on_screen_when_there_is_room() {
    let mut t = term(20, 120);
    let banner = format!("fake-agent claude session {} (resumed)", "0".repeat(36));
    t.feed(format!("{banner}\r\n\r\n> ").as_bytes());
    t.resize(18, 62);
    assert_eq!(
        t.history_len(),
        0,
        "nothing pushed off: {:?}",
        t.scrollback(5)
    );
    let lines = t.screen_lines();
    assert_eq!(lines[0], banner[..62]);
    assert_eq!(lines[1], banner[62..]);
    assert_eq!(
        lines[3], "> ",
        "the prompt's blank before the cursor is kept"
    );
    t.feed(b"typed");
    assert_eq!(t.screen_lines()[3], "> typed");
}

#[test]
fn search_finds_words_in_history_and_on_the_screen_smart_case() {
    let mut t = term(3, 30);
    t.feed(b"alpha Needle\r\nbeta\r\ngamma needle\r\ndelta\r\nneedle last");
    let found = t.search("needle");
    assert_eq!(
        found,
        vec![
            SearchMatch { line: 0, column: 6 },
            SearchMatch { line: 2, column: 6 },
            SearchMatch { line: 4, column: 0 },
        ]
    );
    assert_eq!(t.search("Needle"), vec![SearchMatch { line: 0, column: 6 }]);
    assert!(t.search("").is_empty());
}

#[test]
fn a_saved_terminal_restores_screen_history_and_modes() {
    let mut t = term(5, 30);
    t.feed(&seq(40));
    t.feed(b"\x1b[?2004h\x1b]0;saved\x07\x1b[1;33mlast\x1b[0m");
    let saved = t.save();
    let mut back = Terminal::restore(&saved, Config::default());
    assert_eq!((back.rows(), back.cols()), (5, 30));
    assert_eq!(back.scrollback(1000), t.scrollback(1000));
    assert_eq!(back.screen_lines(), t.screen_lines());
    assert_eq!(back.modes(), t.modes());
    assert_eq!(back.save(), saved);
}

#[test]
fn a_resumed_terminal_keeps_the_saved_screen_and_history_above_a_fresh_screen() {
    let mut t = term(5, 30);
    t.feed(&seq(20));
    t.feed(b"\x1b[?2004hlast words");
    let mut woken = Terminal::resume(&t.save(), 10, 40, Config::default());
    let back = woken.scrollback(1000);
    assert_eq!(back.first().map(String::as_str), Some("1"));
    assert_eq!(back.last().map(String::as_str), Some("last words"));
    assert_eq!((woken.rows(), woken.cols()), (10, 40));
    assert!(!woken.modes().bracketed_paste);
    assert_eq!(woken.screen_text(), "");
    woken.feed(b"new process");
    assert_eq!(woken.screen_text(), "new process");
}

#[test]
fn a_screen_saved_by_an_older_hangar_is_read_as_output() {
    let mut back = Terminal::restore(b"\x1b[H\x1b[2Jold screen\r\nsecond", Config::default());
    assert_eq!(back.screen_text(), "old screen\nsecond");
    assert_eq!(back.history_len(), 0);
}

#[test]
fn history_with_a_redraw_puts_the_lines_in_a_clients_scrollback() {
    let mut t = term(5, 20);
    t.feed(&seq(30));
    let mut client = Terminal::new(5, 20, Config::default());
    client.feed(&t.redraw_with_history(1000));
    assert_eq!(client.scrollback(1000), t.scrollback(1000));
    assert_eq!(client.screen_lines(), t.screen_lines());
    // Fewer lines of history than rows.
    let mut small = term(5, 20);
    small.feed(&seq(6));
    let mut client = term(5, 20);
    client.feed(&small.redraw_with_history(1000));
    assert_eq!(client.scrollback(1000), small.scrollback(1000));
}

#[test]
fn combining_marks_on_one_cell_are_bounded() {
    let mut t = term(3, 20);
    t.feed(b"a");
    let accents = "\u{301}".repeat(10_000);
    t.feed(accents.as_bytes());
    let cell = &t.screen.term.grid()[Line(0)][Column(0)];
    assert!(cell.zerowidth().map_or(0, <[char]>::len) <= 16);
}

#[test]
fn an_unterminated_title_flood_is_truncated() {
    let mut t = term(3, 20);
    t.feed(b"\x1b]0;");
    let chunk = vec![b't'; 64 * 1024];
    for _ in 0..64 {
        t.feed(&chunk);
    }
    t.feed(b"\x07ok");
    assert!(
        t.modes()
            .title
            .is_some_and(|title| title.len() <= screen::MAX_TITLE)
    );
    assert_eq!(t.screen_text(), "ok");
}

#[test]
fn a_prompts_blank_before_the_cursor_is_part_of_the_screen_text() {
    let mut t = term(5, 20);
    t.feed(b"banner\r\n> ");
    assert_eq!(t.screen_text(), "banner\n> ");
    // Blanks after the cursor's column, and on other rows, are not.
    t.feed(b"typed   \x1b[3D");
    assert_eq!(t.screen_text(), "banner\n> typed");
}

#[test]
fn a_resize_leaves_no_stale_cells_for_a_scroll_to_bring_back() {
    let mut t = term(2, 2);
    t.feed(b"\x1b[44m A 0 0a 0a0\r\n");
    t.resize(3, 10);
    t.feed(b"\r\n");
    t.resize(2, 11);
    t.feed(b"\x1bc");
    t.feed(&b"A\r\n".repeat(5));
    // The four lines printed after the reset, with the default pen, in
    // rows reused by scrolling: alacritty's reflow had left a blue cell in
    // one of them (`A\x1b[0;44m \x1b[0m`).
    let history = t.history();
    let last: Vec<&str> = history.iter_formatted().rev().take(4).collect();
    assert_eq!(last, ["A", "A", "A", "A"]);
}

/// A `Term` that keeps its own history, the reference for the prediction.
struct Reference {
    term: Term<VoidListener>,
    parser: Processor<NoSyncHold>,
}

impl Reference {
    fn new(rows: usize, cols: usize) -> Reference {
        let config = TermConfig {
            scrolling_history: 100_000,
            ..TermConfig::default()
        };
        Reference {
            term: Term::new(config, &Size { rows, cols }, VoidListener),
            parser: Processor::new(),
        }
    }

    fn history(&self) -> Vec<String> {
        let grid = self.term.grid();
        let columns = grid.columns();
        (1..=grid.history_size())
            .rev()
            .map(|i| encode::row(&grid[Line(-(i as i32))], columns))
            .collect()
    }
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,14}",
        Just("\r\n".to_owned()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("界".to_owned()),
        Just("e\u{301}".to_owned()),
        Just("\x1bD".to_owned()),
        Just("\x1bE".to_owned()),
        Just("\x1bM".to_owned()),
        Just("\x1b[2J".to_owned()),
        Just("\x1b[?1049h".to_owned()),
        Just("\x1b[?1049l".to_owned()),
        Just("\x1b[?7l".to_owned()),
        Just("\x1b[?7h".to_owned()),
        Just("\x1b[1;31m".to_owned()),
        Just("\x1b[0m".to_owned()),
        Just("\x1b[r".to_owned()),
        (0u8..8).prop_map(|n| format!("\x1b[{n}S")),
        (0u8..8).prop_map(|n| format!("\x1b[{n}M")),
        (0u8..8).prop_map(|n| format!("\x1b[{n}L")),
        (0u8..8, 0u8..8).prop_map(|(t, b)| format!("\x1b[{t};{b}r")),
        (0u8..8, 0u8..12).prop_map(|(r, c)| format!("\x1b[{r};{c}H")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn history_is_exactly_what_alacritty_would_have_scrolled_off(
        tokens in proptest::collection::vec(token(), 0..120),
    ) {
        let (rows, cols) = (5, 10);
        let mut ours = Terminal::new(rows as u16, cols as u16, Config::default());
        let mut reference = Reference::new(rows, cols);
        // History is never empty here (no `CSI 3 J` either): with none,
        // alacritty's clear of a blank screen pushes one blank line, a quirk
        // this model leaves out.
        let start = seq(rows + 1);
        // And it ends on the primary screen, whose history is compared.
        let tokens = std::iter::once(String::from_utf8_lossy(&start).into_owned())
            .chain(tokens)
            .chain(std::iter::once("\x1b[?1049l".to_owned()));
        for t in tokens {
            ours.feed(t.as_bytes());
            reference.parser.advance(&mut reference.term, t.as_bytes());
        }
        // Compared as text without trailing blanks: alacritty, writing at
        // column 0, clears a wide-character spacer on the last cell of the
        // line above even once that line is history; the copy kept here
        // still has the spacer (a trailing blank either way).
        let text = |l: &str| history::plain(l).trim_end().to_owned();
        let ours_history: Vec<String> = ours.history().iter_formatted().map(text).collect();
        let reference_history: Vec<String> = reference.history().iter().map(|l| text(l)).collect();
        prop_assert_eq!(ours_history, reference_history);
        let grid = reference.term.grid();
        let reference_screen: Vec<String> = (0..rows)
            .map(|i| history::plain(&encode::row(&grid[Line(i as i32)], cols)))
            .collect();
        // (The cursor's row runs up to the cursor in ours: compared trimmed.)
        let ours_screen: Vec<String> =
            ours.screen_lines().iter().map(|l| l.trim_end().to_owned()).collect();
        let reference_screen: Vec<String> =
            reference_screen.iter().map(|l| l.trim_end().to_owned()).collect();
        prop_assert_eq!(ours_screen, reference_screen);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_the_cap_holds(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..512), 0..64),
        rows in 1u16..60,
        cols in 1u16..200,
    ) {
        let cap = history::MIN_HISTORY_BYTES;
        let mut t = Terminal::new(rows, cols, Config { history_bytes: cap });
        for c in &chunks {
            t.feed(c);
            prop_assert!(t.history_bytes() <= cap);
        }
        let _ = t.redraw_with_history(100);
        let mut back = Terminal::restore(&t.save(), Config { history_bytes: cap });
        prop_assert_eq!(back.screen_lines(), t.screen_lines());
        let _ = t.search("a");
        t.resize(cols.max(2), rows);
        prop_assert!(t.history_bytes() <= cap);
    }
}
