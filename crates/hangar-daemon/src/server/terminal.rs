//! An attached client's own terminal, read and written by the daemon.
//!
//! `hangar attach` on a terminal hands the daemon that terminal (see
//! `msg::Attach::terminal`): the daemon writes the session's output to it
//! and reads the person's keys from it, as tmux's server does with its
//! client's terminal. Without it every key and every echo crossed the
//! client process too, one more process to wake each way: what kept key
//! echo behind tmux's (issue 31).
//!
//! The descriptor the client sends shares its open file with the person's
//! shell; the daemon opens the terminal again (through `/proc/self/fd`) for
//! a file of its own, so the non-blocking mode it needs never leaks into
//! the shell's, and nothing is left to undo when the attach ends.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

pub(super) struct Terminal {
    fd: AsyncFd<OwnedFd>,
}

impl Terminal {
    /// The terminal behind `passed`, opened again for the daemon.
    pub(super) fn open(passed: OwnedFd) -> io::Result<Terminal> {
        use nix::fcntl::{OFlag, open};
        if !nix::unistd::isatty(passed.as_fd()).unwrap_or(false) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the descriptor is not a terminal",
            ));
        }
        let path = format!("/proc/self/fd/{}", passed.as_raw_fd());
        let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let own = open(path.as_str(), flags, nix::sys::stat::Mode::empty()).map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("cannot open the terminal again: {e}"),
            )
        })?;
        if !nix::unistd::isatty(own.as_fd()).unwrap_or(false) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the terminal opened again is not a terminal",
            ));
        }
        Ok(Terminal { fd: register(own)? })
    }

    /// The next keys the person typed; `Ok(0)` once the terminal hung up.
    pub(super) async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
                Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }

    /// All of `bytes`, waiting while the terminal (or the ssh session
    /// behind it) is slow to take them.
    pub(super) async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let mut ready = self.fd.writable().await?;
            match ready
                .try_io(|fd| nix::unistd::write(fd.get_ref(), bytes).map_err(io::Error::from))
            {
                Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }
}

/// `fd` watched by tokio's reactor.
#[allow(unsafe_code)]
fn register(fd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the `OwnedFd` is this `AsyncFd`'s alone and stays open, the
    // same descriptor of the same file, until the `AsyncFd` drops it.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE | Interest::WRITABLE) }
        .map_err(|e| e.into_parts().1)
}
