//! How each agent CLI is started fresh, resumed by its provider session id,
//! and put in dangerous mode.
//!
//! This module only computes a command line; it never starts anything. The
//! program is found from `HANGAR_<P>_BIN`, then config, then PATH, and a
//! missing program is a `LaunchError` the session shows as its `failed`
//! reason, never a daemon error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hangar_core::{Provider, ProviderSessionId, SessionMeta};

use crate::config::ProvidersConfig;

/// Everything needed to start a session's process.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Whether this start resumes a provider session or starts fresh.
    pub resumed: bool,
    /// A provider session id hangar chose for a fresh start (claude's
    /// `--session-id`); recorded at once with source `resume-request`.
    pub minted: Option<ProviderSessionId>,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LaunchError {
    #[error("{program} not found{where_}; set {var} or install it")]
    ProgramNotFound {
        program: String,
        where_: String,
        var: String,
    },
    #[error("unknown provider {0:?}: define it under [providers.{0}] in config.toml")]
    UnknownProvider(String),
}

/// The facts a launch depends on, gathered by the caller.
pub struct LaunchEnv<'a> {
    /// `[providers.NAME]` of config.toml.
    pub providers: &'a ProvidersConfig,
    pub var: &'a dyn Fn(&str) -> Option<String>,
    pub dangerous: bool,
    /// Mints a fresh provider session id (a uuid).
    pub mint: &'a dyn Fn() -> String,
    /// The conversation this start forks (`hangar_core::fork::fork_start_from`):
    /// the CLI's own fork of it instead of a resume or a fresh start.
    pub fork_from: Option<&'a str>,
}

fn env_var_name(provider: &Provider) -> String {
    match provider {
        Provider::Shell => "HANGAR_SHELL".to_owned(),
        other => format!(
            "HANGAR_{}_BIN",
            other.name().to_uppercase().replace('-', "_")
        ),
    }
}

/// Find a program: a path with a slash must exist and be a file; a bare name
/// is looked up on PATH.
pub fn find_program(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if name.contains('/') {
        let p = Path::new(name);
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the program for `provider` is, or why there is none.
pub fn resolve_program(provider: &Provider, env: &LaunchEnv<'_>) -> Result<PathBuf, LaunchError> {
    let var = env_var_name(provider);
    let from_config = env
        .providers
        .get(provider.name())
        .and_then(|p| p.program.clone());
    let (name, where_) = match ((env.var)(&var).filter(|v| !v.is_empty()), from_config) {
        (Some(v), _) => (v, format!(" (from {var})")),
        (None, Some(c)) => (c, " (from config.toml)".to_owned()),
        (None, None) => match provider {
            Provider::Shell => (
                (env.var)("SHELL")
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "/bin/sh".to_owned()),
                " (from SHELL)".to_owned(),
            ),
            Provider::Custom(name) => return Err(LaunchError::UnknownProvider(name.clone())),
            other => (
                crate::described::shipped(other.name())
                    .and_then(|d| d.config.program.clone())
                    .unwrap_or_else(|| other.name().to_owned()),
                " on PATH".to_owned(),
            ),
        },
    };
    find_program(&name, (env.var)("PATH").as_deref()).ok_or(LaunchError::ProgramNotFound {
        program: name,
        where_,
        var,
    })
}

/// The command line that starts (or resumes) `meta`.
pub fn launch_spec(meta: &SessionMeta, env: &LaunchEnv<'_>) -> Result<LaunchSpec, LaunchError> {
    // An adopted Agent Code terminal attaches to its tmux session. `=` makes
    // tmux match the name exactly, never as a prefix of another session's.
    if meta.provider == Provider::Shell
        && let Some(name) = &meta.tmux_session
        && let Some(tmux) = find_program("tmux", (env.var)("PATH").as_deref())
    {
        return Ok(LaunchSpec {
            program: tmux,
            args: vec![
                "attach-session".to_owned(),
                "-t".to_owned(),
                format!("={name}"),
            ],
            env: BTreeMap::new(),
            resumed: false,
            minted: None,
        });
    }
    let program = resolve_program(&meta.provider, env)?;
    let resume = meta.durable_provider_id().map(str::to_owned);
    let custom = env.providers.get(meta.provider.name());
    // A CLI described in a file (shipped, or `[providers.NAME]` of a custom
    // one): its description says the arguments.
    if let Some(described) = crate::described::description(&meta.provider, env.providers) {
        let state = crate::described::state_folder(&described, env.var);
        let start = crate::described::Start {
            resume: resume.as_deref(),
            dangerous: env.dangerous,
            cwd: &meta.cwd,
            state: state.as_deref(),
        };
        if let Some(from) = env.fork_from
            && let Some(fork) = crate::described::fork_args(
                &described,
                from,
                resume.as_deref().filter(|own| *own != from),
                &start,
                env.mint,
            )
        {
            return Ok(LaunchSpec {
                program,
                args: fork.args,
                env: described.env.clone(),
                resumed: true,
                minted: fork.minted,
            });
        }
        let start_args = crate::described::session_args(&described, &start, env.mint);
        return Ok(LaunchSpec {
            program,
            args: start_args.args,
            env: described.env.clone(),
            // A minted conversation the CLI had not recorded is started
            // fresh under a new id: not a resume.
            resumed: resume.is_some() && start_args.minted.is_none(),
            minted: start_args.minted,
        });
    }
    if let Some(from) = env.fork_from
        && let Some(fork) = crate::adapter::adapter(&meta.provider).fork_args(
            from,
            resume.as_deref().filter(|own| *own != from),
            env.dangerous,
            meta.sandbox.is_some(),
            env.mint,
        )
    {
        return Ok(LaunchSpec {
            program,
            args: fork.args,
            env: start_env(&meta.provider, custom),
            // It carries a conversation on, as a resume does.
            resumed: true,
            minted: fork.minted,
        });
    }
    let start = crate::adapter::adapter(&meta.provider).session_args(
        resume.as_deref(),
        env.dangerous,
        meta.sandbox.is_some(),
        env.mint,
    );
    let env_vars = start_env(&meta.provider, custom);
    Ok(LaunchSpec {
        program,
        args: start.args,
        env: env_vars,
        resumed: resume.is_some(),
        minted: start.minted,
    })
}

/// The variables of a start: the adapter's own (`Adapter::own_env`), then
/// the person's `[providers.NAME] env` over them.
fn start_env(
    provider: &Provider,
    custom: Option<&crate::config::ProviderConfig>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = crate::adapter::adapter(provider)
        .own_env()
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.extend(custom.map(|c| c.env.clone()).unwrap_or_default());
    env
}

/// How an agent reaches hangar's orchestration MCP server (`hangar mcp`).
#[derive(Clone, PartialEq)]
pub struct McpServer {
    /// The `hangar` binary.
    pub command: PathBuf,
    pub args: Vec<String>,
    /// The server's environment: its token and `HANGAR_HOME`.
    pub env: BTreeMap<String, String>,
    /// The claude `--mcp-config` file holding the same, written mode 0600.
    pub config_file: PathBuf,
}

/// Never prints the environment: it holds the session's token.
impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("config_file", &self.config_file)
            .finish()
    }
}

/// The launch with hangar's MCP server added, for the providers that take
/// one (claude: `--mcp-config FILE`; codex: `-c mcp_servers.hangar.*`
/// overrides, which must come before its `resume` subcommand). Others are
/// returned unchanged.
///
/// Codex never sees the server's environment on its command line: any
/// local user can read another's `/proc/PID/cmdline`, and the environment
/// holds the session's MCP token. The values go into codex's own
/// environment (readable by its owner only) and `env_vars` names them, so
/// codex forwards them to the server it starts (it gives MCP servers only a
/// short default list of variables plus the ones named there).
pub fn with_mcp(spec: LaunchSpec, provider: &Provider, server: &McpServer) -> LaunchSpec {
    crate::adapter::adapter(provider).with_mcp(spec, server)
}

/// The launch as the installed CLI's facts want it (codex's `--no-daemon`:
/// `Adapter::with_cli_facts`); unchanged when they are not known.
pub fn with_cli_facts(
    spec: LaunchSpec,
    provider: &Provider,
    facts: Option<&crate::cli_facts::CliFacts>,
) -> LaunchSpec {
    match facts {
        Some(facts) => crate::adapter::adapter(provider).with_cli_facts(spec, facts),
        None => spec,
    }
}

/// The `NO_PROXY` an agent gets: a rule of the launch plan
/// (`hangar_core::launch_plan`), kept here for the adapters' callers.
pub use hangar_core::launch_plan::no_proxy_with_loopback;

/// A TOML basic string.
pub(crate) fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::IdSource;
    use hangar_core::SessionId;

    fn env_with<'a>(
        config: &'a ProvidersConfig,
        vars: &'a dyn Fn(&str) -> Option<String>,
        dangerous: bool,
    ) -> LaunchEnv<'a> {
        LaunchEnv {
            providers: config,
            var: vars,
            dangerous,
            mint: &|| "minted-uuid".to_owned(),
            fork_from: None,
        }
    }

    fn true_bin() -> String {
        find_program("true", std::env::var("PATH").ok().as_deref())
            .unwrap()
            .display()
            .to_string()
    }

    #[test]
    fn an_adopted_terminal_attaches_to_its_tmux_session_by_exact_name_and_falls_back_to_a_shell() {
        let dir = tempfile::TempDir::new().unwrap();
        let tmux = dir.path().join("tmux");
        std::fs::write(&tmux, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tmux, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let config = ProvidersConfig::default();
        let path = dir.path().display().to_string();
        let shell = true_bin();
        let vars = |k: &str| match k {
            "PATH" => Some(path.clone()),
            "HANGAR_SHELL" => Some(shell.clone()),
            _ => None,
        };
        let mut meta = SessionMeta::new(SessionId::new("t"), Provider::Shell, "/w");
        meta.tmux_session = Some("agentcode-1".to_owned());
        let spec = launch_spec(&meta, &env_with(&config, &vars, false)).unwrap();
        assert_eq!(spec.program, tmux);
        assert_eq!(spec.args, ["attach-session", "-t", "=agentcode-1"]);

        // No tmux on PATH: the terminal still starts, as a plain shell.
        let no_tmux = |k: &str| match k {
            "PATH" => Some("/nonexistent".to_owned()),
            "HANGAR_SHELL" => Some(shell.clone()),
            _ => None,
        };
        let spec = launch_spec(&meta, &env_with(&config, &no_tmux, false)).unwrap();
        assert_eq!(spec.program.display().to_string(), shell);
        assert!(spec.args.is_empty());
    }

    #[test]
    fn claude_starts_with_its_agent_view_off_unless_the_person_says_otherwise() {
        let meta = SessionMeta::new(SessionId::from("s1"), Provider::Claude, "/tmp");
        let spec = launched(&meta, false);
        assert_eq!(spec.env["CLAUDE_CODE_DISABLE_AGENT_VIEW"], "1");
        let codex = launched(
            &SessionMeta::new(SessionId::from("s2"), Provider::Codex, "/tmp"),
            false,
        );
        assert!(!codex.env.contains_key("CLAUDE_CODE_DISABLE_AGENT_VIEW"));

        let mut config = ProvidersConfig::default();
        let mut own = crate::config::ProviderConfig::default();
        own.env
            .insert("CLAUDE_CODE_DISABLE_AGENT_VIEW".into(), "0".into());
        config.insert("claude".into(), own);
        let bin = true_bin();
        let vars = move |k: &str| k.ends_with("_BIN").then(|| bin.clone());
        let spec = launch_spec(&meta, &env_with(&config, &vars, false)).unwrap();
        assert_eq!(spec.env["CLAUDE_CODE_DISABLE_AGENT_VIEW"], "0");
    }

    #[test]
    fn claude_fresh_start_mints_a_session_id_recorded_as_resume_request() {
        let meta = SessionMeta::new(SessionId::from("s1"), Provider::Claude, "/tmp");
        let spec = launched(&meta, false);
        assert_eq!(spec.args, vec!["--session-id", "minted-uuid"]);
        assert_eq!(
            spec.minted,
            Some(ProviderSessionId::new(
                "minted-uuid",
                IdSource::ResumeRequest
            ))
        );
        assert!(!spec.resumed);
    }

    #[test]
    fn claude_resumes_its_durable_id_with_the_dangerous_flag() {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::Claude, "/tmp");
        meta.provider_session = Some(ProviderSessionId::new("abc", IdSource::Transcript));
        let spec = launched(&meta, true);
        assert_eq!(
            spec.args,
            vec!["--dangerously-skip-permissions", "--resume", "abc"]
        );
        assert!(spec.resumed);
    }

    #[test]
    fn a_provisional_proxy_header_id_is_never_resumed() {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::Claude, "/tmp");
        meta.provider_session = Some(ProviderSessionId::new("abc", IdSource::ProxyHeader));
        let spec = launched(&meta, false);
        assert_eq!(spec.args, vec!["--session-id", "minted-uuid"]);
    }

    #[test]
    fn codex_resumes_with_a_trailing_subcommand_and_opencode_with_session() {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::Codex, "/tmp");
        meta.provider_session = Some(ProviderSessionId {
            id: "t-1".into(),
            source: None,
        });
        let spec = launched(&meta, true);
        assert_eq!(
            spec.args,
            vec![
                "--dangerously-bypass-approvals-and-sandbox",
                "resume",
                "t-1"
            ]
        );
        meta.provider = Provider::Opencode;
        let spec = launched(&meta, false);
        assert_eq!(spec.args, vec!["--session", "t-1"]);
    }

    #[test]
    fn a_sandboxed_codex_runs_with_its_own_sandbox_off_before_its_resume_subcommand() {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::Codex, "/tmp");
        meta.sandbox = Some("/h/sandbox/s1".into());
        meta.provider_session = Some(ProviderSessionId::new("t-1", IdSource::Transcript));
        let spec = launched(&meta, false);
        assert_eq!(
            spec.args,
            vec!["--sandbox", "danger-full-access", "resume", "t-1"]
        );
        // Dangerous mode already turns it off; not twice.
        let spec = launched(&meta, true);
        assert_eq!(
            spec.args,
            vec![
                "--dangerously-bypass-approvals-and-sandbox",
                "resume",
                "t-1"
            ]
        );
        meta.sandbox = None;
        assert_eq!(launched(&meta, false).args, vec!["resume", "t-1"]);
    }

    /// The launch of `meta` with every agent CLI found (as `true`).
    fn launched(meta: &SessionMeta, dangerous: bool) -> LaunchSpec {
        let config = ProvidersConfig::default();
        let bin = true_bin();
        let vars = move |k: &str| k.ends_with("_BIN").then(|| bin.clone());
        launch_spec(meta, &env_with(&config, &vars, dangerous)).unwrap()
    }

    /// Codex resuming thread `t-1` of session `s1`, with hangar's MCP server.
    fn codex_resuming_with_mcp() -> LaunchSpec {
        let mut meta = SessionMeta::new(SessionId::from("s1"), Provider::Codex, "/tmp");
        meta.provider_session = Some(ProviderSessionId::new("t-1", IdSource::Transcript));
        with_mcp(launched(&meta, false), &Provider::Codex, &mcp_server())
    }

    fn mcp_server() -> McpServer {
        McpServer {
            command: PathBuf::from("/opt/hangar \"x\"/hangar"),
            args: vec!["mcp".into(), "--session".into(), "s1".into()],
            env: BTreeMap::from([
                ("HANGAR_HOME".to_owned(), "/h".to_owned()),
                ("HANGAR_MCP_TOKEN".to_owned(), "tok".to_owned()),
            ]),
            config_file: PathBuf::from("/h/mcp/s1.json"),
        }
    }

    #[test]
    fn claude_gets_its_mcp_config_file_before_its_session_arguments() {
        let meta = SessionMeta::new(SessionId::from("s1"), Provider::Claude, "/tmp");
        let spec = launched(&meta, false);
        let spec = with_mcp(spec, &Provider::Claude, &mcp_server());
        assert_eq!(
            spec.args,
            vec![
                "--allowedTools",
                "mcp__hangar__list_agents,mcp__hangar__read_agent,mcp__hangar__read_run_outputs,\
                 mcp__hangar__wait_agents,mcp__hangar__usage_read,mcp__hangar__goal_done",
                "--mcp-config",
                "/h/mcp/s1.json",
                "--session-id",
                "minted-uuid"
            ]
        );
    }

    #[test]
    fn codex_gets_toml_overrides_before_its_resume_subcommand_and_its_token_in_its_environment() {
        let spec = codex_resuming_with_mcp();
        assert_eq!(
            spec.args,
            vec![
                "-c",
                r#"mcp_servers.hangar.command="/opt/hangar \"x\"/hangar""#,
                "-c",
                r#"mcp_servers.hangar.args=["mcp", "--session", "s1"]"#,
                "-c",
                r#"mcp_servers.hangar.env_vars=["HANGAR_HOME", "HANGAR_MCP_TOKEN"]"#,
                "resume",
                "t-1",
            ]
        );
        // Each override's value is TOML that codex can parse back.
        let value = |arg: &str| {
            let v = arg.split_once('=').unwrap().1;
            toml::from_str::<toml::Table>(&format!("v = {v}")).unwrap()["v"].clone()
        };
        assert_eq!(
            value(&spec.args[1]).as_str(),
            Some("/opt/hangar \"x\"/hangar")
        );
        assert_eq!(value(&spec.args[3]).as_array().unwrap().len(), 3);
        assert_eq!(value(&spec.args[5]).as_array().unwrap().len(), 2);
        // The token reaches codex through its environment, never its
        // command line (readable by every local user in /proc).
        assert!(spec.args.iter().all(|a| !a.contains("tok")));
        assert_eq!(
            spec.env.get("HANGAR_MCP_TOKEN").map(String::as_str),
            Some("tok")
        );
        assert_eq!(spec.env.get("HANGAR_HOME").map(String::as_str), Some("/h"));
    }

    #[test]
    fn codex_that_accepts_it_runs_with_no_daemon_before_its_resume_subcommand() {
        let spec = codex_resuming_with_mcp();
        use crate::cli_facts::CliFacts;
        let accepts = CliFacts {
            version: None,
            no_daemon: true,
        };
        let with = with_cli_facts(spec.clone(), &Provider::Codex, Some(&accepts));
        assert_eq!(with.args[0], "--no-daemon");
        assert_eq!(&with.args[with.args.len() - 2..], ["resume", "t-1"]);
        assert_eq!(
            with_cli_facts(with.clone(), &Provider::Codex, Some(&accepts)),
            with
        );
        // An older codex without the flag, unknown facts, and other
        // providers, unchanged.
        let older = CliFacts::default();
        assert_eq!(
            with_cli_facts(spec.clone(), &Provider::Codex, Some(&older)),
            spec
        );
        assert_eq!(with_cli_facts(spec.clone(), &Provider::Codex, None), spec);
        assert_eq!(
            with_cli_facts(spec.clone(), &Provider::Claude, Some(&accepts)),
            spec
        );
    }

    #[test]
    fn a_fork_starts_with_its_clis_fork_arguments_after_the_dangerous_flag() {
        let config = ProvidersConfig::default();
        let bin = true_bin();
        let vars = move |k: &str| k.ends_with("_BIN").then(|| bin.clone());
        let launch = |meta: &SessionMeta, from: &str| {
            let mut env = env_with(&config, &vars, true);
            env.fork_from = Some(from);
            launch_spec(meta, &env).unwrap()
        };
        let meta = SessionMeta::new(SessionId::from("f"), Provider::Claude, "/tmp");
        let spec = launch(&meta, "old");
        assert_eq!(
            spec.args,
            [
                "--dangerously-skip-permissions",
                "--session-id",
                "minted-uuid",
                "--resume",
                "old",
                "--fork-session"
            ]
        );
        assert!(spec.resumed);
        assert_eq!(spec.minted.map(|m| m.id).as_deref(), Some("minted-uuid"));
        let codex = SessionMeta::new(SessionId::from("f"), Provider::Codex, "/tmp");
        let spec = with_mcp(launch(&codex, "t-1"), &Provider::Codex, &mcp_server());
        let facts = crate::cli_facts::CliFacts {
            version: None,
            no_daemon: true,
        };
        let spec = with_cli_facts(spec, &Provider::Codex, Some(&facts));
        assert_eq!(spec.args[0], "--no-daemon");
        assert_eq!(&spec.args[spec.args.len() - 2..], ["fork", "t-1"]);
        assert_eq!(spec.minted, None);
    }

    #[test]
    fn no_proxy_keeps_the_users_entries_and_adds_loopback_once() {
        assert_eq!(no_proxy_with_loopback(None, &[]), "127.0.0.1,localhost,::1");
        assert_eq!(
            no_proxy_with_loopback(Some(" .corp.example, LOCALHOST,"), &[]),
            ".corp.example,LOCALHOST,127.0.0.1,::1"
        );
    }

    #[test]
    fn a_loopback_host_the_proxy_captures_is_left_out_of_no_proxy() {
        let captured = ["api.anthropic.com".to_owned(), "LocalHost".to_owned()];
        assert_eq!(
            no_proxy_with_loopback(Some("localhost,.corp.example"), &captured),
            ".corp.example,127.0.0.1,::1"
        );
    }

    #[test]
    fn providers_without_mcp_support_are_left_unchanged() {
        let config = ProvidersConfig::default();
        let vars = |k: &str| (k == "HANGAR_SHELL").then(|| "/bin/sh".to_owned());
        let meta = SessionMeta::new(SessionId::from("s1"), Provider::Shell, "/tmp");
        let spec = launch_spec(&meta, &env_with(&config, &vars, false)).unwrap();
        assert_eq!(
            with_mcp(spec.clone(), &Provider::Shell, &mcp_server()),
            spec
        );
        assert!(!format!("{:?}", mcp_server()).contains("tok"));
    }

    #[test]
    fn a_missing_program_says_which_variable_to_set() {
        let config = ProvidersConfig::default();
        let vars = |k: &str| (k == "PATH").then(|| "/nonexistent".to_owned());
        let meta = SessionMeta::new(SessionId::from("s1"), Provider::Claude, "/tmp");
        let e = launch_spec(&meta, &env_with(&config, &vars, false)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "claude not found on PATH; set HANGAR_CLAUDE_BIN or install it"
        );
    }
}
