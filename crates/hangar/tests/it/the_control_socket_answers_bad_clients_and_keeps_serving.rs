//! Issue 3 acceptance for the control socket: raw frames written by hand
//! (u32 BE length of tag+payload, u8 tag, payload). A malformed frame, an
//! unknown kind, an oversized request or a client that vanishes mid-request
//! each get a clear error or a clean drop, and other clients keep working.

use crate::support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const TAG_MESSAGE: u8 = 1;

fn frame(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = ((payload.len() + 1) as u32).to_be_bytes().to_vec();
    out.push(tag);
    out.extend_from_slice(payload);
    out
}

/// A hand-rolled client on the raw socket.
struct Raw {
    stream: UnixStream,
}

impl Raw {
    fn connect(h: &Hangar) -> Raw {
        let stream = UnixStream::connect(h.home.join("run/hangar.sock")).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Raw { stream }
    }

    fn greeted(h: &Hangar) -> Raw {
        let mut raw = Raw::connect(h);
        let welcome = raw.ask(&json!({"id": 1, "kind": "hello", "body": {"protocol_version": 1}}));
        assert_eq!(welcome["ok"], true, "hello is welcomed: {welcome}");
        raw
    }

    fn send(&mut self, tag: u8, payload: &[u8]) {
        self.stream
            .write_all(&frame(tag, payload))
            .expect("write frame");
    }

    fn ask(&mut self, msg: &Value) -> Value {
        self.send(TAG_MESSAGE, msg.to_string().as_bytes());
        self.read().expect("a reply")
    }

    /// The next JSON message, or None when the daemon closed the connection.
    fn read(&mut self) -> Option<Value> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let len = u32::from_be_bytes(len) as usize;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).ok()?;
        assert_eq!(
            body[0], TAG_MESSAGE,
            "the daemon answers with JSON messages"
        );
        Some(serde_json::from_slice(&body[1..]).expect("reply is JSON"))
    }
}

/// Another client still gets answers.
fn others_still_served(h: &Hangar, id: &str) {
    assert_eq!(h.session(id)["state"], "live");
    let mut raw = Raw::greeted(h);
    let list = raw.ask(&json!({"id": 2, "kind": "list", "body": {}}));
    assert_eq!(list["ok"], true, "{list}");
}

fn started(h: &Hangar) -> String {
    let id = h.new_pane();
    h.wait_state(&id, "live");
    id
}

#[test]
fn the_socket_folder_is_private_to_its_user() {
    let h = Hangar::new();
    started(&h);
    let mode = std::fs::metadata(h.home.join("run"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "run folder mode is {:o}", mode & 0o777);
}

#[test]
fn a_request_before_hello_is_refused_and_the_connection_closed() {
    let h = Hangar::new();
    let id = started(&h);
    let mut raw = Raw::connect(&h);
    let reply = raw.ask(&json!({"id": 5, "kind": "list", "body": {}}));
    assert_eq!(reply["ok"], false, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hello"),
        "{reply}"
    );
    assert!(raw.read().is_none(), "the daemon hangs up");
    others_still_served(&h, &id);
}

#[test]
fn a_client_of_another_protocol_version_is_told_to_restart_the_daemon() {
    let h = Hangar::new();
    let id = started(&h);
    let mut raw = Raw::connect(&h);
    let reply = raw.ask(&json!({"id": 1, "kind": "hello", "body": {"protocol_version": 99}}));
    assert_eq!(reply["ok"], false, "{reply}");
    assert_eq!(reply["error"]["code"], "version_mismatch", "{reply}");
    others_still_served(&h, &id);
}

#[test]
fn a_malformed_frame_gets_a_bad_request_and_the_connection_keeps_working() {
    let h = Hangar::new();
    let id = started(&h);
    let mut raw = Raw::greeted(&h);

    raw.send(TAG_MESSAGE, b"{this is not json");
    let reply = raw.read().expect("an error reply");
    assert_eq!(reply["ok"], false, "{reply}");
    assert_eq!(reply["error"]["code"], "bad_request", "{reply}");

    raw.send(
        TAG_MESSAGE,
        br#"{"id": 3, "kind": "wake", "body": "not an object"}"#,
    );
    let reply = raw.read().expect("an error reply");
    assert_eq!(reply["ok"], false, "{reply}");

    // An empty frame (length 0, not even a tag).
    raw.stream.write_all(&[0, 0, 0, 0]).unwrap();
    let reply = raw.read().expect("an error reply");
    assert_eq!(reply["error"]["code"], "bad_request", "{reply}");

    // An unknown frame tag.
    raw.send(77, b"whatever");
    let reply = raw.read().expect("an error reply");
    assert_eq!(reply["error"]["code"], "unknown_kind", "{reply}");

    let list = raw.ask(&json!({"id": 4, "kind": "list", "body": {}}));
    assert_eq!(list["ok"], true, "the same connection still works: {list}");
    assert_eq!(list["id"], 4);
    others_still_served(&h, &id);
}

#[test]
fn an_unknown_message_kind_gets_an_explicit_unknown_kind_error() {
    let h = Hangar::new();
    let id = started(&h);
    let mut raw = Raw::greeted(&h);
    let reply = raw.ask(&json!({"id": 9, "kind": "teleport", "body": {}}));
    assert_eq!(reply["ok"], false, "{reply}");
    assert_eq!(reply["id"], 9, "{reply}");
    assert_eq!(reply["error"]["code"], "unknown_kind", "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("teleport"),
        "names the kind: {reply}"
    );
    let list = raw.ask(&json!({"id": 10, "kind": "list", "body": {}}));
    assert_eq!(list["ok"], true, "{list}");
    others_still_served(&h, &id);
}

#[test]
fn an_oversized_request_is_refused_without_breaking_the_stream() {
    let h = Hangar::new();
    let id = started(&h);
    let mut raw = Raw::greeted(&h);
    let huge =
        json!({"id": 6, "kind": "send", "body": {"session": id, "text": "x".repeat(2 << 20)}});
    let bytes = frame(TAG_MESSAGE, huge.to_string().as_bytes());
    let mut writer = raw.stream.try_clone().unwrap();
    let writing = thread::spawn(move || writer.write_all(&bytes));
    let reply = raw.read().expect("an error reply");
    writing
        .join()
        .unwrap()
        .expect("the daemon reads (and skips) the whole frame");
    assert_eq!(reply["ok"], false, "{reply}");
    assert_eq!(reply["error"]["code"], "too_large", "{reply}");

    let list = raw.ask(&json!({"id": 7, "kind": "list", "body": {}}));
    assert_eq!(list["ok"], true, "the stream is still in sync: {list}");
    assert!(
        !h.screen(&id).contains("xxxxxxxx"),
        "nothing of the refused request reached the session"
    );
    others_still_served(&h, &id);
}

#[test]
fn a_client_that_disconnects_mid_request_is_dropped_cleanly() {
    let h = Hangar::new();
    let id = started(&h);
    let daemon = h.daemon_pid();
    let fds_before = open_fds(daemon);
    for _ in 0..20 {
        let mut raw = Raw::greeted(&h);
        // Announce 1000 bytes, send 10, vanish.
        let mut partial = 1000u32.to_be_bytes().to_vec();
        partial.push(TAG_MESSAGE);
        partial.extend_from_slice(br#"{"id":2,"k"#);
        raw.stream.write_all(&partial).unwrap();
        drop(raw);
    }
    others_still_served(&h, &id);
    wait_until(
        "the daemon closed every abandoned connection",
        DEADLINE,
        || open_fds(daemon) <= fds_before + 1,
    );
    assert_eq!(h.daemon_pid(), daemon, "the same daemon serves");
}

#[test]
fn many_clients_at_once_are_all_answered() {
    let h = Hangar::new();
    let id = started(&h);
    // Idle greeted connections held open while others work.
    let idle: Vec<Raw> = (0..30).map(|_| Raw::greeted(&h)).collect();
    thread::scope(|s| {
        let workers: Vec<_> = (0..16)
            .map(|i| {
                let h = &h;
                let id = &id;
                s.spawn(move || {
                    if i % 2 == 0 {
                        h.json(&["ls"]).as_array().map(Vec::len)
                    } else {
                        h.ok(&["send", id, &format!("client {i}")]);
                        Some(1)
                    }
                })
            })
            .collect();
        for w in workers {
            assert_eq!(w.join().unwrap(), Some(1));
        }
    });
    // Regression: concurrent sends to one session used to interleave their
    // texts (`client 5client 7` then two Enters).
    for i in (1..16).step_by(2) {
        h.wait_screen(&id, &format!("answer: client {i}"));
    }
    drop(idle);
    others_still_served(&h, &id);
}
