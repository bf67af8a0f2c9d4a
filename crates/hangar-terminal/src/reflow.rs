//! History rewrapped for a new width, as tmux's `grid_reflow` (grid.c)
//! does on a resize: the rows of one line (each soft-wrapped row followed by
//! the next) are joined, then split again at the new width, every row but
//! a line's last marked wrapped. A wide character that would straddle the
//! edge starts the next row; combining marks stay with their character.
//!
//! History rows are kept as text with full-reset SGR sequences
//! ([`crate::encode`]), so a row can be cut anywhere between characters:
//! the pen in force is closed at the cut and selected again at the start of
//! the next row, and every row still reads the same alone.

use unicode_width::UnicodeWidthChar;

/// What closes a row whose pen is not the default.
const RESET: &str = "\x1b[0m";

fn is_plain(pen: &str) -> bool {
    pen.is_empty() || pen == RESET
}

/// Columns an encoded row takes (its SGR sequences take none).
pub(crate) fn width(line: &str) -> usize {
    let mut width = 0;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            rest = sgr_end(rest);
            continue;
        }
        width += c.width().unwrap_or(0);
        rest = &rest[c.len_utf8()..];
    }
    width
}

/// `rest` after the SGR sequence it starts with (the encoder writes no
/// other escape sequence).
fn sgr_end(rest: &str) -> &str {
    match rest.find('m') {
        Some(end) => &rest[end + 1..],
        None => "",
    }
}

/// Split one line (its rows joined) into rows at most `cols` columns wide;
/// `emit` gets each row and whether the line goes on after it.
pub(crate) fn split(line: &str, cols: usize, mut emit: impl FnMut(&str, bool)) {
    let cols = cols.max(1);
    let mut row = String::with_capacity(line.len().min(cols * 2));
    let mut width = 0;
    let mut pen = "";
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            let after = sgr_end(rest);
            pen = &rest[..rest.len() - after.len()];
            row.push_str(pen);
            rest = after;
            continue;
        }
        let w = c.width().unwrap_or(0);
        if w > 0 && width > 0 && width + w > cols {
            if !is_plain(pen) {
                row.push_str(RESET);
            }
            emit(&row, true);
            row.clear();
            width = 0;
            if !is_plain(pen) {
                row.push_str(pen);
            }
        }
        row.push(c);
        width += w;
        rest = &rest[c.len_utf8()..];
    }
    emit(&row, false);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(line: &str, cols: usize) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        split(line, cols, |r, w| out.push((r.to_owned(), w)));
        out
    }

    #[test]
    fn a_line_wider_than_the_screen_is_cut_into_rows_every_one_but_the_last_wrapped() {
        assert_eq!(
            rows("abcdefgh", 3),
            [
                ("abc".into(), true),
                ("def".into(), true),
                ("gh".into(), false)
            ]
        );
        assert_eq!(rows("", 3), [("".into(), false)]);
        assert_eq!(rows("abc", 3), [("abc".into(), false)]);
    }

    #[test]
    fn the_pen_is_closed_at_a_cut_and_selected_again_on_the_next_row() {
        let line = "a\x1b[0;31mbcd\x1b[0me";
        assert_eq!(
            rows(line, 2),
            [
                ("a\x1b[0;31mb\x1b[0m".into(), true),
                ("\x1b[0;31mcd\x1b[0m".into(), true),
                ("e".into(), false),
            ]
        );
        for (row, _) in rows(line, 2) {
            assert!(width(&row) <= 2, "{row:?}");
        }
    }

    #[test]
    fn a_resize_rewraps_a_terminals_history_and_numbers_it_above_the_old_numbers() {
        let mut t = crate::Terminal::new(4, 40, crate::Config::default());
        let long = format!("{}-end", "x".repeat(30));
        t.feed(format!("{long}\r\n1\r\n2\r\n3\r\n4\r\n").as_bytes());
        let before = t.history_page(None, 100);
        assert_eq!(before.lines, [long.as_str(), "1"]);
        t.resize(4, 20);
        let after = t.history_page(None, 100);
        assert_eq!(
            after.lines[..3],
            [
                "x".repeat(20),
                format!("{}-end", "x".repeat(10)),
                "1".into()
            ]
        );
        assert!(after.first >= before.end, "{after:?}");
        // Wide again: the line's rows join.
        t.resize(4, 40);
        let wide = t.history_page(None, 100);
        assert_eq!(wide.lines[0], long);
        // A line wrapped by the terminal itself (printed wider than the
        // screen) joins too, its blanks kept.
        let mut t = crate::Terminal::new(2, 10, crate::Config::default());
        t.feed(b"abc       def\r\nx\r\ny\r\n");
        t.resize(2, 20);
        assert_eq!(t.history_page(None, 100).lines[0], "abc       def");
    }

    #[test]
    fn a_wide_character_never_straddles_the_edge_and_marks_stay_with_their_letter() {
        assert_eq!(
            rows("ab中c", 3),
            [("ab".into(), true), ("中c".into(), false)]
        );
        assert_eq!(
            rows("abe\u{301}f", 3),
            [("abe\u{301}".into(), true), ("f".into(), false)]
        );
        assert_eq!(width("\x1b[0;1m中\x1b[0m"), 2);
    }
}
