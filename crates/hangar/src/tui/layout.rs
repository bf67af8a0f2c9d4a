//! Where everything goes on screen: the tab bar, the panes of the active
//! tab (from `Tile::regions`), the side list and the status line.
//!
//! Pure arithmetic over rectangles, so it is tested without a terminal.
//! Panes tile the body exactly: rounding never leaves a gap or an overlap.

use hangar_core::{SessionId, Tab};
use ratatui::layout::Rect;

/// The side list is shown only when the terminal is at least this wide.
pub const SIDE_LIST_MIN_TERMINAL_WIDTH: u16 = 80;
/// The side list takes a quarter of the terminal, within these bounds: wide
/// enough for a name beside state, activity and age, never a pane's worth.
pub const SIDE_LIST_MIN_WIDTH: u16 = 32;
pub const SIDE_LIST_MAX_WIDTH: u16 = 48;

pub fn side_list_width(terminal_width: u16) -> u16 {
    (terminal_width / 4).clamp(SIDE_LIST_MIN_WIDTH, SIDE_LIST_MAX_WIDTH)
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScreenLayout {
    pub tab_bar: Rect,
    /// Where the panes go.
    pub body: Rect,
    pub side: Option<Rect>,
    pub status: Rect,
    /// Each visible pane's outer rectangle (border included), reading order.
    pub panes: Vec<(SessionId, Rect)>,
}

/// Lay out the screen for `tab` (none when there are no tabs). When
/// `zoomed` names a pane of the tab, only that pane is shown, full size.
pub fn compute(area: Rect, tab: Option<&Tab>, zoomed: Option<&SessionId>) -> ScreenLayout {
    let tab_bar = Rect {
        height: area.height.min(1),
        ..area
    };
    let status = Rect {
        y: area.y + area.height.saturating_sub(1),
        height: area.height.saturating_sub(1).min(1),
        ..area
    };
    let main = Rect {
        y: area.y + tab_bar.height,
        height: area.height.saturating_sub(tab_bar.height + status.height),
        ..area
    };
    let (body, side) = if area.width >= SIDE_LIST_MIN_TERMINAL_WIDTH {
        let side_width = side_list_width(area.width);
        let body = Rect {
            width: main.width - side_width,
            ..main
        };
        let side = Rect {
            x: main.x + body.width,
            width: side_width,
            ..main
        };
        (body, Some(side))
    } else {
        (main, None)
    };
    let panes = match tab.and_then(|t| t.root.as_ref()) {
        None => Vec::new(),
        Some(root) => match zoomed.filter(|z| root.contains(z)) {
            Some(z) => vec![(z.clone(), body)],
            None => root
                .regions()
                .into_iter()
                .map(|(id, r)| (id, scale(body, r.x, r.y, r.w, r.h)))
                .collect(),
        },
    };
    ScreenLayout {
        tab_bar,
        body,
        side,
        status,
        panes,
    }
}

/// A unit-square region scaled into `area`. Edges are rounded, not sizes,
/// so neighbouring panes share their edge exactly.
fn scale(area: Rect, x: f32, y: f32, w: f32, h: f32) -> Rect {
    let edge = |origin: u16, len: u16, f: f32| origin + (f * f32::from(len)).round() as u16;
    let x0 = edge(area.x, area.width, x);
    let x1 = edge(area.x, area.width, x + w);
    let y0 = edge(area.y, area.height, y);
    let y1 = edge(area.y, area.height, y + h);
    Rect {
        x: x0,
        y: y0,
        width: x1.saturating_sub(x0),
        height: y1.saturating_sub(y0),
    }
}

/// The area inside a pane's border: what its session's terminal is sized to.
pub fn inner(outer: Rect) -> Rect {
    Rect {
        x: outer.x + 1,
        y: outer.y + 1,
        width: outer.width.saturating_sub(2),
        height: outer.height.saturating_sub(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::{Direction, Tile};

    fn two_by_one() -> Tab {
        let mut t = Tab::new("t".into(), "main");
        let mut root = Tile::leaf("a".into());
        root.split(
            &"a".into(),
            "b".into(),
            Direction::Vertical,
            0.5,
            hangar_core::Side::B,
        )
        .unwrap();
        root.split(
            &"b".into(),
            "c".into(),
            Direction::Horizontal,
            0.5,
            hangar_core::Side::B,
        )
        .unwrap();
        t.root = Some(root);
        t
    }

    #[test]
    fn three_panes_in_two_splits_tile_the_body_without_gaps() {
        let area = Rect::new(0, 0, 121, 41);
        let l = compute(area, Some(&two_by_one()), None);
        assert_eq!(l.body, Rect::new(0, 1, 121 - side_list_width(121), 39));
        let cells: u32 = l.panes.iter().map(|(_, r)| r.area()).sum();
        assert_eq!(cells, l.body.area());
        let (_, a) = &l.panes[0];
        let (_, b) = &l.panes[1];
        let (_, c) = &l.panes[2];
        assert_eq!(a.x + a.width, b.x);
        assert_eq!(b.x, c.x);
        assert_eq!(b.y + b.height, c.y);
    }

    #[test]
    fn a_zoomed_pane_takes_the_whole_body() {
        let area = Rect::new(0, 0, 100, 30);
        let tab = two_by_one();
        let l = compute(area, Some(&tab), Some(&"c".into()));
        assert_eq!(l.panes, vec![("c".into(), l.body)]);
    }

    #[test]
    fn a_narrow_terminal_hides_the_side_list() {
        let l = compute(Rect::new(0, 0, 60, 20), None, None);
        assert_eq!(l.side, None);
        assert_eq!(l.body.width, 60);
    }

    #[test]
    fn the_side_list_grows_with_the_terminal_within_its_bounds() {
        assert_eq!(side_list_width(80), SIDE_LIST_MIN_WIDTH);
        assert_eq!(side_list_width(170), 42);
        assert_eq!(side_list_width(400), SIDE_LIST_MAX_WIDTH);
    }
}
