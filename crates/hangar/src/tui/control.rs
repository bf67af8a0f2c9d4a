//! The TUI's control connection: one thread that runs the user's commands
//! in order and, between them, polls the daemon for the workspace and the
//! session list.
//!
//! One thread for both keeps the order simple: the snapshot sent after a
//! command always shows its effect. It never touches the terminal; it only
//! sends `Event`s to the UI thread.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use hangar_core::Workspace;
use hangar_protocol::message::ErrorBody;
use hangar_protocol::view::SessionView;
use serde_json::Value;

use crate::api;
use crate::conn::{Client, DaemonError, Target};
use crate::tui::events::Event;

/// How often the workspace is polled when nothing else happens.
pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// The fleet's memory (from `status`) is asked for on every this many
/// polls: the daemon reads it at most every two seconds anyway.
const BUDGET_EVERY_POLLS: u64 = 4;

pub use crate::tui::events::{Command, Outcome, Snapshot};

/// Start the control thread; without a client (another host, reached in
/// the background) it connects first, reporting the host unreachable until
/// it answers.
pub fn spawn(
    target: Target,
    client: Option<Client>,
    commands: Receiver<Command>,
    events: Sender<Event>,
) {
    std::thread::spawn(move || {
        let client = match client {
            Some(c) => c,
            None => match target.connect() {
                Ok(c) => c,
                Err(e) => {
                    if events.send(Event::DaemonLost(format!("{e:#}"))).is_err() {
                        return;
                    }
                    let mut client = None;
                    if !reconnect_into(&target, &mut client, &events) {
                        return;
                    }
                    match client {
                        Some(c) => c,
                        None => return,
                    }
                }
            },
        };
        run(target, client, commands, events)
    });
}

fn reconnect_into(target: &Target, slot: &mut Option<Client>, events: &Sender<Event>) -> bool {
    loop {
        std::thread::sleep(POLL_EVERY);
        match target.connect() {
            Ok(c) => {
                *slot = Some(c);
                return true;
            }
            Err(e) => {
                if events.send(Event::DaemonLost(format!("{e:#}"))).is_err() {
                    return false;
                }
            }
        }
    }
}

fn run(target: Target, mut client: Client, commands: Receiver<Command>, events: Sender<Event>) {
    // The first snapshot at once: the TUI holds keys until it knows the
    // workspace, and it waited a whole poll for it before.
    let mut wait = Duration::ZERO;
    let mut polls: u64 = 0;
    let mut budget = None;
    loop {
        match commands.recv_timeout(wait) {
            Ok(command) => {
                let result = match api::call(&mut client, command.request.clone()) {
                    Ok(v) => Ok(v),
                    Err(e) => Err(error_body(e)),
                };
                let lost = result.as_ref().is_err_and(|e| e.code == "connection");
                if events
                    .send(Event::Done(Box::new(Outcome { command, result })))
                    .is_err()
                {
                    return;
                }
                if lost && !reconnect(&target, &mut client, &events) {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        wait = POLL_EVERY;
        if polls.is_multiple_of(BUDGET_EVERY_POLLS) {
            // A daemon too old to say is shown without it.
            budget = api::status(&mut client).ok().map(|s| s.budget);
        }
        polls += 1;
        match snapshot(&mut client) {
            Ok(mut s) => {
                s.budget = budget.clone();
                if events.send(Event::Snapshot(Box::new(s))).is_err() {
                    return;
                }
            }
            Err(e) => {
                if events.send(Event::DaemonLost(format!("{e:#}"))).is_err() {
                    return;
                }
                if !reconnect(&target, &mut client, &events) {
                    return;
                }
            }
        }
    }
}

/// Reconnect to a daemon that went away (a restart, a crash). Quitting the
/// TUI stops this; it never starts a second daemon while one answers.
fn reconnect(target: &Target, client: &mut Client, events: &Sender<Event>) -> bool {
    let mut slot = None;
    if !reconnect_into(target, &mut slot, events) {
        return false;
    }
    match slot {
        Some(c) => {
            *client = c;
            true
        }
        None => false,
    }
}

pub fn snapshot(client: &mut Client) -> anyhow::Result<Snapshot> {
    let ws: Workspace = api::workspace(client)?;
    let sessions: Vec<SessionView> = api::list(client)?;
    Ok(Snapshot {
        ws,
        sessions,
        budget: None,
    })
}

fn error_body(e: anyhow::Error) -> ErrorBody {
    match e.downcast::<DaemonError>() {
        Ok(d) => d.0,
        Err(e) => ErrorBody {
            code: "connection".into(),
            message: format!("{e:#}"),
            detail: Value::Null,
        },
    }
}
