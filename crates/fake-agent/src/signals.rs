//! SIGTERM and SIGHUP end the fake cleanly, after one last transcript line.
//!
//! The signals are blocked in the main thread before any other thread
//! exists, so every thread inherits the mask and only the watcher thread
//! (which `sigwait`s) ever receives them: no async-signal-safety games, and
//! the exit line is written under the same lock as every other line, so it
//! never interleaves with one. The mask is inherited across exec and std's
//! `Command` does not reset it, so every child the fake starts must clear it
//! (see `spawn_child`), or a SIGTERM to the process group would not reach
//! it. The fake never kills its own children: checking that hangar ends the
//! whole group is the point of `spawn-child`.

use std::mem::MaybeUninit;

/// The set of signals the watcher waits for.
#[derive(Clone, Copy)]
pub struct ExitSignals(libc::sigset_t);

/// Blocks SIGTERM and SIGHUP in the calling thread. Call it first thing in
/// `main`, before any thread starts, or a signal may land on a thread that
/// does not wait for it and take the default action.
pub fn block_exit_signals() -> ExitSignals {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset and pthread_sigmask
    // only read and write that set and this thread's mask.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGTERM);
        libc::sigaddset(set.as_mut_ptr(), libc::SIGHUP);
        let set = set.assume_init();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        ExitSignals(set)
    }
}

/// Starts the watcher thread; `on_signal` runs on it for every signal that
/// arrives, with the signal's name. It decides whether to exit.
pub fn watch(signals: ExitSignals, on_signal: impl Fn(&'static str) + Send + 'static) {
    std::thread::spawn(move || {
        loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: the set was initialised by block_exit_signals; sig is a valid out pointer.
            let rc = unsafe { libc::sigwait(&signals.0, &mut sig) };
            if rc != 0 {
                continue;
            }
            on_signal(signal_name(sig));
        }
    });
}

fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "other",
    }
}
