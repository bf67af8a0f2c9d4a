//! SIGTERM and SIGHUP end the fake cleanly, after one last transcript line.
//!
//! The signals are blocked in the main thread before any other thread
//! exists, so every thread inherits the mask and only the watcher thread
//! (which `sigwait`s) ever receives them: no async-signal-safety games, and
//! the exit line is written under the same lock as every other line, so it
//! never interleaves with one. The mask is inherited across exec and std's
//! `Command` does not reset it, so every child the fake starts must clear it
//! (`child_setup::clear_signal_mask`), or a SIGTERM to the process group
//! would not reach it. The fake never kills its own children: checking that
//! hangar ends the whole group is the point of `spawn-child`.

use nix::sys::signal::{SigSet, Signal};

/// The set of signals the watcher waits for.
#[derive(Clone, Copy)]
pub struct ExitSignals(SigSet);

/// Blocks SIGTERM and SIGHUP in the calling thread. Call it first thing in
/// `main`, before any thread starts, or a signal may land on a thread that
/// does not wait for it and take the default action.
pub fn block_exit_signals() -> ExitSignals {
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGHUP);
    if let Err(e) = set.thread_block() {
        // Never seen (the set is valid); without the block a signal takes
        // its default action and the exit line is not written.
        eprintln!("fake-agent: cannot block SIGTERM and SIGHUP: {e}");
    }
    ExitSignals(set)
}

/// Starts the watcher thread; `on_signal` runs on it for every signal that
/// arrives, with the signal's name. It decides whether to exit.
pub fn watch(signals: ExitSignals, on_signal: impl Fn(&'static str) + Send + 'static) {
    std::thread::spawn(move || {
        loop {
            let Ok(sig) = signals.0.wait() else {
                continue;
            };
            on_signal(signal_name(sig));
        }
    });
}

fn signal_name(sig: Signal) -> &'static str {
    match sig {
        Signal::SIGTERM => "SIGTERM",
        Signal::SIGHUP => "SIGHUP",
        _ => "other",
    }
}
