//! One session's activity over time and the debounce that keeps a
//! flickering signal from flapping it.
//!
//! The rule and its tests live in `hangar_core::activity_debounce` (pure, the
//! caller passes the clock); the daemon's activity code names it from here.

pub use hangar_core::activity_debounce::{Tracker, Transition};
