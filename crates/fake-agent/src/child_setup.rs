//! What a child of the fake must do between fork and exec: the one place
//! this crate needs `unsafe` (`CommandExt::pre_exec`), and the one raw
//! `ioctl` no safe crate wraps (TIOCSTI). The crate is
//! `#![deny(unsafe_code)]`; only the two functions here (and the `mmap` of
//! `shared_pages.rs`) are allowed it.

use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::signal::SigSet;

/// Start `cmd`'s child with no signal blocked (and, with `new_session`, in
/// a session of its own, as `setsid` makes one). Without this the child
/// inherited the fake's blocked SIGTERM/SIGHUP (std does not reset the
/// mask), so a SIGTERM to its group never reached it.
#[allow(unsafe_code)]
pub fn clear_signal_mask(cmd: &mut Command, new_session: bool) {
    // SAFETY: between fork and exec the closure only calls setsid and
    // pthread_sigmask (through nix, on a set built on the stack), both
    // async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if new_session {
                // Fails only for a group leader, which a fresh child is not.
                let _ = nix::unistd::setsid();
            }
            SigSet::empty()
                .thread_set_mask()
                .map_err(std::io::Error::from)
        });
    }
}

/// Push `text` into stdin's terminal input queue, byte by byte, with
/// `ioctl(TIOCSTI)`: what a hostile agent would do to have its parent shell
/// run a command. Fails where the kernel or a seccomp filter refuses it.
#[allow(unsafe_code)]
pub fn push_input(text: &str) -> std::io::Result<()> {
    for b in text.bytes() {
        // SAFETY: TIOCSTI reads one byte from the pointer, which points at
        // a byte that lives for the call.
        let rc = unsafe { libc::ioctl(0, libc::TIOCSTI, &b as *const u8) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
