//! Real-CLI conformance for `hangar fork` (issue 30): each published CLI
//! (Claude Code, Codex, OpenCode) forks its own conversation. The fork's
//! first request carries the parent's earlier messages, the parent's
//! conversation is left as it was, and both resume their own conversation
//! after a hibernate and after a daemon restart, never the other's.
//!
//! Runs against `hangar-fake-model-api`; skipped with one line when the
//! CLIs cannot be installed (see `real_cli_support`). What each CLI does
//! is written down in `real_cli_support/OBSERVED.md` (Forks).

use crate::real_cli_support;
use crate::support;

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use real_cli_support::RealCli;
use serde_json::Value;

fn mentions(req: &Value, text: &str) -> bool {
    req["body"].to_string().contains(text)
}

/// What the parent's conversation is on disk: its transcript's bytes
/// (claude, codex) or its rows in OpenCode's database.
fn parent_record(rc: &RealCli, provider: &str, psid: &str) -> Vec<u8> {
    match provider {
        "claude" => {
            let path = rc
                .claude_transcripts()
                .into_iter()
                .find(|p| {
                    p.file_name()
                        .is_some_and(|n| n == format!("{psid}.jsonl").as_str())
                })
                .expect("the parent's transcript");
            fs::read(path).expect("read the parent's transcript")
        }
        "codex" => {
            let mut stack = vec![rc.hangar.codex_home.join("sessions")];
            while let Some(d) = stack.pop() {
                for e in fs::read_dir(&d).into_iter().flatten().flatten() {
                    let p: PathBuf = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.to_string_lossy().ends_with(&format!("-{psid}.jsonl")) {
                        return fs::read(p).expect("read the parent's rollout");
                    }
                }
            }
            panic!("no rollout of {psid}");
        }
        _ => {
            let db = rc.xdg.join("data").join("opencode").join("opencode.db");
            let conn = rusqlite::Connection::open_with_flags(
                db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("open opencode's database");
            let mut rows = conn
                .prepare(
                    "SELECT m.id || ':' || p.id || ':' || p.data FROM message m JOIN part p \
                     ON p.message_id = m.id WHERE m.session_id = ?1 ORDER BY m.id, p.id",
                )
                .expect("query");
            rows.query_map([psid], |r| r.get::<_, String>(0))
                .expect("rows")
                .collect::<Result<Vec<_>, _>>()
                .expect("read rows")
                .join("\n")
                .into_bytes()
        }
    }
}

/// The parent's record once its turn has settled: the CLI writes after
/// the request (claude's answer, then its Stop hook's summary line;
/// OpenCode's parts as they stream), so the record is read until it holds
/// `answer` and has stayed the same for a second.
fn settled_record(rc: &RealCli, provider: &str, psid: &str, answer: &str) -> Vec<u8> {
    let mut last: Option<(Vec<u8>, Instant)> = None;
    support::wait_for(
        &format!("the parent's {provider} conversation holds {answer:?} and settles"),
        real_cli_support::REAL_DEADLINE,
        || {
            let now = parent_record(rc, provider, psid);
            match &last {
                Some((prev, since)) if *prev == now => {
                    (since.elapsed() >= Duration::from_secs(1)).then_some(now)
                }
                _ => {
                    let holds = String::from_utf8_lossy(&now).contains(answer);
                    last = holds.then(|| (now, Instant::now()));
                    None
                }
            }
        },
    )
}

/// Waits until the fork `id` has a durable provider id of its own.
fn wait_own_id(rc: &RealCli, id: &str, parent_psid: &str) -> String {
    let mut found = None;
    support::wait_until(
        &format!("fork {id} has a conversation id of its own"),
        real_cli_support::REAL_DEADLINE,
        || {
            let (p, s) = rc.hangar.provider_id(id);
            if s.as_deref() != Some("proxy-header") && p.as_deref() != Some(parent_psid) {
                found = p;
            }
            found.is_some()
        },
    );
    found.expect("found once the wait ends")
}

fn turn(rc: &RealCli, id: &str, api: &str, text: &str) -> Value {
    rc.ask(id, text);
    rc.api.wait_request(&format!("the turn {text:?}"), |r| {
        r["api"] == api && r["turn"] == text
    })
}

fn forks_its_own_conversation(provider: &str, api: &str) {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let parent = rc
        .hangar
        .new_agent(&["--provider", provider, "--title", "parent"]);
    rc.wait_ready(&parent);
    turn(&rc, &parent, api, &format!("{provider} parent one"));
    let parent_psid = rc.wait_provider_id(&parent);
    let before = settled_record(
        &rc,
        provider,
        &parent_psid,
        &format!("ANSWER({provider} parent one)"),
    );

    let v = rc.hangar.json(&["fork", &parent]);
    let fork = v["id"].as_str().expect("the fork's id").to_owned();
    assert_eq!(v["forked_from"], parent.as_str());
    rc.wait_state(&fork, "live");
    rc.wait_ready(&fork);
    if provider == "opencode" {
        // OpenCode 1.18.33 with `--session O --fork` opens on its home
        // screen, forks once its sync completes and only then shows the
        // copy; a prompt typed on the home screen starts a new, empty
        // conversation (its TUI's `session.fork(...).then(navigate)`). A
        // person waits for the parent's conversation to appear; so does
        // this test.
        rc.wait_screen(&fork, &format!("ANSWER({provider} parent one)"));
    }
    let first = turn(&rc, &fork, api, &format!("{provider} fork two"));
    assert!(
        mentions(&first, &format!("ANSWER({provider} parent one)")),
        "the {provider} fork's first request did not carry its parent's conversation"
    );
    let own = wait_own_id(&rc, &fork, &parent_psid);
    assert_ne!(own, parent_psid);
    // The parent may still write its own bookkeeping after `before`; what
    // was there stays as it was, and nothing of the fork's turn enters it.
    let after = parent_record(&rc, provider, &parent_psid);
    assert!(
        after.starts_with(&before),
        "forking changed the parent's {provider} conversation"
    );
    assert!(
        !String::from_utf8_lossy(&after).contains(&format!("{provider} fork two")),
        "the fork's turn entered the parent's {provider} conversation"
    );
    assert_eq!(rc.hangar.session(&fork)["forked_from"], parent.as_str());

    // After a hibernate, each resumes its own conversation.
    for id in [&fork, &parent] {
        rc.hangar.ok(&["hibernate", id]);
        rc.wait_state(id, "hibernated");
    }
    for id in [&fork, &parent] {
        rc.hangar.ok(&["wake", id]);
        rc.wait_state(id, "live");
        rc.wait_ready(id);
    }
    let f = turn(&rc, &fork, api, &format!("{provider} fork three"));
    assert!(
        mentions(&f, &format!("ANSWER({provider} fork two)")),
        "the fork lost its own turn"
    );
    assert!(mentions(&f, &format!("ANSWER({provider} parent one)")));
    let p = turn(&rc, &parent, api, &format!("{provider} parent four"));
    assert!(mentions(&p, &format!("ANSWER({provider} parent one)")));
    assert!(
        !mentions(&p, &format!("{provider} fork two")),
        "the parent resumed its fork's conversation"
    );
    assert_eq!(
        rc.hangar.provider_id(&fork).0.as_deref(),
        Some(own.as_str())
    );
    assert_eq!(
        rc.hangar.provider_id(&parent).0.as_deref(),
        Some(parent_psid.as_str())
    );

    // And after a restart.
    rc.hangar.shutdown();
    rc.hangar.start_daemon();
    rc.hangar.wait_restore_complete();
    for id in [&fork, &parent] {
        rc.wait_state(id, "live");
        rc.wait_ready(id);
    }
    let f = turn(&rc, &fork, api, &format!("{provider} fork five"));
    assert!(mentions(&f, &format!("ANSWER({provider} fork three)")));
    assert!(
        !mentions(&f, &format!("{provider} parent four")),
        "the fork resumed its parent's conversation"
    );
    let p = turn(&rc, &parent, api, &format!("{provider} parent six"));
    assert!(mentions(&p, &format!("ANSWER({provider} parent four)")));
    assert!(
        !mentions(&p, &format!("{provider} fork")),
        "the parent resumed its fork's conversation"
    );
}

#[test]
fn claude_forks_its_own_conversation_and_neither_resumes_the_others() {
    forks_its_own_conversation("claude", "anthropic");
}

#[test]
fn codex_forks_its_own_conversation_and_neither_resumes_the_others() {
    forks_its_own_conversation("codex", "responses");
}

#[test]
fn opencode_forks_its_own_conversation_and_neither_resumes_the_others() {
    forks_its_own_conversation("opencode", "chat");
}
