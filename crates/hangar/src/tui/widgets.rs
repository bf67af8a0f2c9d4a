//! The TUI's popup box: the help overlay, the dialogs, search, usage and
//! the diff view all draw over the panes in the same rounded, titled box.
//! A leaf: it imports nothing from the TUI's other modules, so any of them
//! may use it without an import circle.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

/// A `width` x `height` box in the middle of `area` (cut to fit it).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// A box that takes most of `area`: two columns and rows of margin each
/// side, at least `min` and at most `max` (columns, rows).
pub fn large(area: Rect, min: (u16, u16), max: (u16, u16)) -> Rect {
    let width = area.width.saturating_sub(4).clamp(min.0, max.0);
    let height = area.height.saturating_sub(4).clamp(min.1, max.1);
    centered(area, width, height)
}

/// The columns and rows inside a box's border.
pub fn inner_size(r: Rect) -> (usize, usize) {
    (
        usize::from(r.width.saturating_sub(2)),
        usize::from(r.height.saturating_sub(2)),
    )
}

/// Draw `lines` in a bordered box titled `title` at `r`, over whatever was
/// drawn there.
pub fn popup(frame: &mut Frame, r: Rect, title: &str, lines: Vec<Line<'_>>) {
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .title(title.to_owned()),
        ),
        r,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_sit_in_the_middle_and_never_leave_the_area() {
        let area = Rect::new(0, 0, 100, 40);
        assert_eq!(centered(area, 20, 10), Rect::new(40, 15, 20, 10));
        assert_eq!(centered(area, 200, 100), area);
        assert_eq!(large(area, (20, 6), (140, 30)), Rect::new(2, 5, 96, 30));
        let tiny = Rect::new(0, 0, 10, 4);
        assert_eq!(large(tiny, (20, 6), (140, 30)), tiny);
        assert_eq!(inner_size(Rect::new(0, 0, 10, 4)), (8, 2));
    }
}
