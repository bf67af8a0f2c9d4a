//! hangar-protocol: the versioned wire protocol between hangar clients (the
//! CLI, attach, the TUI, the MCP shim) and the daemon.
//!
//! Both sides depend on this crate and nothing else shares wire types. See
//! `frame` for the byte framing and `message` for the control messages;
//! `reply` names each request's reply type (and says how to add one);
//! `paths` says where a home keeps its socket and files, so a client finds
//! its daemon without depending on the daemon crate.

#![forbid(unsafe_code)]

pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
pub mod message;
pub mod mux;
pub mod paths;
pub mod reply;
pub mod view;

pub use frame::{Decoder, Frame, FrameError};
pub use message::{PROTOCOL_VERSION, Reply, Request};
