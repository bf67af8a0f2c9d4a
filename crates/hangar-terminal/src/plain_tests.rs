//! The plain-line fast path against the slow path: the same output, split
//! at any read boundary and mixed with anything else a program prints, with
//! queries and resizes in between, leaves both terminals the same to every
//! reader (screen, cursor, modes, history, redraw, saved form).

use super::*;
use alacritty_terminal::index::Point;
use proptest::prelude::*;

/// Everything a reader can get out of a terminal, plus the cursor.
#[derive(Debug, PartialEq)]
struct Seen {
    screen: Vec<String>,
    cursor: Point,
    wraps: bool,
    modes: Modes,
    history: Vec<String>,
    plain_history: Vec<String>,
    history_bytes: usize,
    redraw: Vec<u8>,
    saved: Vec<u8>,
}

fn seen(t: &mut Terminal) -> Seen {
    let screen = t.screen_lines();
    let cursor = t.screen.term.grid().cursor.clone();
    Seen {
        screen,
        cursor: cursor.point,
        wraps: cursor.input_needs_wrap,
        modes: t.modes(),
        history: t.history().iter_formatted().map(str::to_owned).collect(),
        plain_history: t.scrollback(usize::MAX),
        history_bytes: t.history_bytes(),
        redraw: t.redraw_with_history(1000),
        saved: t.save(),
    }
}

enum Step<'a> {
    Feed(&'a [u8]),
    Resize(u16, u16),
    Look,
}

/// Run the same steps on a terminal with the fast path and one without,
/// comparing them at every look and at the end; returns the fast one.
fn both(rows: u16, cols: u16, cap: usize, steps: &[Step]) -> Result<Terminal, TestCaseError> {
    let config = Config { history_bytes: cap };
    let mut fast = Terminal::new(rows, cols, config);
    let mut slow = Terminal::new(rows, cols, config).without_fast_plain_lines();
    for step in steps {
        match step {
            Step::Feed(bytes) => {
                fast.feed(bytes);
                slow.feed(bytes);
            }
            Step::Resize(r, c) => {
                fast.resize(*r, *c);
                slow.resize(*r, *c);
            }
            Step::Look => prop_assert_eq!(seen(&mut fast), seen(&mut slow)),
        }
    }
    prop_assert_eq!(seen(&mut fast), seen(&mut slow));
    Ok(fast)
}

fn lines(n: usize, text: impl Fn(usize) -> String) -> Vec<u8> {
    (0..n)
        .map(|i| format!("{}\r\n", text(i)))
        .collect::<String>()
        .into_bytes()
}

fn check(rows: u16, cols: u16, steps: &[Step]) -> Terminal {
    match both(rows, cols, Config::default().history_bytes, steps) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_flood_of_plain_lines_skips_the_parser() {
    let flood = lines(10_000, |i| format!("line {i} {}", "x".repeat(i % 90)));
    let mut t = term_with_fast_path(40, 120);
    for part in flood.chunks(4095) {
        t.feed(part);
    }
    assert!(t.plain.active(), "the run is still kept back");
    // Only the first screen (until the cursor reaches the bottom row) and,
    // once asked, the last one go through the parser: about 2,000
    // characters of the flood's 550,000.
    let screen = 40 * 120;
    assert!(t.screen.printed <= screen, "{}", t.screen.printed);
    assert_eq!(
        t.scrollback(1),
        vec![format!("line 9960 {}", "x".repeat(60))]
    );
    assert!(t.screen.printed <= 2 * screen, "{}", t.screen.printed);
    assert_eq!(t.history_len(), 10_000 - 39);
}

fn term_with_fast_path(rows: u16, cols: u16) -> Terminal {
    Terminal::new(rows, cols, Config::default())
}

#[test]
fn the_first_overflow_sends_the_screen_it_found_to_history_first() {
    let flood = lines(12, |i| format!("new {i}"));
    let t = check(
        4,
        10,
        &[
            Step::Feed(b"\x1b[31mred\x1b[0m\r\nold 2\r\nold 3\r\n"),
            Step::Feed(&flood),
        ],
    );
    let mut t = t;
    let back = t.scrollback(100);
    assert_eq!(&back[..3], ["red", "old 2", "old 3"]);
    assert_eq!(back[3], "new 0");
    assert_eq!(back.len(), 3 + 12 - 3);
    assert!(
        t.history()
            .formatted(0)
            .is_some_and(|l| l.contains("\x1b[0;31mred"))
    );
}

#[test]
fn lines_of_exactly_the_width_empty_lines_and_trailing_blanks() {
    let flood = [
        lines(6, |_| "0123456789".to_owned()),
        lines(6, |_| String::new()),
        lines(6, |i| format!(" {i}   ")),
        lines(6, |_| "0123456789a".to_owned()),
        lines(6, |_| "          ".to_owned()),
    ]
    .concat();
    check(3, 10, &[Step::Feed(&flood)]);
    for size in [1, 2, 3, 7, 11, 4095] {
        let steps: Vec<Step> = flood.chunks(size).map(Step::Feed).collect();
        check(3, 10, &steps);
        check(1, 10, &steps);
    }
}

#[test]
fn the_byte_cap_drops_the_oldest_flooded_lines_the_same_way() {
    let flood = lines(20_000, |i| format!("{i:05} {}", "y".repeat(90)));
    let steps: Vec<Step> = flood.chunks(4095).map(Step::Feed).collect();
    let mut t = match both(40, 120, history::MIN_HISTORY_BYTES, &steps) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    assert!(t.history_bytes() <= history::MIN_HISTORY_BYTES);
    assert!(t.scrollback(1)[0].starts_with("19960 "));
}

#[test]
fn a_query_in_the_middle_of_a_run_and_output_after_it() {
    let a = lines(7, |i| format!("a{i}"));
    let b = lines(9, |i| format!("b{i}"));
    check(
        5,
        12,
        &[
            Step::Feed(&a),
            Step::Feed(b"half a li"),
            Step::Look,
            Step::Feed(b"ne\r\n"),
            Step::Feed(&b),
            Step::Feed(b"part\r"),
            Step::Look,
            Step::Feed(b"\n\x1b[1;32mgreen\x1b[0m\r\n"),
            Step::Feed(&a),
            Step::Resize(3, 8),
            Step::Feed(&b),
            Step::Feed(b"over\rwrite\x1b[2A\x1b[3b"),
        ],
    );
}

#[test]
fn a_repeat_after_a_run_repeats_the_last_character_printed() {
    let words = lines(6, |i| format!("w{i}"));
    let empty = lines(6, |_| String::new());
    check(
        3,
        10,
        &[
            Step::Feed(&words),
            Step::Feed(&empty),
            Step::Feed(b"\x1b[4b"),
        ],
    );
}

#[test]
fn a_flood_of_lines_that_wrap_skips_the_parser_too() {
    // 160-character lines on a 120-column screen: two rows each.
    let flood = lines(10_000, |i| format!("{i:05} {}", "b".repeat(154)));
    let mut t = term_with_fast_path(40, 120);
    for part in flood.chunks(4095) {
        t.feed(part);
    }
    assert!(t.plain.active(), "the run is still kept back");
    let screen = 40 * 120;
    assert!(t.screen.printed <= screen, "{}", t.screen.printed);
    // The screen holds the last 39 rows and the empty one the cursor is
    // on: the newest history row is line 9980's first.
    assert_eq!(
        t.scrollback(2),
        ["b".repeat(40), format!("09980 {}", "b".repeat(114))]
    );
    assert!(t.screen.printed <= 2 * screen, "{}", t.screen.printed);
    assert_eq!(t.history_len(), 2 * 10_000 - 39);
}

#[test]
fn wrapped_rows_match_the_slow_path_at_the_edges() {
    let flood = [
        lines(5, |_| "0123456789A".to_owned()),
        lines(5, |_| "0123456789".repeat(2)),
        lines(5, |i| format!("{}  ", "w".repeat(9 + i))),
        lines(5, |i| "x".repeat(i * 7)),
        lines(3, |_| " ".repeat(25)),
    ]
    .concat();
    for size in [1, 2, 3, 7, 10, 11, 4095] {
        let steps: Vec<Step> = flood.chunks(size).map(Step::Feed).collect();
        check(3, 10, &steps);
        check(1, 10, &steps);
        check(4, 2, &steps);
    }
    // A line that ends on the last column and one that wraps with
    // auto-wrap off (its characters overwrite the last column).
    check(
        3,
        10,
        &[
            Step::Feed(b"0123456789"),
            Step::Look,
            Step::Feed(b"ab\r\n"),
            Step::Feed(b"\x1b[?7l"),
            Step::Feed(&lines(4, |_| "0123456789xyz".to_owned())),
            Step::Feed(b"\x1b[?7h"),
            Step::Feed(&flood),
            Step::Resize(4, 7),
            Step::Feed(&flood),
            Step::Resize(3, 23),
            Step::Look,
        ],
    );
}

fn token() -> impl Strategy<Value = Vec<u8>> {
    let bytes = |s: &str| s.as_bytes().to_vec();
    let line = "[ -~]{0,13}".prop_map(|s| format!("{s}\r\n").into_bytes());
    let flood =
        (1usize..30, "[ -~]{0,11}").prop_map(|(n, s)| format!("{s}\r\n").repeat(n).into_bytes());
    let other = prop_oneof![
        "[a-z ]{1,6}".prop_map(|s| s.into_bytes()),
        Just(bytes("\r\n")),
        Just(bytes("\r")),
        Just(bytes("\n")),
        Just(bytes("\t")),
        Just(bytes("界")),
        Just(vec![0xe7]),
        Just(bytes("e\u{301}")),
        Just(bytes("\x1b[1;31m")),
        Just(bytes("\x1b[44m")),
        Just(bytes("\x1b[0m")),
        Just(bytes("\x1b[")),
        Just(bytes("\x1b")),
        Just(bytes("\x1b]0;title")),
        Just(bytes("\x07")),
        Just(bytes("\x1b]8;;http://x\x1b\\")),
        Just(bytes("\x1b]8;;\x1b\\")),
        Just(bytes("\x1bP1;2q")),
        Just(bytes("\x1b\\")),
        Just(bytes("\x1b[?1049h")),
        Just(bytes("\x1b[?1049l")),
        Just(bytes("\x1b[?7l")),
        Just(bytes("\x1b[?7h")),
        Just(bytes("\x1b[4h")),
        Just(bytes("\x1b[4l")),
        Just(bytes("\x1b[20h")),
        Just(bytes("\x1b[20l")),
        Just(bytes("\x1b(0")),
        Just(bytes("\x1b(B")),
        Just(bytes("\x1b)0")),
        Just(bytes("\x0e")),
        Just(bytes("\x0f")),
        Just(bytes("\x1b7")),
        Just(bytes("\x1b8")),
        Just(bytes("\x1bc")),
        Just(bytes("\x1b[2J")),
        Just(bytes("\x1b[3J")),
        Just(bytes("\x1b[K")),
        Just(bytes("\x1b[r")),
        Just(bytes("\x1bD")),
        Just(bytes("\x1bM")),
        Just(vec![0x7f]),
        Just(vec![0x00]),
        Just(vec![0x9b]),
        Just(vec![0xc2, 0x9b]),
        Just(bytes("\x1b[?6h")),
        Just(bytes("\x1b[?6l")),
        Just(bytes("\x1b#8")),
        Just(bytes("\x1bH")),
        Just(bytes("\x1b[3g")),
        Just(bytes("\x1b[2@")),
        Just(bytes("\x1b[2P")),
        Just(bytes("\x1b[3X")),
        Just(bytes("\x1bE")),
        Just(bytes("\x1b[?2026h")),
        Just(bytes("\x1b[?2026l")),
        Just(bytes("\x1b[22t")),
        Just(bytes("\x1b[23t")),
        (0u8..5).prop_map(|n| format!("\x1b[{n}b").into_bytes()),
        (0u8..5).prop_map(|n| format!("\x1b[{n}S").into_bytes()),
        (0u8..5).prop_map(|n| format!("\x1b[{n}M").into_bytes()),
        (0u8..7, 0u8..7).prop_map(|(t, b)| format!("\x1b[{t};{b}r").into_bytes()),
        (0u8..7, 0u8..13).prop_map(|(r, c)| format!("\x1b[{r};{c}H").into_bytes()),
    ];
    prop_oneof![4 => line, 2 => flood, 6 => other]
}

#[derive(Clone, Debug)]
enum Action {
    Print(Vec<u8>),
    Resize(u16, u16),
    Look,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        12 => token().prop_map(Action::Print),
        1 => (1u16..7, 2u16..13).prop_map(|(r, c)| Action::Resize(r, c)),
        1 => Just(Action::Look),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_fast_path_is_invisible(
        actions in proptest::collection::vec(action(), 0..80),
        reads in proptest::collection::vec(1usize..64, 1..8),
        rows in 1u16..7,
        cols in 2u16..13,
    ) {
        // What the program prints between two resizes or looks is one
        // stream, read in pieces of the sizes given (cycled).
        let mut stream: Vec<u8> = Vec::new();
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut steps_at: Vec<(usize, Option<(u16, u16)>)> = Vec::new();
        let cut = |stream: &mut Vec<u8>, pieces: &mut Vec<Vec<u8>>| {
            let mut rest = &stream[..];
            let mut k = 0;
            while !rest.is_empty() {
                let n = reads[k % reads.len()].min(rest.len());
                pieces.push(rest[..n].to_vec());
                rest = &rest[n..];
                k += 1;
            }
            stream.clear();
        };
        for a in &actions {
            match a {
                Action::Print(bytes) => stream.extend_from_slice(bytes),
                Action::Resize(r, c) => {
                    cut(&mut stream, &mut pieces);
                    steps_at.push((pieces.len(), Some((*r, *c))));
                }
                Action::Look => {
                    cut(&mut stream, &mut pieces);
                    steps_at.push((pieces.len(), None));
                }
            }
        }
        cut(&mut stream, &mut pieces);
        let mut steps = Vec::new();
        let mut next = steps_at.iter().peekable();
        for (i, piece) in pieces.iter().enumerate() {
            while let Some(&&(at, op)) = next.peek() {
                if at != i {
                    break;
                }
                steps.push(match op {
                    Some((r, c)) => Step::Resize(r, c),
                    None => Step::Look,
                });
                next.next();
            }
            steps.push(Step::Feed(piece));
        }
        for &(_, op) in next {
            steps.push(match op {
                Some((r, c)) => Step::Resize(r, c),
                None => Step::Look,
            });
        }
        // A small cap, so floods reach it.
        both(rows, cols, history::MIN_HISTORY_BYTES, &steps)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random plain text with long lines, fed through the fast path and
    /// through alacritty alone, read in pieces, at several widths (with
    /// resizes and looks between), leaves the same screen and history.
    #[test]
    fn long_plain_lines_wrap_as_alacritty_wraps_them(
        text in proptest::collection::vec(("[ -~]{0,60}", 1usize..4), 1..60),
        reads in proptest::collection::vec(1usize..300, 1..6),
        rows in 1u16..9,
        cols in prop::sample::select(vec![2u16, 3, 7, 10, 16, 25, 40]),
        then in prop::sample::select(vec![(3u16, 5u16), (6, 13), (8, 31), (2, 61)]),
    ) {
        let stream: Vec<u8> = text
            .iter()
            .flat_map(|(line, n)| format!("{line}\r\n").repeat(*n).into_bytes())
            .collect();
        let mut steps = Vec::new();
        let mut rest = &stream[..];
        let mut k = 0;
        while !rest.is_empty() {
            let n = reads[k % reads.len()].min(rest.len());
            steps.push(Step::Feed(&rest[..n]));
            rest = &rest[n..];
            k += 1;
            if k == reads.len() {
                steps.push(Step::Look);
            }
            if k == 2 * reads.len() {
                steps.push(Step::Resize(then.0, then.1));
            }
        }
        both(rows, cols, history::MIN_HISTORY_BYTES, &steps)?;
    }
}
