//! Descriptors a client hands the daemon on the control socket (SCM_RIGHTS):
//! a bridge's ssh link (`take_link`), an attaching client's terminal
//! (`attach` with `terminal`). Both arrive as one byte carrying them, sent
//! only after the daemon's reply asked for them, so the connection's reader
//! (plain reads, which would drop descriptors) never sees that byte.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::UnixStream;

/// How long a client has to send its descriptors after the reply.
pub(super) const DESCRIPTORS_TIMEOUT: Duration = Duration::from_secs(10);

/// Exactly `N` descriptors of the next message on `socket` (close-on-exec:
/// no agent the daemon starts inherits them).
pub(super) async fn receive<const N: usize>(socket: &UnixStream) -> io::Result<[OwnedFd; N]> {
    let received = tokio::time::timeout(DESCRIPTORS_TIMEOUT, async {
        loop {
            socket.readable().await?;
            match socket.try_io(Interest::READABLE, || recv_fds(socket)) {
                Ok(fds) => return fds,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no descriptors came in time"))??;
    received.try_into().map_err(|fds: Vec<OwnedFd>| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} descriptors came, not {N}", fds.len()),
        )
    })
}

/// One `recvmsg` of a byte and its descriptors. `Err(WouldBlock)` when
/// nothing came yet; the inner result is what the message held.
#[allow(unsafe_code)]
fn recv_fds(socket: &UnixStream) -> io::Result<io::Result<Vec<OwnedFd>>> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::{AsRawFd, FromRawFd, RawFd};
    let mut byte = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let msg = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    if msg.bytes == 0 {
        return Ok(Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the client closed before sending its descriptors",
        )));
    }
    let mut fds: Vec<OwnedFd> = Vec::new();
    for cmsg in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            for fd in raw {
                // SAFETY: the kernel has just installed this descriptor in
                // this process for this message; nothing else owns it.
                fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
    }
    Ok(Ok(fds))
}
