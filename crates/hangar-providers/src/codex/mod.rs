//! What hangar knows about Codex: its adapter (`adapter`: command line,
//! CLI facts, identity proof), its rollouts (`transcript`) and what they
//! say about usage and limits (`usage`).

pub mod adapter;
pub mod transcript;
pub mod usage;
