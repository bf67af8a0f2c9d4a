//! What hangar knows about Codex: its adapter (`adapter`).

pub mod adapter;
