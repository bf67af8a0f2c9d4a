//! OpenCode's adapter: `--session ID`; no transcript file (its database,
//! `database`, holds the conversation); forks with `--session ID --fork`.

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

    /// OpenCode 1.18.33: `--session <id> --fork` opens a copy of the
    /// conversation under a new `ses_` id (titled `<title> (fork #N)`); the
    /// id is learnt from its database like any other conversation's.
    fn fork_args(
        &self,
        from: &str,
        _own: Option<&str>,
        _dangerous: bool,
        _sandboxed: bool,
        _mint: &dyn Fn() -> String,
    ) -> Option<SessionArgs> {
        Some(SessionArgs {
            args: vec!["--session".to_owned(), from.to_owned(), "--fork".to_owned()],
            minted: None,
        })
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("opencode-ai")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_opens_the_old_session_with_fork_and_opencode_chooses_the_id() {
        let mint = || unreachable!("opencode chooses its own id");
        let a = Opencode
            .fork_args("ses_1", None, false, false, &mint)
            .unwrap();
        assert_eq!(a.args, ["--session", "ses_1", "--fork"]);
        assert_eq!(a.minted, None);
    }
}
