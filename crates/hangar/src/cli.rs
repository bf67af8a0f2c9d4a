//! The command tree (clap) and what each command asks the daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use hangar_core::display;
use hangar_protocol::message as msg;
use hangar_protocol::paths::Paths;
use serde::Serialize;

use crate::api;
use crate::conn::{self, Target};
use crate::human;

#[derive(Parser, Debug)]
#[command(
    name = "hangar",
    version,
    about = "A workspace daemon for AI coding-agent CLIs: tiled panes, parked agents, restore without fork-bombs.",
    long_about = "hangar keeps many agent sessions (claude, codex, opencode, shells) in pseudo-terminals, \
arranged as tabs of tiled panes plus a pool of parked agents. It restores only what is on screen after a \
restart and wakes every other agent by its provider session id when it is needed.\n\n\
Run `hangar` with no command for the terminal UI. State lives in $HANGAR_HOME."
)]
pub struct Cli {
    /// Print exactly one JSON document on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Run the command on another machine's hangar, over SSH: a
    /// `[hosts.NAME]` of config.toml.
    #[arg(long, global = true, env = "HANGAR_HOST", value_name = "NAME")]
    pub host: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the daemon in the foreground.
    Daemon,
    /// Stop the daemon: every live session's process group is ended, state is kept.
    Shutdown,
    /// Start a new session (an agent or a shell) in a pane, or parked.
    New {
        /// claude, codex, opencode, gemini, pi, qwen, copilot, crush, kilo, aider, kimi,
        /// shell, or a custom provider from config. Without it: the first of those
        /// agent CLIs, in that order, whose program is found, else the shell.
        #[arg(long)]
        provider: Option<String>,
        /// The folder it runs in (default: the tab's folder, else this one).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Tab id, id prefix or exact title (default: the active tab).
        #[arg(long)]
        tab: Option<String>,
        #[arg(long)]
        title: Option<String>,
        /// Split this session's pane.
        #[arg(long)]
        split: Option<String>,
        #[arg(long, value_parser = ["vertical", "horizontal"], requires = "split")]
        direction: Option<String>,
        /// Put it straight into the tab's parked pool, without a process.
        #[arg(long)]
        parked: bool,
        /// Do not route its API traffic through the capture proxy.
        #[arg(long)]
        no_capture: bool,
        /// Do not give it the orchestration MCP server.
        #[arg(long)]
        no_mcp: bool,
        /// Run it in a new git worktree (on a new branch BRANCH, default made
        /// from the title) of the repository its folder is in.
        #[arg(long, value_name = "BRANCH", num_args = 0..=1, default_missing_value = "")]
        worktree: Option<String>,
        /// Never type the continuation prompt by itself after a usage limit
        /// (`hangar limit ID --continue on` turns it back on).
        #[arg(long)]
        no_auto_continue: bool,
        /// Its own cost budget in USD (at list prices): at 80 % you are
        /// told; at 100 % it finishes its turn and hibernates. Refused when
        /// a model it would use has no price.
        #[arg(long, value_name = "USD")]
        max_cost: Option<f64>,
        /// Run it on a container engine (`[engines.NAME]` in config.toml),
        /// never on this machine.
        #[arg(long, value_name = "NAME")]
        engine: Option<String>,
        /// With --engine: run this image (already in the engine) instead of
        /// the engine's own.
        #[arg(long, value_name = "IMAGE", requires = "engine")]
        image: Option<String>,
        /// Run it in hangar's sandbox: only its folder writable, no other
        /// home file visible, network only through hangar's proxy, no
        /// credential inside (needs bubblewrap).
        #[arg(long)]
        sandbox: bool,
        /// Run it under this provider account (`[accounts.NAME]` in
        /// config.toml): its credential instead of the provider's own login.
        #[arg(long, value_name = "NAME")]
        account: Option<String>,
    },
    /// List every session.
    Ls {
        /// Ask this machine and every `[hosts.NAME]` at once (each within
        /// its connect timeout plus 10 s); a host that is down is listed
        /// with its reason and never holds up the others.
        #[arg(long)]
        all_hosts: bool,
    },
    /// Daemon, session counts and the last restore.
    Status,
    /// Move a pane into its tab's parked pool (its process keeps running).
    Park { id: String },
    /// Put a parked session back into a pane (wakes it).
    Unpark {
        id: String,
        #[arg(long)]
        tab: Option<String>,
        /// Put it beside this pane.
        #[arg(long)]
        split: Option<String>,
        #[arg(long, value_parser = ["vertical", "horizontal"], requires = "split")]
        direction: Option<String>,
    },
    /// Remove a pane from the grid, remembering where it was.
    Bury { id: String },
    /// Put a buried pane back where it was (wakes it).
    Unbury { id: String },
    /// Add a session to the pinned list.
    Pin { id: String },
    /// Remove a session from the pinned list.
    Unpin { id: String },
    /// Start a hibernated (or failed) session, resuming its provider session.
    Wake {
        #[arg(required_unless_present = "resume_queue")]
        id: Option<String>,
        /// Close the wake queue's breaker after authentication failures.
        #[arg(long)]
        resume_queue: bool,
    },
    /// Remove parked records untouched for longer than DURATION (e.g. 7d);
    /// transcripts are kept and resume commands printed.
    Evict {
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        parked_older_than: std::time::Duration,
        #[arg(long)]
        dry_run: bool,
    },
    /// Close agents inactive for longer than DURATION (hibernated ones; with
    /// --include-live, live ones too). Busy agents are skipped.
    CloseIdle {
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: std::time::Duration,
        #[arg(long)]
        include_live: bool,
        #[arg(long)]
        yes: bool,
    },
    /// The lifecycle journal: print it, follow it, or summarize it.
    Journal {
        /// `summarize`: restore durations, stuck spawns, wake storms,
        /// failures by reason, budget hibernations.
        #[arg(value_parser = ["summarize"])]
        action: Option<String>,
        #[arg(long)]
        follow: bool,
        /// Wake requests that make a storm (with --window).
        #[arg(long, default_value_t = 10)]
        storm_wakes: usize,
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        storm_window: std::time::Duration,
    },
    /// Stop a session's process, keeping everything needed to wake it.
    /// Refused while its turn runs or a command it started runs, unless
    /// --force.
    Hibernate {
        id: String,
        /// Stop it even while its turn or a command it started runs.
        #[arg(long)]
        force: bool,
    },
    /// Type TEXT into a session and press Enter (wakes it first).
    Send { id: String, text: String },
    /// Attach this terminal to a session (wakes it first).
    Attach { id: String },
    /// Close a session; linked children are closed only with --yes.
    Close {
        id: String,
        #[arg(long)]
        yes: bool,
        /// Also delete the branch of a worktree that is removed (`git branch -d`).
        #[arg(long)]
        delete_branch: bool,
    },
    /// List the git worktrees hangar created, with their state.
    Worktrees {
        /// Remove the clean ones whose session is gone (never one holding work).
        #[arg(long)]
        prune: bool,
    },
    /// Print a session's screen as text (the last saved one when hibernated).
    Screen {
        id: String,
        /// Also print up to N lines of its history above the screen.
        #[arg(long, value_name = "N")]
        scrollback: Option<u32>,
    },
    /// Tabs: new, ls, close, rename.
    #[command(subcommand)]
    Tab(TabCommand),
    /// Apply settings: restarts live agent sessions one at a time.
    Reload {
        #[arg(long, value_parser = ["on", "off"])]
        dangerous: Option<String>,
    },
    /// Import a workspace: `agent-code [FILE]` (default: where Agent Code
    /// keeps it) or `hangar FILE`.
    Import {
        #[arg(value_parser = ["agent-code", "hangar"])]
        format: String,
        file: Option<PathBuf>,
        /// Show what would be imported, kept and dropped, and import nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Export the whole workspace as JSON (from the store when no daemon runs).
    Export,
    /// The last messages of a session's conversation, read from its
    /// transcript without waking it.
    Transcript {
        id: String,
        /// How many messages, counted from the end.
        #[arg(long, default_value_t = 20)]
        tail: usize,
    },
    /// Find a word in every session's history, screen and transcript,
    /// hibernated ones included, without waking any. Case-insensitive
    /// unless the query has an upper-case letter; exits 1 when nothing
    /// matches.
    Search {
        query: String,
        /// Search only this session (id or unique prefix).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Ask this machine and every `[hosts.NAME]` at once (each within
        /// its connect timeout plus 10 s); a host that is down is listed
        /// with its reason and never holds up the others.
        #[arg(long)]
        all_hosts: bool,
    },
    /// A session's captured API traffic (recorded by hangar's proxy), read
    /// from $HANGAR_HOME/capture without waking anything.
    Capture {
        id: String,
        /// Keep printing events as they are recorded (with --json: one
        /// event per line).
        #[arg(long)]
        follow: bool,
    },
    /// List sessions sharing one provider session id, and fix them.
    Doctor {
        /// Forget this session's provider id: its next wake starts fresh.
        #[arg(long, conflicts_with = "forget")]
        fork: Option<String>,
        /// Close this session record (its conversation stays on disk).
        #[arg(long)]
        forget: Option<String>,
        /// Confirm a --forget that also closes linked children.
        #[arg(long, requires = "forget")]
        yes: bool,
    },
    /// Make a tab active and focus a pane (what the TUI's focus moves do).
    Focus {
        /// The pane to focus (its tab becomes active).
        id: Option<String>,
        #[arg(long)]
        tab: Option<String>,
    },
    /// The orchestration MCP server on stdio, for the agent of session ID
    /// (hangar gives it to claude and codex agents; its token comes from
    /// HANGAR_MCP_TOKEN).
    Mcp {
        #[arg(long)]
        session: String,
    },
    /// Set the share (0.1..0.9) of the first side of the split holding a pane.
    Ratio { id: String, ratio: f32 },
    /// Wait until agents finish their turn (or wait for you); exits 124 on
    /// timeout.
    Wait {
        /// The sessions to wait for (ids or unique prefixes); all of them
        /// must reach the state.
        #[arg(required = true)]
        ids: Vec<String>,
        /// `idle`: the turn finished; `waiting`: the agent asks you
        /// something; `any`: either.
        #[arg(long, default_value = "idle", value_parser = ["idle", "waiting", "any"])]
        until: String,
        /// Give up after this long (e.g. 30s, 10m).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        timeout: Option<std::time::Duration>,
        /// Find each session on whichever host holds it (`HOST:ID` names
        /// the host) and wait on every host at once.
        #[arg(long)]
        all_hosts: bool,
    },
    /// Serve the web and phone view: prints a pairing URL (and a QR code on
    /// a terminal). Default: 127.0.0.1 on a free port.
    Web {
        /// IP:PORT to listen on; anything but loopback needs TLS or
        /// --insecure-lan.
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// The paired browsers can look but never type or act.
        #[arg(long)]
        read_only: bool,
        /// Serve HTTPS with this PEM certificate chain (with --tls-key).
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Allow plain HTTP on a non-loopback address (anyone on the network
        /// who sees the traffic can take over).
        #[arg(long)]
        insecure_lan: bool,
        /// End every paired browser of every running `hangar web`, and exit.
        #[arg(long, conflicts_with_all = ["listen", "read_only", "tls_cert", "tls_key", "insecure_lan"])]
        revoke: bool,
    },
    /// This machine and every configured host: reachable or not, hangar
    /// version, sessions and live count.
    Hosts,
    /// This machine's daemon socket over stdio, for `--host` from another
    /// machine (run by ssh); not for people.
    #[command(hide = true)]
    Bridge {
        /// Carry many daemon connections as channels of this one stream
        /// (what a hangar of this release asks for).
        #[arg(long)]
        mux: bool,
    },
    /// Called back by an agent's hooks (installed by hangar); not for people.
    #[command(hide = true)]
    Hook {
        event: String,
        #[arg(long)]
        session: String,
    },
    /// What every session's requests consumed (tokens, cost at list prices)
    /// and each provider account's usage windows and limits.
    Usage {
        /// How far back: a duration (5h, 24h, 7d) or a date (2026-12-01,
        /// local midnight) or an RFC 3339 time. Default 24h.
        #[arg(long, value_name = "5h|24h|7d|DATE")]
        since: Option<String>,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
        /// Ask this machine and every `[hosts.NAME]` at once (each within
        /// its connect timeout plus 10 s); a host that is down is listed
        /// with its reason and never holds up the others.
        #[arg(long)]
        all_hosts: bool,
    },
    /// A session's usage limit, and whether hangar types the continuation
    /// prompt by itself when the limit resets.
    Limit {
        id: String,
        /// Turn the automatic continuation on or off for this session.
        #[arg(long = "continue", value_parser = ["on", "off"])]
        continue_: Option<String>,
        /// Set the session's own cost budget in USD.
        #[arg(long, value_name = "USD")]
        max_cost: Option<f64>,
        /// Carry the session on under this account (`[accounts.NAME]` of
        /// its provider) now, in the same pane and conversation; refused
        /// mid-turn, while it waits for you or while you are attached.
        #[arg(long, value_name = "ACCOUNT")]
        failover: Option<String>,
    },
    /// Keep a session's agent on a goal across turns: hangar types it, then
    /// a short continuation at each end of turn, until the agent calls the
    /// MCP tool goal_done, --max-turns turns passed, an error, or --stop.
    /// Without TEXT or --stop: show the session's goal.
    Goal {
        id: String,
        text: Option<String>,
        /// The most turns (default 20).
        #[arg(long, value_name = "N", conflicts_with = "stop")]
        max_turns: Option<u32>,
        /// Stop the session's goal (nothing more is typed for it).
        #[arg(long, conflicts_with = "text")]
        stop: bool,
    },
    /// What a session changed: its commits since the merge-base with its
    /// base branch, plus staged, unstaged and untracked files.
    Diff {
        id: String,
        /// Only the changed files and their line counts.
        #[arg(long)]
        stat: bool,
        /// Compare with this ref instead of the session's recorded base.
        #[arg(long, value_name = "REF")]
        base: Option<String>,
    },
    /// Send review comments to the agent as one prompt naming each file and
    /// line (wakes it; refused while it is mid-turn).
    Review {
        id: String,
        #[arg(long, num_args = 2, value_names = ["FILE:LINE", "TEXT"], required = true, action = clap::ArgAction::Append)]
        comment: Vec<String>,
    },
    /// Land a session's branch on its base (or --into BRANCH), or open a
    /// pull request; refuses with the reason before changing anything.
    Finish {
        id: String,
        #[arg(long, conflicts_with_all = ["squash", "rebase"])]
        merge: bool,
        #[arg(long, conflicts_with = "rebase")]
        squash: bool,
        #[arg(long)]
        rebase: bool,
        #[arg(long, value_name = "BRANCH")]
        into: Option<String>,
        /// Commit the agent's uncommitted changes first.
        #[arg(long)]
        commit: bool,
        /// Push the branch and open a pull request with `gh`.
        #[arg(long)]
        pr: bool,
        #[arg(long, value_name = "TEXT")]
        message: Option<String>,
        /// Keep the session (and its worktree) after landing.
        #[arg(long)]
        keep_session: bool,
        /// Delete the branch when its worktree is removed.
        #[arg(long)]
        delete_branch: bool,
        /// Ask the agent to rebase onto the target and resolve the conflicts.
        #[arg(long, conflicts_with = "pr")]
        resolve: bool,
        /// Check and say what would happen; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// A new session carrying on another's conversation (its CLI's own
    /// fork), the original untouched; with --provider, another CLI's agent
    /// started with a handoff prompt. Opens in a split beside it.
    Fork {
        id: String,
        #[arg(long)]
        title: Option<String>,
        /// Fork into this CLI (claude, codex, opencode): a handoff.
        #[arg(long)]
        provider: Option<String>,
        /// Work in a new worktree on this new branch, from the parent's
        /// HEAD with its uncommitted changes copied in.
        #[arg(long, value_name = "BRANCH", conflicts_with = "same_folder")]
        worktree: Option<String>,
        /// Work in the parent's own folder (the default).
        #[arg(long)]
        same_folder: bool,
        /// Open in a split beside the parent (the default).
        #[arg(long, conflicts_with = "parked")]
        split: bool,
        /// Park the fork in its parent's tab instead of opening it.
        #[arg(long)]
        parked: bool,
        /// The split's direction.
        #[arg(long, value_parser = ["vertical", "horizontal"])]
        direction: Option<String>,
    },
    /// Container engines (`[engines.NAME]` in config.toml): their images.
    #[command(subcommand)]
    Engine(EngineCommand),
    /// The bridge between a session's terminal and its agent in a
    /// container (run by the daemon); not for people.
    #[command(hide = true)]
    EngineExec,
}

#[derive(Subcommand, Debug)]
pub enum EngineCommand {
    /// Images for an engine's sessions.
    #[command(subcommand)]
    Image(EngineImageCommand),
}

#[derive(Subcommand, Debug)]
pub enum EngineImageCommand {
    /// Build an image from Debian packages (mmdebstrap) with the
    /// provider's agent CLI installed from npm, and import it into engine
    /// NAME (as its `image`, else localhost/hangar-NAME-PROVIDER). hangar
    /// never pulls an image.
    Build {
        name: String,
        /// claude, codex, opencode, or shell (no agent CLI: the default);
        /// a version pinned as claude@2.1.197, several as claude,codex.
        #[arg(long)]
        provider: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum TabCommand {
    /// Create a tab and make it active.
    New {
        title: String,
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// List tabs.
    Ls,
    /// Close a tab with its panes and parked agents (asks for --yes).
    Close {
        tab: String,
        #[arg(long)]
        yes: bool,
    },
    /// Rename a tab.
    Rename { tab: String, title: String },
}

fn abs(p: &Path) -> anyhow::Result<String> {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    let p = std::fs::canonicalize(&p)
        .with_context(|| format!("folder {} does not exist", display::path(&p)))?;
    // Sessions keep their folder as text: a lossy conversion would run the
    // agent in another folder (or none), so such a name is refused.
    p.into_os_string().into_string().map_err(|p| {
        anyhow::anyhow!(
            "folder {} is not valid UTF-8; hangar keeps folders as text: rename it or choose another",
            display::path(Path::new(&p))
        )
    })
}

fn print<T: Serialize>(json: bool, value: &T, human: impl FnOnce(&T)) {
    crate::human::print(json, value, human)
}

/// A command that changes one thing: its reply as JSON, or what was done
/// for a person.
fn simple<T: Serialize + human::Done>(
    target: &Target,
    json: bool,
    ask: impl Fn(&mut conn::Client) -> anyhow::Result<T>,
    what: &str,
) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = ask(&mut c)?;
    print(json, &v, |v| v.done(what));
    Ok(ExitCode::SUCCESS)
}

/// Where a command runs: against a daemon (this machine's, or with
/// `--host` another's), or already run on the host by its own `hangar`.
enum Routed {
    Here(Target),
    RanThere(ExitCode),
}

/// Where this command runs, decided once for the whole process. Without a
/// host, here. With one, every connection goes to that host, except for the
/// commands that read the far home's files, which run the remote `hangar`
/// itself (their exit code is returned), as does an attach in a terminal
/// (under `ssh -t`). The daemon, the bridge and the
/// agents' callbacks always run here: an agent inherits `HANGAR_HOST` from
/// whoever started its daemon, and its hooks belong to this machine.
fn route(paths: &Paths, host: Option<&str>, command: Option<&Command>) -> anyhow::Result<Routed> {
    let here = Target::local(paths.clone());
    let Some(name) = host.filter(|h| !h.is_empty()) else {
        return Ok(Routed::Here(here));
    };
    // `--all-hosts` asks every host from here, HANGAR_HOST or not.
    if command.is_some_and(asks_every_host) {
        return Ok(Routed::Here(here));
    }
    if matches!(
        command,
        Some(
            Command::Daemon
                | Command::Bridge { .. }
                | Command::Hook { .. }
                | Command::Mcp { .. }
                | Command::Hosts
                | Command::EngineExec
        )
    ) {
        return Ok(Routed::Here(here));
    }
    let host = crate::remote::resolve(paths, name)?;
    // Folders (`new`, `tab new`) are that machine's, relative to where its
    // shell starts, and the rest read that machine's files.
    if matches!(
        command,
        Some(
            Command::Journal { .. }
                | Command::Capture { .. }
                | Command::Shutdown
                | Command::New { .. }
                | Command::Tab(TabCommand::New { .. })
        )
    ) {
        return conn::ssh::exec(&host).map(Routed::RanThere);
    }
    // An attach in a terminal is ssh's, as tmux's is: `ssh -t` runs the
    // remote attach, with no relay here. Without a terminal it goes over
    // the link.
    if let Some(Command::Attach { id }) = command
        && crate::remote::ssh_attach::wanted()
    {
        return crate::remote::ssh_attach::run(paths, &host, id).map(Routed::RanThere);
    }
    Ok(Routed::Here(here.with_host(Some(host))))
}

/// Whether the command was given `--all-hosts`.
fn asks_every_host(command: &Command) -> bool {
    matches!(
        command,
        Command::Ls { all_hosts: true }
            | Command::Wait {
                all_hosts: true,
                ..
            }
            | Command::Usage {
                all_hosts: true,
                ..
            }
            | Command::Search {
                all_hosts: true,
                ..
            }
    )
}

/// The one session id a command acts on, when it takes one (not `capture`:
/// it runs the far `hangar` with this command line as it was given).
fn session_id_mut(command: &mut Command) -> Option<&mut String> {
    match command {
        Command::Park { id }
        | Command::Unpark { id, .. }
        | Command::Bury { id }
        | Command::Unbury { id }
        | Command::Pin { id }
        | Command::Unpin { id }
        | Command::Hibernate { id, .. }
        | Command::Send { id, .. }
        | Command::Attach { id }
        | Command::Close { id, .. }
        | Command::Screen { id, .. }
        | Command::Transcript { id, .. }
        | Command::Ratio { id, .. }
        | Command::Limit { id, .. }
        | Command::Goal { id, .. }
        | Command::Diff { id, .. }
        | Command::Review { id, .. }
        | Command::Finish { id, .. }
        | Command::Fork { id, .. } => Some(id),
        Command::Wake { id, .. } | Command::Focus { id, .. } => id.as_mut(),
        _ => None,
    }
}

/// `HOST:ID` where a command takes a session id (how `ls --all-hosts`
/// output can name a far session) is `--host HOST ... ID`; `local:ID` is
/// this machine. A host part that names no configured host is left as it
/// is (no session id holds a ':', so the daemon says there is none).
/// Returns the host the command goes to.
fn host_from_id(
    paths: &Paths,
    host: Option<String>,
    command: &mut Option<Command>,
) -> anyhow::Result<Option<String>> {
    let Some(id) = command.as_mut().and_then(session_id_mut) else {
        return Ok(host);
    };
    let Some((named, bare)) = hangar_core::hosts::split_host_id(id) else {
        return Ok(host);
    };
    let (named, bare) = (named.to_owned(), bare.to_owned());
    let local = named == hangar_core::hosts::LOCAL;
    if !local && !crate::remote::configured(paths)?.contains_key(&named) {
        return Ok(host);
    }
    let given = host.filter(|h| !h.is_empty());
    if let Some(given) = &given
        && (local || *given != named)
    {
        anyhow::bail!(
            "{} names host {named:?}, but --host (or HANGAR_HOST) says {given:?}: give one of them",
            display::name(id)
        );
    }
    *id = bare;
    Ok((!local).then_some(named))
}

pub fn run(mut cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = Paths::from_env();
    let json = cli.json;
    cli.host = host_from_id(&paths, cli.host.take(), &mut cli.command)?;
    let target = match route(&paths, cli.host.as_deref(), cli.command.as_ref())? {
        Routed::Here(target) => target,
        Routed::RanThere(code) => return Ok(code),
    };
    let Some(command) = cli.command else {
        return crate::tui::run(&target);
    };
    match command {
        Command::Daemon => {
            init_tracing();
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            let watched = paths.clone();
            rt.block_on(hangar_daemon::run_with(paths, move |notifier| {
                crate::remote::far_watch::start(&watched, notifier)
            }))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Shutdown => {
            let Some(mut c) = target.connect_existing()? else {
                print(
                    json,
                    &serde_json::json!({"stopped": false, "running": false}),
                    |_| {
                        println!(
                            "no hangar daemon is running for {}",
                            display::path(&paths.home)
                        )
                    },
                );
                return Ok(ExitCode::SUCCESS);
            };
            api::shutdown(&mut c)?;
            // Wait until the daemon has let go of its socket.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while paths.socket().exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            print(json, &serde_json::json!({"stopped": true}), |_| {
                println!("hangar daemon stopped")
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::New {
            provider,
            cwd,
            tab,
            title,
            split,
            direction,
            parked,
            no_capture,
            no_mcp,
            worktree,
            no_auto_continue,
            max_cost,
            engine,
            image,
            sandbox,
            account,
        } => {
            let cwd = cwd.map(|c| abs(&c)).transpose()?;
            let fallback_cwd = Some(abs(&std::env::current_dir()?)?);
            let mut c = target.connect()?;
            let v = api::new(
                &mut c,
                msg::NewSession {
                    provider,
                    cwd,
                    tab,
                    title,
                    split,
                    direction,
                    parked,
                    no_capture,
                    no_mcp,
                    fallback_cwd,
                    worktree: worktree.is_some(),
                    worktree_branch: worktree.filter(|b| !b.is_empty()),
                    engine,
                    image,
                    sandbox,
                    account,
                },
            )?;
            if no_auto_continue || max_cost.is_some() {
                let id = v.id.clone();
                let set = api::limit(
                    &mut c,
                    msg::LimitSet {
                        session: id.clone(),
                        auto_continue: no_auto_continue.then_some(false),
                        max_cost_usd: max_cost,
                        failover: None,
                    },
                );
                if let Err(e) = set {
                    // The budget was refused: a session that would run
                    // without the budget asked for is not left behind.
                    let _ = api::close(
                        &mut c,
                        msg::Close {
                            session: id.to_owned(),
                            yes: true,
                            ..Default::default()
                        },
                    );
                    return Err(e);
                }
            }
            print(json, &serde_json::json!({"id": v.id}), |_| {
                println!("{}", human::text(&v.id));
                if v.state == "failed" {
                    eprintln!(
                        "hangar: the session was created but failed to start; `hangar ls` shows why"
                    );
                }
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Ls { all_hosts: true } => crate::remote::all_hosts::ls(&paths, json),
        Command::Ls { all_hosts: false } => {
            let mut c = target.connect()?;
            let v = api::list(&mut c)?;
            print(json, &v, human::sessions);
            Ok(ExitCode::SUCCESS)
        }
        Command::Status => {
            let mut c = target.connect()?;
            let v = api::status(&mut c)?;
            print(json, &v, human::status);
            Ok(ExitCode::SUCCESS)
        }
        Command::Park { id } => simple(&target, json, |c| api::park(c, &id), "parked"),
        Command::Unpark {
            id,
            tab,
            split,
            direction,
        } => simple(
            &target,
            json,
            |c| {
                api::unpark(
                    c,
                    msg::Unpark {
                        session: id.clone(),
                        tab: tab.clone(),
                        split: split.clone(),
                        direction: direction.clone(),
                    },
                )
            },
            "unparked",
        ),
        Command::Focus { id, tab } => simple(
            &target,
            json,
            |c| {
                api::focus(
                    c,
                    msg::Focus {
                        tab: tab.clone(),
                        session: id.clone(),
                    },
                )
            },
            "focused",
        ),
        Command::Wait {
            ids,
            until,
            timeout,
            all_hosts: true,
        } => crate::remote::all_hosts::wait(&paths, json, ids, until, timeout),
        Command::Wait {
            ids,
            until,
            timeout,
            all_hosts: false,
        } => crate::activity::wait(&target, json, ids, until, timeout),
        Command::Hook { event, session } => crate::activity::hook(&target, event, session),
        Command::EngineExec => {
            // Raw: the agent's own TTY in the container echoes and
            // translates; this terminal (the daemon's PTY) must not too.
            let raw = crossterm::terminal::enable_raw_mode().is_ok();
            let code =
                hangar_daemon::engines::bridge::main(hangar_daemon::engines::bridge::Terminal {
                    size: || {
                        crossterm::terminal::size()
                            .ok()
                            .map(|(cols, rows)| (rows, cols))
                    },
                });
            if raw {
                let _ = crossterm::terminal::disable_raw_mode();
            }
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        Command::Engine(EngineCommand::Image(EngineImageCommand::Build { name, provider })) => {
            let mut c = target.connect()?;
            let v = api::engine_image_build(
                &mut c,
                msg::EngineImageBuild {
                    engine: name,
                    provider,
                },
            )?;
            print(json, &v, |v| {
                println!(
                    "built {} for engine {}",
                    display::name(&v.image),
                    display::name(&v.engine)
                )
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Ratio { id, ratio } => simple(
            &target,
            json,
            |c| {
                api::ratio(
                    c,
                    msg::Ratio {
                        session: id.clone(),
                        ratio,
                        direction: None,
                    },
                )
            },
            "resized",
        ),
        Command::Bury { id } => simple(&target, json, |c| api::bury(c, &id), "buried"),
        Command::Unbury { id } => simple(&target, json, |c| api::unbury(c, &id), "unburied"),
        Command::Pin { id } => simple(&target, json, |c| api::pin(c, &id), "pinned"),
        Command::Unpin { id } => simple(&target, json, |c| api::unpin(c, &id), "unpinned"),
        Command::Wake { id, resume_queue } => {
            if resume_queue {
                let mut c = target.connect()?;
                let v = api::resume_queue(&mut c)?;
                print(json, &v, |v| {
                    if v.was_open {
                        println!("wake queue resumed");
                    } else {
                        println!("the wake queue was not paused");
                    }
                });
                if let Some(id) = id {
                    return simple(&target, json, |c| api::wake(c, &id), "woken");
                }
                return Ok(ExitCode::SUCCESS);
            }
            let id = id.unwrap_or_default();
            simple(&target, json, |c| api::wake(c, &id), "woken")
        }
        Command::Evict {
            parked_older_than,
            dry_run,
        } => {
            let mut c = target.connect()?;
            let v = api::evict(
                &mut c,
                msg::Evict {
                    parked_older_than_ms: parked_older_than.as_millis() as u64,
                    dry_run,
                },
            )?;
            print(json, &v, human::evicted);
            Ok(ExitCode::SUCCESS)
        }
        Command::CloseIdle {
            older_than,
            include_live,
            yes,
        } => simple(
            &target,
            json,
            |c| {
                api::close_idle(
                    c,
                    msg::CloseIdle {
                        older_than_ms: older_than.as_millis() as u64,
                        include_live,
                        yes,
                    },
                )
            },
            "closed",
        ),
        Command::Journal {
            action,
            follow,
            storm_wakes,
            storm_window,
        } => crate::journal::run(
            &target.paths,
            json,
            action.as_deref(),
            follow,
            storm_wakes,
            storm_window,
        ),
        Command::Hibernate { id, force } => simple(
            &target,
            json,
            |c| api::hibernate(c, &id, force),
            "hibernated",
        ),
        Command::Send { id, text } => simple(
            &target,
            json,
            |c| {
                api::send(
                    c,
                    msg::Send {
                        session: id.clone(),
                        text: text.clone(),
                        enter: true,
                    },
                )
            },
            "sent to",
        ),
        Command::Close {
            id,
            yes,
            delete_branch,
        } => simple(
            &target,
            json,
            |c| {
                api::close(
                    c,
                    msg::Close {
                        session: id.clone(),
                        yes,
                        delete_branch,
                    },
                )
            },
            "closed",
        ),
        Command::Worktrees { prune } => {
            let mut c = target.connect()?;
            let v = api::worktrees(&mut c, msg::Worktrees { prune })?;
            print(json, &v, human::worktrees);
            Ok(ExitCode::SUCCESS)
        }
        Command::Screen { id, scrollback } => {
            let mut c = target.connect()?;
            let v = api::screen(
                &mut c,
                msg::Screen {
                    session: id,
                    scrollback,
                },
            )?;
            print(json, &v, |v| {
                for line in v.history.iter().flatten() {
                    println!("{}", display::body(line));
                }
                println!("{}", display::body(&v.screen))
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Attach { id } => crate::attach::attach(&target, &id),
        Command::Web {
            listen,
            read_only,
            tls_cert,
            tls_key,
            insecure_lan,
            revoke,
        } => crate::web::run(
            &target,
            json,
            crate::web::WebOptions {
                listen,
                read_only,
                tls_cert,
                tls_key,
                insecure_lan,
                revoke,
            },
        ),

        Command::Tab(t) => match t {
            TabCommand::New { title, cwd } => {
                let cwd = cwd.map(|c| abs(&c)).transpose()?;
                simple(
                    &target,
                    json,
                    |c| {
                        api::tab_new(
                            c,
                            msg::TabNew {
                                title: title.clone(),
                                cwd: cwd.clone(),
                            },
                        )
                    },
                    "created tab",
                )
            }
            TabCommand::Ls => {
                let mut c = target.connect()?;
                let v = api::tab_list(&mut c)?;
                print(json, &v, human::tabs);
                Ok(ExitCode::SUCCESS)
            }
            TabCommand::Close { tab, yes } => simple(
                &target,
                json,
                |c| {
                    api::tab_close(
                        c,
                        msg::TabClose {
                            tab: tab.clone(),
                            yes,
                        },
                    )
                },
                "closed tab",
            ),
            TabCommand::Rename { tab, title } => simple(
                &target,
                json,
                |c| {
                    api::tab_rename(
                        c,
                        msg::TabRename {
                            tab: tab.clone(),
                            title: title.clone(),
                        },
                    )
                },
                "renamed tab",
            ),
        },
        Command::Reload { dangerous } => simple(
            &target,
            json,
            |c| {
                api::reload(
                    c,
                    msg::Reload {
                        dangerous: dangerous.as_deref().map(|d| d == "on"),
                    },
                )
            },
            "reloaded",
        ),
        Command::Import {
            format,
            file,
            dry_run,
        } => crate::import::run(&target, json, format, file, dry_run),
        Command::Export => crate::identity::export(&target),
        Command::Hosts => crate::remote::hosts_command::run(&target.paths, json),
        Command::Bridge { mux } => crate::remote::bridge::run(&target.paths, mux),
        Command::Mcp { session } => crate::mcp::run(&target.paths, session),
        Command::Transcript { id, tail } => crate::identity::transcript(&target, json, id, tail),
        Command::Search {
            query,
            session,
            all_hosts: true,
        } => crate::remote::all_hosts::search(&paths, json, query, session),
        Command::Search {
            query,
            session,
            all_hosts: false,
        } => {
            let mut c = target.connect()?;
            let v = crate::search::request(
                &mut c,
                msg::Search {
                    query,
                    session,
                    ..Default::default()
                },
            )?;
            let none = v.matches.is_empty();
            print(json, &v, human::search_matches);
            Ok(if none {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Capture { id, follow } => {
            crate::capture::capture(&target.paths, json, &id, follow)
        }
        Command::Doctor { fork, forget, yes } => {
            crate::identity::doctor(&target, json, fork, forget, yes)
        }
        Command::Usage {
            since,
            session,
            all_hosts,
        } => {
            let since_ms = crate::usage::since_ms(since.as_deref().unwrap_or("24h"))?;
            if all_hosts {
                return crate::remote::all_hosts::usage(&paths, json, since_ms, session);
            }
            let mut c = target.connect()?;
            let v = api::usage(&mut c, msg::UsageQuery { since_ms, session })?;
            print(json, &v, crate::usage::human);
            Ok(ExitCode::SUCCESS)
        }
        Command::Limit {
            id,
            continue_,
            max_cost,
            failover,
        } => {
            let mut c = target.connect()?;
            let v = api::limit(
                &mut c,
                msg::LimitSet {
                    session: id,
                    auto_continue: continue_.map(|o| o == "on"),
                    max_cost_usd: max_cost,
                    failover,
                },
            )?;
            print(json, &v, crate::usage::human_limit);
            Ok(ExitCode::SUCCESS)
        }
        Command::Goal {
            id,
            text,
            max_turns,
            stop,
        } => {
            let mut c = target.connect()?;
            let v = api::goal(
                &mut c,
                msg::GoalSet {
                    session: id,
                    text,
                    max_turns,
                    stop,
                },
            )?;
            print(json, &v, crate::usage::human_goal);
            Ok(ExitCode::SUCCESS)
        }
        Command::Fork {
            id,
            title,
            provider,
            worktree,
            same_folder: _,
            split: _,
            parked,
            direction,
        } => crate::review::fork(
            &target,
            json,
            msg::Fork {
                session: id,
                title,
                provider,
                worktree_branch: worktree,
                worktree: false,
                direction,
                parked,
            },
        ),
        Command::Diff { id, stat, base } => crate::review::diff(&target, json, id, stat, base),
        Command::Review { id, comment } => crate::review::review(&target, json, id, comment),
        Command::Finish {
            id,
            merge: _,
            squash,
            rebase,
            into,
            commit,
            pr,
            message,
            keep_session,
            delete_branch,
            resolve,
            dry_run,
        } => crate::review::finish(
            &target,
            json,
            msg::Finish {
                session: id,
                strategy: Some(
                    if squash {
                        "squash"
                    } else if rebase {
                        "rebase"
                    } else {
                        "merge"
                    }
                    .to_owned(),
                ),
                into,
                commit,
                pr,
                message,
                keep_session,
                delete_branch,
                resolve,
                dry_run,
            },
        ),
    }
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; use a duration like 0s, 90m, 12h or 7d"))
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("HANGAR_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with_host_build() -> (tempfile::TempDir, Paths) {
        let dir = tempfile::tempdir().expect("temp home");
        let paths = Paths::new(dir.path().to_path_buf());
        std::fs::write(paths.config(), "[hosts.build]\nssh = \"me@build\"\n").expect("config");
        (dir, paths)
    }

    fn parsed(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("hangar").chain(args.iter().copied())).expect("parses")
    }

    fn id_of(cli: &mut Cli) -> String {
        cli.command
            .as_mut()
            .and_then(session_id_mut)
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn host_colon_id_goes_to_that_host_with_the_bare_id() {
        let (_dir, paths) = home_with_host_build();
        let mut cli = parsed(&["attach", "build:3f2a"]);
        let host = host_from_id(&paths, None, &mut cli.command).expect("taken");
        assert_eq!(host.as_deref(), Some("build"));
        assert_eq!(id_of(&mut cli), "3f2a");

        let mut cli = parsed(&["send", "local:3f2a", "hi"]);
        assert_eq!(
            host_from_id(&paths, None, &mut cli.command).expect("taken"),
            None
        );
        assert_eq!(id_of(&mut cli), "3f2a");

        // A host part that names no configured host is the daemon's to refuse.
        let mut cli = parsed(&["screen", "nowhere:3f2a"]);
        assert_eq!(
            host_from_id(&paths, None, &mut cli.command).expect("kept"),
            None
        );
        assert_eq!(id_of(&mut cli), "nowhere:3f2a");

        // The same host given twice is fine; two different ones are refused.
        let mut cli = parsed(&["close", "build:3f2a"]);
        let host = host_from_id(&paths, Some("build".into()), &mut cli.command).expect("same");
        assert_eq!(host.as_deref(), Some("build"));
        let mut cli = parsed(&["close", "build:3f2a"]);
        let e = host_from_id(&paths, Some("other".into()), &mut cli.command).unwrap_err();
        assert!(e.to_string().contains("--host"), "{e}");
    }
}
