//! The size of the terminal the fake runs in, as the kernel reports it.
//!
//! Read from stdin with `TIOCGWINSZ`, so it shows exactly what hangar set on
//! the PTY (and whether a resize reached the agent).

/// `(columns, rows)`, or `None` when stdin is not a terminal.
pub fn size() -> Option<(u16, u16)> {
    // SAFETY: winsize is plain data; all-zero is a valid value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize through the valid pointer.
    let rc = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0).then_some((ws.ws_col, ws.ws_row))
}

/// Push `text` into stdin's terminal input queue, byte by byte, with
/// `ioctl(TIOCSTI)`: what a hostile agent would do to have its parent shell
/// run a command. Fails where the kernel or a seccomp filter refuses it.
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
