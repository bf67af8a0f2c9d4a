//! `hangar __sandbox-relay [--socket PATH --port N] -- PROGRAM ARGS...`: what
//! runs first inside a sandbox (issue 32; the walls are
//! `hangar_core::sandbox`'s bwrap command line), never typed by a person.
//!
//! 1. It listens on 127.0.0.1:N of the sandbox's own network namespace (which
//!    has nothing but loopback) and carries each connection to the proxy's
//!    Unix socket bound in at PATH: the agent's `HTTPS_PROXY` names
//!    127.0.0.1:N as it would outside, and the proxy is its only way out.
//! 2. It installs a seccomp filter that refuses `ioctl(TIOCSTI)` and
//!    `ioctl(TIOCLINUX)` with EPERM: the agent shares hangar's PTY as its
//!    controlling terminal (bwrap's `--new-session` would take that away), so
//!    without the filter it could push keystrokes into the terminal's input.
//!    The filter is installed here rather than through bwrap's `--seccomp FD`
//!    because this process is hangar's own code, already inside the sandbox
//!    before the agent: no descriptor has to be passed through the PTY
//!    spawn, and a filter, once installed, holds for every descendant and
//!    cannot be removed.
//! 3. It runs the agent as its child and exits with its status. The daemon
//!    starts bwrap with the stop signals blocked (bwrap itself would die of
//!    them and take the sandbox down at once); this process keeps them
//!    blocked, outlives them, and lets the agent (which gets them from
//!    hangar's process-group signal, with std's spawn giving it an empty
//!    mask) end in its own time.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

/// The hidden subcommand's name (`hangar_core::sandbox::RELAY_SUBCOMMAND`).
pub const SUBCOMMAND: &str = hangar_core::sandbox::RELAY_SUBCOMMAND;

struct Args {
    socket: Option<String>,
    port: Option<u16>,
    program: String,
    args: Vec<String>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut socket = None;
    let mut port = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--socket" => {
                socket = args.get(i + 1).cloned();
                i += 2;
            }
            "--port" => {
                let p = args.get(i + 1).ok_or("--port needs a number")?;
                port = Some(
                    p.parse()
                        .map_err(|_| format!("--port {p:?} is not a port"))?,
                );
                i += 2;
            }
            "--" => {
                let program = args.get(i + 1).ok_or("no program after --")?.clone();
                return Ok(Args {
                    socket,
                    port,
                    program,
                    args: args[i + 2..].to_vec(),
                });
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Err("no program after --".into())
}

pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "hangar sandbox: {e}");
            ExitCode::from(126)
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let a = parse(args)?;
    outlive_stop_signals()?;
    // Then, while this process has one thread: the filter then covers
    // every thread it starts and every process the agent starts.
    block_tiocsti().map_err(|e| format!("cannot install the TIOCSTI filter: {e}"))?;
    if let (Some(socket), Some(port)) = (&a.socket, a.port) {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port} inside the sandbox: {e}"))?;
        let socket = socket.clone();
        std::thread::Builder::new()
            .name("relay".into())
            .spawn(move || relay(listener, &socket))
            .map_err(|e| format!("cannot start the relay: {e}"))?;
    }
    let status = std::process::Command::new(&a.program)
        .args(&a.args)
        .status()
        .map_err(|e| format!("cannot start {}: {e}", a.program))?;
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Carry every loopback connection to the proxy's socket.
fn relay(listener: std::net::TcpListener, socket: &str) {
    for conn in listener.incoming() {
        let Ok(tcp) = conn else { continue };
        let socket = socket.to_owned();
        let _ = std::thread::Builder::new()
            .name("relay-conn".into())
            .spawn(move || {
                let Ok(unix) = UnixStream::connect(&socket) else {
                    return;
                };
                let _ = tcp.set_nodelay(true);
                let (Ok(mut tcp_r), Ok(mut unix_w)) = (tcp.try_clone(), unix.try_clone()) else {
                    return;
                };
                let back = std::thread::spawn(move || {
                    let (mut unix_r, mut tcp_w) = (unix, tcp);
                    let _ = std::io::copy(&mut unix_r, &mut tcp_w);
                    let _ = tcp_w.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut tcp_r, &mut unix_w);
                let _ = unix_w.shutdown(std::net::Shutdown::Write);
                let _ = back.join();
            });
    }
}

/// `ioctl(fd, TIOCSTI | TIOCLINUX, ...)` fails with EPERM; everything else
/// is allowed. The request is compared on its low 32 bits (the kernel's
/// `unsigned int cmd`), so high bits set in the 64-bit register do not slip
/// by. A syscall of another ABI (32-bit `int 0x80`) ends the process.
fn block_tiocsti() -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("{e:?}"))?;
    let rule = |request: u64| -> Result<SeccompRule, String> {
        let c = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
            .map_err(|e| e.to_string())?;
        SeccompRule::new(vec![c]).map_err(|e| e.to_string())
    };
    // The ioctl request type is `c_ulong` with glibc and `c_int` with musl.
    #[allow(clippy::unnecessary_cast)]
    let rules = vec![rule(libc::TIOCSTI as u64)?, rule(libc::TIOCLINUX as u64)?];
    let mut by_syscall = std::collections::BTreeMap::new();
    by_syscall.insert(libc::SYS_ioctl, rules.clone());
    #[cfg(target_arch = "x86_64")]
    {
        // The x32 ABI's ioctl (same audit arch, its own number).
        const X32_IOCTL: i64 = 0x4000_0000 + 514;
        by_syscall.insert(X32_IOCTL, rules);
    }
    let filter = SeccompFilter::new(
        by_syscall,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())
}

/// Outlive SIGTERM, SIGHUP, SIGINT and SIGQUIT: they are for the agent, and
/// this process ends when the agent does. They stay blocked here (pending
/// ones are dropped at exit); the agent still gets them with the default
/// dispositions and an empty mask, since std's spawn resets the child's
/// signal mask before exec. Called first, before any thread is started, so
/// every thread of this process inherits the mask.
fn outlive_stop_signals() -> Result<(), String> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
    let mut set = SigSet::empty();
    for sig in [
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
    ] {
        set.add(sig);
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .map_err(|e| format!("cannot block the stop signals: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_reads_its_socket_port_and_the_agent_command() {
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let a = parse(&v(&[
            "--socket",
            "/run/x.sock",
            "--port",
            "41",
            "--",
            "claude",
            "--resume",
            "--",
        ]))
        .unwrap();
        assert_eq!(a.socket.as_deref(), Some("/run/x.sock"));
        assert_eq!(a.port, Some(41));
        assert_eq!(a.program, "claude");
        assert_eq!(a.args, v(&["--resume", "--"]));
        let a = parse(&v(&["--", "sh"])).unwrap();
        assert_eq!((a.socket, a.port), (None, None));
        assert!(parse(&v(&["--port", "x", "--", "sh"])).is_err());
        assert!(parse(&v(&["--socket", "/s"])).is_err());
    }
}
