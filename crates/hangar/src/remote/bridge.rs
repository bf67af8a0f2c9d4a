//! `hangar bridge`: this machine's daemon socket over stdio, for a hangar on
//! another machine that reached this one with `ssh -T ... hangar bridge`.
//!
//! It starts the daemon when none runs (as every command does), then copies
//! bytes both ways without reading them: the far client speaks the daemon's
//! own versioned frames, handshake included. Nothing is listened on; who
//! may run this is SSH's business. The bridge only ever talks to a socket
//! owned by its own user and served by its own user's process (the same
//! check the daemon makes of its clients), so a socket planted in a shared
//! `HANGAR_HOME` cannot capture someone's keystrokes.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hangar_protocol::paths::Paths;

use crate::conn::{self, Client};

pub fn run(paths: &Paths) -> anyhow::Result<ExitCode> {
    // Starts the daemon if need be and proves it answers the handshake;
    // then a fresh connection is relayed, for the far client to greet.
    drop(Client::connect_local(paths)?);
    let socket = paths.socket();
    check_owner(&socket)?;
    let daemon = conn::local_stream(paths)?;
    check_peer(&daemon)?;
    relay(daemon)
}

fn me() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The socket file must be ours.
fn check_owner(socket: &std::path::Path) -> anyhow::Result<()> {
    let meta = std::fs::symlink_metadata(socket)
        .with_context(|| format!("cannot read {}", socket.display()))?;
    if meta.uid() != me() {
        bail!(
            "refusing to relay {}: it belongs to uid {}, not to this user (uid {})",
            socket.display(),
            meta.uid(),
            me()
        );
    }
    Ok(())
}

/// The process serving it must be ours too (a socket can be replaced
/// between the check and the connect).
fn check_peer(stream: &UnixStream) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED fills one ucred of `len` bytes on a connected
    // Unix socket we own.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .context("cannot tell who serves the hangar socket");
    }
    if cred.uid != me() {
        bail!(
            "refusing to relay the hangar socket: it is served by uid {}, not by this user (uid {})",
            cred.uid,
            me()
        );
    }
    Ok(())
}

/// Copy stdin to the daemon and the daemon to stdout until either side
/// ends. Unbuffered both ways: every keystroke and every frame goes on at
/// once.
fn relay(daemon: UnixStream) -> anyhow::Result<ExitCode> {
    let mut to_daemon = daemon.try_clone()?;
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_daemon.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        // The far side is gone: so is this bridge (the daemon drops the
        // connection and detaches any attach it held).
        let _ = to_daemon.shutdown(Shutdown::Both);
        std::process::exit(0);
    });
    // SAFETY: fd 1 stays open for the life of the process; ManuallyDrop
    // keeps this handle from closing it.
    let mut stdout = std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(1)
    });
    let mut from_daemon = daemon;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from_daemon.read(&mut buf) {
            Ok(0) => return Ok(ExitCode::SUCCESS),
            Ok(n) => {
                if stdout.write_all(&buf[..n]).is_err() {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("lost the connection to the local daemon"),
        }
    }
}
