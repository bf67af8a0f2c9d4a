//! The transcripts claude and codex write: where they are (`discovery`),
//! their messages (`messages`), what their last entries say the agent is
//! doing (`activity`), and whether a prompted turn has finished (`turns`).
//! Every reader has a bound on what it reads; none reads a whole transcript
//! to find one fact.

pub mod activity;
pub mod carry;
pub mod discovery;
pub mod messages;
pub mod turns;
