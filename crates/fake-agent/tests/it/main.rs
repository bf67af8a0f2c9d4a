//! hangar-fake-agent's process-level tests, in one test binary (each
//! module was a binary of its own). A new test file goes in this folder as
//! `NAME.rs`, with `mod NAME;` added below, and takes the harness with
//! `use crate::support;` (not `mod support;`).

mod support;

mod claude_edges;
mod claude_transcripts;
mod codex_rollouts;
mod codex_shared_server;
mod lifecycle;
mod turns;
