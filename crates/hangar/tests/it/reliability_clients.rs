//! Issue 10, part 3: hostile clients on the control socket. A client of
//! another user is refused (both by the 0700 folder and, when the folder is
//! opened up, by the peer-uid check); 1,000 concurrent clients are all
//! served; garbage bytes never take the daemon down; a client that trickles
//! one byte per second neither blocks others nor holds memory past the
//! handshake deadline.

use crate::reliability_support;
use crate::support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use reliability_support::{RawClient, figures, hello_frame};
use serde_json::json;
use support::*;

/// What the forked `nobody` client saw.
#[derive(Debug, PartialEq)]
enum Seen {
    ConnectRefused,
    Refusal,
    Welcome,
    Other(i32),
}

/// Fork a child that drops to uid/gid 65534 (`nobody`), connects to
/// `socket`, says hello and reports what came back. Only async-signal-safe
/// calls run in the child: everything is prepared before the fork.
fn connect_as_nobody(socket: &Path) -> Seen {
    // SAFETY: sockaddr_un is plain data; zeroed is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let path = socket.as_os_str().as_encoded_bytes();
    assert!(path.len() < addr.sun_path.len(), "socket path too long");
    for (i, b) in path.iter().enumerate() {
        addr.sun_path[i] = *b as libc::c_char;
    }
    let hello = hello_frame();
    let needle = b"another user";
    // SAFETY: after fork the child only calls async-signal-safe functions
    // (setgroups, setgid, setuid, socket, connect, write, read, _exit) on
    // memory prepared before the fork; the parent waits for it.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let gid: libc::gid_t = 65534;
            if libc::setgroups(1, &gid) != 0 || libc::setgid(65534) != 0 || libc::setuid(65534) != 0
            {
                libc::_exit(30);
            }
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            if fd < 0 {
                libc::_exit(31);
            }
            let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            if libc::connect(fd, &addr as *const _ as *const libc::sockaddr, len) != 0 {
                libc::_exit(10);
            }
            libc::write(fd, hello.as_ptr() as *const libc::c_void, hello.len());
            let mut buf = [0u8; 4096];
            let mut got = 0usize;
            loop {
                let n = libc::read(
                    fd,
                    buf.as_mut_ptr().add(got) as *mut libc::c_void,
                    4096 - got,
                );
                if n <= 0 {
                    break;
                }
                got += n as usize;
                if got >= 4096 {
                    break;
                }
            }
            let text = &buf[..got];
            let mut i = 0;
            while i + needle.len() <= text.len() {
                if &text[i..i + needle.len()] == needle {
                    libc::_exit(20);
                }
                i += 1;
            }
            let ok = b"\"ok\":true";
            let mut i = 0;
            while i + ok.len() <= text.len() {
                if &text[i..i + ok.len()] == ok {
                    libc::_exit(21);
                }
                i += 1;
            }
            libc::_exit(22);
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        match libc::WEXITSTATUS(status) {
            10 => Seen::ConnectRefused,
            20 => Seen::Refusal,
            21 => Seen::Welcome,
            other => Seen::Other(other),
        }
    }
}

#[test]
fn a_client_of_another_user_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        hangar_testkit::required::missing(
            "a_client_of_another_user_is_refused",
            "needs root to run a client as `nobody` (uid 65534); run the suite as root to \
             check the peer-uid refusal",
        );
        return;
    }
    let h = Hangar::new();
    h.start_daemon();
    let socket = h.home.join("run").join("hangar.sock");

    // The 0700 run folder keeps another user from even connecting.
    assert_eq!(connect_as_nobody(&socket), Seen::ConnectRefused);

    // Open the path up, as a filesystem that ignores modes would: the
    // daemon's own peer-uid check must still refuse the handshake.
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    for dir in [h.root.as_path(), h.home.as_path(), &h.home.join("run")] {
        mode(dir, 0o711).expect("open folder");
    }
    mode(&socket, 0o777).expect("open socket");
    assert_eq!(connect_as_nobody(&socket), Seen::Refusal);
    mode(&h.home.join("run"), 0o700).expect("close folder");
    assert!(
        h.run(&["status"]).status.success(),
        "the daemon still serves its user"
    );
}

#[test]
fn a_thousand_concurrent_clients_are_all_served() {
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let socket = h.home.join("run").join("hangar.sock");
    h.ok(&["status"]);
    let fds_before = open_fds(daemon);
    let rss_before = rss_kib(daemon).unwrap_or(0);

    let clients = 1000;
    let mut streams = Vec::with_capacity(clients);
    for _ in 0..clients {
        let s = UnixStream::connect(&socket).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        streams.push(s);
    }
    let started = Instant::now();
    let mut request = hello_frame();
    let status = json!({"id": 2, "kind": "status", "body": {}}).to_string();
    request.extend(hangar_protocol::frame::encode(
        hangar_protocol::frame::TAG_MESSAGE,
        status.as_bytes(),
    ));
    for s in &mut streams {
        s.write_all(&request).expect("send hello + status");
    }
    // Another client is served while a thousand are connected.
    assert!(h.run(&["status"]).status.success());
    let rss_peak = rss_kib(daemon).unwrap_or(0);
    let mut served = 0;
    for s in streams.iter_mut() {
        let mut c = RawClient::from_stream(s.try_clone().expect("clone"));
        let welcome = c.read_message().expect("welcome");
        assert_eq!(welcome["ok"], true, "{welcome}");
        let reply = c.read_message().expect("status reply");
        assert_eq!(reply["ok"], true, "{reply}");
        assert!(reply["body"]["daemon"]["pid"].as_i64() == Some(daemon as i64));
        served += 1;
    }
    let all_ms = started.elapsed().as_millis();
    drop(streams);
    wait_until("the daemon closed every client's socket", DEADLINE, || {
        open_fds(daemon) <= fds_before
    });
    let rss_after = rss_kib(daemon).unwrap_or(0);
    figures(
        "1000 clients",
        format!(
            "served={served} all_answered_ms={all_ms} daemon_rss_kib before={rss_before} \
             with_1000={rss_peak} after={rss_after} fds before={fds_before} after={}",
            open_fds(daemon)
        ),
    );
    assert_eq!(served, clients);
}

#[test]
fn garbage_on_the_socket_gets_errors_and_never_takes_the_daemon_down() {
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let socket = h.home.join("run").join("hangar.sock");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut answered = 0;
    for round in 0..300 {
        let Ok(mut s) = UnixStream::connect(&socket) else {
            panic!("round {round}: the daemon stopped accepting");
        };
        s.set_read_timeout(Some(Duration::from_millis(200))).ok();
        let len = (rnd() % 2048) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        match round % 4 {
            // A valid hello, then garbage frames with plausible headers.
            0 => {
                let mut v = hello_frame();
                v.extend(hangar_protocol::frame::encode(1, &bytes));
                bytes = v;
            }
            // A huge declared length.
            1 => bytes
                .splice(0..0, [0xff, 0xff, 0xff, 0xf0, 1])
                .for_each(drop),
            // Valid JSON of the wrong shape.
            2 => bytes = hangar_protocol::frame::encode(1, br#"{"id":"x","kind":7,"body":[1,2]}"#),
            _ => {}
        }
        let _ = s.write_all(&bytes);
        let mut reply = [0u8; 256];
        if matches!(hangar_testkit::io::read_some(&mut s, &mut reply), Ok(n) if n > 0) {
            answered += 1;
        }
        assert!(is_running(daemon), "round {round}: the daemon died");
    }
    assert!(
        h.run(&["status"]).status.success(),
        "the daemon still serves"
    );
    figures(
        "garbage clients",
        format!("connections=300 answered_with_a_frame={answered}"),
    );
}

#[test]
fn a_client_that_sends_one_byte_per_second_blocks_nobody_and_is_dropped_at_the_handshake_deadline()
{
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let socket = h.home.join("run").join("hangar.sock");
    h.ok(&["status"]);
    let fds_before = open_fds(daemon);
    let rss_before = rss_kib(daemon).unwrap_or(0);

    // 200 trickling clients, each mid-way through a frame that claims 1 MiB.
    let mut slow: Vec<UnixStream> = (0..200)
        .map(|_| {
            let mut s = UnixStream::connect(&socket).expect("connect");
            s.write_all(&[0x00, 0x10, 0x00, 0x00, 1]).expect("header");
            s
        })
        .collect();
    let hello = hello_frame();
    let started = Instant::now();
    let mut served_meanwhile = 0;
    let mut sent = 0;
    // One byte per second to the first client; everyone else keeps being
    // served in between.
    let mut trickler = UnixStream::connect(&socket).expect("connect");
    while sent < 4 {
        trickler
            .write_all(&hello[sent..sent + 1])
            .expect("one byte");
        sent += 1;
        for _ in 0..5 {
            assert!(
                h.run(&["status"]).status.success(),
                "a normal client was blocked"
            );
            served_meanwhile += 1;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let rss_with = rss_kib(daemon).unwrap_or(0);
    // The handshake deadline drops every one of them.
    trickler
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    let dropped = loop {
        match hangar_testkit::io::read_some(&mut trickler, &mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(_) => break false,
        }
    };
    assert!(dropped, "the trickling client was never dropped");
    let dropped_after_s = started.elapsed().as_secs();
    wait_until("the daemon closed every slow client", DEADLINE, || {
        open_fds(daemon) <= fds_before
    });
    for s in &mut slow {
        let _ = s.write_all(b"x");
    }
    assert!(h.run(&["status"]).status.success());
    figures(
        "slow clients",
        format!(
            "slow_clients=201 normal_requests_served_meanwhile={served_meanwhile} \
             trickler_dropped_after_s={dropped_after_s} daemon_rss_kib before={rss_before} \
             with_201_slow={rss_with} fds back to {}",
            open_fds(daemon)
        ),
    );
    // Bounded: far less than each slow client buffering its claimed 1 MiB.
    assert!(
        rss_with.saturating_sub(rss_before) < 64 * 1024,
        "201 slow clients grew the daemon by {} KiB",
        rss_with - rss_before
    );
}
