//! OpenCode's adapter: `--session ID`; no transcript file (its database,
//! `database`, holds the conversation).

use crate::adapter::{Adapter, SessionArgs};

pub struct Opencode;

impl Adapter for Opencode {
    fn session_args(
        &self,
        resume: Option<&str>,
        _dangerous: bool,
        _sandboxed: bool,
        _mint: &dyn Fn() -> String,
    ) -> SessionArgs {
        let mut out = SessionArgs::default();
        if let Some(id) = resume {
            out.args.extend(["--session".to_owned(), id.to_owned()]);
        }
        out
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("opencode-ai")
    }
}
