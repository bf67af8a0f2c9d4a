//! `hangar`: the command-line face of the daemon (DESIGN.md section 4).
//!
//! Every command talks to the daemon only through the socket protocol and
//! starts the daemon in the background when none answers. With `--json` a
//! command prints exactly one JSON document on stdout; errors go to stderr
//! with a non-zero exit code.

mod activity;
mod attach;
mod capture;
mod cli;
mod client;
mod human;
mod identity;
mod journal;
mod mcp;
mod tui;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(d) = e.downcast_ref::<client::DaemonError>() {
                eprintln!("hangar: {}", d.0.message);
                if let Some(list) = d.0.detail.get("would_close").and_then(|v| v.as_array()) {
                    for id in list {
                        eprintln!("  {}", id.as_str().unwrap_or_default());
                    }
                }
            } else {
                eprintln!("hangar: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}
