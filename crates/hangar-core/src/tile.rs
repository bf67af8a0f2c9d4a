//! The binary tile tree of a tab: splits and leaves.
//!
//! A leaf is a pane showing one session. A split has a direction
//! (`vertical`: `a` left, `b` right; `horizontal`: `a` top, `b` bottom) and a
//! ratio (the share of `a`) that is always clamped to 0.1..=0.9. Closing one
//! side of a split collapses the split into the survivor.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::session_id::SessionId;

pub const MIN_RATIO: f32 = 0.1;
pub const MAX_RATIO: f32 = 0.9;

/// Clamp a split ratio into 0.1..=0.9; a NaN becomes an even split.
pub fn clamp_ratio(ratio: f32) -> f32 {
    if ratio.is_nan() {
        0.5
    } else {
        ratio.clamp(MIN_RATIO, MAX_RATIO)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// `a` on the left, `b` on the right.
    Vertical,
    /// `a` on top, `b` below.
    Horizontal,
}

/// Which side of a split a tile is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    A,
    B,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Tile {
    Leaf {
        session: SessionId,
    },
    Split {
        direction: Direction,
        ratio: f32,
        a: Box<Tile>,
        b: Box<Tile>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TileError {
    #[error("session {0} is not a pane of this tab")]
    NoSuchLeaf(SessionId),
    #[error("session {0} is already a pane of this tab")]
    DuplicateLeaf(SessionId),
}

/// What was left after a leaf was closed, and where the leaf was, so that a
/// buried pane can be put back beside its sibling.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafRemoval {
    /// The tree without the leaf; `None` when the leaf was the whole tree
    /// (the tab is now empty).
    pub remaining: Option<Tile>,
    /// The first leaf (in reading order) of the subtree that shared the split.
    pub sibling: Option<SessionId>,
    /// The side of the split the removed leaf was on.
    pub side: Option<Side>,
    pub direction: Option<Direction>,
    pub ratio: Option<f32>,
}

/// A direction to move the focus in, as arrow keys do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FocusMove {
    Left,
    Right,
    Up,
    Down,
}

/// A leaf's share of its tab's area, in a unit square (`x`, `y` from the top
/// left corner).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Region {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Region {
    pub const FULL: Region = Region {
        x: 0.0,
        y: 0.0,
        w: 1.0,
        h: 1.0,
    };

    fn split(self, direction: Direction, ratio: f32) -> (Region, Region) {
        match direction {
            Direction::Vertical => {
                let wa = self.w * ratio;
                (
                    Region { w: wa, ..self },
                    Region {
                        x: self.x + wa,
                        w: self.w - wa,
                        ..self
                    },
                )
            }
            Direction::Horizontal => {
                let ha = self.h * ratio;
                (
                    Region { h: ha, ..self },
                    Region {
                        y: self.y + ha,
                        h: self.h - ha,
                        ..self
                    },
                )
            }
        }
    }
}

impl Tile {
    pub fn leaf(session: SessionId) -> Tile {
        Tile::Leaf { session }
    }

    /// Leaves in reading order (`a` before `b`, depth first).
    pub fn leaves(&self) -> Vec<SessionId> {
        let mut out = Vec::new();
        self.visit_leaves(&mut |id| out.push(id.clone()));
        out
    }

    fn visit_leaves<'a>(&'a self, f: &mut impl FnMut(&'a SessionId)) {
        match self {
            Tile::Leaf { session } => f(session),
            Tile::Split { a, b, .. } => {
                a.visit_leaves(f);
                b.visit_leaves(f);
            }
        }
    }

    pub fn contains(&self, id: &SessionId) -> bool {
        match self {
            Tile::Leaf { session } => session == id,
            Tile::Split { a, b, .. } => a.contains(id) || b.contains(id),
        }
    }

    /// The first leaf in reading order.
    pub fn first_leaf(&self) -> &SessionId {
        match self {
            Tile::Leaf { session } => session,
            Tile::Split { a, .. } => a.first_leaf(),
        }
    }

    pub fn leaf_count(&self) -> usize {
        match self {
            Tile::Leaf { .. } => 1,
            Tile::Split { a, b, .. } => a.leaf_count() + b.leaf_count(),
        }
    }

    fn find_leaf_mut(&mut self, id: &SessionId) -> Option<&mut Tile> {
        match self {
            Tile::Leaf { session } if session == id => Some(self),
            Tile::Leaf { .. } => None,
            Tile::Split { a, b, .. } => match a.find_leaf_mut(id) {
                Some(found) => Some(found),
                None => b.find_leaf_mut(id),
            },
        }
    }

    /// Replace leaf `target` with a split of `target` and `new`, `new` on
    /// `new_side`; the ratio is clamped.
    pub fn split(
        &mut self,
        target: &SessionId,
        new: SessionId,
        direction: Direction,
        ratio: f32,
        new_side: Side,
    ) -> Result<(), TileError> {
        if self.contains(&new) {
            return Err(TileError::DuplicateLeaf(new));
        }
        let node = self
            .find_leaf_mut(target)
            .ok_or_else(|| TileError::NoSuchLeaf(target.clone()))?;
        let old = std::mem::replace(node, Tile::leaf(SessionId(String::new())));
        let new = Box::new(Tile::leaf(new));
        let (a, b) = match new_side {
            Side::A => (new, Box::new(old)),
            Side::B => (Box::new(old), new),
        };
        *node = Tile::Split {
            direction,
            ratio: clamp_ratio(ratio),
            a,
            b,
        };
        Ok(())
    }

    /// Remove a leaf; its split collapses into the survivor.
    pub fn close(self, id: &SessionId) -> Result<LeafRemoval, TileError> {
        if !self.contains(id) {
            return Err(TileError::NoSuchLeaf(id.clone()));
        }
        Ok(self.close_present(id))
    }

    /// `close` for a tree known to contain `id`; removes its first occurrence.
    pub(crate) fn close_present(self, id: &SessionId) -> LeafRemoval {
        match self {
            Tile::Leaf { .. } => LeafRemoval {
                remaining: None,
                sibling: None,
                side: None,
                direction: None,
                ratio: None,
            },
            Tile::Split {
                direction,
                ratio,
                a,
                b,
            } => {
                let (inner, other, side) = if a.contains(id) {
                    (a, b, Side::A)
                } else {
                    (b, a, Side::B)
                };
                let mut removal = inner.close_present(id);
                match removal.remaining.take() {
                    // The leaf was this split's direct child: the split collapses.
                    None => LeafRemoval {
                        sibling: Some(other.first_leaf().clone()),
                        remaining: Some(*other),
                        side: Some(side),
                        direction: Some(direction),
                        ratio: Some(ratio),
                    },
                    Some(rest) => {
                        let (a, b) = match side {
                            Side::A => (Box::new(rest), other),
                            Side::B => (other, Box::new(rest)),
                        };
                        removal.remaining = Some(Tile::Split {
                            direction,
                            ratio,
                            a,
                            b,
                        });
                        removal
                    }
                }
            }
        }
    }

    /// Set the ratio of the split directly containing leaf `id` (clamped).
    /// A leaf that is the whole tree has no split; that is not an error.
    pub fn set_ratio(&mut self, id: &SessionId, ratio: f32) -> Result<(), TileError> {
        fn go(tile: &mut Tile, id: &SessionId, new_ratio: f32) -> bool {
            match tile {
                Tile::Leaf { .. } => false,
                Tile::Split { ratio, a, b, .. } => {
                    let direct = |t: &Tile| matches!(t, Tile::Leaf { session } if session == id);
                    if direct(a) || direct(b) {
                        *ratio = new_ratio;
                        true
                    } else {
                        go(a, id, new_ratio) || go(b, id, new_ratio)
                    }
                }
            }
        }
        if !self.contains(id) {
            return Err(TileError::NoSuchLeaf(id.clone()));
        }
        go(self, id, clamp_ratio(ratio));
        Ok(())
    }

    /// The ratio of the nearest split of `direction` around leaf `id`: the
    /// one directly holding it when it has that direction, else the closest
    /// ancestor that has. This is the divider a "resize left/right" (or
    /// "up/down") key moves: in `a | (b / c)`, widening `c` moves the
    /// vertical divider even though `c`'s own split is horizontal. `None`
    /// when no split of that direction holds the leaf.
    pub fn enclosing_ratio(&self, id: &SessionId, direction: Direction) -> Option<f32> {
        let path = self.enclosing_split_path(id, direction)?;
        match self.at_path(&path) {
            Tile::Split { ratio, .. } => Some(*ratio),
            Tile::Leaf { .. } => None,
        }
    }

    /// Set the ratio (clamped) of the split `enclosing_ratio` names.
    /// `Ok(false)` when no split of that direction holds the leaf.
    pub fn set_enclosing_ratio(
        &mut self,
        id: &SessionId,
        direction: Direction,
        ratio: f32,
    ) -> Result<bool, TileError> {
        if !self.contains(id) {
            return Err(TileError::NoSuchLeaf(id.clone()));
        }
        let Some(path) = self.enclosing_split_path(id, direction) else {
            return Ok(false);
        };
        let mut tile = self;
        for side in path {
            tile = match tile {
                Tile::Split { a, .. } if side == Side::A => a,
                Tile::Split { b, .. } => b,
                Tile::Leaf { .. } => return Ok(false),
            };
        }
        match tile {
            Tile::Split { ratio: r, .. } => {
                *r = clamp_ratio(ratio);
                Ok(true)
            }
            Tile::Leaf { .. } => Ok(false),
        }
    }

    /// The sides taken from the root to the deepest split of `direction` on
    /// the way to leaf `id`.
    fn enclosing_split_path(&self, id: &SessionId, want: Direction) -> Option<Vec<Side>> {
        let mut path = Vec::new();
        let mut best = None;
        let mut tile = self;
        loop {
            match tile {
                Tile::Leaf { session } => return (session == id).then_some(best).flatten(),
                Tile::Split {
                    direction, a, b, ..
                } => {
                    if *direction == want {
                        best = Some(path.clone());
                    }
                    if a.contains(id) {
                        path.push(Side::A);
                        tile = a;
                    } else if b.contains(id) {
                        path.push(Side::B);
                        tile = b;
                    } else {
                        return None;
                    }
                }
            }
        }
    }

    fn at_path(&self, path: &[Side]) -> &Tile {
        path.iter().fold(self, |tile, side| match (tile, side) {
            (Tile::Split { a, .. }, Side::A) => a,
            (Tile::Split { b, .. }, Side::B) => b,
            (leaf, _) => leaf,
        })
    }

    /// Keep the leaves `keep` accepts, visited in reading order; splits that
    /// lose a side collapse. `None` when no leaf is kept.
    pub fn retain_leaves(self, keep: &mut impl FnMut(&SessionId) -> bool) -> Option<Tile> {
        match self {
            Tile::Leaf { ref session } => keep(session).then_some(self),
            Tile::Split {
                direction,
                ratio,
                a,
                b,
            } => {
                let a = a.retain_leaves(keep);
                let b = b.retain_leaves(keep);
                match (a, b) {
                    (Some(a), Some(b)) => Some(Tile::Split {
                        direction,
                        ratio,
                        a: Box::new(a),
                        b: Box::new(b),
                    }),
                    (Some(one), None) | (None, Some(one)) => Some(one),
                    (None, None) => None,
                }
            }
        }
    }

    /// Clamp every split's ratio; returns how many changed.
    pub fn clamp_ratios(&mut self) -> usize {
        match self {
            Tile::Leaf { .. } => 0,
            Tile::Split { ratio, a, b, .. } => {
                let clamped = clamp_ratio(*ratio);
                let changed = usize::from(clamped.to_bits() != ratio.to_bits());
                *ratio = clamped;
                changed + a.clamp_ratios() + b.clamp_ratios()
            }
        }
    }

    /// Each leaf's share of the tab's area, in reading order.
    pub fn regions(&self) -> Vec<(SessionId, Region)> {
        fn go(tile: &Tile, area: Region, out: &mut Vec<(SessionId, Region)>) {
            match tile {
                Tile::Leaf { session } => out.push((session.clone(), area)),
                Tile::Split {
                    direction,
                    ratio,
                    a,
                    b,
                } => {
                    let (ra, rb) = area.split(*direction, clamp_ratio(*ratio));
                    go(a, ra, out);
                    go(b, rb, out);
                }
            }
        }
        let mut out = Vec::new();
        go(self, Region::FULL, &mut out);
        out
    }

    /// The pane the focus lands on when moving from `leaf` in `dir`: among
    /// the panes sharing the edge on that side, the one overlapping `leaf`
    /// the most (the first in reading order on a tie). `None` at the edge of
    /// the tab or when `leaf` is not a pane here.
    pub fn neighbour(&self, leaf: &SessionId, dir: FocusMove) -> Option<SessionId> {
        const EPS: f32 = 1e-4;
        let regions = self.regions();
        let (_, from) = regions.iter().find(|(id, _)| id == leaf)?;
        let overlap = |lo1: f32, len1: f32, lo2: f32, len2: f32| {
            ((lo1 + len1).min(lo2 + len2) - lo1.max(lo2)).max(0.0)
        };
        let mut best: Option<(&SessionId, f32)> = None;
        for (id, r) in &regions {
            if id == leaf {
                continue;
            }
            let (touches, shared) = match dir {
                FocusMove::Left => (
                    (r.x + r.w - from.x).abs() < EPS,
                    overlap(r.y, r.h, from.y, from.h),
                ),
                FocusMove::Right => (
                    (from.x + from.w - r.x).abs() < EPS,
                    overlap(r.y, r.h, from.y, from.h),
                ),
                FocusMove::Up => (
                    (r.y + r.h - from.y).abs() < EPS,
                    overlap(r.x, r.w, from.x, from.w),
                ),
                FocusMove::Down => (
                    (from.y + from.h - r.y).abs() < EPS,
                    overlap(r.x, r.w, from.x, from.w),
                ),
            };
            if touches && shared > EPS && best.is_none_or(|(_, s)| shared > s + EPS) {
                best = Some((id, shared));
            }
        }
        best.map(|(id, _)| id.clone())
    }
}

/// Shorthand for building trees in this crate's unit tests (here, so the
/// tree's own tests need nothing that names the workspace model;
/// `test_support` passes it on to the others).
#[cfg(test)]
pub(crate) mod shorthand {
    use super::{Direction, Tile};
    use crate::session_id::SessionId;

    pub fn sid(id: &str) -> SessionId {
        SessionId::new(id)
    }

    pub fn ids(list: &[&str]) -> Vec<SessionId> {
        list.iter().map(|s| sid(s)).collect()
    }

    pub fn leaf(id: &str) -> Tile {
        Tile::leaf(sid(id))
    }

    pub fn split(direction: Direction, ratio: f32, a: Tile, b: Tile) -> Tile {
        Tile::Split {
            direction,
            ratio,
            a: Box::new(a),
            b: Box::new(b),
        }
    }

    pub fn v(a: Tile, b: Tile) -> Tile {
        split(Direction::Vertical, 0.5, a, b)
    }

    pub fn h(a: Tile, b: Tile) -> Tile {
        split(Direction::Horizontal, 0.5, a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::shorthand::{h, ids, leaf, sid, split, v};
    use super::*;

    #[test]
    fn leaves_are_listed_in_reading_order() {
        let tree = v(h(leaf("a"), leaf("b")), v(leaf("c"), leaf("d")));
        assert_eq!(tree.leaves(), ids(&["a", "b", "c", "d"]));
        assert_eq!(tree.first_leaf(), &sid("a"));
        assert_eq!(tree.leaf_count(), 4);
        assert!(tree.contains(&sid("c")));
        assert!(!tree.contains(&sid("z")));
    }

    #[test]
    fn splitting_a_leaf_puts_the_new_pane_on_the_requested_side() {
        let mut tree = leaf("a");
        tree.split(&sid("a"), sid("b"), Direction::Vertical, 0.5, Side::B)
            .unwrap();
        tree.split(&sid("a"), sid("c"), Direction::Horizontal, 0.3, Side::A)
            .unwrap();
        let expected = v(
            split(Direction::Horizontal, 0.3, leaf("c"), leaf("a")),
            leaf("b"),
        );
        assert_eq!(tree, expected);
    }

    #[test]
    fn splitting_refuses_a_missing_target_or_a_leaf_already_present_and_changes_nothing() {
        let mut tree = v(leaf("a"), leaf("b"));
        let before = tree.clone();
        assert_eq!(
            tree.split(&sid("x"), sid("c"), Direction::Vertical, 0.5, Side::B),
            Err(TileError::NoSuchLeaf(sid("x")))
        );
        assert_eq!(
            tree.split(&sid("a"), sid("b"), Direction::Vertical, 0.5, Side::B),
            Err(TileError::DuplicateLeaf(sid("b")))
        );
        assert_eq!(tree, before);
    }

    #[test]
    fn ratios_are_clamped_between_a_tenth_and_nine_tenths_and_nan_becomes_even() {
        assert_eq!(clamp_ratio(0.0), MIN_RATIO);
        assert_eq!(clamp_ratio(-3.0), MIN_RATIO);
        assert_eq!(clamp_ratio(1.0), MAX_RATIO);
        assert_eq!(clamp_ratio(f32::INFINITY), MAX_RATIO);
        assert_eq!(clamp_ratio(0.42), 0.42);
        assert_eq!(clamp_ratio(f32::NAN), 0.5);

        let mut tree = leaf("a");
        tree.split(&sid("a"), sid("b"), Direction::Vertical, 0.99, Side::B)
            .unwrap();
        assert!(matches!(tree, Tile::Split { ratio, .. } if ratio == MAX_RATIO));
        tree.set_ratio(&sid("b"), 0.01).unwrap();
        assert!(matches!(tree, Tile::Split { ratio, .. } if ratio == MIN_RATIO));

        let mut garbage = v(
            split(Direction::Horizontal, f32::NAN, leaf("a"), leaf("b")),
            leaf("c"),
        );
        assert_eq!(garbage.clamp_ratios(), 1);
        assert_eq!(garbage.clamp_ratios(), 0);
        assert_eq!(garbage, v(h(leaf("a"), leaf("b")), leaf("c")));
    }

    #[test]
    fn closing_a_leaf_collapses_its_split_and_names_the_sibling_side_and_ratio() {
        let tree = v(
            split(Direction::Horizontal, 0.3, leaf("a"), leaf("b")),
            leaf("c"),
        );
        let removal = tree.close(&sid("a")).unwrap();
        assert_eq!(removal.remaining, Some(v(leaf("b"), leaf("c"))));
        assert_eq!(removal.sibling, Some(sid("b")));
        assert_eq!(removal.side, Some(Side::A));
        assert_eq!(removal.direction, Some(Direction::Horizontal));
        assert_eq!(removal.ratio, Some(0.3));
    }

    #[test]
    fn closing_a_leaf_beside_a_split_names_that_splits_first_leaf_as_sibling() {
        let tree = v(leaf("a"), h(leaf("b"), leaf("c")));
        let removal = tree.close(&sid("a")).unwrap();
        assert_eq!(removal.remaining, Some(h(leaf("b"), leaf("c"))));
        assert_eq!(removal.sibling, Some(sid("b")));
        assert_eq!(removal.side, Some(Side::A));
    }

    #[test]
    fn closing_the_only_leaf_reports_an_emptied_tab_with_remaining_none() {
        let removal = leaf("a").close(&sid("a")).unwrap();
        assert_eq!(removal.remaining, None);
        assert_eq!(removal.sibling, None);
        assert_eq!(removal.side, None);
    }

    #[test]
    fn closing_a_leaf_that_is_not_there_is_an_error() {
        assert_eq!(
            v(leaf("a"), leaf("b")).close(&sid("x")),
            Err(TileError::NoSuchLeaf(sid("x")))
        );
    }

    #[test]
    fn resizing_a_pane_moves_the_nearest_enclosing_split_of_that_direction() {
        // a | (b / c): c's own split is horizontal; left/right moves the root.
        let mut tree = v(leaf("a"), h(leaf("b"), leaf("c")));
        assert_eq!(
            tree.enclosing_ratio(&sid("c"), Direction::Vertical),
            Some(0.5)
        );
        assert_eq!(
            tree.set_enclosing_ratio(&sid("c"), Direction::Vertical, 0.3),
            Ok(true)
        );
        assert_eq!(
            tree,
            split(Direction::Vertical, 0.3, leaf("a"), h(leaf("b"), leaf("c")))
        );
        // Up/down moves c's own horizontal split.
        assert_eq!(
            tree.set_enclosing_ratio(&sid("c"), Direction::Horizontal, 0.95),
            Ok(true)
        );
        assert_eq!(
            tree,
            split(
                Direction::Vertical,
                0.3,
                leaf("a"),
                split(Direction::Horizontal, 0.9, leaf("b"), leaf("c"))
            )
        );
        // The nearest one wins over a farther one of the same direction.
        let mut nested = v(leaf("a"), h(leaf("b"), v(leaf("c"), leaf("d"))));
        nested
            .set_enclosing_ratio(&sid("d"), Direction::Vertical, 0.2)
            .unwrap();
        assert_eq!(
            nested.enclosing_ratio(&sid("a"), Direction::Vertical),
            Some(0.5)
        );
        assert_eq!(
            nested.enclosing_ratio(&sid("d"), Direction::Vertical),
            Some(0.2)
        );
        // No split that way around: nothing changes.
        let mut only_vertical = v(leaf("a"), leaf("b"));
        assert_eq!(
            only_vertical.set_enclosing_ratio(&sid("a"), Direction::Horizontal, 0.2),
            Ok(false)
        );
        assert_eq!(
            only_vertical.enclosing_ratio(&sid("a"), Direction::Horizontal),
            None
        );
        assert_eq!(
            only_vertical.set_enclosing_ratio(&sid("x"), Direction::Vertical, 0.2),
            Err(TileError::NoSuchLeaf(sid("x")))
        );
    }

    #[test]
    fn set_ratio_changes_only_the_split_directly_holding_the_leaf() {
        let mut tree = v(leaf("a"), h(leaf("b"), leaf("c")));
        tree.set_ratio(&sid("c"), 0.7).unwrap();
        assert_eq!(
            tree,
            v(
                leaf("a"),
                split(Direction::Horizontal, 0.7, leaf("b"), leaf("c"))
            )
        );
        assert_eq!(
            tree.set_ratio(&sid("x"), 0.7),
            Err(TileError::NoSuchLeaf(sid("x")))
        );
        let mut single = leaf("a");
        assert_eq!(single.set_ratio(&sid("a"), 0.7), Ok(()));
    }

    #[test]
    fn retaining_leaves_collapses_splits_that_lose_a_side() {
        let tree = v(h(leaf("a"), leaf("b")), v(leaf("c"), leaf("d")));
        let kept = tree
            .clone()
            .retain_leaves(&mut |id| id != &sid("b") && id != &sid("c"));
        assert_eq!(kept, Some(v(leaf("a"), leaf("d"))));
        assert_eq!(tree.retain_leaves(&mut |_| false), None);
    }

    #[test]
    fn focus_moves_to_the_pane_sharing_the_edge_in_that_direction() {
        // a | b
        // --+--
        // a | c
        let tree = v(leaf("a"), h(leaf("b"), leaf("c")));
        assert_eq!(tree.neighbour(&sid("a"), FocusMove::Right), Some(sid("b")));
        assert_eq!(tree.neighbour(&sid("c"), FocusMove::Left), Some(sid("a")));
        assert_eq!(tree.neighbour(&sid("b"), FocusMove::Down), Some(sid("c")));
        assert_eq!(tree.neighbour(&sid("c"), FocusMove::Up), Some(sid("b")));
        assert_eq!(tree.neighbour(&sid("a"), FocusMove::Left), None);
        assert_eq!(tree.neighbour(&sid("b"), FocusMove::Up), None);
        assert_eq!(tree.neighbour(&sid("x"), FocusMove::Up), None);
    }

    #[test]
    fn regions_tile_the_whole_area_without_overlap() {
        let tree = v(
            leaf("a"),
            split(Direction::Horizontal, 0.25, leaf("b"), leaf("c")),
        );
        let regions = tree.regions();
        let area: f32 = regions.iter().map(|(_, r)| r.w * r.h).sum();
        assert!((area - 1.0).abs() < 1e-6);
        assert_eq!(
            regions[2].1,
            Region {
                x: 0.5,
                y: 0.25,
                w: 0.5,
                h: 0.75
            }
        );
    }

    #[test]
    fn a_tile_tree_round_trips_through_json() {
        let tree = v(leaf("a"), h(leaf("b"), leaf("c")));
        let json = serde_json::to_string(&tree).unwrap();
        assert_eq!(serde_json::from_str::<Tile>(&json).unwrap(), tree);
    }
}
