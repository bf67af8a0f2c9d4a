//! The walls of a sandboxed session (issue 32), as pure rules: which folders
//! an agent may write, which it may read, where its CLI keeps its state,
//! which environment it is given, and the bubblewrap (`bwrap`) command line
//! that carries all of it out. The daemon gathers the facts (what exists on
//! disk, the daemon's environment, the proxy's port) and runs the result.
//!
//! What the command line gives the agent:
//! - the system folders read-only, a private `/tmp`, a fresh `/dev` and a
//!   `/proc` of its own pid namespace (hangar's processes are not in it);
//! - `$HOME` an empty tmpfs, with only the CLI's state folder bound from the
//!   session's own folder under `HANGAR_HOME`: the person's `~/.ssh`,
//!   `~/.aws`, `~/.claude` and other projects are not there at all;
//! - its folder (worktree) read-write, and nothing else writable;
//! - a network namespace with only loopback; hangar's proxy socket is bound
//!   in, and hangar's relay (`hangar __sandbox-relay`) listens on the
//!   proxy's loopback port inside, so `HTTPS_PROXY` works unchanged;
//! - no capability, even for root (`--cap-drop ALL` in a user namespace).
//!
//! `--new-session` is never used: it would take the controlling terminal
//! away from the agent (hangar owns the PTY). The relay blocks `TIOCSTI`
//! with a seccomp filter instead.

use std::collections::BTreeSet;

/// Where the proxy socket and hangar's relay appear inside the sandbox.
pub const INSIDE_RUN: &str = "/run/hangar";
/// The proxy's Unix socket, inside.
pub const INSIDE_PROXY_SOCKET: &str = "/run/hangar/proxy.sock";
/// hangar's own binary, inside (the relay).
pub const INSIDE_HANGAR: &str = "/run/hangar/hangar";
/// The hidden subcommand that relays loopback TCP to the proxy socket, blocks
/// `TIOCSTI` and runs the agent.
pub const RELAY_SUBCOMMAND: &str = "__sandbox-relay";

/// The system folders bound read-only when they exist. Nothing of `/home`,
/// `/root`, `/var`, `/srv`, `/mnt`, `/media` or `/work`: a person's and other
/// projects' files live there.
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Files of `/etc` that hold secrets of the machine: replaced by an empty
/// file inside (host keys, password hashes).
pub fn masked_etc_file(name: &str) -> bool {
    matches!(name, "shadow" | "gshadow" | "shadow-" | "gshadow-")
        || (name.starts_with("ssh_host_") && name.ends_with("_key"))
}

/// One CLI state folder: bound read-write from `outside` (under the session's
/// sandbox folder) to `inside` (under the private `$HOME`), and named to
/// the CLI by the variable `var` set to `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateBind {
    pub outside: String,
    pub inside: String,
    pub var: &'static str,
    pub value: String,
}

/// One of a CLI's state folders as its adapter names it (hangar-providers'
/// `Adapter::sandbox_state`): `name` is its folder under the session's
/// sandbox folder, `inside` the folder under `$HOME` it is bound to, and
/// `var` the variable set to `value` (under `$HOME` too) that points the
/// CLI there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateFolder {
    pub name: &'static str,
    pub inside: &'static str,
    pub var: &'static str,
    pub value: &'static str,
}

/// The binds of a CLI's state `folders` (its adapter's; docs/src/cli-facts.md):
/// `session_dir` is the session's folder under `HANGAR_HOME`; `home` the
/// `$HOME` path inside.
pub fn state_binds(folders: &[StateFolder], session_dir: &str, home: &str) -> Vec<StateBind> {
    folders
        .iter()
        .map(|f| StateBind {
            outside: format!("{session_dir}/{}", f.name),
            inside: format!("{home}/{}", f.inside),
            var: f.var,
            value: format!("{home}/{}", f.value),
        })
        .collect()
}

/// Where the state folder `var` names is outside, under `session_dir`.
pub fn state_dir_for_var(folders: &[StateFolder], session_dir: &str, var: &str) -> Option<String> {
    state_binds(folders, session_dir, "/")
        .into_iter()
        .find(|b| b.var == var)
        .map(|b| b.outside)
}

/// Environment variables that name a credential or a way to one: never passed
/// into a sandbox. API keys the proxy can put back are replaced by a
/// placeholder (see [`agent_env`]).
pub fn is_secret_var(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const EXACT: &[&str] = &[
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "GPG_AGENT_INFO",
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR",
        "KRB5CCNAME",
        "DOCKER_HOST",
        "KUBECONFIG",
        "NETRC",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
    ];
    const PARTS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "COOKIE",
        "AUTH",
    ];
    EXACT.contains(&n.as_str())
        || n.starts_with("AWS_")
        || n.starts_with("AZURE_")
        || n.starts_with("GOOGLE_APPLICATION")
        || PARTS
            .iter()
            .any(|p| n.split('_').any(|w| w == *p) || n.ends_with(p))
}

/// The API key variables the proxy can put back on the provider's requests,
/// with the placeholder prefix each is given (some CLIs check the shape).
pub const PLACEHOLDER_KEYS: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "sk-ant-api03-hangar-sandbox-"),
    ("ANTHROPIC_AUTH_TOKEN", "hangar-sandbox-"),
    ("OPENAI_API_KEY", "sk-hangar-sandbox-"),
    ("CODEX_API_KEY", "sk-hangar-sandbox-"),
];

/// A real credential the proxy substitutes for its placeholder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Substitution {
    pub var: String,
    pub placeholder: String,
    pub real: String,
}

/// The agent's environment inside the sandbox, and the credentials the proxy
/// must put back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentEnv {
    pub env: Vec<(String, String)>,
    pub substitutions: Vec<Substitution>,
}

/// The environment a sandboxed agent starts with: the daemon's own
/// (`inherited`), then the launch's (`launch`: the provider's variables,
/// the proxy's, hangar's), without any secret; each API key of
/// [`PLACEHOLDER_KEYS`], and each variable of `key_vars` (the ones a CLI's
/// settings name as holding its key, as codex's `env_key`), that had a
/// value becomes a placeholder ending in `nonce`; `overrides` (state
/// folders, `HOME`) win over everything.
pub fn agent_env(
    inherited: &[(String, String)],
    launch: &[(String, String)],
    overrides: &[(String, String)],
    nonce: &str,
    key_vars: &[String],
) -> AgentEnv {
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, k: &str, v: &str| {
        env.retain(|(name, _)| name != k);
        env.push((k.to_owned(), v.to_owned()));
    };
    let mut substitutions: Vec<Substitution> = Vec::new();
    for (k, v) in inherited.iter().chain(launch) {
        let prefix = PLACEHOLDER_KEYS
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, prefix)| *prefix)
            .or_else(|| key_vars.contains(k).then_some("hangar-sandbox-"));
        if let Some(prefix) = prefix {
            if v.is_empty() {
                continue;
            }
            substitutions.retain(|s| s.var != *k);
            let placeholder = format!("{prefix}{}-{nonce}", k.to_ascii_lowercase());
            substitutions.push(Substitution {
                var: k.clone(),
                placeholder: placeholder.clone(),
                real: v.clone(),
            });
            set(&mut env, k, &placeholder);
        } else if k == "HTTPS_PROXY"
            || k == "HTTP_PROXY"
            || k == "https_proxy"
            || k == "http_proxy"
            || !is_secret_var(k)
        {
            // The proxy URL carries this session's own proxy token: it is
            // how the agent reaches the proxy at all.
            set(&mut env, k, v);
        }
    }
    for (k, v) in overrides {
        set(&mut env, k, v);
    }
    AgentEnv { env, substitutions }
}

/// What is bound read-only for a program outside the system folders: its
/// own folder (a native CLI's version folder), or the `node_modules` folder
/// it is installed in when it is an npm package's (its launcher needs its
/// siblings, and codex's finds its native binary in another package,
/// `@openai/codex-linux-x64`); just the file itself when that folder would
/// show more than the program: `$HOME`, `HANGAR_HOME`, a folder above
/// either, or `/`.
pub fn program_binds(canonical_program: &str, home: &str, hangar_home: &str) -> String {
    let file = canonical_program.to_owned();
    let Some((parent, _)) = canonical_program.rsplit_once('/') else {
        return file;
    };
    const MODULES: &str = "/node_modules/";
    let folder = match canonical_program.find(MODULES) {
        Some(at) => &canonical_program[..at + MODULES.len() - 1],
        None => parent,
    };
    let covers = |p: &str| p.is_empty() || p == folder || p.starts_with(&format!("{folder}/"));
    if folder.is_empty() || folder == "/" || covers(home) || covers(hangar_home) {
        file
    } else {
        folder.to_owned()
    }
}

/// Whether `path` lies in one of the system folders already bound.
pub fn under_system(path: &str) -> bool {
    SYSTEM_READ_ONLY
        .iter()
        .any(|s| path == *s || path.starts_with(&format!("{s}/")))
}

/// Everything the bwrap command line is made from (facts the daemon
/// gathered: every path here exists).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The system folders that exist, from [`SYSTEM_READ_ONLY`].
    pub system: Vec<String>,
    /// Files replaced by an empty one (see [`masked_etc_file`]).
    pub masked: Vec<String>,
    /// `$HOME` inside: an empty tmpfs.
    pub home: String,
    /// The session's folder: writable.
    pub cwd: String,
    /// Other writable folders (a worktree's git folder).
    pub writable: Vec<String>,
    /// Read-only binds at their own path (the agent's program folder, files
    /// hangar made for the agent: hook settings, the proxy's CA certificate).
    pub read_only: Vec<String>,
    /// The CLI's state folders.
    pub state: Vec<StateBind>,
    /// hangar's binary, bound at [`INSIDE_HANGAR`].
    pub hangar: String,
    /// The proxy's Unix socket outside and its port on loopback inside; none
    /// when the session has no proxy (then it has no network at all).
    pub proxy: Option<(String, u16)>,
    /// The session's own socket back to the daemon (its hooks and MCP
    /// calls), outside, and where it is bound inside: where the control
    /// socket is outside (`HANGAR_HOME/run/hangar.sock`), so `hangar hook`
    /// and `hangar mcp` find it there. Nothing else of `HANGAR_HOME` is in.
    pub callback: Option<(String, String)>,
    /// The agent's program (a path valid inside) and its arguments.
    pub program: String,
    pub args: Vec<String>,
    pub uid: u32,
    pub gid: u32,
}

/// `bwrap`'s arguments (the program itself not included). Later mounts go
/// over earlier ones, so the order is: system, masks, the private `/tmp`
/// and `$HOME`, then what is bound into them, the session's folder last.
pub fn bwrap_args(plan: &Plan) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| (*s).to_owned()));
    push(&[
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]);
    let uid = plan.uid.to_string();
    let gid = plan.gid.to_string();
    push(&["--uid", &uid, "--gid", &gid, "--hostname", "hangar-sandbox"]);
    for s in &plan.system {
        push(&["--ro-bind", s, s]);
    }
    for m in &plan.masked {
        push(&["--ro-bind", "/dev/null", m]);
    }
    push(&["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
    if !under_system(&plan.home) && plan.home != "/tmp" {
        push(&["--tmpfs", &plan.home]);
    }
    push(&["--tmpfs", INSIDE_RUN]);
    push(&["--ro-bind", &plan.hangar, INSIDE_HANGAR]);
    if let Some((socket, _)) = &plan.proxy {
        push(&["--bind", socket, INSIDE_PROXY_SOCKET]);
    }
    if let Some((socket, inside)) = &plan.callback {
        push(&["--bind", socket, inside]);
    }
    let mut seen = BTreeSet::new();
    for r in &plan.read_only {
        if seen.insert(r.clone()) {
            push(&["--ro-bind", r, r]);
        }
    }
    for s in &plan.state {
        push(&["--bind", &s.outside, &s.inside]);
    }
    for w in &plan.writable {
        push(&["--bind", w, w]);
    }
    push(&["--bind", &plan.cwd, &plan.cwd, "--chdir", &plan.cwd]);
    push(&["--"]);
    a.extend(relay_command(
        plan.proxy
            .as_ref()
            .map(|(_, port)| (INSIDE_PROXY_SOCKET, *port)),
        &plan.program,
        &plan.args,
    ));
    a
}

/// The command that runs first inside the walls (a sandbox's or an engine's
/// container): hangar's relay at [`INSIDE_HANGAR`], carrying loopback port
/// `port` to the proxy's socket (a path inside) when the agent has a proxy,
/// around the agent's `program` and `args`.
pub fn relay_command(proxy: Option<(&str, u16)>, program: &str, args: &[String]) -> Vec<String> {
    let mut a = vec![INSIDE_HANGAR.to_owned(), RELAY_SUBCOMMAND.to_owned()];
    if let Some((socket, port)) = proxy {
        a.extend([
            "--socket".to_owned(),
            socket.to_owned(),
            "--port".to_owned(),
            port.to_string(),
        ]);
    }
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    a
}

/// Variables of the daemon's environment that describe this machine and not
/// another one's (a container's image has its own): an agent in a container
/// never gets them, where a sandboxed one (on this machine) does.
pub fn host_only_var(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "HOME"
            | "PWD"
            | "OLDPWD"
            | "SHELL"
            | "SHLVL"
            | "TMPDIR"
            | "USER"
            | "LOGNAME"
            | "HOSTNAME"
            | "MAIL"
            | "LD_LIBRARY_PATH"
            | "LD_PRELOAD"
            | "_"
    ) || name.starts_with("XDG_")
}

/// What the machine said when asked whether it can sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// `bwrap` found on the daemon's `PATH`.
    pub bwrap: bool,
    /// `/proc/sys/user/max_user_namespaces`.
    pub max_user_namespaces: Option<u64>,
    /// `/proc/sys/kernel/unprivileged_userns_clone` (Debian's switch).
    pub unprivileged_userns_clone: Option<u64>,
    /// `/proc/sys/kernel/apparmor_restrict_unprivileged_userns` (Ubuntu's).
    pub apparmor_restrict: Option<u64>,
    /// The daemon runs as root (the unprivileged switches do not apply).
    pub root: bool,
}

/// Why this machine cannot sandbox, naming what to install or which sysctl
/// to change; `None` when it can (a trial run then has the last word).
pub fn refusal(facts: &HostFacts) -> Option<String> {
    if !facts.bwrap {
        return Some(
            "bwrap (bubblewrap) is not on the daemon's PATH: install the Debian package \
             `bubblewrap` (apt-get install bubblewrap)"
                .to_owned(),
        );
    }
    if facts.max_user_namespaces == Some(0) {
        return Some(
            "user namespaces are turned off: sysctl user.max_user_namespaces = 0 \
             (set it above 0, e.g. sysctl -w user.max_user_namespaces=15000)"
                .to_owned(),
        );
    }
    if !facts.root && facts.unprivileged_userns_clone == Some(0) {
        return Some(
            "unprivileged user namespaces are refused: sysctl kernel.unprivileged_userns_clone = 0 \
             (sysctl -w kernel.unprivileged_userns_clone=1)"
                .to_owned(),
        );
    }
    if !facts.root && facts.apparmor_restrict == Some(1) {
        return Some(
            "AppArmor refuses unprivileged user namespaces: sysctl \
             kernel.apparmor_restrict_unprivileged_userns = 1 (set it to 0, or give bwrap an \
             AppArmor profile that allows userns)"
                .to_owned(),
        );
    }
    None
}

/// The reason of a trial `bwrap` run that failed: its own words, with the
/// sysctl that most likely refused it.
pub fn trial_failure(stderr: &str) -> String {
    let said = stderr.trim();
    let hint = if said.contains("setting up uid map")
        || said.contains("No permissions to create")
        || said.contains("Operation not permitted")
        || said.contains("Permission denied")
    {
        "; user namespaces seem refused: check sysctl user.max_user_namespaces and \
         kernel.unprivileged_userns_clone"
    } else {
        ""
    };
    format!("bwrap cannot make a sandbox here: {said}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code's and Codex's folders as their adapters name them.
    const CLAUDE: &[StateFolder] = &[StateFolder {
        name: "claude",
        inside: ".claude",
        var: "CLAUDE_CONFIG_DIR",
        value: ".claude",
    }];
    const CODEX: &[StateFolder] = &[StateFolder {
        name: "codex",
        inside: ".codex",
        var: "CODEX_HOME",
        value: ".codex",
    }];

    fn plan() -> Plan {
        Plan {
            system: vec!["/usr".into(), "/etc".into()],
            masked: vec!["/etc/shadow".into()],
            home: "/home/ann".into(),
            cwd: "/home/ann/proj".into(),
            writable: vec![],
            read_only: vec!["/home/ann/.local/share/claude".into()],
            state: state_binds(CLAUDE, "/h/sandbox/s1", "/home/ann"),
            hangar: "/opt/hangar/bin/hangar".into(),
            proxy: Some(("/h/sandbox/s1/proxy.sock".into(), 4100)),
            callback: Some((
                "/h/sandbox/s1/hangar.sock".into(),
                "/h/run/hangar.sock".into(),
            )),
            program: "/home/ann/.local/share/claude/claude".into(),
            args: vec!["--resume".into(), "x".into()],
            uid: 1000,
            gid: 1000,
        }
    }

    fn pos(args: &[String], window: &[&str]) -> usize {
        args.windows(window.len())
            .position(|w| w.iter().zip(window).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{window:?} not in {args:?}"))
    }

    #[test]
    fn the_home_is_empty_but_for_the_cli_state_and_the_folder_is_the_only_writable_one() {
        let a = bwrap_args(&plan());
        let home = pos(&a, &["--tmpfs", "/home/ann"]);
        let state = pos(&a, &["--bind", "/h/sandbox/s1/claude", "/home/ann/.claude"]);
        let cwd = pos(&a, &["--bind", "/home/ann/proj", "/home/ann/proj"]);
        let program = pos(&a, &["--ro-bind", "/home/ann/.local/share/claude"]);
        // Bound into the tmpfs, so after it; the folder last of the mounts.
        assert!(home < state && home < program && state < cwd);
        let writable: Vec<_> = a
            .windows(2)
            .filter(|w| w[0] == "--bind")
            .map(|w| w[1].clone())
            .collect();
        assert_eq!(
            writable,
            vec![
                "/h/sandbox/s1/proxy.sock",
                "/h/sandbox/s1/hangar.sock",
                "/h/sandbox/s1/claude",
                "/home/ann/proj"
            ]
        );
        // The session's own socket back, where `hangar hook` looks inside.
        pos(
            &a,
            &["--bind", "/h/sandbox/s1/hangar.sock", "/h/run/hangar.sock"],
        );
        assert!(pos(&a, &["--ro-bind", "/usr", "/usr"]) < home);
        assert!(
            pos(&a, &["--ro-bind", "/dev/null", "/etc/shadow"]) > pos(&a, &["--ro-bind", "/etc"])
        );
    }

    #[test]
    fn no_new_session_only_loopback_no_capabilities() {
        let a = bwrap_args(&plan());
        assert!(!a.iter().any(|x| x == "--new-session"));
        assert!(!a.iter().any(|x| x == "--share-net"));
        for needed in [
            "--unshare-net",
            "--unshare-user",
            "--unshare-pid",
            "--die-with-parent",
        ] {
            assert!(a.iter().any(|x| x == needed), "{needed}");
        }
        pos(&a, &["--cap-drop", "ALL"]);
    }

    #[test]
    fn the_relay_runs_the_agent_with_its_arguments_last() {
        let a = bwrap_args(&plan());
        let tail = &a[pos(&a, &["--", INSIDE_HANGAR])..];
        assert_eq!(
            tail,
            [
                "--",
                INSIDE_HANGAR,
                RELAY_SUBCOMMAND,
                "--socket",
                INSIDE_PROXY_SOCKET,
                "--port",
                "4100",
                "--",
                "/home/ann/.local/share/claude/claude",
                "--resume",
                "x"
            ]
        );
        let mut p = plan();
        p.proxy = None;
        let a = bwrap_args(&p);
        assert!(
            !a.iter()
                .any(|x| x == "--socket" || x == INSIDE_PROXY_SOCKET)
        );
    }

    #[test]
    fn secrets_stay_out_and_api_keys_become_placeholders() {
        let inherited = vec![
            ("PATH".to_owned(), "/usr/bin".to_owned()),
            ("ANTHROPIC_API_KEY".to_owned(), "sk-ant-REAL".to_owned()),
            ("AWS_SECRET_ACCESS_KEY".to_owned(), "aws".to_owned()),
            ("GITHUB_TOKEN".to_owned(), "ghp".to_owned()),
            ("SSH_AUTH_SOCK".to_owned(), "/tmp/agent".to_owned()),
            (
                "CLAUDE_CONFIG_DIR".to_owned(),
                "/home/ann/.claude".to_owned(),
            ),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("MY_PROVIDER_KEY".to_owned(), "mine-REAL".to_owned()),
        ];
        let launch = vec![(
            "HTTPS_PROXY".to_owned(),
            "http://s:tok@127.0.0.1:4100".to_owned(),
        )];
        let overrides = vec![(
            "CLAUDE_CONFIG_DIR".to_owned(),
            "/home/ann/.claude".to_owned(),
        )];
        let e = agent_env(
            &inherited,
            &launch,
            &overrides,
            "n1",
            &["MY_PROVIDER_KEY".to_owned()],
        );
        let names: Vec<_> = e.env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "PATH",
                "ANTHROPIC_API_KEY",
                "LANG",
                "MY_PROVIDER_KEY",
                "HTTPS_PROXY",
                "CLAUDE_CONFIG_DIR"
            ]
        );
        assert!(!e.env.iter().any(|(_, v)| v.contains("REAL")));
        assert_eq!(e.substitutions.len(), 2);
        assert_eq!(e.substitutions[1].real, "mine-REAL");
        let s = &e.substitutions[0];
        assert_eq!(s.real, "sk-ant-REAL");
        assert_eq!(
            s.placeholder,
            "sk-ant-api03-hangar-sandbox-anthropic_api_key-n1"
        );
        assert!(
            e.env
                .contains(&("ANTHROPIC_API_KEY".to_owned(), s.placeholder.clone()))
        );
    }

    #[test]
    fn secret_names_are_recognised_and_ordinary_ones_are_not() {
        for s in [
            "OPENAI_API_KEY",
            "GH_TOKEN",
            "NPM_TOKEN",
            "DB_PASSWORD",
            "AWS_PROFILE",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "SSH_AUTH_SOCK",
            "MY_APIKEY",
        ] {
            assert!(is_secret_var(s), "{s}");
        }
        for s in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "ANTHROPIC_BASE_URL",
            "KEYBOARD_LAYOUT",
            "NO_PROXY",
        ] {
            assert!(!is_secret_var(s), "{s}");
        }
    }

    #[test]
    fn a_program_is_bound_with_its_folder_unless_that_shows_the_home() {
        let b = |p| program_binds(p, "/home/a", "/home/a/.hangar");
        assert_eq!(
            b("/home/a/.npm/lib/node_modules/@openai/codex/bin/codex.js"),
            "/home/a/.npm/lib/node_modules"
        );
        assert_eq!(
            b("/opt/c/node_modules/@anthropic-ai/claude-code/bin/claude.exe"),
            "/opt/c/node_modules"
        );
        assert_eq!(
            b("/home/a/.local/share/claude/versions/2.1.197"),
            "/home/a/.local/share/claude/versions"
        );
        // A bin folder of the home, the home itself, or above it: the file only.
        assert_eq!(b("/home/a/bin/claude"), "/home/a/bin");
        assert_eq!(b("/home/a/claude"), "/home/a/claude");
        assert_eq!(b("/home/claude"), "/home/claude");
        assert_eq!(b("/claude"), "/claude");
        assert_eq!(
            program_binds("/tmp/t/bin/codex", "/tmp/t/user", "/tmp/t/hangar-home"),
            "/tmp/t/bin"
        );
        assert!(under_system("/usr/bin/claude") && !under_system("/usrx/bin"));
    }

    #[test]
    fn state_folders_follow_each_cli() {
        let c = state_binds(CODEX, "/h/s", "/root");
        assert_eq!(c[0].inside, "/root/.codex");
        assert_eq!(c[0].outside, "/h/s/codex");
        assert_eq!(c[0].var, "CODEX_HOME");
        assert_eq!(c[0].value, "/root/.codex");
        assert_eq!(
            state_dir_for_var(CLAUDE, "/h/s", "CLAUDE_CONFIG_DIR").as_deref(),
            Some("/h/s/claude")
        );
        assert!(state_binds(&[], "/h/s", "/root").is_empty());
        assert!(
            masked_etc_file("ssh_host_ed25519_key") && !masked_etc_file("ssh_host_ed25519_key.pub")
        );
    }

    #[test]
    fn a_refusal_names_the_package_or_the_sysctl() {
        let ok = HostFacts {
            bwrap: true,
            max_user_namespaces: Some(100),
            unprivileged_userns_clone: Some(1),
            apparmor_restrict: None,
            root: false,
        };
        assert_eq!(refusal(&ok), None);
        let no_bwrap = HostFacts {
            bwrap: false,
            ..ok.clone()
        };
        assert!(refusal(&no_bwrap).unwrap().contains("bubblewrap"));
        let no_ns = HostFacts {
            max_user_namespaces: Some(0),
            ..ok.clone()
        };
        assert!(
            refusal(&no_ns)
                .unwrap()
                .contains("user.max_user_namespaces")
        );
        let debian = HostFacts {
            unprivileged_userns_clone: Some(0),
            ..ok.clone()
        };
        assert!(
            refusal(&debian)
                .unwrap()
                .contains("kernel.unprivileged_userns_clone")
        );
        assert_eq!(
            refusal(&HostFacts {
                root: true,
                ..debian
            }),
            None
        );
        assert!(trial_failure("bwrap: setting up uid map: Permission denied").contains("sysctl"));
    }
}
