//! What hangar knows about Codex: its adapter (`adapter`: command line,
//! CLI facts, identity proof) and its rollouts (`transcript`).

pub mod adapter;
pub mod transcript;
