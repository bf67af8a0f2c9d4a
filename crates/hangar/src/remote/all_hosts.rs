//! `--all-hosts` (issue 47): one question put to this machine's daemon and
//! every `[hosts.NAME]` of config.toml at once, for `ls`, `wait`, `usage`
//! and `search`.
//!
//! Each host is asked on a thread of its own and waited for at most
//! `hangar_core::hosts::answer_bound` (its `connect_timeout_secs` plus
//! ten seconds; 20 s by default), all at the same time, so a host that is
//! down or slow costs its own bound once and never holds up the others. A
//! host that did not answer is listed with its reason (`down` in JSON, a
//! line in the human output); the command succeeds when this machine
//! answered. A question still under way when its bound passes is left to
//! end with the process (its ssh ends with it).

use std::process::ExitCode;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use hangar_core::hosts::{self as rules, LOCAL};
use hangar_protocol::message as msg;
use hangar_protocol::paths::Paths;
use hangar_protocol::reply::{UsageReport, Waited};
use hangar_protocol::view::{SearchView, SessionView};
use serde::Serialize;
use serde_json::{Value, json};

use crate::api;
use crate::conn::{Client, Target};
use crate::human;
use crate::remote::{self, Host};

/// One host's answer: what it said, or why it said nothing.
pub struct Answer<T> {
    pub host: String,
    pub outcome: Result<T, String>,
}

/// A host that did not answer, as `--json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Down {
    pub host: String,
    pub reason: String,
}

/// Ask this machine (first) and every configured host (in name order)
/// `question` at once, each within its own bound.
pub fn ask<T, F>(paths: &Paths, question: F) -> anyhow::Result<Vec<Answer<T>>>
where
    T: Send + 'static,
    F: Fn(&Target) -> anyhow::Result<T> + Send + Sync + 'static,
{
    let here = Target::local(paths.clone());
    let mut asked = vec![(LOCAL.to_owned(), here.clone(), rules::answer_bound(None))];
    for (name, config) in remote::configured(paths)? {
        let bound = rules::answer_bound(Some(&config));
        let target = here.with_host(Some(Host {
            name: name.clone(),
            config,
        }));
        asked.push((name, target, bound));
    }
    Ok(ask_each(asked, question))
}

/// `c`, a connection to `target`, with its replies bounded by the host's
/// answer bound: a daemon that stops answering after the greeting then
/// fails the question instead of keeping its thread for ever (an asker
/// that lives on, the TUI's overview or the web page, asks again and
/// again).
pub fn bounded(c: Client, target: &Target) -> anyhow::Result<Client> {
    c.set_read_timeout(Some(rules::answer_bound(
        target.host.as_ref().map(|h| &h.config),
    )))?;
    Ok(c)
}

/// Ask each `(host, target, bound)` at once; a host still silent at its
/// bound is given up on.
fn ask_each<T, F>(asked: Vec<(String, Target, Duration)>, question: F) -> Vec<Answer<T>>
where
    T: Send + 'static,
    F: Fn(&Target) -> anyhow::Result<T> + Send + Sync + 'static,
{
    let question = Arc::new(question);
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    for (i, (_, target, _)) in asked.iter().enumerate() {
        let (tx, question, target) = (tx.clone(), question.clone(), target.clone());
        std::thread::spawn(move || {
            let outcome = question(&target).map_err(|e| format!("{e:#}"));
            // The receiver is gone only when this host was given up on.
            let _ = tx.send((i, outcome));
        });
    }
    drop(tx);
    let deadlines: Vec<Instant> = asked.iter().map(|(_, _, b)| started + *b).collect();
    let mut outcomes: Vec<Option<Result<T, String>>> = asked.iter().map(|_| None).collect();
    while let Some(next) = pending_deadline(&outcomes, &deadlines) {
        match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Ok((i, outcome)) => outcomes[i] = Some(outcome),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                for (i, slot) in outcomes.iter_mut().enumerate() {
                    if slot.is_none() && deadlines[i] <= now {
                        *slot = Some(Err(format!(
                            "did not answer within {} s",
                            asked[i].2.as_secs()
                        )));
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                for slot in outcomes.iter_mut().filter(|s| s.is_none()) {
                    *slot = Some(Err("its question ended without an answer".to_owned()));
                }
            }
        }
    }
    asked
        .into_iter()
        .zip(outcomes)
        .map(|((host, _, _), outcome)| Answer {
            host,
            outcome: outcome.unwrap_or_else(|| Err("not asked".to_owned())),
        })
        .collect()
}

/// The earliest deadline among the hosts that have not answered yet.
fn pending_deadline<T>(outcomes: &[Option<T>], deadlines: &[Instant]) -> Option<Instant> {
    outcomes
        .iter()
        .zip(deadlines)
        .filter(|(o, _)| o.is_none())
        .map(|(_, d)| *d)
        .min()
}

/// The answers that came, each with its host, and the hosts that did not
/// answer with their reason.
pub fn split<T>(answers: Vec<Answer<T>>) -> (Vec<(String, T)>, Vec<Down>) {
    let mut answered = Vec::new();
    let mut down = Vec::new();
    for a in answers {
        match a.outcome {
            Ok(v) => answered.push((a.host, v)),
            Err(reason) => down.push(Down {
                host: a.host,
                reason,
            }),
        }
    }
    (answered, down)
}

/// A reply's row as JSON with `"host"` added.
pub fn tagged<T: Serialize>(host: &str, row: &T) -> Value {
    let mut v = serde_json::to_value(row).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.insert("host".to_owned(), Value::from(host));
    }
    v
}

/// This machine's own failure, when it did not answer: the command then
/// fails (after printing what the other hosts said).
fn local_failure(down: &[Down]) -> Option<&Down> {
    down.iter().find(|d| d.host == LOCAL)
}

/// The lines that say which hosts are down, for people (host names are
/// checked in config.toml; reasons carry ssh's words, escaped).
fn print_down(down: &[Down]) {
    for d in down {
        println!(
            "host {} is down: {}",
            human::text(&d.host),
            human::text(&d.reason)
        );
    }
}

/// How to act on a row of another host, said once under a table that has
/// one.
fn print_how_to_reach(hosts: &[&str]) {
    if let Some(far) = hosts.iter().find(|h| **h != LOCAL) {
        println!(
            "a session on another host is reached there: `hangar --host {far} attach ID`, or HOST:ID wherever a command takes an id (`hangar attach {far}:ID`)",
            far = human::text(far)
        );
    }
}

/// The exit code once the answers are printed: 0 when this machine
/// answered, else its reason on stderr and 1.
fn exit_for(down: &[Down]) -> ExitCode {
    match local_failure(down) {
        Some(d) => {
            eprintln!(
                "hangar: this machine's daemon did not answer: {}",
                hangar_core::display::body(&d.reason)
            );
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

/// `ls --all-hosts --json`: every answered host's rows, each with `host`,
/// and the hosts that did not answer.
pub fn ls_document(answered: &[(String, Vec<SessionView>)], down: &[Down]) -> Value {
    let sessions: Vec<Value> = answered
        .iter()
        .flat_map(|(host, rows)| rows.iter().map(move |r| tagged(host, r)))
        .collect();
    json!({ "sessions": sessions, "down": down })
}

/// `hangar ls --all-hosts`.
pub fn ls(paths: &Paths, json_out: bool) -> anyhow::Result<ExitCode> {
    let answers = ask(paths, |t| {
        let mut c = t.connect()?;
        api::list(&mut c)
    })?;
    let (answered, down) = split(answers);
    if json_out {
        human::print_json(&ls_document(&answered, &down));
    } else {
        let rows: Vec<(Option<&str>, &SessionView)> = answered
            .iter()
            .flat_map(|(host, rows)| rows.iter().map(move |r| (Some(host.as_str()), r)))
            .collect();
        if rows.is_empty() {
            println!("no sessions on any host that answered; start one with `hangar new`");
        } else {
            human::session_table(&rows);
        }
        print_down(&down);
        let hosts: Vec<&str> = rows.iter().filter_map(|(h, _)| *h).collect();
        print_how_to_reach(&hosts);
    }
    Ok(exit_for(&down))
}

/// Where each id given to `wait --all-hosts` lives: `HOST:ID` names its
/// host; a bare id (or prefix) must match sessions of exactly one host.
/// Returns each host's ids, in the order the hosts were asked.
pub fn place_ids(
    given: &[String],
    answered: &[(String, Vec<SessionView>)],
    down: &[Down],
) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let mut placed: Vec<(String, Vec<String>)> = Vec::new();
    let not_answered = || {
        if down.is_empty() {
            String::new()
        } else {
            format!(
                "; these hosts did not answer: {}",
                down.iter()
                    .map(|d| format!("{} ({})", d.host, d.reason))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    for id in given {
        let (host, wanted) = match rules::split_host_id(id) {
            Some((h, i)) => (Some(h), i),
            None => (None, id.as_str()),
        };
        let holders: Vec<&str> = answered
            .iter()
            .filter(|(h, _)| host.is_none_or(|want| want == h))
            .filter(|(_, rows)| rows.iter().any(|r| r.id.starts_with(wanted)))
            .map(|(h, _)| h.as_str())
            .collect();
        let holder = match holders.as_slice() {
            [one] => one.to_string(),
            [] => match host {
                Some(h) if !answered.iter().any(|(a, _)| a == h) => bail!(
                    "host {h:?} did not answer or is not configured{}",
                    not_answered()
                ),
                _ => bail!(
                    "no session {} on the hosts that answered{}",
                    hangar_core::display::name(id),
                    not_answered()
                ),
            },
            many => bail!(
                "{} names sessions on hosts {}: give it as HOST:ID",
                hangar_core::display::name(id),
                many.join(" and ")
            ),
        };
        match placed.iter_mut().find(|(h, _)| *h == holder) {
            Some((_, ids)) => ids.push(wanted.to_owned()),
            None => placed.push((holder, vec![wanted.to_owned()])),
        }
    }
    // In the order the hosts were asked (this machine first), whatever the
    // order of the ids.
    placed.sort_by_key(|(h, _)| answered.iter().position(|(a, _)| a == h));
    Ok(placed)
}

/// Every host's `wait` reply put together: done when every host's is,
/// timed out when any host's is.
pub fn wait_document(until: &str, waited: &[(String, Waited)], down: &[Down]) -> Value {
    let sessions: Vec<Value> = waited
        .iter()
        .flat_map(|(host, w)| w.sessions.iter().map(move |s| tagged(host, s)))
        .collect();
    json!({
        "done": waited.iter().all(|(_, w)| w.done),
        "timed_out": waited.iter().any(|(_, w)| w.timed_out),
        "until": until,
        "sessions": sessions,
        "down": down,
    })
}

/// `hangar wait --all-hosts IDS`: each id found on the host holding it
/// (one `ls` of every host, bounded), then one `wait` per host at the same
/// time, each over the connection that listed it.
pub fn wait(
    paths: &Paths,
    json_out: bool,
    ids: Vec<String>,
    until: String,
    timeout: Option<Duration>,
) -> anyhow::Result<ExitCode> {
    let answers = ask(paths, |t| {
        let mut c = t.connect()?;
        let rows = api::list(&mut c)?;
        Ok((c, rows))
    })?;
    let (answered, down) = split(answers);
    let mut clients: Vec<(String, Client)> = Vec::new();
    let mut listed: Vec<(String, Vec<SessionView>)> = Vec::new();
    for (host, (client, rows)) in answered {
        clients.push((host.clone(), client));
        listed.push((host, rows));
    }
    let placed = place_ids(&ids, &listed, &down)?;
    let mut waits = Vec::new();
    for (host, sessions) in placed {
        let Some(at) = clients.iter().position(|(h, _)| *h == host) else {
            bail!("host {host:?} answered but its connection is gone");
        };
        let (_, mut client) = clients.swap_remove(at);
        let request = msg::Wait {
            sessions,
            until: until.clone(),
            timeout_ms: timeout.map(|t| t.as_millis() as u64),
        };
        waits.push((
            host,
            std::thread::spawn(move || api::wait(&mut client, request)),
        ));
    }
    let mut waited = Vec::new();
    for (host, handle) in waits {
        let reply = handle
            .join()
            .map_err(|_| anyhow!("the wait on host {host:?} panicked"))?
            .map_err(|e| anyhow!("host {host:?} stopped answering while waited on: {e:#}"))?;
        waited.push((host, reply));
    }
    let doc = wait_document(&until, &waited, &down);
    if json_out {
        human::print_json(&doc);
    } else {
        for (host, w) in &waited {
            for s in &w.sessions {
                println!(
                    "{} {}  {}",
                    human::text(host),
                    human::text(&s.id),
                    human::text(&s.activity)
                );
            }
        }
        print_down(&down);
    }
    if doc["timed_out"] == true {
        eprintln!(
            "hangar: timed out waiting for them to be {until}; `hangar ls --all-hosts` shows what they are doing"
        );
        return Ok(ExitCode::from(crate::activity::TIMED_OUT));
    }
    Ok(ExitCode::SUCCESS)
}

/// `usage --all-hosts --json`: every host's report's rows with `host`, each
/// host's totals, and the hosts that did not answer.
pub fn usage_document(since_ms: i64, answered: &[(String, UsageReport)], down: &[Down]) -> Value {
    let (mut sessions, mut accounts, mut named, mut totals) = (vec![], vec![], vec![], vec![]);
    for (host, r) in answered {
        sessions.extend(r.sessions.iter().map(|s| tagged(host, s)));
        accounts.extend(r.accounts.iter().map(|a| tagged(host, a)));
        named.extend(r.named_accounts.iter().map(|a| tagged(host, a)));
        totals.push(tagged(host, &r.total));
    }
    json!({
        "since": since_ms,
        "sessions": sessions,
        "accounts": accounts,
        "named_accounts": named,
        "totals": totals,
        "note": answered.first().map(|(_, r)| r.note.clone()).unwrap_or_default(),
        "down": down,
    })
}

/// `hangar usage --all-hosts`: each host's report, one after another.
pub fn usage(
    paths: &Paths,
    json_out: bool,
    since_ms: i64,
    session: Option<String>,
) -> anyhow::Result<ExitCode> {
    let answers = ask(paths, move |t| {
        let mut c = t.connect()?;
        api::usage(
            &mut c,
            msg::UsageQuery {
                since_ms,
                session: session.clone(),
            },
        )
    })?;
    let (answered, down) = split(answers);
    if json_out {
        human::print_json(&usage_document(since_ms, &answered, &down));
    } else {
        for (host, report) in &answered {
            println!("host {}:", human::text(host));
            crate::usage::human(report);
            println!();
        }
        print_down(&down);
    }
    Ok(exit_for(&down))
}

/// `search --all-hosts --json`: every host's matches and unreadable
/// sessions with `host`, and the hosts that did not answer.
pub fn search_document(query: &str, answered: &[(String, SearchView)], down: &[Down]) -> Value {
    let matches: Vec<Value> = answered
        .iter()
        .flat_map(|(host, v)| v.matches.iter().map(move |m| tagged(host, m)))
        .collect();
    let unreadable: Vec<Value> = answered
        .iter()
        .flat_map(|(host, v)| v.unreadable.iter().map(move |u| tagged(host, u)))
        .collect();
    json!({
        "query": query,
        "case_sensitive": answered.first().is_some_and(|(_, v)| v.case_sensitive),
        "matches": matches,
        "truncated": answered.iter().any(|(_, v)| v.truncated),
        "unreadable": unreadable,
        "down": down,
    })
}

/// `hangar search --all-hosts QUERY`: exits 1 when no host that answered
/// has a match (as `search` does), and when this machine did not answer.
pub fn search(
    paths: &Paths,
    json_out: bool,
    query: String,
    session: Option<String>,
) -> anyhow::Result<ExitCode> {
    let asked = query.clone();
    let answers = ask(paths, move |t| {
        let mut c = t.connect()?;
        crate::search::request(
            &mut c,
            msg::Search {
                query: asked.clone(),
                session: session.clone(),
                ..Default::default()
            },
        )
    })?;
    let (answered, down) = split(answers);
    let none = answered.iter().all(|(_, v)| v.matches.is_empty());
    if json_out {
        human::print_json(&search_document(&query, &answered, &down));
    } else {
        for (host, v) in &answered {
            if !v.matches.is_empty() {
                human::search_matches_on(Some(host), v);
            }
        }
        if none {
            println!(
                "no match for {} on any host that answered",
                hangar_core::display::name(&format!("{query:?}"))
            );
        }
        print_down(&down);
        let hosts: Vec<&str> = answered
            .iter()
            .filter(|(_, v)| !v.matches.is_empty())
            .map(|(h, _)| h.as_str())
            .collect();
        print_how_to_reach(&hosts);
    }
    let code = exit_for(&down);
    if code == ExitCode::SUCCESS && none {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> SessionView {
        serde_json::from_value(json!({
            "id": id, "provider": "claude", "cwd": "/w", "title": "t",
            "placement": "pane", "tab": null, "state": "live", "pid": 1,
            "provider_session_id": null, "pinned": false,
        }))
        .expect("a session view")
    }

    fn target(paths: &Paths) -> Target {
        Target::local(paths.clone())
    }

    #[test]
    fn a_host_that_never_answers_is_given_up_at_its_bound_and_the_others_still_answer() {
        let home = tempfile::tempdir().expect("temp home");
        let paths = Paths::new(home.path().to_path_buf());
        let (_release, never) = mpsc::channel::<()>();
        let never = std::sync::Mutex::new(never);
        let far = |name: &str| {
            target(&paths).with_host(Some(Host {
                name: name.to_owned(),
                config: Default::default(),
            }))
        };
        let asked = vec![
            (LOCAL.to_owned(), target(&paths), Duration::from_secs(600)),
            ("hung".to_owned(), far("hung"), Duration::from_millis(50)),
            ("build".to_owned(), far("build"), Duration::from_secs(600)),
        ];
        let answers = ask_each(asked, move |t| {
            if t.host.as_ref().is_some_and(|h| h.name == "hung") {
                // Holds until the test ends: this host never answers.
                let _ = never.lock().map(|rx| rx.recv());
            }
            Ok(7)
        });
        let hosts: Vec<&str> = answers.iter().map(|a| a.host.as_str()).collect();
        assert_eq!(hosts, vec![LOCAL, "hung", "build"], "asked order kept");
        let (answered, down) = split(answers);
        assert_eq!(answered.len(), 2, "the other two answered");
        assert_eq!(down.len(), 1);
        assert_eq!(down[0].host, "hung");
        assert!(
            down[0].reason.contains("did not answer within"),
            "{}",
            down[0].reason
        );
    }

    #[test]
    fn ls_rows_gain_their_host_and_down_hosts_are_listed_with_their_reason() {
        let answered = vec![
            (LOCAL.to_owned(), vec![session("aaaa1111")]),
            ("build".to_owned(), vec![session("bbbb2222")]),
        ];
        let down = vec![Down {
            host: "far".into(),
            reason: "cannot reach host \"far\": Connection refused".into(),
        }];
        let doc = ls_document(&answered, &down);
        assert_eq!(doc["sessions"][0]["host"], LOCAL);
        assert_eq!(doc["sessions"][0]["id"], "aaaa1111");
        assert_eq!(doc["sessions"][1]["host"], "build");
        assert_eq!(doc["sessions"][1]["state"], "live", "the row is kept whole");
        assert_eq!(doc["down"][0]["host"], "far");
        assert!(
            doc["down"][0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("refused"))
        );
        assert!(local_failure(&down).is_none());
        assert_eq!(
            exit_for(&down),
            ExitCode::SUCCESS,
            "a far host down is not a failure"
        );
        let here_down = vec![Down {
            host: LOCAL.into(),
            reason: "no daemon".into(),
        }];
        assert_eq!(exit_for(&here_down), ExitCode::FAILURE);
    }

    #[test]
    fn wait_ids_are_found_on_their_host_and_an_ambiguous_or_missing_one_is_refused() {
        let answered = vec![
            (
                LOCAL.to_owned(),
                vec![session("aaaa1111"), session("cccc3333")],
            ),
            (
                "build".to_owned(),
                vec![session("bbbb2222"), session("cccc4444")],
            ),
        ];
        let placed = place_ids(
            &["bbbb".into(), "aaaa".into(), "build:cccc".into()],
            &answered,
            &[],
        )
        .expect("placed");
        assert_eq!(
            placed,
            vec![
                (LOCAL.to_owned(), vec!["aaaa".to_owned()]),
                (
                    "build".to_owned(),
                    vec!["bbbb".to_owned(), "cccc".to_owned()]
                ),
            ]
        );
        let ambiguous = place_ids(&["cccc".into()], &answered, &[]).unwrap_err();
        assert!(ambiguous.to_string().contains("HOST:ID"), "{ambiguous}");
        let down = vec![Down {
            host: "far".into(),
            reason: "did not answer within 20 s".into(),
        }];
        let missing = place_ids(&["dddd".into()], &answered, &down).unwrap_err();
        assert!(missing.to_string().contains("far"), "{missing}");
        let on_down = place_ids(&["far:dddd".into()], &answered, &down).unwrap_err();
        assert!(on_down.to_string().contains("\"far\""), "{on_down}");
    }

    #[test]
    fn every_hosts_wait_is_done_only_when_each_is() {
        let waited = |done: bool, id: &str| Waited {
            done,
            timed_out: !done,
            until: "idle".into(),
            sessions: vec![hangar_protocol::reply::ActivityRow {
                id: id.into(),
                activity: if done { "idle" } else { "working" }.into(),
                activity_since: 0,
            }],
        };
        let both = vec![
            (LOCAL.to_owned(), waited(true, "a")),
            ("build".to_owned(), waited(false, "b")),
        ];
        let doc = wait_document("idle", &both, &[]);
        assert_eq!(doc["done"], false);
        assert_eq!(doc["timed_out"], true);
        assert_eq!(doc["sessions"][1]["host"], "build");
        let one = vec![(LOCAL.to_owned(), waited(true, "a"))];
        assert_eq!(wait_document("idle", &one, &[])["done"], true);
    }

    #[test]
    fn search_matches_are_tagged_with_their_host() {
        let view = |session: &str| SearchView {
            query: "needle".into(),
            case_sensitive: false,
            matches: vec![hangar_protocol::view::SearchMatchView {
                session: session.into(),
                title: "t".into(),
                tab: None,
                source: "screen".into(),
                line: 1,
                text: "a needle".into(),
                column: 2,
                length: 6,
                state: "live".into(),
            }],
            truncated: false,
            unreadable: vec![],
        };
        let answered = vec![
            (LOCAL.to_owned(), view("aaaa")),
            ("build".to_owned(), view("bbbb")),
        ];
        let doc = search_document("needle", &answered, &[]);
        assert_eq!(doc["matches"][0]["host"], LOCAL);
        assert_eq!(doc["matches"][1]["host"], "build");
        assert_eq!(doc["matches"][1]["session"], "bbbb");
        assert_eq!(doc["down"], json!([]));
    }
}
