//! `hangar`: the command-line face of the daemon (DESIGN.md section 4).
//!
//! Every command talks to the daemon only through the socket protocol and
//! starts the daemon in the background when none answers. With `--json` a
//! command prints exactly one JSON document on stdout; errors go to stderr
//! with a non-zero exit code.

// Three functions are allowed `unsafe`, each saying why no safe API serves: main.rs's `die_quietly_on_a_closed_stdout` and
// `close_inherited_fds`, and conn/client.rs's daemon start (`pre_exec`).
#![deny(unsafe_code)]

// Layers, each importing only those below it (`.ci/shape` checks it):
// `conn` (the socket, frames, the daemon's auto-start, ssh), `api` (one
// function per request), then the front-ends: `cli` (which routes every
// command), attach, the TUI, web, MCP, remote hosts and the commands.
mod conn;

mod api;

mod activity;
mod attach;
mod capture;
mod cli;
#[cfg(test)]
mod docs_reference;
mod human;
mod identity;
mod import;
mod journal;
mod mcp;
mod remote;
mod review;
mod search;
mod tui;
mod usage;
mod web;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// The whole command tree, for the CLI reference (docs_reference.rs; only
/// main.rs names cli.rs's commands, `.ci/shape`).
#[cfg(test)]
fn command_tree() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Whether the command prints its report and exits: those may die of a
/// reader that went away (`hangar ls | head -3`), as Unix tools do. The
/// daemon, attach and the TUI must not: they write to sockets and a
/// terminal in raw mode, where a lost peer is an error to handle.
fn prints_and_exits(cli: &Cli) -> bool {
    !matches!(
        cli.command,
        None | Some(
            Command::Daemon
                | Command::Attach { .. }
                | Command::Mcp { .. }
                | Command::Web { .. }
                | Command::Bridge { .. }
        )
    )
}

/// Rust ignores SIGPIPE, so `println!` to a closed pipe panics with "failed
/// printing to stdout: Broken pipe". Take the default action back: the
/// process ends silently when its reader is gone. A daemon this process
/// starts is unaffected (a new program starts with Rust's own setting).
/// Needs `unsafe`: no safe crate sets a signal's disposition.
#[allow(unsafe_code)]
fn die_quietly_on_a_closed_stdout() {
    // SAFETY: setting a signal's disposition to its default has no memory
    // effects; nothing else in this process handles SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Close every fd above stderr the daemon inherited. Whoever started it
/// (a shell, a test, an editor, `$(hangar ls)` auto-starting it) may have
/// left fds open without close-on-exec; the daemon would hold them for its
/// whole life (a `$(...)` never sees EOF) and pass them to every agent.
/// Runs first, before this process opens anything of its own.
/// Needs `unsafe`: closing an fd this process does not own (by number) is
/// outside Rust's fd ownership.
#[allow(unsafe_code)]
fn close_inherited_fds() {
    let listed = ["/proc/self/fd", "/dev/fd"]
        .iter()
        .find_map(|dir| std::fs::read_dir(dir).ok())
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&fd| fd > 2)
                .collect::<Vec<_>>()
        });
    // Without a listing, the first 1024 (the usual soft limit) are tried.
    let fds = listed.unwrap_or_else(|| (3..1024).collect());
    for fd in fds {
        // SAFETY: nothing in this process owns an fd above 2 yet (the
        // listing's own fd is already closed: EBADF at worst).
        unsafe {
            libc::close(fd);
        }
    }
}

fn main() -> ExitCode {
    // The relay inside a sandbox (issue 32): hangar re-executed by bwrap,
    // before anything else of the CLI runs.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == hangar_daemon::sandbox::relay::SUBCOMMAND)
    {
        let args: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return hangar_daemon::sandbox::relay::main(&args);
    }
    let cli = Cli::parse();
    if prints_and_exits(&cli) {
        die_quietly_on_a_closed_stdout();
    }
    if matches!(cli.command, Some(Command::Daemon)) {
        close_inherited_fds();
    }
    match cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Errors carry titles, paths and tool output: shown escaped
            // (multi-line, as git's own output in a worktree error is).
            use hangar_core::display;
            if let Some(d) = e.downcast_ref::<conn::DaemonError>() {
                eprintln!("hangar: {}", display::body(&d.0.message));
                if let Some(list) = d.0.detail.get("would_close").and_then(|v| v.as_array()) {
                    for id in list {
                        eprintln!("  {}", human::s(id));
                    }
                }
            } else {
                eprintln!("hangar: {}", display::body(&format!("{e:#}")));
            }
            ExitCode::FAILURE
        }
    }
}
