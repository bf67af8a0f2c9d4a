//! What hangar knows about Codex: its adapter (`adapter`) and what its
//! rollouts say about usage and limits (`usage`).

pub mod adapter;
pub mod usage;
