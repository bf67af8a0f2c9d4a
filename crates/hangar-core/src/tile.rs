//! The binary tile tree of a tab: splits and leaves.
//!
//! A leaf is a pane showing one session. A split has a direction
//! (`vertical`: `a` left, `b` right; `horizontal`: `a` top, `b` bottom) and a
//! ratio (the share of `a`) that is always clamped to 0.1..=0.9. Closing one
//! side of a split collapses the split into the survivor.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::SessionId;

pub const MIN_RATIO: f32 = 0.1;
pub const MAX_RATIO: f32 = 0.9;

/// Clamp a split ratio into 0.1..=0.9; a NaN becomes an even split.
pub fn clamp_ratio(ratio: f32) -> f32 {
    todo!()
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

impl Tile {
    pub fn leaf(session: SessionId) -> Tile {
        Tile::Leaf { session }
    }

    /// Leaves in reading order (`a` before `b`, depth first).
    pub fn leaves(&self) -> Vec<SessionId> {
        todo!()
    }

    pub fn contains(&self, id: &SessionId) -> bool {
        todo!()
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
        todo!()
    }

    /// Remove a leaf; its split collapses into the survivor.
    pub fn close(self, id: &SessionId) -> Result<LeafRemoval, TileError> {
        todo!()
    }

    /// Set the ratio of the split directly containing leaf `id` (clamped).
    pub fn set_ratio(&mut self, id: &SessionId, ratio: f32) -> Result<(), TileError> {
        todo!()
    }
}
