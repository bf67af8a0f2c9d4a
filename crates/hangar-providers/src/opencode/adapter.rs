//! OpenCode's adapter: `--session ID`; no transcript file (its database,
//! `database`, holds the conversation, proven against the prompts hangar
//! typed).

use hangar_core::cli_versions::Version;

use hangar_core::sandbox::StateFolder;

use std::path::{Path, PathBuf};

use hangar_core::activity::Reading;

use crate::adapter::{Adapter, SessionArgs, UsageFact};
use crate::launch::{LaunchSpec, McpServer};
use crate::sandboxed::{self, SeedFrom, Seeded};

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

    fn takes_mcp(&self) -> bool {
        true
    }

    /// OpenCode 1.18.33 reads a config document from the variable
    /// `OPENCODE_CONFIG_CONTENT` and merges it over its config files last
    /// (its config loader, read in the shipped binary); a local MCP server
    /// there is `"mcp": {"<name>": {"type": "local", "command": [program,
    /// args..], "environment": {..}, "enabled": true}}` (its
    /// `McpLocalConfig`), and its tools are offered to the model as
    /// `<name>_<tool>` (`hangar_goal_done`). OpenCode's default permission
    /// for a tool is `allow` (`"*": "allow"`), so `goal_done` runs without
    /// asking unless the person's own config says otherwise. The server's
    /// environment (its token) rides in OpenCode's own environment, never on
    /// its command line. A document the person already gave in that
    /// variable (`[providers.opencode] env`, else the daemon's own
    /// environment, which a sandboxed session never gets: its server is
    /// hangar's binary where the sandbox shows it) keeps everything it says,
    /// with hangar's server added.
    fn with_mcp(&self, mut spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
        const VAR: &str = "OPENCODE_CONFIG_CONTENT";
        let sandboxed = server.command == Path::new(hangar_core::sandbox::INSIDE_HANGAR);
        let given = spec
            .env
            .get(VAR)
            .cloned()
            .or_else(|| (!sandboxed).then(|| std::env::var(VAR).ok()).flatten())
            .filter(|t| !t.trim().is_empty());
        let Some(content) = config_content(given.as_deref(), server) else {
            // Not a JSON object: OpenCode refuses it itself and says so;
            // hangar leaves the person's text as it is.
            return spec;
        };
        spec.env.insert(VAR.to_owned(), content);
        spec
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

    /// Its database's newest message of the conversation (`turns`).
    fn stored_reading(
        &self,
        conversation: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Reading>, String> {
        let Some(db) = super::database::database_path(var).filter(|p| p.is_file()) else {
            return Ok(None);
        };
        super::turns::turn_reading(&db, conversation)
            .map_err(|e| format!("cannot read OpenCode's database {}: {e}", db.display()))
    }

    fn stored_folder(&self, var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        super::database::database_path(var)?
            .parent()
            .map(Path::to_path_buf)
    }

    /// OpenCode 1.18.33 retries a refused request (a 429 is retryable) by
    /// itself after the refusal's `retry-after-ms` or `retry-after`
    /// (seconds or a date), capped only at about 24 days: read in the
    /// shipped binary (its session retry's delay function), and seen
    /// against the fake model API (`real_cli_usage.rs`).
    fn retries_after_a_refusal(&self) -> bool {
        true
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

    /// OpenCode 1.18.33 (a Bun binary) sends its model requests through
    /// `HTTPS_PROXY` and adds `NODE_EXTRA_CA_CERTS` to its built-in roots
    /// (seen running it through hangar's proxy against the fake model API's
    /// HTTPS side, `real_cli_usage.rs`): captured like claude. The proxy is
    /// its only source of a limit: its database keeps no `retry-after`.
    fn proxied(&self) -> bool {
        true
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

    /// Its `opencode.json`: the person's, secrets as placeholders
    /// (`{env:VAR}` and `{file:PATH}` references kept as they are).
    fn sandbox_settings(
        &self,
        from: &SeedFrom<'_>,
        mint: &mut dyn FnMut() -> String,
    ) -> Result<Seeded, String> {
        let (Some(person_file), Some(to)) = (
            from.person_file("XDG_CONFIG_HOME", ".config", "opencode/opencode.json"),
            from.state_dir("XDG_CONFIG_HOME")
                .map(|d| d.join("opencode.json")),
        ) else {
            return Ok(Seeded::default());
        };
        let Some(person) = sandboxed::read_settings(&person_file)? else {
            return Ok(Seeded::default());
        };
        let mut doc: serde_json::Value = serde_json::from_str(&person)
            .map_err(|e| format!("cannot read {}: {e}", person_file.display()))?;
        let replaced = sandboxed::json_without_secrets(&mut doc, mint);
        Ok(Seeded {
            files: vec![(to, serde_json::to_vec_pretty(&doc).unwrap_or_default())],
            replaced,
            key_vars: Vec::new(),
        })
    }
}

/// `given` (the person's `OPENCODE_CONFIG_CONTENT`, if any) with hangar's
/// MCP server as `mcp.hangar`; `None` when `given` is not a JSON object.
fn config_content(given: Option<&str>, server: &McpServer) -> Option<String> {
    let mut doc = match given {
        Some(text) => serde_json::from_str::<serde_json::Value>(text).ok()?,
        None => serde_json::json!({}),
    };
    let root = doc.as_object_mut()?;
    let mcp = root.entry("mcp").or_insert_with(|| serde_json::json!({}));
    if !mcp.is_object() {
        *mcp = serde_json::json!({});
    }
    let mut command = vec![server.command.display().to_string()];
    command.extend(server.args.iter().cloned());
    mcp["hangar"] = serde_json::json!({
        "type": "local",
        "command": command,
        "environment": server.env,
        "enabled": true,
    });
    // `goal_done` never asks, whatever the person's rule for every tool
    // (`"*": "ask"`): OpenCode 1.18.33's `permission` takes a rule per
    // permission name besides its own (`PermissionConfig`, a struct with a
    // record of any names), and this document is merged last.
    let permission = root
        .entry("permission")
        .or_insert_with(|| serde_json::json!({}));
    if let Some(all) = permission.as_str() {
        *permission = serde_json::json!({"*": all});
    }
    if !permission.is_object() {
        *permission = serde_json::json!({});
    }
    permission["hangar_goal_done"] = serde_json::json!("allow");
    Some(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandboxed_opencode_gets_the_persons_settings_without_their_secrets() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
        std::fs::write(
            home.join(".config/opencode/opencode.json"),
            r#"{"provider":{"lab":{"options":{"apiKey":"sk-real","baseURL":"http://x"}}},"other":{"apiKey":"{env:LAB}"}}"#,
        )
        .unwrap();
        let session = tmp.path().join("sandbox");
        let state = hangar_core::sandbox::state_binds(
            Opencode.sandbox_state(),
            &session.display().to_string(),
            "/home/p",
        );
        let env = |v: &str| (v == "HOME").then(|| home.clone());
        let from = SeedFrom {
            state: &state,
            cwd: "/w",
            var: &env,
        };
        let mut mint = || "ph-1".to_owned();
        let seeded = Opencode.sandbox_settings(&from, &mut mint).unwrap();
        let [(to, bytes)] = &seeded.files[..] else {
            panic!("one file: {:?}", seeded.files)
        };
        assert_eq!(to, &session.join("opencode-config/opencode.json"));
        let doc: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(doc["provider"]["lab"]["options"]["apiKey"], "ph-1");
        assert_eq!(doc["provider"]["lab"]["options"]["baseURL"], "http://x");
        assert_eq!(
            doc["other"]["apiKey"], "{env:LAB}",
            "a reference is no secret"
        );
        assert_eq!(seeded.replaced.len(), 1);
        assert!(Opencode.sandbox_trust(&from, &[]).unwrap().is_empty());
    }

    fn server() -> McpServer {
        McpServer {
            command: PathBuf::from("/bin/hangar"),
            args: vec!["mcp".into(), "--session".into(), "s1".into()],
            env: [("HANGAR_MCP_TOKEN".to_owned(), "tok".to_owned())].into(),
            config_file: PathBuf::from("/h/mcp/s1.json"),
        }
    }

    fn spec() -> LaunchSpec {
        LaunchSpec {
            program: PathBuf::from("/bin/opencode"),
            args: vec!["--session".into(), "ses_1".into()],
            env: Default::default(),
            resumed: true,
            minted: None,
        }
    }

    #[test]
    fn opencode_gets_hangar_s_mcp_server_in_its_config_variable_and_not_on_its_command_line() {
        let spec = Opencode.with_mcp(spec(), &server());
        assert_eq!(
            spec.args,
            ["--session", "ses_1"],
            "nothing on its command line"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&spec.env["OPENCODE_CONFIG_CONTENT"]).unwrap();
        assert_eq!(
            doc["mcp"]["hangar"],
            serde_json::json!({
                "type": "local",
                "command": ["/bin/hangar", "mcp", "--session", "s1"],
                "environment": {"HANGAR_MCP_TOKEN": "tok"},
                "enabled": true,
            })
        );
    }

    #[test]
    fn a_config_variable_the_person_gave_keeps_what_it_says_and_gains_hangar_s_server() {
        let mut given = spec();
        given.env.insert(
            "OPENCODE_CONFIG_CONTENT".into(),
            r#"{"model":"lab/m","mcp":{"theirs":{"type":"remote","url":"http://x"}}}"#.into(),
        );
        let spec = Opencode.with_mcp(given, &server());
        let doc: serde_json::Value =
            serde_json::from_str(&spec.env["OPENCODE_CONFIG_CONTENT"]).unwrap();
        assert_eq!(doc["model"], "lab/m");
        assert_eq!(doc["mcp"]["theirs"]["url"], "http://x");
        assert_eq!(doc["mcp"]["hangar"]["type"], "local");
        assert_eq!(doc["permission"]["hangar_goal_done"], "allow");
        // A rule for every tool is kept beside it.
        let mut ask = self::spec();
        ask.env.insert(
            "OPENCODE_CONFIG_CONTENT".into(),
            r#"{"permission":"ask"}"#.into(),
        );
        let spec = Opencode.with_mcp(ask, &server());
        let doc: serde_json::Value =
            serde_json::from_str(&spec.env["OPENCODE_CONFIG_CONTENT"]).unwrap();
        assert_eq!(
            doc["permission"],
            serde_json::json!({"*": "ask", "hangar_goal_done": "allow"})
        );
        // Text that is no JSON object is left for OpenCode to refuse.
        let mut bad = self::spec();
        bad.env
            .insert("OPENCODE_CONFIG_CONTENT".into(), "not json".into());
        let spec = Opencode.with_mcp(bad, &server());
        assert_eq!(spec.env["OPENCODE_CONFIG_CONTENT"], "not json");
    }

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
