//! Cells back into bytes: one row as its text with SGR sequences (how history
//! keeps a line and how a redraw draws one), and a cell's attributes as the
//! SGR that selects them.
//!
//! Each attribute change is written as a full reset plus the new attributes
//! (`ESC[0;1;31m`), never as a difference: a line decoded alone, or replayed
//! after any other line, always looks the same.

use std::fmt::Write as _;

use alacritty_terminal::grid::Row;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::vte::ansi::{Color, NamedColor};

/// The attributes of a cell that SGR can select.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pen {
    fg: Color,
    bg: Color,
    flags: Flags,
}

const SGR_FLAGS: Flags = Flags::BOLD
    .union(Flags::DIM)
    .union(Flags::ITALIC)
    .union(Flags::ALL_UNDERLINES)
    .union(Flags::INVERSE)
    .union(Flags::HIDDEN)
    .union(Flags::STRIKEOUT);

impl Pen {
    /// The default pen: what a row starts with and a reset selects.
    const PLAIN: Pen = Pen {
        fg: Color::Named(NamedColor::Foreground),
        bg: Color::Named(NamedColor::Background),
        flags: Flags::empty(),
    };

    pub(crate) fn of(cell: &Cell) -> Pen {
        Pen {
            fg: cell.fg,
            bg: cell.bg,
            flags: cell.flags & SGR_FLAGS,
        }
    }

    pub(crate) fn is_plain(&self) -> bool {
        *self == Pen::PLAIN
    }

    /// `ESC[0;...m` selecting exactly this pen.
    pub(crate) fn write_sgr(&self, out: &mut String) {
        out.push_str("\x1b[0");
        let f = self.flags;
        for (flag, code) in [
            (Flags::BOLD, "1"),
            (Flags::DIM, "2"),
            (Flags::ITALIC, "3"),
            (Flags::INVERSE, "7"),
            (Flags::HIDDEN, "8"),
            (Flags::STRIKEOUT, "9"),
        ] {
            if f.contains(flag) {
                out.push(';');
                out.push_str(code);
            }
        }
        if f.contains(Flags::DOUBLE_UNDERLINE) {
            out.push_str(";21");
        } else if f.contains(Flags::UNDERCURL) {
            out.push_str(";4:3");
        } else if f.contains(Flags::DOTTED_UNDERLINE) {
            out.push_str(";4:4");
        } else if f.contains(Flags::DASHED_UNDERLINE) {
            out.push_str(";4:5");
        } else if f.contains(Flags::UNDERLINE) {
            out.push_str(";4");
        }
        write_color(out, self.fg, false);
        write_color(out, self.bg, true);
        out.push('m');
    }
}

fn write_color(out: &mut String, color: Color, background: bool) {
    let base = if background { 40 } else { 30 };
    match color {
        Color::Named(n) => {
            let i = n as usize;
            if i < 8 {
                let _ = write!(out, ";{}", base + i);
            } else if i < 16 {
                let _ = write!(out, ";{}", base + 60 + i - 8);
            } else if (NamedColor::DimBlack as usize..=NamedColor::DimWhite as usize).contains(&i) {
                // A dim colour is the normal colour drawn dim; the DIM flag
                // already says so.
                let _ = write!(out, ";{}", base + i - NamedColor::DimBlack as usize);
            }
            // Foreground, Background and the rest are the defaults.
        }
        Color::Indexed(i) => {
            let _ = write!(out, ";{};5;{}", base + 8, i);
        }
        Color::Spec(rgb) => {
            let _ = write!(out, ";{};2;{};{};{}", base + 8, rgb.r, rgb.g, rgb.b);
        }
    }
}

/// Whether a cell draws nothing (a default blank; alacritty keeps a tab's
/// first cell as `\t`).
pub(crate) fn is_blank(cell: &Cell) -> bool {
    (cell.c == ' ' || cell.c == '\t')
        && Pen::of(cell).is_plain()
        && cell.zerowidth().is_none_or(|z| z.is_empty())
}

/// Whether the row is soft-wrapped: full, its line going on on the next row.
pub(crate) fn is_wrapped(row: &Row<Cell>, columns: usize) -> bool {
    let cells = &row[..];
    columns
        .min(cells.len())
        .checked_sub(1)
        .is_some_and(|last| cells[last].flags.contains(Flags::WRAPLINE))
}

/// A row as text with SGR sequences, trailing blanks dropped and the pen
/// reset at the end if it was changed.
pub(crate) fn row(row: &Row<Cell>, columns: usize) -> String {
    row_through(row, columns, 0)
}

/// [`row`], but at least `min_len` cells long: the row the cursor is on is
/// drawn up to the cursor, so the blank a prompt printed before it (`> `)
/// is there on a client that tells printed blanks from empty cells.
pub(crate) fn row_through(row: &Row<Cell>, columns: usize, min_len: usize) -> String {
    let mut out = String::new();
    write_row(row, columns, min_len, &mut out);
    out
}

/// [`row_through`] appended to `out` (history reuses one buffer for every
/// line it keeps). This runs for every line a program scrolls off its
/// screen, so the pen is compared field by field against the cell's and
/// rebuilt only where it changes.
pub(crate) fn write_row(row: &Row<Cell>, columns: usize, min_len: usize, out: &mut String) {
    let cells = &row[..];
    let width = columns.min(cells.len());
    let end = cells[..width]
        .iter()
        .rposition(|c| !is_blank(c))
        .map_or(0, |i| i + 1)
        .max(min_len.min(width));
    out.reserve(end + 8);
    let mut pen = Pen::PLAIN;
    let mut run = [0u8; 128];
    let mut held = 0;
    for cell in &cells[..end] {
        if cell
            .flags
            .intersects(Flags::WIDE_CHAR_SPACER | Flags::LEADING_WIDE_CHAR_SPACER)
        {
            continue;
        }
        if cell.fg != pen.fg || cell.bg != pen.bg || cell.flags & SGR_FLAGS != pen.flags {
            flush(out, &run[..held]);
            held = 0;
            pen = Pen::of(cell);
            pen.write_sgr(out);
        }
        let c = if cell.c == '\t' { ' ' } else { cell.c };
        if c.is_ascii() && cell.extra.is_none() {
            // Most cells: one byte, gathered and pushed a run at a time
            // (a push per character reloaded and stored `out`'s length).
            run[held] = c as u8;
            held += 1;
            if held == run.len() {
                flush(out, &run[..held]);
                held = 0;
            }
            continue;
        }
        flush(out, &run[..held]);
        held = 0;
        out.push(c);
        if let Some(extra) = cell.zerowidth() {
            out.extend(extra.iter());
        }
    }
    flush(out, &run[..held]);
    if !pen.is_plain() {
        out.push_str("\x1b[0m");
    }
}

/// Append the ASCII bytes [`write_row`] gathered (ASCII is always UTF-8,
/// so the check never fails).
fn flush(out: &mut String, ascii: &[u8]) {
    if let Ok(text) = std::str::from_utf8(ascii) {
        out.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alacritty_terminal::vte::ansi::Rgb;

    #[test]
    fn a_pen_is_written_as_a_full_reset_plus_its_attributes() {
        let mut out = String::new();
        Pen {
            fg: Color::Named(NamedColor::Red),
            bg: Color::Spec(Rgb { r: 1, g: 2, b: 3 }),
            flags: Flags::BOLD | Flags::UNDERLINE,
        }
        .write_sgr(&mut out);
        assert_eq!(out, "\x1b[0;1;4;31;48;2;1;2;3m");
    }
}
