//! The screen cell by cell, for a client that draws it itself (the TUI's
//! panes): the same engine as the daemon's, so modes, wide characters and
//! colours read the same on both sides.
//!
//! These readers take `&self` and see the grid as parsed: call
//! [`Terminal::catch_up`] after feeding, so plain lines kept back by the
//! fast path are on it.

use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::{Column, Line};
use alacritty_terminal::term::TermMode;
use alacritty_terminal::term::cell::Flags;
use alacritty_terminal::vte::ansi::{Color, NamedColor};

use crate::{Terminal, encode};

/// A cell's colour as a client terminal selects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellColor {
    /// The terminal's own foreground or background.
    Default,
    /// One of the 256 palette colours (0..16 are the named ones).
    Indexed(u8),
    Rgb(u8, u8, u8),
}

/// One cell of the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShownCell<'a> {
    /// The character (a blank for an empty cell).
    pub c: char,
    /// Combining marks drawn on it.
    pub zerowidth: &'a [char],
    pub fg: CellColor,
    pub bg: CellColor,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
    pub hidden: bool,
    pub strikeout: bool,
    /// A two-column character: this cell draws it, the next is its spacer.
    pub wide: bool,
    /// The second column of a wide character, or the blank left at the
    /// edge before one that did not fit: nothing of its own to draw.
    pub spacer: bool,
}

/// Which mouse events the program asked for (tmux's and xterm's modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MouseMode {
    None,
    /// 1000: presses and releases.
    PressRelease,
    /// 1002: and motion with a button held.
    ButtonMotion,
    /// 1003: and any motion.
    AnyMotion,
}

/// How the program asked for mouse reports to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MouseEncoding {
    Default,
    /// 1005.
    Utf8,
    /// 1006.
    Sgr,
}

fn color(c: Color) -> CellColor {
    match c {
        Color::Named(n) => {
            let i = n as usize;
            if i < 16 {
                CellColor::Indexed(i as u8)
            } else if (NamedColor::DimBlack as usize..=NamedColor::DimWhite as usize).contains(&i) {
                CellColor::Indexed((i - NamedColor::DimBlack as usize) as u8)
            } else {
                CellColor::Default
            }
        }
        Color::Indexed(i) => CellColor::Indexed(i),
        Color::Spec(rgb) => CellColor::Rgb(rgb.r, rgb.g, rgb.b),
    }
}

impl Terminal {
    /// Give the parser what the plain-line fast path kept back, so the
    /// `&self` readers below see everything fed so far.
    pub fn catch_up(&mut self) {
        self.settle();
    }

    /// The cell at `row`, `col` of the screen (`None` outside it).
    pub fn cell(&self, row: u16, col: u16) -> Option<ShownCell<'_>> {
        let grid = self.screen.term.grid();
        let (row, col) = (usize::from(row), usize::from(col));
        if row >= grid.screen_lines() || col >= grid.columns() {
            return None;
        }
        let cell = &grid[Line(row as i32)][Column(col)];
        let f = cell.flags;
        Some(ShownCell {
            c: if cell.c == '\t' { ' ' } else { cell.c },
            zerowidth: cell.zerowidth().unwrap_or(&[]),
            fg: color(cell.fg),
            bg: color(cell.bg),
            bold: f.contains(Flags::BOLD),
            dim: f.contains(Flags::DIM),
            italic: f.contains(Flags::ITALIC),
            underline: f.intersects(Flags::ALL_UNDERLINES),
            inverse: f.contains(Flags::INVERSE),
            hidden: f.contains(Flags::HIDDEN),
            strikeout: f.contains(Flags::STRIKEOUT),
            wide: f.contains(Flags::WIDE_CHAR),
            spacer: f.intersects(Flags::WIDE_CHAR_SPACER | Flags::LEADING_WIDE_CHAR_SPACER),
        })
    }

    /// The cursor's (row, column) on the screen.
    pub fn cursor_position(&self) -> (u16, u16) {
        let point = self.screen.term.grid().cursor.point;
        (
            u16::try_from(point.line.0.max(0)).unwrap_or(u16::MAX),
            u16::try_from(point.column.0).unwrap_or(u16::MAX),
        )
    }

    fn mode(&self) -> TermMode {
        *self.screen.term.mode()
    }

    pub fn cursor_visible(&self) -> bool {
        self.mode().contains(TermMode::SHOW_CURSOR)
    }

    pub fn application_cursor(&self) -> bool {
        self.mode().contains(TermMode::APP_CURSOR)
    }

    pub fn alternate_screen(&self) -> bool {
        self.mode().contains(TermMode::ALT_SCREEN)
    }

    pub fn mouse_mode(&self) -> MouseMode {
        let m = self.mode();
        if m.contains(TermMode::MOUSE_MOTION) {
            MouseMode::AnyMotion
        } else if m.contains(TermMode::MOUSE_DRAG) {
            MouseMode::ButtonMotion
        } else if m.contains(TermMode::MOUSE_REPORT_CLICK) {
            MouseMode::PressRelease
        } else {
            MouseMode::None
        }
    }

    pub fn mouse_encoding(&self) -> MouseEncoding {
        let m = self.mode();
        if m.contains(TermMode::SGR_MOUSE) {
            MouseEncoding::Sgr
        } else if m.contains(TermMode::UTF8_MOUSE) {
            MouseEncoding::Utf8
        } else {
            MouseEncoding::Default
        }
    }

    /// The screen's rows as text with their SGR sequences (as history
    /// keeps a line), trailing blanks dropped.
    pub fn screen_rows_formatted(&mut self) -> Vec<String> {
        self.settle();
        let grid = self.screen.term.grid();
        let columns = grid.columns();
        (0..grid.screen_lines())
            .map(|i| encode::row(&grid[Line(i as i32)], columns))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn cells_carry_wide_characters_colours_and_modes() {
        let mut t = Terminal::new(3, 10, Config::default());
        t.feed("a中\x1b[1;31mb\x1b[0m\x1b[?1002h\x1b[?1006h\x1b[?1h".as_bytes());
        t.catch_up();
        let wide = t.cell(0, 1).unwrap();
        assert!(wide.wide && wide.c == '中');
        assert!(t.cell(0, 2).unwrap().spacer);
        let b = t.cell(0, 3).unwrap();
        assert_eq!((b.c, b.fg, b.bold), ('b', CellColor::Indexed(1), true));
        assert_eq!(t.cell(0, 4).unwrap().fg, CellColor::Default);
        assert_eq!(t.cursor_position(), (0, 4));
        assert_eq!(t.mouse_mode(), MouseMode::ButtonMotion);
        assert_eq!(t.mouse_encoding(), MouseEncoding::Sgr);
        assert!(t.application_cursor() && t.cursor_visible());
        assert_eq!(t.cell(3, 0), None);
    }
}
