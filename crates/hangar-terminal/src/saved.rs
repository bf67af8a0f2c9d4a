//! The saved form of a terminal: what a hibernated session keeps as its last
//! screen, through daemon restarts and export/import.
//!
//! It is itself a terminal byte stream: an APC header (`ESC _ hangar-terminal;
//! 1;ROWS;COLS;LINES ESC \`, which terminals ignore), the history lines each
//! ended by CR LF, then the redraw of the screen. Anything that only knows how
//! to replay terminal output (an older hangar, `strip_ansi`) still gets the
//! screen from it; [`restore`] reads the history back without parsing it.
//! Bytes without the header, such as a screen an older hangar saved, are fed
//! as output.

use std::fmt::Write as _;

use crate::{Config, Terminal};

const MAGIC: &[u8] = b"\x1b_hangar-terminal;1;";

pub(crate) fn save(t: &mut Terminal) -> Vec<u8> {
    let (rows, cols) = (t.rows(), t.cols());
    let history = t.history();
    let mut out = String::new();
    let _ = write!(
        out,
        "\x1b_hangar-terminal;1;{rows};{cols};{}\x1b\\",
        history.len()
    );
    for line in history.iter_formatted() {
        out.push_str(line);
        out.push_str("\r\n");
    }
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&t.redraw());
    bytes
}

struct Header {
    rows: u16,
    cols: u16,
    lines: usize,
    len: usize,
}

fn header(saved: &[u8]) -> Option<Header> {
    let rest = saved.strip_prefix(MAGIC)?;
    let end = rest.windows(2).position(|w| w == b"\x1b\\")?;
    let fields = std::str::from_utf8(&rest[..end]).ok()?;
    let mut it = fields.split(';');
    let rows = it.next()?.parse().ok()?;
    let cols = it.next()?.parse().ok()?;
    let lines = it.next()?.parse().ok()?;
    Some(Header {
        rows,
        cols,
        lines,
        len: MAGIC.len() + end + 2,
    })
}

pub(crate) fn restore(saved: &[u8], config: Config) -> Terminal {
    let Some(h) = header(saved) else {
        let mut t = Terminal::new(crate::FALLBACK_ROWS, crate::FALLBACK_COLS, config);
        t.feed(saved);
        return t;
    };
    let mut t = Terminal::new(h.rows, h.cols, config);
    let mut rest = &saved[h.len..];
    for _ in 0..h.lines {
        let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
            break;
        };
        t.history_mut().push(&String::from_utf8_lossy(&rest[..end]));
        rest = &rest[end + 2..];
    }
    t.feed(rest);
    t
}
