//! The signals activity is read from, in order of trust: the transcript,
//! the capture proxy, the provider's hooks, and the screen as a last resort.

pub mod hooks;
pub mod proxy;
pub mod screen;
pub mod transcript;
