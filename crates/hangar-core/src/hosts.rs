//! Other machines' hangars, reached over SSH: the `[hosts.NAME]` settings,
//! their checks, and the exact `ssh` command line that reaches one.
//!
//! The transport is OpenSSH itself (the `ssh` on PATH, with the person's own
//! config, agent and known hosts); these rules only say which arguments it
//! gets. The remote side runs `hangar bridge`, which relays that machine's
//! daemon socket over stdio, so the frames on the wire are the same
//! versioned protocol a local client speaks; an attach in a terminal runs
//! the remote `hangar attach` under `ssh -t` instead, as tmux is reached.

use serde::Deserialize;
use thiserror::Error;

/// The name the local machine goes by in `hangar hosts` and the TUI.
pub const LOCAL: &str = "local";

/// How long `ssh` may take to open the TCP connection when the config does
/// not say (`ConnectTimeout`).
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 10;

/// What `--all-hosts` gives a host beyond its `connect_timeout_secs` to
/// answer (the login, the remote bridge starting its daemon, the reply).
pub const ANSWER_GRACE_SECS: u64 = 10;

/// How long `--all-hosts` waits for one host's answer before it names the
/// host as down: its connect timeout plus [`ANSWER_GRACE_SECS`] (this
/// machine, `None`, gets the default connect timeout's). Every host is
/// asked at once, so the slowest bound is the longest a command waits.
pub fn answer_bound(host: Option<&HostConfig>) -> std::time::Duration {
    let connect = host
        .and_then(|h| h.connect_timeout_secs)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT_SECS);
    std::time::Duration::from_secs(connect.saturating_add(ANSWER_GRACE_SECS))
}

/// `HOST:ID`, the way `--all-hosts` output names a session of another
/// machine: the host and the id, when `text` has a host part that is a
/// valid host name. Session ids never hold a ':'.
pub fn split_host_id(text: &str) -> Option<(&str, &str)> {
    let (host, id) = text.split_once(':')?;
    let valid = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    (valid && !id.is_empty()).then_some((host, id))
}

/// One `[hosts.NAME]` table of config.toml.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// What `ssh` is given as the destination: `user@host`, `host`, or an
    /// alias from `~/.ssh/config`.
    pub ssh: String,
    /// The SSH port (`ssh -p`; default: ssh's own, from `~/.ssh/config`).
    #[serde(default)]
    pub port: Option<u16>,
    /// A private key file (`ssh -i`); `~/` is this machine's home.
    #[serde(default)]
    pub identity_file: Option<String>,
    /// The `hangar` program on the remote machine (default: `hangar` on the
    /// remote PATH); `~/` is the remote home.
    #[serde(default)]
    pub hangar: Option<String>,
    /// The remote `HANGAR_HOME` (default: the remote hangar's own default);
    /// `~/` is the remote home.
    #[serde(default)]
    pub home: Option<String>,
    /// Seconds `ssh` may take to connect (default 10).
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum HostError {
    #[error(
        "host name {0:?} is not valid: use letters, digits, '.', '_' and '-' (and not \"local\", the name of this machine)"
    )]
    BadName(String),
    #[error("[hosts.{0}] has an empty `ssh`: give it user@host or an alias from ~/.ssh/config")]
    EmptyDestination(String),
    #[error(
        "[hosts.{name}] ssh = {dest:?} is not a destination (it starts with '-' or holds spaces)"
    )]
    BadDestination { name: String, dest: String },
    #[error("[hosts.{0}] has an empty `{1}`")]
    EmptySetting(String, &'static str),
}

/// Checks one host's table, so a typo is refused with its name instead of
/// reaching `ssh` as a surprising argument.
pub fn validate(name: &str, host: &HostConfig) -> Result<(), HostError> {
    let name_ok = !name.is_empty()
        && name != LOCAL
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !name_ok {
        return Err(HostError::BadName(name.to_owned()));
    }
    let dest = host.ssh.trim();
    if dest.is_empty() {
        return Err(HostError::EmptyDestination(name.to_owned()));
    }
    // A destination starting with '-' would be read by ssh as an option.
    if dest.starts_with('-') || dest.chars().any(char::is_whitespace) {
        return Err(HostError::BadDestination {
            name: name.to_owned(),
            dest: host.ssh.clone(),
        });
    }
    for (setting, value) in [
        ("identity_file", &host.identity_file),
        ("hangar", &host.hangar),
        ("home", &host.home),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(HostError::EmptySetting(name.to_owned(), setting));
        }
    }
    Ok(())
}

/// One word for a POSIX shell, quoted so the remote shell passes it through
/// unchanged. A leading `~/` stays unquoted so it expands to the remote home.
pub fn shell_word(word: &str) -> String {
    if let Some(rest) = word.strip_prefix("~/") {
        return format!("~/{}", quote(rest));
    }
    quote(word)
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@')
        });
    if plain {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The command line the remote shell runs: the remote `hangar` with `args`,
/// under the configured `HANGAR_HOME`.
pub fn remote_command(host: &HostConfig, args: &[String]) -> String {
    let mut words = Vec::new();
    if let Some(home) = &host.home {
        // `env` and not `HANGAR_HOME=x cmd`: the login shell may not be a
        // POSIX shell (fish, csh), but every one of them runs `env`.
        words.push("env".to_owned());
        match home.strip_prefix("~/") {
            // `$HOME` expands inside double quotes in every POSIX shell.
            Some(rest) => words.push(format!("HANGAR_HOME=\"$HOME\"/{}", quote(rest))),
            None => words.push(format!("HANGAR_HOME={}", quote(home))),
        }
    }
    words.push(shell_word(host.hangar.as_deref().unwrap_or("hangar")));
    words.extend(args.iter().map(|a| quote(a)));
    words.join(" ")
}

/// Every argument `ssh` gets to run `args` on the host: no terminal (the
/// frames are binary), no escape character, no forwarding, never a prompt
/// (a TUI or a script cannot answer one), a bounded connect, and keepalives
/// so a dead link is noticed in seconds.
pub fn ssh_args(host: &HostConfig, local_home: Option<&str>, args: &[String]) -> Vec<String> {
    let mut out = ssh_options(host, local_home, "-T");
    out.push("--".into());
    out.push(host.ssh.trim().to_owned());
    out.push(remote_command(host, args));
    out
}

/// Every argument `ssh` gets for `hangar attach SESSION` in this terminal:
/// the options of [`ssh_args`] but `-t`, so ssh owns the terminal and the
/// remote attach runs under the server's pty, as `ssh -t host tmux attach`
/// does (no local process relays a key). No escape character there either:
/// hangar's own detach key leaves. `on_connect`, when given, is a command
/// this machine's shell runs once ssh has logged in, before any of the
/// session's output ([`on_connect_command`]).
///
/// The session is untrusted text (a title, a typo, anything): it stays one
/// word for the remote shell and comes after `--`, so the remote hangar
/// never reads it as an option.
pub fn ssh_attach_args(
    host: &HostConfig,
    local_home: Option<&str>,
    session: &str,
    on_connect: Option<&str>,
) -> Vec<String> {
    let mut out = ssh_options(host, local_home, "-t");
    if let Some(command) = on_connect {
        out.push("-o".into());
        out.push("PermitLocalCommand=yes".into());
        out.push("-o".into());
        // ssh expands `%` tokens in a LocalCommand: `%%` is one `%`.
        out.push(format!("LocalCommand={}", command.replace('%', "%%")));
    }
    out.push("--".into());
    out.push(host.ssh.trim().to_owned());
    let args = ["attach".to_owned(), "--".to_owned(), session.to_owned()];
    out.push(remote_command(host, &args));
    out
}

/// The local command ssh runs once logged in (`LocalCommand`) for an
/// attach: it creates `marker`, which tells the attach afterwards that this
/// ssh did reach the host (an exit 255 then is a dropped connection, not an
/// unreachable host), and prints `announce` before the session's screen.
/// Written for any login shell (sh, bash, zsh, fish, csh): quoted words,
/// `;`, no redirection.
pub fn on_connect_command(marker: &str, announce: Option<&str>) -> String {
    let mut command = format!("touch {}", quote(marker));
    if let Some(text) = announce {
        command.push_str(&format!("; printf '%s\\r\\n' {}", quote(text)));
    }
    command
}

/// What an attach through ssh does once its `ssh -t` has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachSshEnd {
    /// The remote attach ended (detached, the session exited, or it said
    /// why not): its exit code is the attach's.
    Exit(i32),
    /// The connection dropped after it was up (ssh's own 255, or ssh was
    /// killed): the session runs on there; say so and attach again.
    Dropped,
    /// The first ssh never reached the host: an error, ssh said why.
    Unreachable,
    /// Attaching again did not reach the host yet: try again, quietly.
    StillDown,
}

/// Decides what an ended `ssh -t ... attach` means. `code` is ssh's exit
/// code (None: killed by a signal), `connected` whether it logged in (its
/// `on_connect` ran), `reconnecting` whether this was an attempt to attach
/// again after a drop. 255 is ssh's own failure; any other code is the
/// remote attach's.
pub fn attach_ssh_end(code: Option<i32>, connected: bool, reconnecting: bool) -> AttachSshEnd {
    match code {
        Some(c) if c != 255 => AttachSshEnd::Exit(c),
        _ if connected => AttachSshEnd::Dropped,
        _ if reconnecting => AttachSshEnd::StillDown,
        Some(_) => AttachSshEnd::Unreachable,
        // Killed before it logged in: as good as dropped, try again.
        None => AttachSshEnd::Dropped,
    }
}

/// The options every ssh to `host` gets, `tty` (`-T` or `-t`) first.
fn ssh_options(host: &HostConfig, local_home: Option<&str>, tty: &str) -> Vec<String> {
    let timeout = host
        .connect_timeout_secs
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT_SECS)
        .max(1);
    let mut out: Vec<String> = [
        tty,
        "-e",
        "none",
        "-x",
        "-a",
        "-o",
        "BatchMode=yes",
        "-o",
        "ClearAllForwardings=yes",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    out.push("-o".into());
    out.push(format!("ConnectTimeout={timeout}"));
    if let Some(port) = host.port {
        out.push("-p".into());
        out.push(port.to_string());
    }
    if let Some(identity) = &host.identity_file {
        let path = match (identity.strip_prefix("~/"), local_home) {
            (Some(rest), Some(home)) => format!("{}/{rest}", home.trim_end_matches('/')),
            _ => identity.clone(),
        };
        out.push("-i".into());
        out.push(path);
        // Only that key: an agent full of keys would otherwise be tried
        // first and may exhaust the server's MaxAuthTries.
        out.push("-o".into());
        out.push("IdentitiesOnly=yes".into());
    }
    out
}

/// The protocol version a daemon's refusal names ("... this daemon speaks
/// N ..."), for an error that names both sides.
pub fn version_in_refusal(message: &str) -> Option<u32> {
    let rest = message.split("daemon speaks ").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The lines of `ssh`'s stderr worth showing: without blank lines and the
/// warnings every connection may print (a host key just added).
pub fn ssh_failure_text(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect();
    let keep = lines.len().saturating_sub(4);
    lines[keep..].join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_is_waited_for_its_own_connect_timeout_and_a_grace() {
        assert_eq!(answer_bound(None).as_secs(), 20);
        let slow = HostConfig {
            ssh: "far".into(),
            connect_timeout_secs: Some(3),
            ..Default::default()
        };
        assert_eq!(answer_bound(Some(&slow)).as_secs(), 13);
    }

    #[test]
    fn host_colon_id_names_a_far_session_and_nothing_else_does() {
        assert_eq!(split_host_id("build:3f2a"), Some(("build", "3f2a")));
        assert_eq!(split_host_id("local:3f2a"), Some(("local", "3f2a")));
        assert_eq!(split_host_id("3f2a"), None);
        assert_eq!(split_host_id(":3f2a"), None);
        assert_eq!(split_host_id("build:"), None);
        assert_eq!(split_host_id("a b:3f2a"), None);
    }

    fn host(ssh: &str) -> HostConfig {
        HostConfig {
            ssh: ssh.into(),
            ..HostConfig::default()
        }
    }

    #[test]
    fn names_and_destinations_are_checked() {
        assert_eq!(validate("build-1.box", &host("me@build")), Ok(()));
        assert!(matches!(
            validate("local", &host("me@x")),
            Err(HostError::BadName(_))
        ));
        assert!(matches!(
            validate("a b", &host("me@x")),
            Err(HostError::BadName(_))
        ));
        assert!(matches!(
            validate("a", &host("  ")),
            Err(HostError::EmptyDestination(_))
        ));
        assert!(matches!(
            validate("a", &host("-oProxyCommand=sh")),
            Err(HostError::BadDestination { .. })
        ));
        let mut h = host("x");
        h.home = Some(" ".into());
        assert_eq!(
            validate("a", &h),
            Err(HostError::EmptySetting("a".into(), "home"))
        );
    }

    #[test]
    fn shell_words_survive_the_remote_shell() {
        assert_eq!(shell_word("/usr/bin/hangar"), "/usr/bin/hangar");
        assert_eq!(shell_word("it's here"), r"'it'\''s here'");
        assert_eq!(shell_word("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(shell_word("~/.cargo/bin/hangar"), "~/.cargo/bin/hangar");
        assert_eq!(shell_word("~/my dir/hangar"), "~/'my dir/hangar'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_remote_command_sets_the_home_and_runs_the_configured_hangar() {
        let mut h = host("me@box");
        assert_eq!(remote_command(&h, &["bridge".into()]), "hangar bridge");
        h.hangar = Some("/opt/hangar bin/hangar".into());
        h.home = Some("~/.hangar".into());
        assert_eq!(
            remote_command(&h, &["send".into(), "abc".into(), "echo; hi".into()]),
            "env HANGAR_HOME=\"$HOME\"/.hangar '/opt/hangar bin/hangar' send abc 'echo; hi'"
        );
        h.home = Some("/srv/h".into());
        assert!(remote_command(&h, &[]).starts_with("env HANGAR_HOME=/srv/h "));
    }

    #[test]
    fn ssh_never_prompts_and_gets_port_and_key_when_set() {
        let mut h = host("me@box");
        h.port = Some(2222);
        h.identity_file = Some("~/.ssh/box".into());
        h.connect_timeout_secs = Some(3);
        let args = ssh_args(&h, Some("/home/me/"), &["bridge".into()]);
        let joined = args.join(" ");
        assert!(joined.starts_with("-T -e none -x -a -o BatchMode=yes"));
        assert!(joined.contains("-o ConnectTimeout=3"));
        assert!(joined.contains("-p 2222"));
        assert!(joined.contains("-i /home/me/.ssh/box -o IdentitiesOnly=yes"));
        // The destination comes after `--`, so it can never be an option.
        assert_eq!(&args[args.len() - 3..], ["--", "me@box", "hangar bridge"]);
    }

    #[test]
    fn an_attach_in_a_terminal_is_ssh_t_with_the_same_options_and_the_remote_attach() {
        let mut h = host("me@box");
        h.port = Some(2222);
        h.identity_file = Some("~/.ssh/box".into());
        h.connect_timeout_secs = Some(3);
        h.hangar = Some("~/bin/hangar".into());
        h.home = Some("~/.hangar".into());
        let args = ssh_attach_args(&h, Some("/home/me"), "3f2a", None);
        let joined = args.join(" ");
        // A terminal for the remote attach; no escape character (hangar's
        // detach key leaves), never a prompt, keepalives, the same port and
        // key as the link.
        assert!(
            joined.starts_with("-t -e none -x -a -o BatchMode=yes"),
            "{joined}"
        );
        assert!(!args.iter().any(|a| a == "-T"));
        assert!(joined.contains("-o ServerAliveInterval=5 -o ServerAliveCountMax=3"));
        assert!(joined.contains("-o ConnectTimeout=3"));
        assert!(joined.contains("-p 2222"));
        assert!(joined.contains("-i /home/me/.ssh/box -o IdentitiesOnly=yes"));
        assert!(!joined.contains("LocalCommand"));
        assert_eq!(
            &args[args.len() - 3..],
            [
                "--",
                "me@box",
                "env HANGAR_HOME=\"$HOME\"/.hangar ~/bin/hangar attach -- 3f2a"
            ]
        );
        // Everything before the destination is what the link gets, but -t.
        let link = ssh_args(&h, Some("/home/me"), &["bridge".into()]);
        assert_eq!(args[1..args.len() - 3], link[1..link.len() - 3]);
    }

    #[test]
    fn an_untrusted_session_id_stays_one_argument_of_the_remote_attach() {
        let h = host("box");
        for (id, word) in [
            ("x; rm -rf ~", "'x; rm -rf ~'"),
            ("$(touch /tmp/p)", "'$(touch /tmp/p)'"),
            ("`id`", "'`id`'"),
            ("it's", r"'it'\''s'"),
            ("a\nb", "'a\nb'"),
            ("--help", "--help"),
            ("", "''"),
        ] {
            let args = ssh_attach_args(&h, None, id, None);
            let command = args.last().expect("a remote command");
            // After `--`: the remote hangar reads `--help` as a session.
            assert_eq!(command, &format!("hangar attach -- {word}"), "{id:?}");
        }
    }

    #[test]
    fn the_on_connect_command_is_one_local_command_with_percent_kept() {
        let command = on_connect_command(
            "/tmp/hangar ssh/m-1",
            Some("[hangar] reconnected to host \"box\" (100%)"),
        );
        assert_eq!(
            command,
            "touch '/tmp/hangar ssh/m-1'; printf '%s\\r\\n' '[hangar] reconnected to host \"box\" (100%)'"
        );
        assert_eq!(on_connect_command("/tmp/m", None), "touch /tmp/m");
        let args = ssh_attach_args(&host("box"), None, "x", Some(&command));
        let at = args
            .iter()
            .position(|a| a.starts_with("LocalCommand="))
            .expect("a LocalCommand");
        assert_eq!(args[at - 3..at], ["-o", "PermitLocalCommand=yes", "-o"]);
        // ssh's own `%` tokens: every `%` of the command is doubled.
        assert_eq!(
            args[at],
            "LocalCommand=touch '/tmp/hangar ssh/m-1'; printf '%%s\\r\\n' '[hangar] reconnected to host \"box\" (100%%)'"
        );
        assert!(at < args.iter().position(|a| a == "--").expect("--"));
    }

    #[test]
    fn an_attach_ssh_reconnects_only_after_a_drop_and_returns_the_remote_code() {
        use AttachSshEnd::*;
        // The remote attach's own ends: detached, exited, no such session.
        assert_eq!(attach_ssh_end(Some(0), true, false), Exit(0));
        assert_eq!(attach_ssh_end(Some(1), true, true), Exit(1));
        assert_eq!(attach_ssh_end(Some(127), true, false), Exit(127));
        // ssh's 255 or a killed ssh after it logged in: the link dropped.
        assert_eq!(attach_ssh_end(Some(255), true, false), Dropped);
        assert_eq!(attach_ssh_end(None, true, true), Dropped);
        assert_eq!(attach_ssh_end(None, false, false), Dropped);
        // Never logged in: the first time an error, later a quiet retry.
        assert_eq!(attach_ssh_end(Some(255), false, false), Unreachable);
        assert_eq!(attach_ssh_end(Some(255), false, true), StillDown);
        assert_eq!(attach_ssh_end(None, false, true), StillDown);
    }

    #[test]
    fn a_refusal_names_the_daemon_version() {
        assert_eq!(
            version_in_refusal(
                "client speaks protocol 1 but this daemon speaks 2; restart the daemon"
            ),
            Some(2)
        );
        assert_eq!(version_in_refusal("no such thing"), None);
    }

    #[test]
    fn ssh_errors_keep_the_last_meaningful_lines() {
        let text = "Warning: Permanently added '[127.0.0.1]:2222' (ED25519) to the list of known hosts.\n\nroot@127.0.0.1: Permission denied (publickey).\n";
        assert_eq!(
            ssh_failure_text(text),
            "root@127.0.0.1: Permission denied (publickey)."
        );
    }
}
