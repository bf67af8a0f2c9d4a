//! Real-CLI conformance of claude identity (issue 16, defects 1, 2, 3, 6):
//! the published Claude Code 2.1.197, started by hangar against
//! `hangar-fake-model-api`.
//!
//! - transcripts of folders with odd characters and of a path longer than
//!   200 characters are where hangar's slug rule says;
//! - `/clear` is followed, with hangar's hooks on and with `disableAllHooks`,
//!   and the next wake resumes the post-clear conversation;
//! - a claude a person runs in their own terminal (a plain pty, not hangar)
//!   in the same folder is never adopted: hangar's session keeps its id and
//!   wakes into its own conversation;
//! - two sessions hangar started in one folder each resume their own
//!   conversation after a hibernate and wake of both;
//! - `hangar send` confirms that a freshly drawn claude took the prompt.
//!
//! Skipped with one line when the CLIs cannot be installed.

use crate::real_cli_support;
use crate::support;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hangar_core::claude_slug::claude_project_slug;
use real_cli_support::{REAL_DEADLINE, RealCli};
use serde_json::Value;

fn mentions(req: &Value, text: &str) -> bool {
    req["body"].to_string().contains(text)
}

/// The transcript real claude wrote for `psid` run in `cwd`, where hangar's
/// slug rule says it is.
fn transcript_by_rule(rc: &RealCli, cwd: &Path, psid: &str) -> std::path::PathBuf {
    rc.hangar
        .claude_dir
        .join("projects")
        .join(claude_project_slug(&cwd.display().to_string()))
        .join(format!("{psid}.jsonl"))
}

#[test]
fn claude_transcripts_of_odd_and_long_folders_are_where_the_slug_rule_says() {
    let Some(rc) = RealCli::start() else { return };
    let odd = rc.folder("odd_dir a~b+c@d é");
    let mut long_name = String::from("long");
    for i in 1..=20 {
        long_name.push_str(&format!("/segment_{i:02}.x"));
    }
    let long = rc.folder(&long_name);
    assert!(long.display().to_string().len() > 200);
    rc.hangar.start_daemon();
    let mut sessions = Vec::new();
    for dir in [&odd, &long] {
        let id = rc
            .hangar
            .new_agent(&["--provider", "claude", "--cwd", dir.to_str().unwrap()]);
        sessions.push((id, dir.clone()));
    }
    for (id, dir) in &sessions {
        rc.wait_ready(id);
        let text = format!("hello from {}", dir.file_name().unwrap().to_string_lossy());
        let sent = rc.hangar.json(&["send", id, &text]);
        assert_eq!(sent["confirmed"], true, "{sent}");
        rc.wait_screen(id, &format!("ANSWER({text})"));
        let psid = rc.wait_provider_id(id);
        let path = transcript_by_rule(&rc, dir, &psid);
        support::wait_until(
            &format!("claude wrote {}", path.display()),
            REAL_DEADLINE,
            || path.is_file(),
        );
        let mut shown = Value::Null;
        support::wait_until("hangar transcript shows the turn", REAL_DEADLINE, || {
            shown = rc.hangar.json(&["transcript", id]);
            shown["messages"].to_string().contains(&text)
        });
        assert_eq!(shown["path"], path.display().to_string());
    }
}

/// `/clear`, then hibernate and wake: the session resumes the conversation
/// begun by the clear, whether or not claude runs hangar's hooks.
fn clear_is_followed(hooks_off: bool) {
    let Some(rc) = RealCli::start() else { return };
    if hooks_off {
        rc.claude_settings(serde_json::json!({ "disableAllHooks": true }));
    }
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    rc.ask(&id, "before clear");
    let before = rc.wait_provider_id(&id);
    let sent = rc.hangar.json(&["send", &id, "/clear"]);
    let after = support::poll_for(REAL_DEADLINE, || {
        rc.hangar.provider_id(&id).0.filter(|p| *p != before)
    })
    .unwrap_or_else(|| {
        panic!(
            "the session never followed /clear to a new id (still {before}); send said {sent}\nscreen:\n{}\n{}",
            String::from_utf8_lossy(&rc.hangar.run(&["screen", &id]).stdout),
            rc.hangar.daemon_logs_tail()
        )
    });
    rc.wait_ready(&id);
    // After /clear the model's last user message leads with claude's
    // local-command caveat, so the turn is found by its text anywhere.
    rc.hangar.ok(&["send", &id, "after clear"]);
    rc.api.wait_request("the turn after the clear", |r| {
        r["api"] == "anthropic"
            && mentions(r, "after clear")
            && !r["turn"].as_str().unwrap_or("").starts_with("<session>")
    });
    let new_transcript = rc
        .hangar
        .claude_dir
        .join("projects")
        .join(claude_project_slug(&rc.hangar.work.display().to_string()))
        .join(format!("{after}.jsonl"));
    support::wait_until("claude wrote the post-clear answer", REAL_DEADLINE, || {
        std::fs::read_to_string(&new_transcript).is_ok_and(|t| t.contains("ANSWER("))
    });
    rc.hangar.ok(&["hibernate", &id]);
    rc.wait_state(&id, "hibernated");
    assert_eq!(
        rc.hangar.provider_id(&id).0.as_deref(),
        Some(after.as_str())
    );
    rc.hangar.ok(&["wake", &id]);
    rc.wait_state(&id, "live");
    support::wait_until(
        "claude is resumed with the post-clear id",
        REAL_DEADLINE,
        || {
            !rc.processes_matching(&format!("--resume {after}"))
                .is_empty()
        },
    );
    rc.wait_ready(&id);
    rc.ask(&id, "after wake");
    let req = rc.api.wait_request("the turn after the wake", |r| {
        r["api"] == "anthropic" && r["turn"] == "after wake"
    });
    assert!(
        mentions(&req, "after clear"),
        "not the post-clear conversation"
    );
    assert!(
        !mentions(&req, "ANSWER(before clear)"),
        "the wake resumed the pre-clear conversation"
    );
}

#[test]
fn claude_clear_is_followed_with_hooks_on() {
    clear_is_followed(false);
}

#[test]
fn claude_clear_is_followed_with_all_hooks_disabled() {
    clear_is_followed(true);
}

/// A program in its own pseudo-terminal, as a person's terminal runs it:
/// its output is drained (and kept) so it never blocks on a full pty.
struct Terminal {
    child: Child,
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn spawn(mut cmd: std::process::Command) -> Terminal {
        let (mut master, mut slave) = (-1, -1);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two fds we then own; the name and termios
        // pointers may be null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both fds were just returned by openpty and are owned here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let slave_fd = slave.as_raw_fd();
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(slave_fd, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start the program in its terminal");
        let master = std::fs::File::from(master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            child,
            master,
            output,
        }
    }

    fn type_bytes(&mut self, bytes: &[u8]) {
        self.master
            .write_all(bytes)
            .expect("type into the terminal");
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_claude_run_by_a_person_in_the_same_folder_is_never_adopted() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    rc.ask(&id, "inside one");
    let own = rc.wait_provider_id(&id);

    // The person's own claude, in their own terminal, same folder and config.
    let work = rc.hangar.work.clone();
    let mut person = Terminal::spawn(rc.outside(&rc.clis.claude, &work));
    // Its own per-process record says it is up (its screen is full of
    // cursor moves, so words on it are not matched).
    let record = rc
        .hangar
        .claude_dir
        .join("sessions")
        .join(format!("{}.json", person.child.id()));
    support::wait_until("the person's claude starts", REAL_DEADLINE, || {
        record.is_file()
    });
    // Typed, then Entered until claude takes it (a freshly drawn claude may
    // lose an Enter, see docs/src/cli-facts.md); typed again if it was not drawn yet.
    let start = std::time::Instant::now();
    let mut tries = 0u64;
    let took = |rc: &RealCli| {
        rc.api.requests().iter().any(|r| {
            let turn = r["turn"].as_str().unwrap_or("");
            r["api"] == "anthropic"
                && turn.contains("outside one")
                && !turn.starts_with("<session>")
        })
    };
    while !took(&rc) {
        assert!(
            start.elapsed() < REAL_DEADLINE,
            "the person's claude never took the prompt; its screen: {}",
            String::from_utf8_lossy(&person.output.lock().unwrap())
        );
        if tries < 6 && start.elapsed() > Duration::from_secs(4 * tries) {
            if tries.is_multiple_of(2) {
                person.type_bytes(b"outside one");
                std::thread::sleep(Duration::from_millis(500));
            }
            person.type_bytes(b"\r");
            tries += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Its transcript, in the same project folder, is the newest there.
    let folder = transcript_by_rule(&rc, &work, &own)
        .parent()
        .unwrap()
        .to_path_buf();
    let mut theirs = None;
    support::wait_until(
        "the person's transcript has the answer",
        REAL_DEADLINE,
        || {
            theirs = std::fs::read_dir(&folder)
                .into_iter()
                .flatten()
                .flatten()
                .find_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let psid = name.strip_suffix(".jsonl")?.to_owned();
                    (psid != own
                        && std::fs::read_to_string(e.path())
                            .is_ok_and(|t| t.contains("ANSWER(outside one)")))
                    .then_some(psid)
                });
            theirs.is_some()
        },
    );
    let theirs = theirs.expect("found once the wait ends");
    assert_ne!(
        theirs, own,
        "the person's claude has a conversation of its own"
    );
    // hangar's session keeps its own id while the other runs, through a
    // further turn of its own, a hibernate and a wake.
    rc.keeps_its_own_conversation_beside(&id, &own, "anthropic");
    drop(person);
}

/// Two claude sessions hangar started in one folder share a project folder
/// of transcripts: each keeps its own id, and after a hibernate of both and
/// a wake of both, each resumes its own conversation, never the other's.
#[test]
fn two_claude_sessions_in_one_folder_each_resume_their_own_conversation() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let first = rc
        .hangar
        .new_agent(&["--provider", "claude", "--title", "one"]);
    let second = rc
        .hangar
        .new_agent(&["--provider", "claude", "--title", "two"]);
    assert_eq!(
        rc.hangar.session(&first)["cwd"],
        rc.hangar.session(&second)["cwd"],
        "both run in the one folder"
    );
    rc.wait_ready(&first);
    rc.wait_ready(&second);
    rc.ask(&first, "first session question");
    rc.ask(&second, "second session question");
    let first_id = rc.wait_provider_id(&first);
    let second_id = rc.wait_provider_id(&second);
    assert_ne!(
        first_id, second_id,
        "two sessions in one folder were given one conversation"
    );

    for id in [&first, &second] {
        rc.hangar.ok(&["hibernate", id]);
    }
    for id in [&first, &second] {
        rc.wait_state(id, "hibernated");
    }
    assert_eq!(
        rc.hangar.provider_id(&first).0.as_deref(),
        Some(first_id.as_str())
    );
    assert_eq!(
        rc.hangar.provider_id(&second).0.as_deref(),
        Some(second_id.as_str())
    );
    // Woken in the other order than they were made.
    for id in [&second, &first] {
        rc.hangar.ok(&["wake", id]);
    }
    for (id, own, other) in [
        (&first, "first session question", "second session question"),
        (&second, "second session question", "first session question"),
    ] {
        rc.wait_state(id, "live");
        rc.wait_ready(id);
        let turn = format!("after the wake of {own}");
        rc.ask(id, &turn);
        let req = rc.api.wait_request("the turn after the wake", |r| {
            r["api"] == "anthropic" && r["turn"] == turn.as_str()
        });
        assert!(
            mentions(&req, &format!("ANSWER({own})")),
            "session {id} did not resume its own conversation"
        );
        assert!(
            !mentions(&req, &format!("ANSWER({other})")),
            "session {id} resumed the other session's conversation"
        );
    }
    assert_eq!(
        rc.hangar.provider_id(&first).0.as_deref(),
        Some(first_id.as_str())
    );
    assert_eq!(
        rc.hangar.provider_id(&second).0.as_deref(),
        Some(second_id.as_str())
    );
}
