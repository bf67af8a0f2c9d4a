//! OpenCode's adapter: `--session ID`; no transcript file (its database,
//! `database`, holds the conversation, proven against the prompts hangar
//! typed).

use hangar_core::cli_versions::Version;

use hangar_core::sandbox::StateFolder;

use crate::adapter::{Adapter, SessionArgs, UsageFact};

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

    /// Its database's assistant messages (`usage`); none before OpenCode
    /// made its database.
    fn stored_usage(
        &self,
        conversation: &str,
        since_ms: i64,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(Vec<UsageFact>, i64)>, String> {
        let Some(db) = super::database::database_path(var).filter(|p| p.is_file()) else {
            return Ok(Some((Vec::new(), since_ms)));
        };
        super::usage::read_usage(&db, conversation, since_ms)
            .map(Some)
            .map_err(|e| format!("cannot read OpenCode's database {}: {e}", db.display()))
    }

    fn npm_package(&self) -> Option<&'static str> {
        Some("opencode-ai")
    }

    fn tested_version(&self) -> Option<Version> {
        Some(Version(1, 18, 33))
    }

    fn conversation_in_database(&self) -> bool {
        true
    }

    fn own_sandbox(&self) -> Option<&'static str> {
        Some("none: OpenCode has no sandbox of its own")
    }

    fn permission_prompts(&self) -> &'static [&'static str] {
        &["Permission required"]
    }

    /// Its data folder (`$XDG_DATA_HOME/opencode`, its SQLite database)
    /// and its config folder.
    fn sandbox_state(&self) -> &'static [StateFolder] {
        &[
            StateFolder {
                name: "opencode-data",
                inside: ".local/share/opencode",
                var: "XDG_DATA_HOME",
                value: ".local/share",
            },
            StateFolder {
                name: "opencode-config",
                inside: ".config/opencode",
                var: "XDG_CONFIG_HOME",
                value: ".config",
            },
        ]
    }
}
