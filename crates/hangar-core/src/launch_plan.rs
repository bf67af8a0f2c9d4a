//! A session's start, planned: every decision about launching its process
//! as one pure function over facts the daemon gathers once (issue 43).
//!
//! The daemon asks the provider adapter, the proxy, the file system and its
//! settings first ([`LaunchFacts`]), then [`plan`] decides: whether the start
//! is refused (a resume the CLI would refuse, a program not found, a missing
//! folder), the command and its environment, where it runs ([`PlaceKind`])
//! and how its start is watched ([`StartWatch`]). Once the process has had
//! its chance, [`judge_start`] decides what its first moments mean (started,
//! exited while starting, an expired login, a refused resume, silent past
//! the timeout). The plan is plain data so that a CLI described in a file
//! can become facts this function reads.
//!
//! Never does I/O: a fact that needs the disk or a provider adapter is
//! gathered by the caller.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{ProviderSessionId, SessionMeta};

/// A shell or custom command that neither printed nor exited within this
/// window counts as started (it may legitimately print nothing).
pub const QUIET_START_MS: u64 = 300;

/// The variables hangar sets on every launch itself; an adapter's or a
/// grant's value of one never reaches the process.
pub const HANGAR_OWN_VARS: [&str; 5] = [
    "TERM",
    "HANGAR_SESSION_ID",
    "HANGAR_HOME",
    "NO_PROXY",
    "no_proxy",
];

/// The command the provider adapter built for this start (its launch spec,
/// with the MCP config and the CLI's version facts applied).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Whether this start resumes a provider session or starts fresh.
    pub resumed: bool,
    /// A provider session id hangar chose for a fresh start.
    pub minted: Option<ProviderSessionId>,
}

/// What the session's folder is, looked at just before the start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FolderCheck {
    Folder,
    NotFound,
    NotAFolder,
    /// It cannot be read (a symlink loop, no permission): the error's words.
    Unusable(String),
}

/// The proxy credentials granted to this process (issue 7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxyGrantFacts {
    /// `HTTPS_PROXY` and the like, the CA bundle.
    pub env: Vec<(String, String)>,
    /// Hosts the proxy is told to capture (`[proxy] allow_hosts`).
    pub captured_hosts: Vec<String>,
}

/// Everything a session's start depends on, gathered once by the daemon.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchFacts {
    /// The session as its record stands (its folder, worktree, walls).
    pub meta: SessionMeta,
    /// The adapter's refusal of this resume, when the CLI would refuse it.
    pub resume_refusal: Option<String>,
    /// The adapter's command, or why none can be built (in a person's
    /// words: the program not found, an unknown provider).
    pub command: Result<LaunchCommand, String>,
    pub folder: FolderCheck,
    /// The arguments that hand the CLI hangar's hook settings (activity).
    pub hook_settings_args: Vec<String>,
    /// `HANGAR_HOME`.
    pub home: String,
    pub proxy: Option<ProxyGrantFacts>,
    /// The daemon's own `NO_PROXY` (or `no_proxy`).
    pub inherited_no_proxy: Option<String>,
    /// `[restore] spawn_timeout_secs` and `settle_ms`.
    pub spawn_timeout_secs: u64,
    pub settle_ms: u64,
    /// What the session's `[accounts.NAME]` adds to its environment, or why
    /// that account cannot be used (`hangar_core::accounts`); `None` when it
    /// runs under the provider's own login.
    #[serde(default)]
    pub account: Option<Result<Vec<(String, String)>, String>>,
}

/// Where a session's process runs: on this machine's PTY, inside the
/// sandbox's walls, or on a container engine (by its `[engines.NAME]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlaceKind {
    Local,
    Sandbox,
    Engine { name: String },
}

/// How a start is watched: the first output within `first_output_ms`
/// (an exit ends the wait too), then, for an agent, `settle_ms` in which an
/// exit still counts as a failed start (a failed login prints and exits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartWatch {
    pub first_output_ms: u64,
    pub settle_ms: Option<u64>,
    /// Silence past `first_output_ms` fails the start (an agent); a shell
    /// may print nothing and counts as started.
    pub silence_fails: bool,
}

/// A start to carry out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchPlan {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// In order; hangar's own variables last.
    pub env: Vec<(String, String)>,
    pub resumed: bool,
    pub minted: Option<ProviderSessionId>,
    pub place: PlaceKind,
    pub watch: StartWatch,
}

/// Why a start failed, as the journal and the breaker count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefusalKind {
    /// The CLI would refuse this resume (said before it is started).
    ResumeRefused,
    ProgramMissing,
    FolderMissing,
    ExitedDuringStart,
    AuthFailure,
    Timeout,
    /// Its `[accounts.NAME]` is gone from config.toml or no longer fits.
    AccountUnusable,
}

/// A start refused or failed: its kind and what to tell the person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct LaunchRefusal {
    pub kind: RefusalKind,
    pub message: String,
    pub exit_code: Option<i32>,
}

impl LaunchRefusal {
    fn new(kind: RefusalKind, message: String) -> LaunchRefusal {
        LaunchRefusal {
            kind,
            message,
            exit_code: None,
        }
    }
}

/// "cannot start 3f2a (title \"api review\")", the start of every refusal.
pub fn cannot_start(meta: &SessionMeta) -> String {
    if meta.title.is_empty() {
        format!("cannot start {}", meta.id.short())
    } else {
        format!("cannot start {} (title {:?})", meta.id.short(), meta.title)
    }
}

/// Why a session whose worktree was deleted by hand cannot start (it is
/// reported, never recreated); `None` without a worktree.
pub fn missing_worktree_reason(meta: &SessionMeta) -> Option<String> {
    let info = meta.worktree.as_ref()?;
    Some(format!(
        "cannot start {} (title {:?}): its worktree {} (branch {}) was deleted by hand; hangar does not recreate it elsewhere. Restore it with `git -C {} worktree add {} {}`, or close the session",
        meta.id.short(),
        meta.title,
        info.path,
        info.branch,
        info.repo_root,
        info.path,
        info.branch
    ))
}

/// Where `meta`'s session runs. A session bound to an engine runs there or
/// not at all (DESIGN.md rule 14), a sandboxed one inside its walls.
pub fn place_of(meta: &SessionMeta) -> PlaceKind {
    match (&meta.engine, &meta.sandbox) {
        (Some(binding), _) => PlaceKind::Engine {
            name: binding.name.clone(),
        },
        (None, Some(_)) => PlaceKind::Sandbox,
        (None, None) => PlaceKind::Local,
    }
}

/// The `NO_PROXY` an agent gets: what the daemon was given, plus the
/// loopback names and addresses, so an agent's local traffic (a local
/// model server, codex's own loopback port) never goes through hangar's
/// proxy, and never fails with 407 once that session's proxy credentials
/// are revoked. A host the proxy is told to capture (`captured`, its
/// `[proxy] allow_hosts`) is left out: a local model gateway such as
/// LiteLLM on `localhost:4000` is captured when the list names it.
pub fn no_proxy_with_loopback(existing: Option<&str>, captured: &[String]) -> String {
    let is_captured = |e: &str| captured.iter().any(|c| c.eq_ignore_ascii_case(e));
    let mut entries: Vec<String> = existing
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty() && !is_captured(e))
        .map(str::to_owned)
        .collect();
    for loopback in ["127.0.0.1", "localhost", "::1"] {
        if !is_captured(loopback) && !entries.iter().any(|e| e.eq_ignore_ascii_case(loopback)) {
            entries.push(loopback.to_owned());
        }
    }
    entries.join(",")
}

/// Plan a session's start, or say why it cannot start. Refusals in the
/// order a person fixes them: a resume the CLI refuses, a missing program,
/// a missing folder.
pub fn plan(facts: &LaunchFacts) -> Result<LaunchPlan, LaunchRefusal> {
    let meta = &facts.meta;
    // A resume the CLI will refuse (a claude conversation held by Claude
    // Code's own background-agent supervisor, issue 16 defect 9): said, with
    // what to do, instead of starting a CLI that exits at once.
    if let Some(reason) = &facts.resume_refusal {
        return Err(LaunchRefusal::new(
            RefusalKind::ResumeRefused,
            reason.clone(),
        ));
    }
    let command = facts.command.as_ref().map_err(|why| {
        LaunchRefusal::new(
            RefusalKind::ProgramMissing,
            format!("{}: {why}", cannot_start(meta)),
        )
    })?;
    if facts.folder != FolderCheck::Folder {
        // A worktree deleted by hand is reported, never recreated.
        let reason = missing_worktree_reason(meta).unwrap_or_else(|| {
            // "does not exist" was misleading for a folder that loops
            // through symlinks or cannot be read.
            let why = match &facts.folder {
                FolderCheck::NotFound => "does not exist".to_owned(),
                FolderCheck::Unusable(e) => format!("cannot be used ({e})"),
                FolderCheck::NotAFolder | FolderCheck::Folder => "is not a folder".to_owned(),
            };
            format!("{}: its folder {} {why}", cannot_start(meta), meta.cwd)
        });
        return Err(LaunchRefusal::new(RefusalKind::FolderMissing, reason));
    }
    let account_env = match &facts.account {
        None => &[][..],
        Some(Ok(env)) => &env[..],
        Some(Err(why)) => {
            return Err(LaunchRefusal::new(
                RefusalKind::AccountUnusable,
                format!("{}: {why}", cannot_start(meta)),
            ));
        }
    };
    let is_hangars = |(k, _): &&(String, String)| !HANGAR_OWN_VARS.contains(&k.as_str());
    let mut env: Vec<(String, String)> = command.env.iter().filter(is_hangars).cloned().collect();
    // The account's credential after the adapter's: the account's wins.
    env.extend(account_env.iter().filter(is_hangars).cloned());
    env.push(("TERM".into(), "xterm-256color".into()));
    env.push(("HANGAR_SESSION_ID".into(), meta.id.to_string()));
    env.push(("HANGAR_HOME".into(), facts.home.clone()));
    if let Some(grant) = &facts.proxy {
        env.extend(grant.env.iter().filter(is_hangars).cloned());
    }
    // Loopback never goes through a proxy: a local model server, codex's
    // own loopback traffic (issue 16 defect 7), unless the proxy is told to
    // capture that host.
    let no_proxy = no_proxy_with_loopback(
        facts.inherited_no_proxy.as_deref(),
        facts.proxy.as_ref().map_or(&[], |g| &g.captured_hosts[..]),
    );
    env.push(("NO_PROXY".into(), no_proxy.clone()));
    env.push(("no_proxy".into(), no_proxy));
    let mut args = command.args.clone();
    args.extend(facts.hook_settings_args.iter().cloned());
    let watch = if meta.provider.is_agent() {
        StartWatch {
            first_output_ms: facts.spawn_timeout_secs.max(1) * 1000,
            settle_ms: Some(facts.settle_ms),
            silence_fails: true,
        }
    } else {
        StartWatch {
            first_output_ms: QUIET_START_MS,
            settle_ms: None,
            silence_fails: false,
        }
    };
    Ok(LaunchPlan {
        program: command.program.clone(),
        args,
        cwd: PathBuf::from(&meta.cwd),
        env,
        resumed: command.resumed,
        minted: command.minted.clone(),
        place: place_of(meta),
        watch,
    })
}

/// How a process that exited while starting ended, and what the adapter
/// and the auth rules read in its screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlyExit {
    pub code: i32,
    /// Its screen's last non-empty line.
    pub last_line: String,
    /// The screen and code look like an expired or missing login.
    pub auth_failure: bool,
    /// The adapter's reading of a refused resume in its screen.
    pub refused_resume: Option<String>,
}

/// What was seen of a process during its start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartFacts {
    /// The program as the person knows it (the launch's, after its walls).
    pub program: String,
    pub short: String,
    pub watch: StartWatch,
    /// It printed (or exited) within the watch's first-output window.
    pub answered_in_time: bool,
    /// It had exited by the end of the watch.
    pub exited: Option<EarlyExit>,
}

/// The verdict on a start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartVerdict {
    Started,
    /// It ended while starting.
    Failed(LaunchRefusal),
    /// Still running but silent past the timeout: stop it, then fail.
    StopAndFail(LaunchRefusal),
}

/// Judge a start by what its process did.
pub fn judge_start(facts: &StartFacts) -> StartVerdict {
    if let Some(exit) = &facts.exited {
        if let Some(message) = &exit.refused_resume {
            return StartVerdict::Failed(LaunchRefusal {
                kind: RefusalKind::ExitedDuringStart,
                message: message.clone(),
                exit_code: Some(exit.code),
            });
        }
        let last = if exit.last_line.is_empty() {
            String::new()
        } else {
            format!(": {}", exit.last_line)
        };
        return StartVerdict::Failed(LaunchRefusal {
            kind: if exit.auth_failure {
                RefusalKind::AuthFailure
            } else {
                RefusalKind::ExitedDuringStart
            },
            message: format!(
                "{} exited with code {} while starting{last}",
                facts.program, exit.code
            ),
            exit_code: Some(exit.code),
        });
    }
    if !facts.answered_in_time && facts.watch.silence_fails {
        return StartVerdict::StopAndFail(LaunchRefusal::new(
            RefusalKind::Timeout,
            format!(
                "{} showed no output within the {}s spawn timeout ([restore] spawn_timeout_secs in config.toml); `hangar wake {}` retries",
                facts.program,
                facts.watch.first_output_ms / 1000,
                facts.short
            ),
        ));
    }
    StartVerdict::Started
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineBinding;
    use crate::{Provider, SessionId};
    use proptest::prelude::*;

    fn meta(provider: Provider) -> SessionMeta {
        let mut m = SessionMeta::new(SessionId::from("3f2a"), provider, "/work/api");
        m.title = "api review".into();
        m
    }

    fn command() -> LaunchCommand {
        LaunchCommand {
            program: PathBuf::from("/usr/bin/claude"),
            args: vec!["--resume".into(), "abc".into()],
            env: vec![("CLAUDE_CONFIG_DIR".into(), "/c".into())],
            resumed: true,
            minted: None,
        }
    }

    fn facts(meta: SessionMeta) -> LaunchFacts {
        LaunchFacts {
            meta,
            resume_refusal: None,
            command: Ok(command()),
            folder: FolderCheck::Folder,
            hook_settings_args: vec![],
            home: "/home/p/.hangar".into(),
            proxy: None,
            inherited_no_proxy: None,
            spawn_timeout_secs: 30,
            settle_ms: 300,
            account: None,
        }
    }

    fn env_of<'a>(plan: &'a LaunchPlan, key: &str) -> Option<&'a str> {
        // The last value wins, as it does in the process's environment.
        plan.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn an_agent_is_planned_with_hangars_variables_after_the_adapters_and_its_hook_arguments_last() {
        let mut f = facts(meta(Provider::Claude));
        f.hook_settings_args = vec!["--settings".into(), "/h.json".into()];
        f.proxy = Some(ProxyGrantFacts {
            env: vec![("HTTPS_PROXY".into(), "http://u:p@127.0.0.1:9".into())],
            captured_hosts: vec![],
        });
        let plan = plan(&f).unwrap();
        assert_eq!(plan.program, PathBuf::from("/usr/bin/claude"));
        assert_eq!(plan.args, ["--resume", "abc", "--settings", "/h.json"]);
        assert_eq!(plan.cwd, PathBuf::from("/work/api"));
        let keys: Vec<&str> = plan.env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "CLAUDE_CONFIG_DIR",
                "TERM",
                "HANGAR_SESSION_ID",
                "HANGAR_HOME",
                "HTTPS_PROXY",
                "NO_PROXY",
                "no_proxy"
            ]
        );
        assert_eq!(env_of(&plan, "HANGAR_HOME"), Some("/home/p/.hangar"));
        assert_eq!(env_of(&plan, "NO_PROXY"), Some("127.0.0.1,localhost,::1"));
        assert_eq!(plan.place, PlaceKind::Local);
        assert_eq!(
            plan.watch,
            StartWatch {
                first_output_ms: 30_000,
                settle_ms: Some(300),
                silence_fails: true
            }
        );
    }

    #[test]
    fn an_accounts_variables_win_over_the_adapters_and_a_gone_account_refuses_the_start() {
        let mut f = facts(meta(Provider::Claude));
        f.account = Some(Ok(vec![
            ("CLAUDE_CONFIG_DIR".into(), "/accounts/work".into()),
            ("ANTHROPIC_API_KEY".into(), "sk-work".into()),
        ]));
        let plan = plan(&f).unwrap();
        assert_eq!(env_of(&plan, "CLAUDE_CONFIG_DIR"), Some("/accounts/work"));
        assert_eq!(env_of(&plan, "ANTHROPIC_API_KEY"), Some("sk-work"));
        f.account = Some(Err("no account \"work\"".into()));
        let refused = super::plan(&f).unwrap_err();
        assert_eq!(refused.kind, RefusalKind::AccountUnusable);
        assert!(
            refused.message.contains("no account"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn a_shell_is_watched_for_a_quiet_start_and_never_fails_for_its_silence() {
        let plan = plan(&facts(meta(Provider::Shell))).unwrap();
        assert_eq!(plan.watch.first_output_ms, QUIET_START_MS);
        assert_eq!(plan.watch.settle_ms, None);
        let quiet = StartFacts {
            program: "bash".into(),
            short: "3f2a".into(),
            watch: plan.watch,
            answered_in_time: false,
            exited: None,
        };
        assert_eq!(judge_start(&quiet), StartVerdict::Started);
    }

    #[test]
    fn a_zero_spawn_timeout_still_gives_an_agent_a_second() {
        let mut f = facts(meta(Provider::Codex));
        f.spawn_timeout_secs = 0;
        assert_eq!(plan(&f).unwrap().watch.first_output_ms, 1000);
    }

    #[test]
    fn refusals_come_in_order_resume_then_program_then_folder() {
        let mut f = facts(meta(Provider::Claude));
        f.resume_refusal = Some("held by its supervisor".into());
        f.command = Err("claude not found on PATH".into());
        f.folder = FolderCheck::NotFound;
        assert_eq!(plan(&f).unwrap_err().kind, RefusalKind::ResumeRefused);
        f.resume_refusal = None;
        let missing = plan(&f).unwrap_err();
        assert_eq!(missing.kind, RefusalKind::ProgramMissing);
        assert_eq!(
            missing.message,
            "cannot start 3f2a (title \"api review\"): claude not found on PATH"
        );
        f.command = Ok(command());
        let folder = plan(&f).unwrap_err();
        assert_eq!(folder.kind, RefusalKind::FolderMissing);
        assert_eq!(
            folder.message,
            "cannot start 3f2a (title \"api review\"): its folder /work/api does not exist"
        );
    }

    #[test]
    fn a_missing_folder_says_why_and_a_deleted_worktree_how_to_restore_it() {
        let mut f = facts(meta(Provider::Claude));
        f.meta.title.clear();
        f.folder = FolderCheck::Unusable("too many levels of symbolic links".into());
        assert_eq!(
            plan(&f).unwrap_err().message,
            "cannot start 3f2a: its folder /work/api cannot be used (too many levels of symbolic links)"
        );
        f.folder = FolderCheck::NotAFolder;
        assert!(plan(&f).unwrap_err().message.ends_with("is not a folder"));
        f.meta.worktree = Some(Box::new(crate::worktree::WorktreeInfo {
            path: "/wt/fix".into(),
            branch: "fix".into(),
            base: "main".into(),
            repo_root: "/repo".into(),
            created_by_hangar: true,
        }));
        let message = plan(&f).unwrap_err().message;
        assert!(
            message.contains("`git -C /repo worktree add /wt/fix fix`"),
            "{message}"
        );
    }

    #[test]
    fn an_exit_while_starting_is_a_refused_resume_an_expired_login_or_a_plain_exit() {
        let watch = plan(&facts(meta(Provider::Claude))).unwrap().watch;
        let mut start = StartFacts {
            program: "claude".into(),
            short: "3f2a".into(),
            watch,
            answered_in_time: true,
            exited: Some(EarlyExit {
                code: 1,
                last_line: "Invalid API key".into(),
                auth_failure: true,
                refused_resume: None,
            }),
        };
        let StartVerdict::Failed(auth) = judge_start(&start) else {
            panic!("an exit is a failed start")
        };
        assert_eq!(auth.kind, RefusalKind::AuthFailure);
        assert_eq!(
            auth.message,
            "claude exited with code 1 while starting: Invalid API key"
        );
        assert_eq!(auth.exit_code, Some(1));
        let exit = start.exited.as_mut().unwrap();
        exit.refused_resume = Some("its conversation is held elsewhere".into());
        let StartVerdict::Failed(refused) = judge_start(&start) else {
            panic!("an exit is a failed start")
        };
        assert_eq!(refused.kind, RefusalKind::ExitedDuringStart);
        assert_eq!(refused.message, "its conversation is held elsewhere");
        start.exited = None;
        start.answered_in_time = false;
        let StartVerdict::StopAndFail(timeout) = judge_start(&start) else {
            panic!("a silent agent is stopped")
        };
        assert_eq!(timeout.kind, RefusalKind::Timeout);
        assert!(timeout.message.contains("within the 30s spawn timeout"));
        start.answered_in_time = true;
        assert_eq!(judge_start(&start), StartVerdict::Started);
    }

    fn arb_var() -> impl Strategy<Value = (String, String)> {
        (
            prop_oneof![
                Just("TERM".to_owned()),
                Just("HANGAR_SESSION_ID".to_owned()),
                Just("NO_PROXY".to_owned()),
                Just("no_proxy".to_owned()),
                "[A-Z_]{1,8}",
            ],
            "[a-z0-9.,:]{0,12}",
        )
    }

    fn arb_facts() -> impl Strategy<Value = LaunchFacts> {
        (
            prop_oneof![
                Just(Provider::Claude),
                Just(Provider::Codex),
                Just(Provider::Shell)
            ],
            "[a-f0-9]{8}",
            proptest::option::of("[a-z]{1,6}"),
            any::<bool>(),
            proptest::collection::vec(arb_var(), 0..6),
            proptest::option::of((
                proptest::collection::vec(arb_var(), 0..4),
                proptest::collection::vec(
                    prop_oneof![
                        Just("localhost".to_owned()),
                        Just("LOCALHOST".to_owned()),
                        Just("::1".to_owned()),
                        Just("127.0.0.1".to_owned()),
                        "[a-z]{1,6}\\.example",
                    ],
                    0..3,
                ),
            )),
            proptest::option::of("[a-zA-Z0-9., :]{0,30}"),
        )
            .prop_map(|(provider, id, engine, sandbox, env, proxy, inherited)| {
                let mut m = SessionMeta::new(SessionId::from(id.as_str()), provider, "/w");
                m.engine = engine.map(|name| {
                    Box::new(EngineBinding {
                        name,
                        ..Default::default()
                    })
                });
                m.sandbox = sandbox.then(|| "/h/sandbox/s".to_owned());
                let mut f = facts(m);
                if let Ok(c) = &mut f.command {
                    c.env = env;
                }
                f.proxy = proxy.map(|(env, captured_hosts)| ProxyGrantFacts {
                    env,
                    captured_hosts,
                });
                f.inherited_no_proxy = inherited;
                f
            })
    }

    proptest! {
        #[test]
        fn a_session_bound_to_an_engine_is_never_planned_for_this_machine(f in arb_facts()) {
            let plan = plan(&f).unwrap();
            match &f.meta.engine {
                Some(binding) => prop_assert_eq!(
                    plan.place,
                    PlaceKind::Engine { name: binding.name.clone() }
                ),
                None if f.meta.sandbox.is_some() => prop_assert_eq!(plan.place, PlaceKind::Sandbox),
                None => prop_assert_eq!(plan.place, PlaceKind::Local),
            }
        }

        #[test]
        fn hangar_session_id_is_always_the_sessions_id_whatever_the_adapter_or_grant_set(
            f in arb_facts()
        ) {
            let plan = plan(&f).unwrap();
            let ids: Vec<String> = plan
                .env
                .iter()
                .filter(|(k, _)| k == "HANGAR_SESSION_ID")
                .map(|(_, v)| v.clone())
                .collect();
            prop_assert_eq!(ids, vec![f.meta.id.to_string()]);
            prop_assert_eq!(env_of(&plan, "TERM"), Some("xterm-256color"));
        }

        #[test]
        fn loopback_is_always_in_no_proxy_unless_the_proxy_captures_it(f in arb_facts()) {
            let plan = plan(&f).unwrap();
            let captured: Vec<String> =
                f.proxy.iter().flat_map(|g| g.captured_hosts.clone()).collect();
            for key in ["NO_PROXY", "no_proxy"] {
                let value = env_of(&plan, key).unwrap();
                let entries: Vec<&str> = value.split(',').collect();
                for loopback in ["127.0.0.1", "localhost", "::1"] {
                    let is_captured = captured.iter().any(|c| c.eq_ignore_ascii_case(loopback));
                    let listed = entries.iter().any(|e| e.eq_ignore_ascii_case(loopback));
                    prop_assert_eq!(listed, !is_captured, "{} in {:?}", loopback, value);
                }
            }
        }
    }
}
