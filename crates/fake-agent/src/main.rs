//! `hangar-fake-agent`: a stand-in for `claude`, `codex` and `opencode`.
//!
//! hangar's tests start it in a PTY where a real agent CLI would run, then
//! read its transcripts, count its processes and type into it. It must stay
//! small, start in milliseconds and be deterministic: no network except
//! the `api` input's one call through the proxy it was given, no randomness
//! beyond the uuids it mints. It must never kill its own children
//! (ending the process group is hangar's job, and the thing under test).
//! Every flag, input and knob is documented in this crate's README.md.

#![deny(unsafe_code)]

mod api;
mod args;
mod ballast;
mod child_setup;
mod claude_lines;
mod codex_lines;
mod codex_server;
mod conversation;
mod event;
mod fork;
mod hooks;
mod input;
mod knobs;
mod opencode_db;
mod session_record;
mod shared_pages;
mod signals;
mod terminal;
mod timestamp;
mod transcript;
mod transcript_paths;

use std::io::{Write, stderr, stdout};

use anyhow::Context;
use std::process::exit;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::args::{Action, Invocation, SessionRequest};
use crate::ballast::Ballast;
use crate::conversation::{Conversation, lock, say};
use crate::event::{Event, StartRecord};
use crate::knobs::{Failure, Knobs};
use crate::signals::ExitSignals;
use crate::transcript::Transcript;
use crate::transcript_paths::Roots;

const USAGE: &str = "\
usage: hangar-fake-agent [--style claude|codex|opencode] [flags of that CLI]

  claude:   --session-id <id> | --resume <id>, --dangerously-skip-permissions,
            --mcp-config <file>, --settings <file>, --model <m>
  codex:    [flags] resume <id>, --no-daemon, --dangerously-bypass-approvals-and-sandbox,
            -c key=value (repeatable), -m/--model <m>
  opencode: --session <id>, -m/--model <m>

Unknown flags are ignored and recorded. Type `exit` or end input to quit.
See crates/fake-agent/README.md for inputs and FAKE_AGENT_* knobs.";

/// Claude Code's words when its OAuth token has expired.
const AUTH_ERROR: &str = r#"API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired"}}"#;

// Nothing here prints with println!/eprintln!: they panic (exit 101) when the
// terminal is gone, which is exactly when hangar closes a session.
fn main() {
    // The shared server (codex_server.rs) keeps the default action of
    // SIGTERM, so it is told apart before the signals are blocked.
    if codex_server::is_server() {
        match Roots::from_env().codex_dir() {
            Ok(home) => codex_server::serve(&home),
            Err(e) => {
                say(&mut stderr(), &format!("hangar-fake-agent app-server: {e}"));
                exit(2);
            }
        }
    }
    // First, before any thread exists: see signals.rs.
    let exit_signals = signals::block_exit_signals();

    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let style_env = std::env::var("FAKE_AGENT_STYLE").ok();
    let invocation = match args::parse(argv.get(1..).unwrap_or_default(), style_env.as_deref()) {
        Ok(Action::Run(inv)) => inv,
        Ok(Action::Version) => {
            say(
                &mut stdout(),
                concat!("hangar-fake-agent ", env!("CARGO_PKG_VERSION")),
            );
            return;
        }
        Ok(Action::Help) => {
            if codex_server::help_mentions_no_daemon() {
                say(&mut stdout(), USAGE);
            } else {
                say(&mut stdout(), &USAGE.replace(" --no-daemon,", ""));
            }
            return;
        }
        Err(e) => {
            say(&mut stderr(), &format!("hangar-fake-agent: {e}\n\n{USAGE}"));
            exit(2);
        }
    };
    let knobs = match knobs::read(|name| std::env::var(name).ok()) {
        Ok(k) => k,
        Err(e) => {
            say(&mut stderr(), &format!("hangar-fake-agent: {e}"));
            exit(2);
        }
    };

    match knobs.fail {
        Some(Failure::Auth) => {
            say(&mut stdout(), AUTH_ERROR);
            say(&mut stdout(), "Please run /login");
            exit(1);
        }
        Some(Failure::Exit(code)) => exit(code),
        None => {}
    }

    match run(invocation, &knobs, argv, exit_signals) {
        Ok(code) => exit(code),
        Err(e) => {
            say(&mut stderr(), &format!("hangar-fake-agent: {e:#}"));
            exit(1);
        }
    }
}

fn run(
    inv: Invocation,
    knobs: &Knobs,
    argv: Vec<String>,
    exit_signals: ExitSignals,
) -> anyhow::Result<i32> {
    if let Some(ms) = knobs.start_delay_ms {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let mut ballast = Ballast::default();
    if let Some(mb) = knobs.alloc_mb {
        ballast.add(mb);
    }
    if let Some(path) = &knobs.shared_file {
        shared_pages::map_and_touch(path)
            .map_err(|e| anyhow::anyhow!("FAKE_AGENT_SHARED_FILE {}: {e}", path.display()))?;
    }

    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .or_else(|_| std::env::var("PWD"))
        .unwrap_or_else(|_| "/".into());
    let roots = Roots::from_env();
    let (session_id, resumed) = match &inv.session {
        SessionRequest::Fresh(Some(id)) => (id.clone(), false),
        // OpenCode's ids are `ses_...` (its conversation is created by the
        // first prompt; see opencode_db.rs).
        SessionRequest::Fresh(None) if inv.style == args::Style::Opencode => {
            (opencode_db::new_id(), false)
        }
        SessionRequest::Fresh(None) => (uuid::Uuid::new_v4().to_string(), false),
        SessionRequest::Resume(id) => (id.clone(), true),
        // A fork is a new conversation: claude's under the id it was given,
        // codex and opencode under one of their own.
        SessionRequest::Fork { new: Some(id), .. } => (id.clone(), false),
        SessionRequest::Fork { new: None, .. } if inv.style == args::Style::Opencode => {
            (opencode_db::new_id(), false)
        }
        SessionRequest::Fork { new: None, .. } => (uuid::Uuid::new_v4().to_string(), false),
    };
    let forked_from = match &inv.session {
        SessionRequest::Fork { from, .. } => Some(from.clone()),
        _ => None,
    };
    // What a fork starts from, found as each real CLI finds it (README.md,
    // Forks); a missing one is refused with the real CLI's words.
    let fork = match &forked_from {
        Some(from) => match fork::source(inv.style, &roots, &cwd, from)? {
            Ok(source) => Some(source),
            Err(words) => {
                say(&mut stderr(), &words);
                return Ok(1);
            }
        },
        None => None,
    };
    if inv.style == args::Style::Opencode && resumed {
        let db = opencode_db::path(&|k| std::env::var(k).ok())
            .context("no XDG_DATA_HOME or HOME for opencode's store")?;
        if !opencode_db::Store::open(&db)?.has(&session_id)? {
            // Real OpenCode 1.18.33's words and exit code.
            say(
                &mut stderr(),
                &format!("Error: Session not found: {session_id}"),
            );
            return Ok(1);
        }
    }
    if inv.style == args::Style::Codex && codex_server::wanted(&argv) {
        let home = roots.codex_dir().map_err(anyhow::Error::msg)?;
        codex_server::ensure(&home).context("starting the shared app-server")?;
    }
    let model = inv.model.clone().unwrap_or_else(|| "fake-agent".into());
    let mut placement = Transcript::place(&roots, inv.style, &cwd, &session_id, resumed)?;
    placement.write = !knobs.no_transcript;
    // Claude Code writes a fork's transcript with its first turn.
    placement.deferred = fork.is_some() && inv.style == args::Style::Claude;
    let mut transcript = Transcript::open(&placement, inv.style, &cwd, &session_id, &model)?;
    if let Some(source) = &fork {
        fork::start(source, &mut transcript, &session_id, &cwd)?;
    }
    if knobs.drain_on_exit_ms.is_some() {
        transcript.defer_writes();
    }

    let banner = format!(
        "fake-agent {} session {session_id}{}{}{}",
        inv.style.name(),
        if resumed { " (resumed)" } else { "" },
        match &fork {
            Some(f) => format!(" (forked from {})", f.id),
            None => String::new(),
        },
        if inv.dangerous { " [dangerous]" } else { "" },
    );
    let start = StartRecord {
        argv,
        pid: std::process::id(),
        ppid: std::os::unix::process::parent_id() as i32,
        style: inv.style,
        resumed,
        env_proxy: std::env::var("HTTPS_PROXY").ok(),
        transcript_existed: placement.existed,
        forked_from: fork.as_ref().map(|f| (f.id.clone(), f.ordinal)),
        invocation: inv,
    };
    if !placement.existed {
        transcript.lead_lines(true)?;
    }
    transcript.record(Event::Start(&start))?;
    let shared = Arc::new(Mutex::new(transcript));
    // Claude Code's per-process record of the conversation it writes; an
    // old claude (FAKE_AGENT_NO_SESSION_RECORD=1) writes none.
    let record = match (start.style, knobs.no_session_record) {
        (args::Style::Claude, false) => roots
            .claude_dir()
            .ok()
            .and_then(|dir| session_record::SessionRecord::create(&dir, &cwd, &session_id).ok()),
        _ => None,
    };
    let record = Arc::new(record);

    let watched = Arc::clone(&shared);
    let watched_record = Arc::clone(&record);
    let ignore_sigterm = knobs.ignore_sigterm;
    let drain_on_exit = knobs.drain_on_exit_ms.map(Duration::from_millis);
    signals::watch(exit_signals, move |signal| {
        let mut transcript = lock(&watched);
        if signal == "SIGTERM" && ignore_sigterm {
            let _ = transcript.record(Event::SignalIgnored(signal));
            return;
        }
        if let Some(drain) = drain_on_exit {
            std::thread::sleep(drain);
        }
        let _ = transcript.record(Event::Exit {
            reason: "signal",
            signal: Some(signal),
        });
        if let Some(r) = watched_record.as_ref() {
            r.remove();
        }
        exit(0);
    });

    let hooks = hooks::Hooks::load(start.invocation.settings.as_deref());
    let mut out = stdout().lock();
    say(&mut out, &banner);
    let _ = out.flush();
    let mut conversation = Conversation {
        transcript: shared,
        start,
        roots,
        cwd,
        model,
        ballast,
        children: Vec::new(),
        hooks,
        write_transcript: !knobs.no_transcript,
        session_record: record,
        prompt_id: String::new(),
        last_answer: Mutex::new(String::new()),
        swallow_enters: knobs.swallow_enters,
        unsubmitted: None,
        transcript_lag: knobs
            .transcript_lag_ms
            .map(std::time::Duration::from_millis),
        unwritten: None,
    };
    let ending = conversation.run(&mut std::io::stdin().lock(), &mut out)?;
    Ok(ending.code)
}
