//! The parser's handler: every action goes to alacritty's `Term`, and the
//! lines a scroll is about to push off the top of the primary screen are
//! copied into the byte-capped [`History`] first.
//!
//! The `Term` itself keeps no scrollback (`scrolling_history = 0`): its own
//! history allocates a thousand full-width rows of cells at once, about 5 MB
//! for a 200-column session, which is what this crate exists to avoid. So the
//! handler predicts, from the cursor and the scrolling region, exactly when an
//! action scrolls lines into history, the way `Term` decides it (alacritty
//! 0.26's `linefeed`, `wrapline`, `scroll_up_relative`, `delete_lines`,
//! `clear_viewport`); the differential property test checks the prediction
//! against a `Term` that keeps its own history.
//!
//! It also bounds what `Term` would let grow: combining marks stacked on one
//! cell and the window-title stack.

use std::ops::Range;

use alacritty_terminal::Term;
use alacritty_terminal::event::VoidListener;
use alacritty_terminal::grid::{Dimensions, GridCell};
use alacritty_terminal::index::{Column, Line};
use alacritty_terminal::term::TermMode;
use alacritty_terminal::term::cell::Flags;
use alacritty_terminal::vte::ansi::{
    Attr, CharsetIndex, ClearMode, CursorShape, CursorStyle, Handler, Hyperlink, KeyboardModes,
    KeyboardModesApplyBehavior, LineClearMode, Mode, ModifyOtherKeys, NamedPrivateMode,
    PrivateMode, Rgb, ScpCharPath, ScpUpdateMode, StandardCharset, TabulationClearMode,
};
use unicode_width::UnicodeWidthChar;

use crate::encode;
use crate::history::History;

/// Combining marks kept on one cell; more are dropped (without a bound, a
/// program printing one letter and then endless accents grew one cell forever).
const MAX_ZEROWIDTH: usize = 16;
/// Titles kept by `push_title` (xterm's `CSI 22 t`).
const MAX_TITLE_STACK: usize = 16;
/// Bytes of a window title kept.
pub(crate) const MAX_TITLE: usize = 1024;

pub(crate) struct Screen {
    pub(crate) term: Term<VoidListener>,
    pub(crate) history: History,
    /// The scrolling region, mirrored from `Term` (which keeps it private):
    /// start line, end line (exclusive).
    pub(crate) region: Range<usize>,
    pub(crate) title: Option<String>,
    titles: Vec<Option<String>>,
    /// The row being copied into history, reused for every line.
    line: String,
    /// Characters the parser printed, ever (wrapping): a print proves the
    /// parser was in its ground state.
    pub(crate) printed: usize,
}

impl Screen {
    pub(crate) fn new(term: Term<VoidListener>, history: History) -> Screen {
        let lines = term.screen_lines();
        Screen {
            term,
            history,
            region: 0..lines,
            title: None,
            titles: Vec::new(),
            line: String::new(),
            printed: 0,
        }
    }

    pub(crate) fn full_region(&mut self) {
        self.region = 0..self.term.screen_lines();
    }

    fn primary(&self) -> bool {
        !self.term.mode().contains(TermMode::ALT_SCREEN)
    }

    /// Copy the top `n` rows of the screen into history (they are about to
    /// scroll off it).
    pub(crate) fn keep_top_rows(&mut self, n: usize) {
        let columns = self.term.columns();
        let n = n.min(self.term.screen_lines());
        for i in 0..n {
            self.line.clear();
            let row = &self.term.grid()[Line(i as i32)];
            let wrapped = encode::is_wrapped(row, columns);
            // A wrapped row keeps its trailing blanks: they are part of the
            // line a reflow joins again.
            let min_len = if wrapped { columns } else { 0 };
            encode::write_row(row, columns, min_len, &mut self.line);
            self.history.push_row(&self.line, wrapped);
        }
    }

    /// Mark every row of the active screen as written up to its end.
    /// alacritty's reflow (a resize) can leave a row's record of how far it
    /// was written short of a cell it still holds; a reset of the row (a
    /// scroll reusing it, a clear) clears only that far, and the stale cell
    /// came back in a new line: a stray coloured blank. Marked, a row is
    /// cleared whole the next time (the plain-line fast path relies on a
    /// scroll's new row being blank).
    pub(crate) fn mark_rows_written(&mut self) {
        let grid = self.term.grid_mut();
        for i in 0..grid.screen_lines() {
            // The mutable index is what records the row as written.
            let _ = &mut grid[Line(i as i32)][..];
        }
    }

    /// Whether a line feed at the cursor scrolls the top row into history.
    fn linefeed_scrolls_into_history(&self) -> bool {
        let cursor = self.term.grid().cursor.point.line.0;
        self.region.start == 0
            && cursor >= 0
            && cursor as usize + 1 == self.region.end
            && self.primary()
    }

    /// Rows from the top down to the last one that is not blank: what a clear
    /// of the primary screen pushes into history.
    fn occupied_rows(&self) -> usize {
        let grid = self.term.grid();
        (0..self.term.screen_lines())
            .rev()
            .find(|&i| grid[Line(i as i32)][..].iter().any(|c| !c.is_empty()))
            .map_or(0, |i| i + 1)
    }
}

impl Handler for Screen {
    fn input(&mut self, c: char) {
        self.printed = self.printed.wrapping_add(1);
        let cursor = &self.term.grid().cursor;
        let at_edge = cursor.input_needs_wrap || cursor.point.column.0 + 1 >= self.term.columns();
        if at_edge || !c.is_ascii() {
            let width = c.width().unwrap_or(0);
            if width == 0 && !c.is_ascii() {
                let mut column = cursor.point.column;
                if !cursor.input_needs_wrap {
                    column.0 = column.saturating_sub(1);
                }
                let line = cursor.point.line;
                let row = &self.term.grid()[line];
                let held = |col: Column| row[col].zerowidth().map_or(0, <[char]>::len);
                if held(column) >= MAX_ZEROWIDTH
                    || (column.0 > 0 && held(Column(column.0 - 1)) >= MAX_ZEROWIDTH)
                {
                    return;
                }
            }
            let wraps = width > 0
                && self.term.mode().contains(TermMode::LINE_WRAP)
                && (cursor.input_needs_wrap
                    || (width == 2 && cursor.point.column.0 + 1 >= self.term.columns()));
            if wraps && self.linefeed_scrolls_into_history() {
                let grid = self.term.grid_mut();
                if grid.cursor.point.line.0 == 0 {
                    // A one-row region: the row going to history is the
                    // one this character wraps (alacritty marks it only
                    // once the character is printed).
                    let last = Column(grid.columns() - 1);
                    grid[Line(0)][last].flags.insert(Flags::WRAPLINE);
                }
                self.keep_top_rows(1);
            }
        }
        self.term.input(c);
    }

    fn linefeed(&mut self) {
        if self.linefeed_scrolls_into_history() {
            self.keep_top_rows(1);
        }
        self.term.linefeed();
    }

    fn newline(&mut self) {
        if self.linefeed_scrolls_into_history() {
            self.keep_top_rows(1);
        }
        self.term.newline();
    }

    fn scroll_up(&mut self, lines: usize) {
        if self.region.start == 0 && self.primary() {
            self.keep_top_rows(lines.min(self.region.len()));
        }
        self.term.scroll_up(lines);
    }

    fn delete_lines(&mut self, lines: usize) {
        let origin = self.term.grid().cursor.point.line.0;
        if origin == 0 && self.region.start == 0 && self.region.end > 0 && self.primary() {
            let n = lines.min(self.term.screen_lines()).min(self.region.len());
            self.keep_top_rows(n);
        }
        self.term.delete_lines(lines);
    }

    fn clear_screen(&mut self, mode: ClearMode) {
        match mode {
            ClearMode::All if self.primary() => {
                let n = self.occupied_rows();
                self.keep_top_rows(n);
            }
            ClearMode::Saved => self.history.clear(),
            _ => {}
        }
        self.term.clear_screen(mode);
    }

    fn reset_state(&mut self) {
        // History survives a reset, as in tmux: `reset` in a pane must not
        // throw away what a person may still scroll back to.
        self.term.reset_state();
        // It may have switched back to a primary screen resized while the
        // alternate one was shown.
        self.mark_rows_written();
        self.full_region();
        self.title = None;
        self.titles.clear();
    }

    fn set_scrolling_region(&mut self, top: usize, bottom: Option<usize>) {
        let lines = self.term.screen_lines();
        let bottom = bottom.unwrap_or(lines);
        if top < bottom {
            self.region = (top.saturating_sub(1)).min(lines)..bottom.min(lines);
        }
        self.term.set_scrolling_region(top, bottom.into());
    }

    fn set_private_mode(&mut self, mode: PrivateMode) {
        let column_mode = matches!(mode, PrivateMode::Named(NamedPrivateMode::ColumnMode));
        let primary = self.primary();
        self.term.set_private_mode(mode);
        if column_mode {
            self.full_region();
        }
        if primary != self.primary() {
            self.mark_rows_written();
        }
    }

    fn unset_private_mode(&mut self, mode: PrivateMode) {
        let column_mode = matches!(mode, PrivateMode::Named(NamedPrivateMode::ColumnMode));
        let primary = self.primary();
        self.term.unset_private_mode(mode);
        if column_mode {
            self.full_region();
        }
        if primary != self.primary() {
            // The screen shown now may have been resized while hidden.
            self.mark_rows_written();
        }
    }

    fn set_title(&mut self, title: Option<String>) {
        self.title = title.map(|mut t| {
            if t.len() > MAX_TITLE {
                let mut end = MAX_TITLE;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                t.truncate(end);
            }
            t
        });
    }

    fn push_title(&mut self) {
        if self.titles.len() >= MAX_TITLE_STACK {
            self.titles.remove(0);
        }
        self.titles.push(self.title.clone());
    }

    fn pop_title(&mut self) {
        if let Some(t) = self.titles.pop() {
            self.title = t;
        }
    }

    fn set_cursor_style(&mut self, a0: Option<CursorStyle>) {
        self.term.set_cursor_style(a0);
    }

    fn set_cursor_shape(&mut self, shape: CursorShape) {
        self.term.set_cursor_shape(shape);
    }

    fn goto(&mut self, line: i32, col: usize) {
        self.term.goto(line, col);
    }

    fn goto_line(&mut self, line: i32) {
        self.term.goto_line(line);
    }

    fn goto_col(&mut self, col: usize) {
        self.term.goto_col(col);
    }

    fn insert_blank(&mut self, a0: usize) {
        self.term.insert_blank(a0);
    }

    fn move_up(&mut self, a0: usize) {
        self.term.move_up(a0);
    }

    fn move_down(&mut self, a0: usize) {
        self.term.move_down(a0);
    }

    fn identify_terminal(&mut self, intermediate: Option<char>) {
        self.term.identify_terminal(intermediate);
    }

    fn device_status(&mut self, a0: usize) {
        self.term.device_status(a0);
    }

    fn move_forward(&mut self, col: usize) {
        self.term.move_forward(col);
    }

    fn move_backward(&mut self, col: usize) {
        self.term.move_backward(col);
    }

    fn move_down_and_cr(&mut self, row: usize) {
        self.term.move_down_and_cr(row);
    }

    fn move_up_and_cr(&mut self, row: usize) {
        self.term.move_up_and_cr(row);
    }

    fn put_tab(&mut self, count: u16) {
        self.term.put_tab(count);
    }

    fn backspace(&mut self) {
        self.term.backspace();
    }

    fn carriage_return(&mut self) {
        self.term.carriage_return();
    }

    fn bell(&mut self) {
        self.term.bell();
    }

    fn substitute(&mut self) {
        self.term.substitute();
    }

    fn set_horizontal_tabstop(&mut self) {
        self.term.set_horizontal_tabstop();
    }

    fn scroll_down(&mut self, a0: usize) {
        self.term.scroll_down(a0);
    }

    fn insert_blank_lines(&mut self, a0: usize) {
        self.term.insert_blank_lines(a0);
    }

    fn erase_chars(&mut self, a0: usize) {
        self.term.erase_chars(a0);
    }

    fn delete_chars(&mut self, a0: usize) {
        self.term.delete_chars(a0);
    }

    fn move_backward_tabs(&mut self, count: u16) {
        self.term.move_backward_tabs(count);
    }

    fn move_forward_tabs(&mut self, count: u16) {
        self.term.move_forward_tabs(count);
    }

    fn save_cursor_position(&mut self) {
        self.term.save_cursor_position();
    }

    fn restore_cursor_position(&mut self) {
        self.term.restore_cursor_position();
    }

    fn clear_line(&mut self, mode: LineClearMode) {
        self.term.clear_line(mode);
    }

    fn clear_tabs(&mut self, mode: TabulationClearMode) {
        self.term.clear_tabs(mode);
    }

    fn set_tabs(&mut self, interval: u16) {
        self.term.set_tabs(interval);
    }

    fn reverse_index(&mut self) {
        self.term.reverse_index();
    }

    fn terminal_attribute(&mut self, attr: Attr) {
        self.term.terminal_attribute(attr);
    }

    fn set_mode(&mut self, mode: Mode) {
        self.term.set_mode(mode);
    }

    fn unset_mode(&mut self, mode: Mode) {
        self.term.unset_mode(mode);
    }

    fn report_mode(&mut self, mode: Mode) {
        self.term.report_mode(mode);
    }

    fn report_private_mode(&mut self, mode: PrivateMode) {
        self.term.report_private_mode(mode);
    }

    fn set_keypad_application_mode(&mut self) {
        self.term.set_keypad_application_mode();
    }

    fn unset_keypad_application_mode(&mut self) {
        self.term.unset_keypad_application_mode();
    }

    fn set_active_charset(&mut self, a0: CharsetIndex) {
        self.term.set_active_charset(a0);
    }

    fn configure_charset(&mut self, a0: CharsetIndex, a1: StandardCharset) {
        self.term.configure_charset(a0, a1);
    }

    fn set_color(&mut self, a0: usize, a1: Rgb) {
        self.term.set_color(a0, a1);
    }

    fn dynamic_color_sequence(&mut self, a0: String, a1: usize, a2: &str) {
        self.term.dynamic_color_sequence(a0, a1, a2);
    }

    fn reset_color(&mut self, a0: usize) {
        self.term.reset_color(a0);
    }

    fn clipboard_store(&mut self, a0: u8, a1: &[u8]) {
        self.term.clipboard_store(a0, a1);
    }

    fn clipboard_load(&mut self, a0: u8, a1: &str) {
        self.term.clipboard_load(a0, a1);
    }

    fn decaln(&mut self) {
        self.term.decaln();
    }

    fn text_area_size_pixels(&mut self) {
        self.term.text_area_size_pixels();
    }

    fn text_area_size_chars(&mut self) {
        self.term.text_area_size_chars();
    }

    fn set_hyperlink(&mut self, a0: Option<Hyperlink>) {
        self.term.set_hyperlink(a0);
    }

    fn report_keyboard_mode(&mut self) {
        self.term.report_keyboard_mode();
    }

    fn push_keyboard_mode(&mut self, mode: KeyboardModes) {
        self.term.push_keyboard_mode(mode);
    }

    fn pop_keyboard_modes(&mut self, to_pop: u16) {
        self.term.pop_keyboard_modes(to_pop);
    }

    fn set_keyboard_mode(&mut self, mode: KeyboardModes, behavior: KeyboardModesApplyBehavior) {
        self.term.set_keyboard_mode(mode, behavior);
    }

    fn set_modify_other_keys(&mut self, mode: ModifyOtherKeys) {
        self.term.set_modify_other_keys(mode);
    }

    fn report_modify_other_keys(&mut self) {
        self.term.report_modify_other_keys();
    }

    fn set_scp(&mut self, char_path: ScpCharPath, update_mode: ScpUpdateMode) {
        self.term.set_scp(char_path, update_mode);
    }
}
