//! The size of the terminal the fake runs in, as the kernel reports it.
//!
//! Read from stdin (`TIOCGWINSZ`, through rustix), so it shows exactly what
//! hangar set on the PTY (and whether a resize reached the agent).

/// `(columns, rows)`, or `None` when stdin is not a terminal.
pub fn size() -> Option<(u16, u16)> {
    let ws = rustix::termios::tcgetwinsize(std::io::stdin()).ok()?;
    Some((ws.ws_col, ws.ws_row))
}

/// Push `text` into stdin's terminal input queue (`child_setup`: TIOCSTI
/// needs the raw ioctl).
pub fn push_input(text: &str) -> std::io::Result<()> {
    crate::child_setup::push_input(text)
}
