//! The signals activity is read from, in order of trust: the transcript,
//! the capture proxy, the provider's hooks, and the screen as a last resort.
//!
//! Reading each provider's signals (its transcript, its hook events, its
//! screen prompts) is hangar-providers' (`transcript::activity`,
//! `claude::hooks`, `screen`); what is left here is the daemon's part: the
//! proxy's in-flight state and the hook settings file.

pub mod hooks;
pub mod proxy;
