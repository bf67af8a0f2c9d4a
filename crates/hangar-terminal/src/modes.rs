//! The modes a program put its terminal in, and the bytes that put a fresh
//! terminal in the same state: screen contents, modes, title, cursor and pen.
//!
//! Every mode is written explicitly, set or reset, never left to a default:
//! a client being resynced may be in any state (it may have missed the very
//! `CSI ? 1049 l` that left the alternate screen).

use std::fmt::Write as _;

use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Line;
use alacritty_terminal::term::TermMode;

use crate::encode::{self, Pen};
use crate::screen::Screen;

/// The terminal modes a program set that change how a client must behave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Modes {
    pub alternate_screen: bool,
    /// Any of the mouse reporting modes (1000, 1002, 1003).
    pub mouse: bool,
    pub mouse_click: bool,
    pub mouse_drag: bool,
    pub mouse_motion: bool,
    pub mouse_sgr: bool,
    pub mouse_utf8: bool,
    pub focus_events: bool,
    pub bracketed_paste: bool,
    pub cursor_visible: bool,
    pub application_cursor: bool,
    pub application_keypad: bool,
    pub title: Option<String>,
}

impl Modes {
    pub(crate) fn of(screen: &Screen) -> Modes {
        let m = *screen.term.mode();
        Modes {
            alternate_screen: m.contains(TermMode::ALT_SCREEN),
            mouse: m.intersects(TermMode::MOUSE_MODE),
            mouse_click: m.contains(TermMode::MOUSE_REPORT_CLICK),
            mouse_drag: m.contains(TermMode::MOUSE_DRAG),
            mouse_motion: m.contains(TermMode::MOUSE_MOTION),
            mouse_sgr: m.contains(TermMode::SGR_MOUSE),
            mouse_utf8: m.contains(TermMode::UTF8_MOUSE),
            focus_events: m.contains(TermMode::FOCUS_IN_OUT),
            bracketed_paste: m.contains(TermMode::BRACKETED_PASTE),
            cursor_visible: m.contains(TermMode::SHOW_CURSOR),
            application_cursor: m.contains(TermMode::APP_CURSOR),
            application_keypad: m.contains(TermMode::APP_KEYPAD),
            title: screen.title.clone(),
        }
    }
}

fn private(out: &mut String, code: u16, on: bool) {
    let _ = write!(out, "\x1b[?{code}{}", if on { 'h' } else { 'l' });
}

/// A title with every control character removed, so it cannot end the OSC
/// early or smuggle a sequence into a client's terminal.
fn clean_title(title: &str) -> String {
    title.chars().filter(|c| !c.is_control()).collect()
}

pub(crate) fn redraw(screen: &Screen) -> Vec<u8> {
    let term = &screen.term;
    let m = *term.mode();
    let grid = term.grid();
    let rows = grid.screen_lines();
    let columns = grid.columns();
    let mut out = String::with_capacity(rows * (columns + 16) + 256);

    // The right screen first: a client left on the alternate screen is taken
    // off it, and one that should be on it is put there before drawing.
    private(&mut out, 1049, m.contains(TermMode::ALT_SCREEN));
    // Draw unconstrained by any margins or origin mode the client still has.
    out.push_str("\x1b[?6l\x1b[r\x1b[0m\x1b[H\x1b[2J");
    let cursor = &grid.cursor.point;
    for i in 0..rows {
        let upto = if cursor.line.0 == i as i32 {
            cursor.column.0
        } else {
            0
        };
        let line = encode::row_through(&grid[Line(i as i32)], columns, upto);
        if !line.is_empty() {
            let _ = write!(out, "\x1b[{};1H", i + 1);
            out.push_str(&line);
        }
    }

    if screen.region.start != 0 || screen.region.end != rows {
        // DECSTBM homes the cursor; the cursor is placed below.
        let _ = write!(
            out,
            "\x1b[{};{}r",
            screen.region.start + 1,
            screen.region.end
        );
    }
    private(&mut out, 1, m.contains(TermMode::APP_CURSOR));
    out.push_str(if m.contains(TermMode::APP_KEYPAD) {
        "\x1b="
    } else {
        "\x1b>"
    });
    private(&mut out, 7, m.contains(TermMode::LINE_WRAP));
    // Mouse modes: reset all, then set the program's.
    out.push_str("\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l");
    if m.contains(TermMode::MOUSE_REPORT_CLICK) {
        private(&mut out, 1000, true);
    }
    if m.contains(TermMode::MOUSE_DRAG) {
        private(&mut out, 1002, true);
    }
    if m.contains(TermMode::MOUSE_MOTION) {
        private(&mut out, 1003, true);
    }
    if m.contains(TermMode::UTF8_MOUSE) {
        private(&mut out, 1005, true);
    }
    if m.contains(TermMode::SGR_MOUSE) {
        private(&mut out, 1006, true);
    }
    private(&mut out, 1004, m.contains(TermMode::FOCUS_IN_OUT));
    private(&mut out, 2004, m.contains(TermMode::BRACKETED_PASTE));
    let _ = write!(
        out,
        "\x1b[4{}\x1b[20{}",
        if m.contains(TermMode::INSERT) {
            'h'
        } else {
            'l'
        },
        if m.contains(TermMode::LINE_FEED_NEW_LINE) {
            'h'
        } else {
            'l'
        }
    );
    if let Some(title) = &screen.title {
        let _ = write!(out, "\x1b]0;{}\x07", clean_title(title));
    }

    let cursor = &grid.cursor;
    let _ = write!(
        out,
        "\x1b[{};{}H",
        cursor.point.line.0.max(0) + 1,
        cursor.point.column.0 + 1
    );
    if m.contains(TermMode::ORIGIN) {
        // Origin mode last: the cursor was placed in absolute terms above.
        private(&mut out, 6, true);
    }
    private(&mut out, 25, m.contains(TermMode::SHOW_CURSOR));
    let pen = Pen::of(&cursor.template);
    if !pen.is_plain() {
        pen.write_sgr(&mut out);
    }
    out.into_bytes()
}

/// The last `lines` lines of history printed from the top of a cleared
/// screen and then scrolled off it: a client's own scrollback receives them
/// in order, and nothing else.
pub(crate) fn history_prelude(screen: &Screen, lines: usize) -> Vec<u8> {
    let history = &screen.history;
    let skip = history.len().saturating_sub(lines);
    let kept = history.len() - skip;
    if kept == 0 {
        return Vec::new();
    }
    let rows = screen.term.screen_lines();
    let mut out = String::from("\x1b[?1049l\x1b[?6l\x1b[r\x1b[0m\x1b[H\x1b[2J");
    for (i, line) in history.iter_formatted().skip(skip).enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        out.push_str(line);
    }
    // The screen's top rows now hold the last `min(kept, rows)` lines;
    // scrolling that many times from the bottom row pushes exactly them off.
    let _ = write!(out, "\x1b[{rows};1H");
    for _ in 0..kept.min(rows) {
        out.push('\n');
    }
    out.into_bytes()
}
