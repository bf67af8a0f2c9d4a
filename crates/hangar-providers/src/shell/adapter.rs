//! The plain adapter, of the shell and of custom providers: every default
//! of [`Adapter`] (no resume, no transcript, no MCP server, no package); a
//! custom provider's arguments come from config.toml (`launch`).

use crate::adapter::Adapter;

pub struct Plain;

impl Adapter for Plain {}
