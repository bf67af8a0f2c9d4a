//! Output for people: what each command prints without `--json`.
//!
//! Every string a reply carries may come from an agent, a model or a file
//! (DESIGN.md rule 11), so every one is shown through
//! `hangar_core::display`: `s` and `short` escape, titles are also cut to
//! their column. Only hangar's own words are printed as they are.

use std::borrow::Cow;

use hangar_core::display;
use serde_json::Value;

/// Columns a title may take in a table before it is cut with a marker.
const TITLE_COLS: usize = 40;

/// A string field, escaped ("-" when missing).
pub fn s(v: &Value) -> Cow<'_, str> {
    display::name(v.as_str().unwrap_or("-"))
}

/// The first 8 characters of an id, escaped.
pub fn short(v: &Value) -> String {
    let id: String = v.as_str().unwrap_or("-").chars().take(8).collect();
    display::name(&id).into_owned()
}

/// A title for a table column: escaped, cut to `TITLE_COLS`, padded to
/// `cols`.
fn title_cell(title: &str, cols: usize) -> String {
    display::pad(&display::name_fit(title, TITLE_COLS), cols)
}

/// Prints `value` as one JSON document whose strings hold no character a
/// terminal would obey (`hangar_core::display::json`).
pub fn print_json(value: &Value) {
    let doc = serde_json::to_string_pretty(value).unwrap_or_default();
    println!("{}", display::json(&doc));
}

/// `--json`: the document; else the human form.
pub fn print(json: bool, value: &Value, human: impl FnOnce(&Value)) {
    if json {
        print_json(value);
    } else {
        human(value);
    }
}

pub fn done(what: &str, v: &Value) {
    if let Some(closed) = v.get("closed").and_then(Value::as_array) {
        let ids: Vec<String> = closed.iter().map(short).collect();
        println!(
            "{what}: {}",
            if ids.is_empty() {
                "nothing".to_owned()
            } else {
                ids.join(", ")
            }
        );
        closed_worktrees(v);
        return;
    }
    if let Some(restarted) = v.get("restarted").and_then(Value::as_array) {
        println!(
            "dangerous mode {}; restarted {} live agent(s)",
            if v["dangerous"].as_bool() == Some(true) {
                "on"
            } else {
                "off"
            },
            restarted.len()
        );
        for f in v["failed"].as_array().into_iter().flatten() {
            println!("  failed {}: {}", short(&f["id"]), s(&f["reason"]));
        }
        let c = &v["config"];
        if c["changed"].as_bool() == Some(true) {
            println!("read config.toml again");
        }
        for section in c["needs_restart"].as_array().into_iter().flatten() {
            println!(
                "  [{}] changed: it takes effect after a daemon restart (`hangar shutdown`)",
                s(section)
            );
        }
        return;
    }
    let id = v.get("id").map(short).unwrap_or_default();
    match v.get("state").and_then(Value::as_str) {
        Some(state) if v["started"] == "fresh" && state == "live" => {
            println!("{what} {id} ({state}, started fresh: no provider session id to resume)")
        }
        Some(state) => println!("{what} {id} ({state})"),
        None => println!("{what} {id}"),
    }
}

pub fn sessions(v: &Value) {
    let rows = v.as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("no sessions; start one with `hangar new`");
        return;
    }
    println!(
        "{:<9} {:<9} {:<11} {:<8} {:<7} {:<9} {:<7} {:<20} CWD",
        "ID", "PROVIDER", "STATE", "ACTIVITY", "WHERE", "TAB", "PID", "TITLE"
    );
    for r in rows {
        let pid = r["pid"]
            .as_u64()
            .map(|p| p.to_string())
            .unwrap_or_else(|| "-".into());
        let mut title = r["title"].as_str().unwrap_or("-").to_owned();
        if r["pinned"].as_bool() == Some(true) {
            title.insert_str(0, "* ");
        }
        // `fresh`: started without a provider session id to resume.
        let state = match (s(&r["state"]), r["started"].as_str()) {
            (state, Some("fresh")) if state == "live" => "live fresh".into(),
            (state, _) => state,
        };
        println!(
            "{:<9} {:<9} {:<11} {:<8} {:<7} {:<9} {:<7} {} {}",
            short(&r["id"]),
            s(&r["provider"]),
            state,
            display::name(r["activity"].as_str().unwrap_or("unknown")),
            s(&r["placement"]),
            short(&r["tab"]),
            pid,
            title_cell(&title, 20),
            s(&r["cwd"])
        );
        if r["reason"].is_string() && r["state"] == "failed" {
            println!("          reason: {}", s(&r["reason"]));
        }
        if let Some(line) = crate::usage::limit_line(&r["limit"]) {
            println!("          {line}");
        }
        if let Some(line) = crate::usage::goal_line(&r["goal"]) {
            println!("          {line}");
        }
        for other in r["duplicate_of"].as_array().into_iter().flatten() {
            println!(
                "          duplicate of {}: both resume one conversation; `hangar doctor` fixes it",
                short(other)
            );
        }
    }
}

pub fn status(v: &Value) {
    let d = &v["daemon"];
    let c = &v["sessions"];
    let r = &v["restore"];
    println!(
        "daemon   pid {} version {} home {}",
        d["pid"],
        s(&d["version"]),
        s(&d["home"])
    );
    println!(
        "sessions {} total: {} panes, {} parked, {} buried; {} live, {} hibernated, {} failed",
        c["total"], c["panes"], c["parked"], c["buried"], c["live"], c["hibernated"], c["failed"]
    );
    println!(
        "restore  {} of {} panes restored, {} failed, {} hibernated, {}{}",
        r["restored"],
        r["expected"],
        r["failed"],
        r["hibernated"],
        match (r["complete"].as_bool(), r["all_live"].as_bool()) {
            (Some(true), Some(true)) => "complete, all live",
            (Some(true), _) => "complete",
            _ => "in progress",
        },
        r["duration_ms"]
            .as_u64()
            .map(|d| format!(" in {d} ms"))
            .unwrap_or_default()
    );
    if v["dangerous"].as_bool() == Some(true) {
        println!("dangerous mode is on");
    }
    let b = &v["budget"];
    let q = &v["wake_queue"];
    println!(
        "budget   {} live of {}, {} MiB of {}{}",
        b["live"],
        b["max_live"]
            .as_u64()
            .map(|m| m.to_string())
            .unwrap_or_else(|| "unlimited".into()),
        b["memory_bytes"].as_u64().unwrap_or(0) / (1024 * 1024),
        b["max_memory_bytes"]
            .as_u64()
            .map(|m| format!("{} MiB", m / (1024 * 1024)))
            .unwrap_or_else(|| "unlimited".into()),
        if b["reason"].is_string() {
            format!("; {}", s(&b["reason"]))
        } else {
            String::new()
        }
    );
    println!(
        "wakes    {} pending, {} running, breaker {}{}",
        q["pending"],
        q["running"],
        s(&q["breaker"]),
        if q["breaker"] == "open" {
            " (after authentication failures; `hangar wake --resume-queue` resumes)"
        } else {
            ""
        }
    );
    let p = &v["proxy"];
    if p.is_object() {
        let state = match (p["enabled"].as_bool(), p["port"].as_u64()) {
            (Some(false), _) => "off ([proxy] enabled = false)".to_owned(),
            (_, Some(port)) => format!(
                "127.0.0.1:{port}, {} session(s) attributed, capturing {}",
                p["sessions"],
                p["allow_hosts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(display::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "not started (starts with the first claude or codex session)".to_owned(),
        };
        println!("proxy    {state}");
        if p["fault"].is_string() {
            println!("proxy    last start failed: {}", s(&p["fault"]));
        }
        let u = &p["usage"];
        if u.is_object() {
            println!(
                "usage    {} request(s), {} input / {} output tokens, {} error(s)",
                u["requests"], u["input_tokens"], u["output_tokens"], u["errors"]
            );
            if u["last_error"].is_string() {
                println!(
                    "usage    last error ({}): {}",
                    short(&p["last_error_session"]),
                    s(&u["last_error"])
                );
            }
        }
    }
    for f in v["failed"].as_array().into_iter().flatten() {
        println!(
            "failed   {} {}: {}",
            short(&f["id"]),
            display::name_fit(f["title"].as_str().unwrap_or("-"), TITLE_COLS),
            s(&f["reason"])
        );
    }
    for l in v["limited"].as_array().into_iter().flatten() {
        println!(
            "limited  {} {}: {}",
            short(&l["id"]),
            display::name_fit(l["title"].as_str().unwrap_or("-"), TITLE_COLS),
            crate::usage::limit_line(&l["limit"]).unwrap_or_default()
        );
    }
    for n in v["notices"].as_array().into_iter().flatten() {
        println!("notice   {}", s(n));
    }
}

pub fn tabs(v: &Value) {
    for t in v.as_array().into_iter().flatten() {
        println!(
            "{} {:<9} {} {} pane(s), {} parked  {}",
            if t["active"].as_bool() == Some(true) {
                "*"
            } else {
                " "
            },
            short(&t["id"]),
            title_cell(t["title"].as_str().unwrap_or("-"), 20),
            t["panes"].as_array().map(Vec::len).unwrap_or(0),
            t["parked"].as_array().map(Vec::len).unwrap_or(0),
            display::name(t["cwd"].as_str().unwrap_or(""))
        );
    }
}

/// Text from the imported file (titles, folders, ids), escaped like every
/// other untrusted string: a hostile workspace.json must not drive the
/// terminal.
fn file_text(v: &Value) -> String {
    s(v).into_owned()
}

pub fn import(v: &Value) {
    let dry = v["dry_run"].as_bool() == Some(true);
    if let Some(file) = v["file"].as_str() {
        let source = v["source"]
            .as_str()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        println!(
            "{} {}{source}",
            if dry { "dry run of" } else { "imported" },
            file_text(&Value::from(file))
        );
    }
    // Warnings first: they change what the user should do next.
    for w in v["warnings"].as_array().into_iter().flatten() {
        println!("warning: {}", file_text(w));
    }
    let i = &v["imported"];
    println!(
        "{} {} session(s): {} tab(s), {} pane(s) (started), {} parked, {} buried, {} pin(s)",
        if dry { "would import" } else { "imported" },
        i["sessions"],
        i["tabs"],
        i["panes"],
        i["parked"],
        i["buried"],
        i["pins"]
    );
    let kept = v["kept"].as_array().cloned().unwrap_or_default();
    if !kept.is_empty() {
        println!("kept in another form ({}):", kept.len());
        for k in kept {
            println!(
                "  {} {}: {}",
                s(&k["kind"]),
                file_text(&k["id"]),
                file_text(&k["note"])
            );
        }
    }
    let dropped = v["dropped"].as_array().cloned().unwrap_or_default();
    if !dropped.is_empty() {
        println!(
            "{} {}:",
            if dry { "would drop" } else { "dropped" },
            dropped.len()
        );
        for d in dropped {
            println!(
                "  {} {}: {}",
                s(&d["kind"]),
                file_text(&d["id"]),
                file_text(&d["reason"])
            );
            if d["cwd"].is_string() {
                let conversation = match d["provider_session_id"].as_str() {
                    Some(id) => format!("conversation {}", file_text(&Value::from(id))),
                    None => "no conversation id".to_owned(),
                };
                println!(
                    "      {} {conversation} in {}",
                    file_text(&d["provider"]),
                    file_text(&d["cwd"])
                );
            }
        }
    }
    if dry {
        println!("nothing was imported (dry run)");
    } else if v["restoring"].as_bool() != Some(true) {
        println!("the next daemon start restores it");
    }
}

pub fn evicted(v: &Value) {
    let list = v["evicted"].as_array().cloned().unwrap_or_default();
    let dry = v["dry_run"].as_bool() == Some(true);
    for e in v["skipped"].as_array().into_iter().flatten() {
        println!(
            "skipped {} {} {}",
            short(&e["id"]),
            title_cell(e["title"].as_str().unwrap_or("-"), 20),
            s(&e["reason"])
        );
    }
    if list.is_empty() {
        println!("no parked session is that old and free to evict");
        return;
    }
    println!(
        "{} {} parked session(s); their transcripts are kept:",
        if dry { "would evict" } else { "evicted" },
        list.len()
    );
    for e in list {
        println!(
            "  {} {} {}",
            short(&e["id"]),
            title_cell(e["title"].as_str().unwrap_or("-"), 20),
            s(&e["resume_command"])
        );
    }
}

/// What closing did with worktrees: kept ones say where and why.
fn closed_worktrees(v: &Value) {
    for w in v["removed_worktrees"].as_array().into_iter().flatten() {
        let branch = if w["branch_deleted"].as_bool() == Some(true) {
            "branch deleted"
        } else {
            "branch kept"
        };
        println!(
            "  removed worktree {} ({branch} {})",
            s(&w["path"]),
            s(&w["branch"])
        );
        if w["note"].is_string() {
            println!("    {}", s(&w["note"]));
        }
    }
    for w in v["kept_worktrees"].as_array().into_iter().flatten() {
        println!(
            "  kept worktree {} of {}: {}",
            s(&w["path"]),
            short(&w["id"]),
            s(&w["reason"])
        );
    }
}

/// `hangar worktrees`.
pub fn worktrees(v: &Value) {
    let rows = v["worktrees"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("no worktrees; `hangar new --worktree` creates one");
        return;
    }
    println!(
        "{:<9} {:<9} {:<24} {:>5} {:>6} PATH",
        "STATE", "SESSION", "BRANCH", "AHEAD", "BEHIND"
    );
    for r in &rows {
        let n = |k: &str| r[k].as_u64().map(|n| n.to_string()).unwrap_or("-".into());
        println!(
            "{:<9} {:<9} {} {:>5} {:>6} {}{}",
            s(&r["state"]),
            short(&r["session"]),
            display::pad(&s(&r["branch"]), 24),
            n("ahead"),
            n("behind"),
            s(&r["path"]),
            if r["removed"].as_bool() == Some(true) {
                "  (removed)"
            } else {
                ""
            }
        );
        if r["note"].is_string() {
            println!("          {}", s(&r["note"]));
        }
    }
}

/// `hangar search`: one match a line, `ID title  source:line  excerpt`, the
/// match in reverse video on a terminal and between `**` otherwise. The
/// excerpt is clean already (the daemon strips escape sequences), and is
/// still shown escaped like every agent's text.
pub fn search_matches(v: &Value) {
    use std::io::IsTerminal;
    let empty = Vec::new();
    let matches = v["matches"].as_array().unwrap_or(&empty);
    let query = v["query"].as_str().unwrap_or_default();
    if matches.is_empty() {
        println!("no match for {}", display::name(&format!("{query:?}")));
    }
    let (on, off) = if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        ("\x1b[7m", "\x1b[27m")
    } else {
        ("**", "**")
    };
    let title_cols = matches
        .iter()
        .map(|m| {
            display::width(&display::name_fit(
                m["title"].as_str().unwrap_or("-"),
                TITLE_COLS,
            ))
        })
        .max()
        .unwrap_or(0);
    for m in matches {
        let text = m["text"].as_str().unwrap_or_default();
        let column = m["column"].as_u64().unwrap_or(0) as usize;
        let length = m["length"].as_u64().unwrap_or(0) as usize;
        let before: String = text.chars().take(column).collect();
        let hit: String = text.chars().skip(column).take(length).collect();
        let after: String = text.chars().skip(column + length).collect();
        println!(
            "{:<8} {}  {}:{}  {}{on}{}{off}{}",
            short(&m["session"]),
            title_cell(m["title"].as_str().unwrap_or("-"), title_cols),
            s(&m["source"]),
            m["line"].as_u64().unwrap_or(0),
            display::body(&before),
            display::body(&hit),
            display::body(&after),
        );
    }
    if v["truncated"].as_bool() == Some(true) {
        println!("(more matches than shown; narrow the query or add --session ID)");
    }
    for u in v["unreadable"].as_array().into_iter().flatten() {
        eprintln!(
            "hangar: session {} not fully searched: {}",
            short(&u["session"]),
            s(&u["reason"])
        );
    }
}
