//! The sections of a CLI description (`clis/<name>.toml`, or a
//! `[providers.NAME]` table in config.toml) beyond its command line: how
//! its conversation's id is known, where it keeps its state and session
//! files, what tells its activity, how it takes an MCP server, and how its
//! version is read. The top-level keys are `config::ProviderConfig`'s.
//!
//! Every table refuses a key it does not know (a typo must fail loudly,
//! naming the file and the key), and `validate` refuses an argument
//! template naming a placeholder its key does not offer.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::ProviderConfig;

/// How a conversation's id is known (`[id]`, chosen by `how`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case", deny_unknown_fields)]
pub enum IdRule {
    /// hangar mints a uuid and passes it on a fresh start with `args`
    /// (`{id}`): the id is known at once (DESIGN rule 10: hangar chose it).
    Minted { args: Vec<String> },
    /// The CLI chooses it and writes it in a session file (`[session_files]`,
    /// required); it is adopted only on `hangar_core::found_identity`'s
    /// proof.
    Found,
    /// The CLI's own listing command prints it: `args` run in the session's
    /// folder, each line matched with `pattern` (a regex with a group named
    /// `id`).
    Listed { args: Vec<String>, pattern: String },
}

/// Where the CLI keeps its state: the folder `var` names (with `under_var`
/// below it, for a variable that names a home), else `default` (`~` is the
/// home).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateFolder {
    pub var: Option<String>,
    #[serde(default)]
    pub under_var: Option<String>,
    pub default: String,
}

/// How a session file's content is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    /// One JSON document.
    Json,
    /// One JSON entry per line.
    Jsonl,
}

/// Where the CLI records a conversation (`[session_files]`), and which of
/// its fields say what. Fields are JSON pointers (`/sessionId`); in a
/// `jsonl` file the first line holding a field is read for it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionFiles {
    /// Under the state folder; `*` matches within one path segment.
    pub glob: String,
    pub format: FileFormat,
    /// The conversation id: a JSON pointer, or `file-stem` where the id is
    /// the file's name without its extension (Pi keeps a session at the
    /// path hangar chose, named by hangar's id, under an id of its own).
    pub id: String,
    /// The folder the CLI ran in.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The process that wrote it.
    #[serde(default)]
    pub pid: Option<String>,
    /// When the conversation started (RFC 3339 or ms since the epoch);
    /// without it, the file's own time.
    #[serde(default)]
    pub started: Option<String>,
    /// The conversation's entries (a JSON pointer to an array in a `json`
    /// file; a `jsonl` file's entries are its lines).
    #[serde(default)]
    pub entries: Option<String>,
    /// How an entry says who wrote it (a turn's prompt, a turn's answer).
    #[serde(default)]
    pub turns: Option<Turns>,
}

/// What an entry says of a turn: the field naming its kind, the kinds that
/// are a person's prompt and those that answer it, and where the prompt's
/// text is (a string, or an array of parts with a `text` field).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turns {
    pub kind: String,
    pub prompt: Vec<String>,
    pub answer: Vec<String>,
    #[serde(default)]
    pub text: Option<String>,
}

/// Activity sources besides the session file's turns (`[activity]`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Activity {
    /// The CLI's own hooks, where it has them: the names of its events.
    #[serde(default)]
    pub hooks: Option<Hooks>,
    /// Screen patterns (case-sensitive substrings of one line).
    #[serde(default)]
    pub screen: Screen,
}

/// The CLI's hook events that start and end a turn, and where its hook
/// settings live (relative to the state folder).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hooks {
    pub settings: String,
    pub turn_start: String,
    pub turn_end: String,
}

/// What the CLI draws on screen: an open question or permission prompt
/// (`waiting`: substrings of one line), an idle input box (`idle`: regular
/// expressions, matched against the last non-blank line, trimmed), a turn
/// in progress (`working`: regular expressions, matched against each of
/// the bottom lines). `idle` and `working` are read only for a CLI without
/// `[session_files]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Screen {
    #[serde(default)]
    pub waiting: Vec<String>,
    #[serde(default)]
    pub idle: Vec<String>,
    #[serde(default)]
    pub working: Vec<String>,
}

/// How hangar's MCP server is given: `args` (`{file}` is hangar's MCP
/// config file, `{"mcpServers": {"hangar": ...}}`) before the CLI's other
/// arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpRule {
    pub args: Vec<String>,
}

/// How the installed CLI's version is read: `args` (default `--version`),
/// the first match of `pattern`'s first group (default: the first
/// `N.N.N`), and the versions the conformance suite ran, newest last.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionProbe {
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    pub tested: Vec<String>,
}

/// A description that cannot be used, naming the file (or config table)
/// and the key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DescriptionError {
    /// The TOML itself: toml's message names the key, line and column.
    #[error("{file}: {message}")]
    Toml { file: String, message: String },
    #[error("{file}: key `{key}`: {problem}")]
    Invalid {
        file: String,
        key: String,
        problem: String,
    },
}

/// A description read from `text`, named `file` in its errors.
pub fn parse(file: &str, text: &str) -> Result<ProviderConfig, DescriptionError> {
    let config: ProviderConfig = toml::from_str(text).map_err(|e| DescriptionError::Toml {
        file: file.to_owned(),
        message: e.to_string().trim_end().to_owned(),
    })?;
    validate(file, &config)?;
    Ok(config)
}

/// The placeholders each argument key offers.
const NONE: &[&str] = &[];
const RESUME: &[&str] = &["id", "state", "cwd"];
const MINTED: &[&str] = &["id", "state", "cwd"];
const FORK: &[&str] = &["from", "id", "state", "cwd"];
const MCP: &[&str] = &["file"];

/// `[session_files] id`'s word for "the file's name is the id".
pub const ID_IS_FILE_STEM: &str = "file-stem";

/// Whether a description holds together: every placeholder known to its
/// key, the ones a key needs present, and its patterns compile.
pub fn validate(file: &str, c: &ProviderConfig) -> Result<(), DescriptionError> {
    let bad = |key: &str, problem: String| DescriptionError::Invalid {
        file: file.to_owned(),
        key: key.to_owned(),
        problem,
    };
    let check = |key: &str, args: &[String], offered: &[&str], needed: Option<&str>| {
        for arg in args {
            for name in placeholders(arg) {
                if !offered.contains(&name) {
                    return Err(bad(
                        key,
                        format!(
                            "`{{{name}}}` is not a placeholder here (it takes {})",
                            if offered.is_empty() {
                                "none".to_owned()
                            } else {
                                offered
                                    .iter()
                                    .map(|o| format!("{{{o}}}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        ),
                    ));
                }
            }
        }
        if let Some(needed) = needed
            && !args.is_empty()
            && !args.iter().any(|a| placeholders(a).any(|n| n == needed))
        {
            return Err(bad(key, format!("must hold `{{{needed}}}`")));
        }
        Ok(())
    };
    check("args", &c.args, NONE, None)?;
    check("dangerous_args", &c.dangerous_args, NONE, None)?;
    check("resume_args", &c.resume_args, RESUME, Some("id"))?;
    if let Some(fork) = &c.fork_args {
        check("fork_args", fork, FORK, Some("from"))?;
    }
    if let Some(mcp) = &c.mcp {
        check("mcp.args", &mcp.args, MCP, Some("file"))?;
    }
    match &c.id {
        Some(IdRule::Minted { args }) => {
            if args.is_empty() {
                return Err(bad("id.args", "a minted id must be passed".to_owned()));
            }
            check("id.args", args, MINTED, Some("id"))?;
        }
        Some(IdRule::Found) if c.session_files.is_none() => {
            return Err(bad(
                "id.how",
                "a found id needs [session_files] saying where the CLI records it".to_owned(),
            ));
        }
        Some(IdRule::Listed { args, pattern }) => {
            check("id.args", args, NONE, None)?;
            let re = regex::Regex::new(pattern).map_err(|e| bad("id.pattern", e.to_string()))?;
            if !re.capture_names().any(|n| n == Some("id")) {
                return Err(bad(
                    "id.pattern",
                    "needs a group named `id`: (?P<id>...)".to_owned(),
                ));
            }
        }
        _ => {}
    }
    if (c.id.is_some() || c.fork_args.is_some()) && c.resume_args.is_empty() {
        return Err(bad(
            "resume_args",
            "a CLI whose id hangar knows must say how to resume it".to_owned(),
        ));
    }
    let uses_state = |args: &[String]| args.iter().any(|a| placeholders(a).any(|n| n == "state"));
    let mut templated = c.resume_args.clone();
    templated.extend(c.fork_args.clone().unwrap_or_default());
    if let Some(IdRule::Minted { args }) = &c.id {
        templated.extend(args.clone());
    }
    if (uses_state(&templated) || c.session_files.is_some()) && c.state.is_none() {
        return Err(bad(
            "state",
            "`{state}` and [session_files] need [state] saying where the CLI keeps it".to_owned(),
        ));
    }
    if let Some(files) = &c.session_files
        && !(files.id.starts_with('/') || files.id == ID_IS_FILE_STEM)
    {
        return Err(bad(
            "session_files.id",
            format!("must be a JSON pointer (`/sessionId`) or `{ID_IS_FILE_STEM}`"),
        ));
    }
    if let Some(files) = &c.session_files
        && files.glob.split('/').any(|s| s == ".." || s.is_empty())
    {
        return Err(bad(
            "session_files.glob",
            "must be a relative path under the state folder".to_owned(),
        ));
    }
    if let Some(screen) = c.activity.as_ref().map(|a| &a.screen) {
        for (key, patterns) in [
            ("activity.screen.idle", &screen.idle),
            ("activity.screen.working", &screen.working),
        ] {
            for p in patterns {
                regex::Regex::new(p).map_err(|e| bad(key, e.to_string()))?;
            }
        }
    }
    if let Some(v) = &c.version {
        if let Some(p) = &v.pattern {
            let re = regex::Regex::new(p).map_err(|e| bad("version.pattern", e.to_string()))?;
            if re.captures_len() < 2 {
                return Err(bad(
                    "version.pattern",
                    "needs a group holding the version".to_owned(),
                ));
            }
        }
        for t in &v.tested {
            if hangar_core::cli_versions::parse_version(t).is_none() {
                return Err(bad(
                    "version.tested",
                    format!("`{t}` is not a version N.N.N"),
                ));
            }
        }
    }
    if let Some(p) = &c.package
        && !(p.starts_with("npm:") || p.starts_with("pypi:"))
    {
        return Err(bad(
            "package",
            format!("`{p}` must start with npm: or pypi:"),
        ));
    }
    Ok(())
}

/// The `{name}` placeholders in an argument.
pub fn placeholders(arg: &str) -> impl Iterator<Item = &str> {
    arg.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
}

/// An argument template with its placeholders filled.
pub fn fill(arg: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = arg.to_owned();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}
