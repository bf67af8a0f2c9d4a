//! CLIs described in a file (issue 45): what hangar knows of a CLI said in
//! TOML (`format`), shipped for the CLIs below in `clis/<name>.toml` and
//! built into the binary, or written by a person as `[providers.NAME]` in
//! config.toml (the same keys; over a shipped file, its keys win).
//!
//! A description says the CLI's program and arguments; how its
//! conversation's id is known (`[id]`: minted by hangar, found in a session
//! file, or listed by the CLI); how it resumes and forks (`{id}`,
//! `{from}`); its state folder and session files; its activity (hooks,
//! turns in its session file, screen patterns); its limit and login words;
//! how it takes an MCP server; its environment; its version probe and the
//! versions tested. Each shipped file says where each fact comes from.
//!
//! What a file cannot say stays in Rust, in a provider's own folder. This
//! module never starts anything and never adopts an id: a `found` id is
//! proven by `hangar_core::found_identity` over `session_files`' facts.

pub mod format;
pub mod session_files;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use hangar_core::cli_versions::Version;
use hangar_core::{IdSource, Provider, ProviderSessionId};

use crate::adapter::{Adapter, SessionArgs, StateDir};
use crate::config::{ProviderConfig, ProvidersConfig};
use crate::launch::{LaunchSpec, McpServer};
use crate::transcript::turns::TurnFacts;
use format::{DescriptionError, IdRule};
use hangar_core::activity::Reading;

/// The shipped descriptions: (provider name, file, text).
const SHIPPED: [(&str, &str, &str); 8] = [
    (
        "gemini",
        "clis/gemini.toml",
        include_str!("../../clis/gemini.toml"),
    ),
    ("pi", "clis/pi.toml", include_str!("../../clis/pi.toml")),
    (
        "qwen",
        "clis/qwen.toml",
        include_str!("../../clis/qwen.toml"),
    ),
    (
        "copilot",
        "clis/copilot.toml",
        include_str!("../../clis/copilot.toml"),
    ),
    (
        "crush",
        "clis/crush.toml",
        include_str!("../../clis/crush.toml"),
    ),
    (
        "kilo",
        "clis/kilo.toml",
        include_str!("../../clis/kilo.toml"),
    ),
    (
        "aider",
        "clis/aider.toml",
        include_str!("../../clis/aider.toml"),
    ),
    (
        "kimi",
        "clis/kimi.toml",
        include_str!("../../clis/kimi.toml"),
    ),
];

/// A shipped CLI: its description, and its screen's waiting patterns as
/// the `Adapter` trait hands them out.
pub struct Described {
    pub name: &'static str,
    pub config: ProviderConfig,
    waiting: &'static [&'static str],
    npm: Option<&'static str>,
    /// Where its session files are, for a CLI that describes them: they
    /// are its transcript (its turns, for activity and delivery).
    transcripts: Option<StateDir>,
    /// Its screen's idle and working patterns, read only where it has no
    /// session files (those say its turn better).
    screen: Option<ScreenPatterns>,
}

/// `[activity.screen] idle` and `working`, compiled: a turn runs while a
/// `working` pattern matches one of the bottom lines; it is over while an
/// `idle` pattern matches the last one (Aider's empty `>` prompt), so a
/// prompt typed into the box but not yet taken reads neither.
pub struct ScreenPatterns {
    idle: Vec<regex::Regex>,
    working: Vec<regex::Regex>,
}

/// How many non-blank lines from the bottom a `working` pattern may sit.
const WORKING_WINDOW: usize = 8;

impl ScreenPatterns {
    fn of(config: &ProviderConfig) -> Option<ScreenPatterns> {
        if config.session_files.is_some() {
            return None;
        }
        let screen = &config.activity.as_ref()?.screen;
        let compile = |patterns: &[String]| -> Vec<regex::Regex> {
            patterns
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect()
        };
        let patterns = ScreenPatterns {
            idle: compile(&screen.idle),
            working: compile(&screen.working),
        };
        (!patterns.idle.is_empty() || !patterns.working.is_empty()).then_some(patterns)
    }

    pub fn activity(&self, screen: &str) -> Option<hangar_core::activity::Activity> {
        use hangar_core::activity::Activity;
        let bottom: Vec<&str> = screen
            .lines()
            .rev()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(WORKING_WINDOW)
            .collect();
        if bottom
            .iter()
            .any(|l| self.working.iter().any(|p| p.is_match(l)))
        {
            return Some(Activity::Working);
        }
        let last = bottom.first()?;
        self.idle
            .iter()
            .any(|p| p.is_match(last))
            .then_some(Activity::Idle)
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// A description's state folder as the transcript readers take it.
fn transcript_dir(config: &ProviderConfig) -> Option<StateDir> {
    config.session_files.as_ref()?;
    let state = config.state.as_ref()?;
    Some(StateDir {
        // No variable: one no environment holds, so `$HOME` decides.
        var: state.var.as_deref().map_or("", leak),
        under_home: leak(state.default.strip_prefix("~/")?),
        under_var: state.under_var.as_deref().map_or("", leak),
    })
}

/// Every shipped description, parsed once. A shipped file that does not
/// parse is a build that must not ship: `every_shipped_file_parses` fails.
static DESCRIBED: LazyLock<BTreeMap<&'static str, Described>> = LazyLock::new(|| {
    SHIPPED
        .iter()
        .filter_map(|(name, file, text)| {
            let config = format::parse(file, text).ok()?;
            let waiting = config
                .activity
                .as_ref()
                .map(|a| a.screen.waiting.clone())
                .unwrap_or_default();
            // Leaked once per shipped file, at the first look: the trait
            // hands out `'static` patterns.
            let waiting: Vec<&'static str> = waiting
                .into_iter()
                .map(|p| &*Box::leak(p.into_boxed_str()))
                .collect();
            let npm = config
                .package
                .as_deref()
                .and_then(|p| p.strip_prefix("npm:"))
                .map(leak);
            Some((
                *name,
                Described {
                    name,
                    transcripts: transcript_dir(&config),
                    screen: ScreenPatterns::of(&config),
                    config,
                    waiting: Box::leak(waiting.into_boxed_slice()),
                    npm,
                },
            ))
        })
        .collect()
});

/// Every shipped description, parsed, or the first error (the tests').
pub fn parse_shipped() -> Result<Vec<(&'static str, ProviderConfig)>, DescriptionError> {
    SHIPPED
        .iter()
        .map(|(name, file, text)| Ok((*name, format::parse(file, text)?)))
        .collect()
}

/// The shipped description of the CLI named `name`.
pub fn shipped(name: &str) -> Option<&'static Described> {
    DESCRIBED.get(name)
}

/// The adapter of a shipped CLI; the plain one if its file were missing
/// (`every_shipped_file_parses` keeps that from shipping).
pub fn shipped_adapter(provider: &Provider) -> &'static dyn Adapter {
    match shipped(provider.name()) {
        Some(d) => d,
        None => &crate::shell::adapter::Plain,
    }
}

/// Whether a shipped CLI records its turns in session files hangar reads:
/// its file of a known conversation shows the turn start, even before it
/// exists (such a CLI writes it with its first prompt).
pub fn records_turns(provider: &Provider) -> bool {
    shipped(provider.name()).is_some_and(|d| d.transcripts.is_some())
}

/// The description a session of `provider` launches with: the shipped
/// file with `[providers.NAME]` over it, or the table alone (a custom
/// provider); `None` for a CLI with an adapter of its own and no file.
pub fn description(provider: &Provider, providers: &ProvidersConfig) -> Option<ProviderConfig> {
    let own = providers.get(provider.name());
    match (shipped(provider.name()), own) {
        (Some(file), Some(own)) => Some(file.config.overlaid(own)),
        (Some(file), None) => Some(file.config.clone()),
        (None, Some(own)) if matches!(provider, Provider::Custom(_)) => Some(own.clone()),
        _ => None,
    }
}

/// The CLI's state folder, with the environment `var`.
pub fn state_folder(c: &ProviderConfig, var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let state = c.state.as_ref()?;
    if let Some(v) = state.var.as_deref().and_then(var).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(v);
        return Some(match &state.under_var {
            Some(under) => dir.join(under),
            None => dir,
        });
    }
    match state.default.strip_prefix("~/") {
        Some(rest) => Some(PathBuf::from(var("HOME")?).join(rest)),
        None => Some(PathBuf::from(&state.default)),
    }
}

/// What a start of a described CLI depends on.
pub struct Start<'a> {
    /// The conversation to resume.
    pub resume: Option<&'a str>,
    pub dangerous: bool,
    pub cwd: &'a str,
    /// The CLI's state folder (`state_folder`).
    pub state: Option<&'a Path>,
}

fn values<'a>(start: &Start<'_>, pairs: &[(&'a str, &str)]) -> BTreeMap<&'a str, String> {
    let mut v: BTreeMap<&str, String> = pairs
        .iter()
        .map(|(k, val)| (*k, (*val).to_owned()))
        .collect();
    v.insert("cwd", start.cwd.to_owned());
    if let Some(state) = start.state {
        v.insert("state", state.display().to_string());
    }
    v
}

fn filled(args: &[String], values: &BTreeMap<&str, String>) -> Vec<String> {
    args.iter().map(|a| format::fill(a, values)).collect()
}

/// The arguments that start a session of a described CLI: its `args`, its
/// `dangerous_args` when dangerous, then its resume of `start.resume`, or a
/// fresh start (with an id hangar mints, for a `minted` CLI). A minted
/// conversation the CLI has not recorded yet (no prompt reached it before
/// the session stopped) is started fresh under a new id: the CLI's resume
/// refuses it, and so may its fresh start under the old id (Gemini CLI
/// 0.61: "Session ID ... already exists" for a file holding only its
/// header). Nothing is lost: it held no turn. A CLI whose resume is its
/// fresh start (the same arguments) is always resumed.
pub fn session_args(
    c: &ProviderConfig,
    start: &Start<'_>,
    mint: &dyn Fn() -> String,
) -> SessionArgs {
    let mut out = SessionArgs {
        args: c.args.clone(),
        minted: None,
    };
    if start.dangerous {
        out.args.extend(c.dangerous_args.iter().cloned());
    }
    let minted_args = match &c.id {
        Some(IdRule::Minted { args }) => Some(args),
        _ => None,
    };
    match (start.resume, minted_args) {
        (Some(id), Some(fresh)) if *fresh != c.resume_args && !recorded(c, start, id) => {
            let id = mint();
            out.args
                .extend(filled(fresh, &values(start, &[("id", &id)])));
            out.minted = Some(ProviderSessionId::new(id, IdSource::ResumeRequest));
        }
        (Some(id), _) => {
            out.args
                .extend(filled(&c.resume_args, &values(start, &[("id", id)])));
        }
        (None, Some(fresh)) => {
            let id = mint();
            out.args
                .extend(filled(fresh, &values(start, &[("id", &id)])));
            out.minted = Some(ProviderSessionId::new(id, IdSource::ResumeRequest));
        }
        (None, None) => {}
    }
    out
}

/// Whether the CLI recorded conversation `id`: true when it cannot be told
/// (no session files described), so the resume is tried.
fn recorded(c: &ProviderConfig, start: &Start<'_>, id: &str) -> bool {
    match (&c.session_files, start.state) {
        (Some(files), Some(state)) => session_files::conversation_recorded(files, state, id),
        _ => true,
    }
}

/// The arguments of a fork of conversation `from` (`fork_args`), with the
/// id hangar mints for it when the template takes `{id}` (`own`: the id an
/// earlier start of this fork was given). `None`: the CLI cannot fork.
pub fn fork_args(
    c: &ProviderConfig,
    from: &str,
    own: Option<&str>,
    start: &Start<'_>,
    mint: &dyn Fn() -> String,
) -> Option<SessionArgs> {
    let template = c.fork_args.as_ref()?;
    let mut out = SessionArgs {
        args: c.args.clone(),
        minted: None,
    };
    if start.dangerous {
        out.args.extend(c.dangerous_args.iter().cloned());
    }
    let takes_id = template
        .iter()
        .any(|a| format::placeholders(a).any(|n| n == "id"));
    let id = takes_id.then(|| own.map(str::to_owned).unwrap_or_else(mint));
    let mut pairs = vec![("from", from)];
    if let Some(id) = &id {
        pairs.push(("id", id));
    }
    out.args.extend(filled(template, &values(start, &pairs)));
    out.minted = id.map(|id| ProviderSessionId::new(id, IdSource::ResumeRequest));
    Some(out)
}

/// The launch with hangar's MCP server given as the description says
/// (`[mcp] args`, before the CLI's other arguments); unchanged without.
pub fn with_mcp(c: &ProviderConfig, mut spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
    if let Some(mcp) = &c.mcp {
        let file = BTreeMap::from([("file", server.config_file.display().to_string())]);
        spec.args.splice(0..0, filled(&mcp.args, &file));
    }
    spec
}

/// The version in the output of the CLI's version probe.
pub fn version_in(c: &ProviderConfig, output: &str) -> Option<Version> {
    let pattern = c.version.as_ref().and_then(|v| v.pattern.as_deref());
    match pattern.and_then(|p| regex::Regex::new(p).ok()) {
        Some(re) => re
            .captures_iter(output)
            .find_map(|c| hangar_core::cli_versions::parse_version(c.get(1)?.as_str())),
        None => hangar_core::cli_versions::parse_version(output),
    }
}

/// The ids the CLI's own listing prints (`[id] how = "listed"`), in order.
pub fn listed_ids(c: &ProviderConfig, output: &str) -> Vec<String> {
    let Some(IdRule::Listed { pattern, .. }) = &c.id else {
        return Vec::new();
    };
    let Ok(re) = regex::Regex::new(pattern) else {
        return Vec::new();
    };
    output
        .lines()
        .filter_map(|l| Some(re.captures(l)?.name("id")?.as_str().to_owned()))
        .collect()
}

/// The daemon's own environment: the trait's methods take none, and the
/// daemon's environment is the one its agents are started with.
fn daemon_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Adapter for Described {
    fn session_args(
        &self,
        resume: Option<&str>,
        dangerous: bool,
        _sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> SessionArgs {
        let state = state_folder(&self.config, &daemon_var);
        let start = Start {
            resume,
            dangerous,
            cwd: "",
            state: state.as_deref(),
        };
        session_args(&self.config, &start, mint)
    }

    fn fork_args(
        &self,
        from: &str,
        own: Option<&str>,
        dangerous: bool,
        _sandboxed: bool,
        mint: &dyn Fn() -> String,
    ) -> Option<SessionArgs> {
        let state = state_folder(&self.config, &daemon_var);
        let start = Start {
            resume: None,
            dangerous,
            cwd: "",
            state: state.as_deref(),
        };
        fork_args(&self.config, from, own, &start, mint)
    }

    fn with_mcp(&self, spec: LaunchSpec, server: &McpServer) -> LaunchSpec {
        with_mcp(&self.config, spec, server)
    }

    fn takes_mcp(&self) -> bool {
        self.config.mcp.is_some()
    }

    fn conversation_exists(&self, _transcripts: Option<&Path>, _cwd: &str, id: &str) -> bool {
        let state = state_folder(&self.config, &daemon_var);
        let start = Start {
            resume: None,
            dangerous: false,
            cwd: "",
            state: state.as_deref(),
        };
        recorded(&self.config, &start, id)
    }

    fn npm_package(&self) -> Option<&'static str> {
        self.npm
    }

    fn version_in(&self, output: &str) -> Option<Version> {
        version_in(&self.config, output)
    }

    fn tested_version(&self) -> Option<Version> {
        let tested = &self.config.version.as_ref()?.tested;
        tested
            .iter()
            .filter_map(|t| hangar_core::cli_versions::parse_version(t))
            .max()
    }

    fn permission_prompts(&self) -> &'static [&'static str] {
        self.waiting
    }

    fn transcript_state(&self) -> Option<StateDir> {
        self.transcripts
    }

    fn screen_activity(&self, screen: &str) -> Option<hangar_core::activity::Activity> {
        self.screen.as_ref()?.activity(screen)
    }

    fn find_transcript(&self, root: &Path, _cwd: &str, psid: &str) -> Option<PathBuf> {
        let rule = self.config.session_files.as_ref()?;
        session_files::file_of(rule, root, psid)
    }

    fn finding_walks(&self) -> bool {
        true
    }

    fn transcript_reading(
        &self,
        lines: &[String],
        _complete: bool,
        fallback_ms: u64,
    ) -> Option<Reading> {
        let rule = self.config.session_files.as_ref()?;
        match session_files::turn_activity(rule, &lines.join("\n")) {
            hangar_core::activity::Activity::Unknown => None,
            activity => Some(Reading {
                activity,
                at_ms: fallback_ms,
            }),
        }
    }

    fn turn_facts(&self, lines: &[String]) -> TurnFacts {
        let text = lines.join("\n");
        match self.config.session_files.as_ref() {
            Some(rule) => TurnFacts {
                prompted: session_files::holds_a_prompt(rule, &text),
                activity: session_files::turn_activity(rule, &text),
            },
            None => TurnFacts {
                prompted: false,
                activity: hangar_core::activity::Activity::Unknown,
            },
        }
    }
}

#[cfg(test)]
mod tests;
