//! The command line, read the way each real CLI reads its own.
//!
//! Pure: takes the arguments and the `FAKE_AGENT_STYLE` value, returns what
//! to do. Unknown flags are never an error (hangar's adapters may pass flags
//! the fake does not model); they are kept verbatim in `ignored` so the start
//! record shows them. What the real CLIs *refuse* (both `--session-id` and
//! `--resume`, a flag missing its value) the fake refuses too, so an adapter
//! bug fails a test instead of passing silently.

use std::fmt;

/// Which real CLI the fake is pretending to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Claude,
    Codex,
    Opencode,
}

impl Style {
    pub fn name(self) -> &'static str {
        match self {
            Style::Claude => "claude",
            Style::Codex => "codex",
            Style::Opencode => "opencode",
        }
    }

    fn from_name(name: &str) -> Option<Style> {
        match name {
            "claude" => Some(Style::Claude),
            "codex" => Some(Style::Codex),
            "opencode" => Some(Style::Opencode),
            _ => None,
        }
    }
}

/// How the conversation starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionRequest {
    /// Fresh start; `None` means the fake mints a uuid v4 itself.
    Fresh(Option<String>),
    /// Continue the conversation with this provider session id.
    Resume(String),
    /// A new conversation holding `from`'s messages (claude `--resume FROM
    /// --fork-session [--session-id NEW]`, `codex fork FROM`, opencode
    /// `--session FROM --fork`); `new` is the id claude was given.
    Fork { from: String, new: Option<String> },
}

/// Everything the command line asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub style: Style,
    pub session: SessionRequest,
    /// The style's "skip every permission prompt" flag was given.
    pub dangerous: bool,
    pub model: Option<String>,
    pub mcp_config: Option<String>,
    pub settings: Option<String>,
    /// Codex `-c key=value` overrides, in order.
    pub config_overrides: Vec<String>,
    /// Arguments the fake does not model, verbatim and in order.
    pub ignored: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Run(Invocation),
    Version,
    Help,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsError {
    UnknownStyle(String),
    MissingValue(String),
    SessionIdWithResume,
    UnsafeSessionId(String),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::UnknownStyle(s) => write!(
                f,
                "unknown style {s:?}: use claude, codex or opencode (--style or FAKE_AGENT_STYLE)"
            ),
            ArgsError::MissingValue(flag) => write!(f, "option {flag} needs a value"),
            // The real Claude Code refuses this combination with the same words.
            ArgsError::SessionIdWithResume => write!(
                f,
                "--session-id can only be used with --continue or --resume if --fork-session is also specified"
            ),
            ArgsError::UnsafeSessionId(id) => write!(
                f,
                "session id {id:?} cannot name a transcript file: it must be non-empty, \
                 without '/', and not start with '.'"
            ),
        }
    }
}

/// Flags of the real CLIs that take a value the fake does not use; knowing
/// them keeps their value out of the positional arguments.
const CLAUDE_VALUE_FLAGS: &[&str] = &[
    "--permission-mode",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--append-system-prompt",
    "--system-prompt",
    "--add-dir",
    "--output-format",
    "--input-format",
    "--fallback-model",
    "--agents",
    "--setting-sources",
];
const CODEX_VALUE_FLAGS: &[&str] = &[
    "-p",
    "--profile",
    "-s",
    "--sandbox",
    "-a",
    "--ask-for-approval",
    "-C",
    "--cd",
    "-i",
    "--image",
    "--add-dir",
    "--oss-provider",
];
const OPENCODE_VALUE_FLAGS: &[&str] = &["--prompt", "--agent", "--port", "--hostname"];

/// Reads `args` (without the program name). `env_style` is `FAKE_AGENT_STYLE`.
pub fn parse(args: &[String], env_style: Option<&str>) -> Result<Action, ArgsError> {
    let mut rest = args;
    let mut style = match env_style.filter(|s| !s.is_empty()) {
        Some(name) => {
            Some(Style::from_name(name).ok_or_else(|| ArgsError::UnknownStyle(name.into()))?)
        }
        None => None,
    };
    if let Some(first) = rest.first() {
        let named = if first == "--style" {
            let name = rest
                .get(1)
                .ok_or_else(|| ArgsError::MissingValue("--style".into()))?;
            rest = &rest[2..];
            Some(name.as_str())
        } else if let Some(name) = first.strip_prefix("--style=") {
            rest = &rest[1..];
            Some(name)
        } else {
            None
        };
        if let Some(name) = named {
            style =
                Some(Style::from_name(name).ok_or_else(|| ArgsError::UnknownStyle(name.into()))?);
        }
    }
    let style = style.unwrap_or(Style::Claude);

    if rest
        .iter()
        .any(|a| a == "--version" || a == "-v" || a == "-V")
    {
        return Ok(Action::Version);
    }
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Action::Help);
    }

    let mut inv = Invocation {
        style,
        session: SessionRequest::Fresh(None),
        dangerous: false,
        model: None,
        mcp_config: None,
        settings: None,
        config_overrides: Vec::new(),
        ignored: Vec::new(),
    };
    let mut fresh_id: Option<String> = None;
    let mut resume_id: Option<String> = None;
    let mut fork = false;
    let mut positionals: Vec<String> = Vec::new();
    let value_flags = match style {
        Style::Claude => CLAUDE_VALUE_FLAGS,
        Style::Codex => CODEX_VALUE_FLAGS,
        Style::Opencode => OPENCODE_VALUE_FLAGS,
    };

    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i].as_str();
        i += 1;
        // `--flag=value` is the same as `--flag value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let take_value = |i: &mut usize| -> Result<String, ArgsError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            let v = rest
                .get(*i)
                .ok_or_else(|| ArgsError::MissingValue(flag.into()))?;
            *i += 1;
            Ok(v.clone())
        };
        match (style, flag) {
            (Style::Claude, "--session-id") => fresh_id = Some(take_value(&mut i)?),
            (Style::Claude, "--resume" | "-r") => {
                // A bare `--resume` opens the real CLI's picker; the fake has
                // none, so it starts fresh and records the flag.
                match rest
                    .get(i)
                    .filter(|v| inline.is_none() && !v.starts_with('-'))
                {
                    Some(id) => {
                        resume_id = Some(id.clone());
                        i += 1;
                    }
                    None => match inline {
                        Some(ref id) => resume_id = Some(id.clone()),
                        None => inv.ignored.push(arg.into()),
                    },
                }
            }
            (Style::Claude, "--fork-session") | (Style::Opencode, "--fork") => fork = true,
            (Style::Claude, "--dangerously-skip-permissions") => inv.dangerous = true,
            (Style::Claude, "--permission-mode") => {
                let mode = take_value(&mut i)?;
                if mode == "bypassPermissions" {
                    inv.dangerous = true;
                } else {
                    inv.ignored.extend([arg.to_string(), mode]);
                }
            }
            (Style::Claude, "--mcp-config") => inv.mcp_config = Some(take_value(&mut i)?),
            (Style::Claude, "--settings") => inv.settings = Some(take_value(&mut i)?),
            (Style::Claude | Style::Opencode, "--model")
            | (Style::Codex | Style::Opencode, "-m" | "--model") => {
                inv.model = Some(take_value(&mut i)?)
            }
            (Style::Codex, "--dangerously-bypass-approvals-and-sandbox" | "--yolo") => {
                inv.dangerous = true
            }
            (Style::Codex, "-c" | "--config") => inv.config_overrides.push(take_value(&mut i)?),
            (Style::Opencode, "--session" | "-s") => resume_id = Some(take_value(&mut i)?),
            (_, f) if value_flags.contains(&f) => {
                let v = take_value(&mut i)?;
                if inline.is_some() {
                    inv.ignored.push(arg.into());
                } else {
                    inv.ignored.extend([arg.to_string(), v]);
                }
            }
            (_, f) if f.starts_with('-') && f.len() > 1 => inv.ignored.push(arg.into()),
            _ => positionals.push(arg.into()),
        }
    }

    // Codex resumes through a trailing subcommand: `codex [flags] resume <id>`.
    if style == Style::Codex
        && let Some(at) = positionals.iter().position(|p| p == "resume")
        && at + 1 < positionals.len()
    {
        resume_id = Some(positionals.remove(at + 1));
        positionals.remove(at);
    }
    // ... and forks the same way: `codex [flags] fork <id>`.
    if style == Style::Codex
        && resume_id.is_none()
        && let Some(at) = positionals.iter().position(|p| p == "fork")
        && at + 1 < positionals.len()
    {
        resume_id = Some(positionals.remove(at + 1));
        positionals.remove(at);
        fork = true;
    }
    inv.ignored.extend(positionals);

    inv.session = match (fresh_id, resume_id, fork) {
        (new, Some(from), true) => SessionRequest::Fork {
            from: checked_source(from, style)?,
            new: new.map(checked_id).transpose()?,
        },
        (Some(_), Some(_), false) => return Err(ArgsError::SessionIdWithResume),
        (Some(id), None, _) => SessionRequest::Fresh(Some(checked_id(id)?)),
        (None, Some(id), false) => SessionRequest::Resume(checked_id(id)?),
        (None, None, _) => SessionRequest::Fresh(None),
    };
    Ok(Action::Run(inv))
}

/// A session id becomes a file name; refuse ids that would escape the
/// transcript directory.
fn checked_id(id: String) -> Result<String, ArgsError> {
    if id.is_empty() || id.contains('/') || id.contains('\0') || id.starts_with('.') {
        Err(ArgsError::UnsafeSessionId(id))
    } else {
        Ok(id)
    }
}

/// What a fork starts from: an id, or for claude also the absolute path
/// of a transcript (Claude Code 2.1.197 takes one from any folder).
fn checked_source(from: String, style: Style) -> Result<String, ArgsError> {
    if style == Style::Claude && from.starts_with('/') && from.ends_with(".jsonl") {
        return Ok(from);
    }
    checked_id(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str], env_style: Option<&str>) -> Invocation {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args, env_style) {
            Ok(Action::Run(inv)) => inv,
            other => panic!("expected a run, got {other:?}"),
        }
    }

    fn err(args: &[&str]) -> ArgsError {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(&args, None).expect_err("expected an error")
    }

    #[test]
    fn no_arguments_is_a_fresh_claude_session_with_a_minted_id() {
        let inv = run(&[], None);
        assert_eq!(inv.style, Style::Claude);
        assert_eq!(inv.session, SessionRequest::Fresh(None));
        assert!(!inv.dangerous);
    }

    #[test]
    fn claude_flags_are_read_and_unknown_ones_kept_verbatim() {
        let inv = run(
            &[
                "--session-id",
                "abc",
                "--dangerously-skip-permissions",
                "--mcp-config",
                "m.json",
                "--settings=s.json",
                "--model",
                "opus",
                "--verbose",
                "--add-dir",
                "/x",
                "hello",
            ],
            None,
        );
        assert_eq!(inv.session, SessionRequest::Fresh(Some("abc".into())));
        assert!(inv.dangerous);
        assert_eq!(inv.mcp_config.as_deref(), Some("m.json"));
        assert_eq!(inv.settings.as_deref(), Some("s.json"));
        assert_eq!(inv.model.as_deref(), Some("opus"));
        assert_eq!(inv.ignored, ["--verbose", "--add-dir", "/x", "hello"]);
    }

    #[test]
    fn claude_resume_takes_the_id_that_follows_it() {
        assert_eq!(
            run(&["--resume", "abc"], None).session,
            SessionRequest::Resume("abc".into())
        );
        assert_eq!(
            run(&["-r", "abc"], None).session,
            SessionRequest::Resume("abc".into())
        );
    }

    #[test]
    fn a_bare_claude_resume_starts_fresh_and_is_recorded() {
        let inv = run(&["--resume", "--verbose"], None);
        assert_eq!(inv.session, SessionRequest::Fresh(None));
        assert_eq!(inv.ignored, ["--resume", "--verbose"]);
    }

    #[test]
    fn bypass_permission_mode_counts_as_dangerous() {
        assert!(run(&["--permission-mode", "bypassPermissions"], None).dangerous);
        assert!(!run(&["--permission-mode", "plan"], None).dangerous);
    }

    #[test]
    fn session_id_together_with_resume_is_refused_like_the_real_cli() {
        assert_eq!(
            err(&["--session-id", "a", "--resume", "b"]),
            ArgsError::SessionIdWithResume
        );
    }

    #[test]
    fn each_clis_fork_arguments_ask_for_a_fork() {
        assert_eq!(
            run(
                &["--session-id", "n", "--resume", "o", "--fork-session"],
                None
            )
            .session,
            SessionRequest::Fork {
                from: "o".into(),
                new: Some("n".into())
            }
        );
        assert_eq!(
            run(
                &["--resume", "/c/projects/-w/o.jsonl", "--fork-session"],
                None
            )
            .session,
            SessionRequest::Fork {
                from: "/c/projects/-w/o.jsonl".into(),
                new: None
            }
        );
        assert_eq!(
            run(
                &[
                    "--style",
                    "codex",
                    "--no-daemon",
                    "-c",
                    "x=1",
                    "fork",
                    "t-1"
                ],
                None
            )
            .session,
            SessionRequest::Fork {
                from: "t-1".into(),
                new: None
            }
        );
        assert_eq!(
            run(
                &["--style", "opencode", "--session", "ses_1", "--fork"],
                None
            )
            .session,
            SessionRequest::Fork {
                from: "ses_1".into(),
                new: None
            }
        );
    }

    #[test]
    fn ids_that_would_escape_the_transcript_directory_are_refused() {
        assert!(matches!(
            err(&["--session-id", "../x"]),
            ArgsError::UnsafeSessionId(_)
        ));
        assert!(matches!(
            err(&["--resume", ".hidden"]),
            ArgsError::UnsafeSessionId(_)
        ));
    }

    #[test]
    fn a_flag_missing_its_value_is_refused() {
        assert_eq!(
            err(&["--session-id"]),
            ArgsError::MissingValue("--session-id".into())
        );
    }

    #[test]
    fn codex_style_from_the_first_arguments_resumes_through_a_trailing_subcommand() {
        let inv = run(
            &[
                "--style",
                "codex",
                "-c",
                "model=\"o3\"",
                "--dangerously-bypass-approvals-and-sandbox",
                "-c",
                "x=1",
                "--sandbox",
                "read-only",
                "resume",
                "t-1",
            ],
            None,
        );
        assert_eq!(inv.style, Style::Codex);
        assert_eq!(inv.session, SessionRequest::Resume("t-1".into()));
        assert!(inv.dangerous);
        assert_eq!(inv.config_overrides, ["model=\"o3\"", "x=1"]);
        assert_eq!(inv.ignored, ["--sandbox", "read-only"]);
    }

    #[test]
    fn codex_style_can_come_from_the_environment() {
        let inv = run(&[], Some("codex"));
        assert_eq!(inv.style, Style::Codex);
        assert_eq!(inv.session, SessionRequest::Fresh(None));
    }

    #[test]
    fn the_style_flag_wins_over_the_environment() {
        assert_eq!(
            run(&["--style=opencode"], Some("codex")).style,
            Style::Opencode
        );
    }

    #[test]
    fn codex_resume_without_an_id_starts_fresh() {
        let inv = run(&["--style", "codex", "resume", "--last"], None);
        assert_eq!(inv.session, SessionRequest::Fresh(None));
        assert_eq!(inv.ignored, ["--last", "resume"]);
    }

    #[test]
    fn opencode_session_flag_resumes() {
        let inv = run(&["--style", "opencode", "--session", "ses_1"], None);
        assert_eq!(inv.session, SessionRequest::Resume("ses_1".into()));
    }

    #[test]
    fn dangerous_flags_belong_to_their_own_style() {
        let inv = run(
            &["--style", "codex", "--dangerously-skip-permissions"],
            None,
        );
        assert!(!inv.dangerous);
        assert_eq!(inv.ignored, ["--dangerously-skip-permissions"]);
    }

    #[test]
    fn an_unknown_style_is_refused() {
        assert_eq!(
            err(&["--style", "gemini"]),
            ArgsError::UnknownStyle("gemini".into())
        );
    }

    #[test]
    fn version_anywhere_wins() {
        let args: Vec<String> = ["--style", "codex", "--version"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(parse(&args, None), Ok(Action::Version));
    }
}
