//! Output for people: what each command prints without `--json`.
//!
//! Every string a reply carries may come from an agent, a model or a file
//! (DESIGN.md rule 11), so every one is shown through
//! `hangar_core::display`: `s` and `short` escape, titles are also cut to
//! their column. Only hangar's own words are printed as they are.

use std::borrow::Cow;

use hangar_core::display;
use hangar_protocol::reply;
use hangar_protocol::view::{SearchView, SessionView, StatusView, TabView};
use serde::Serialize;
use serde_json::Value;

/// Columns a title may take in a table before it is cut with a marker.
const TITLE_COLS: usize = 40;

/// A string field, escaped ("-" when missing).
pub fn s(v: &Value) -> Cow<'_, str> {
    display::name(v.as_str().unwrap_or("-"))
}

/// A title for a table column: escaped, cut to `TITLE_COLS`, padded to
/// `cols`.
fn title_cell(title: &str, cols: usize) -> String {
    display::pad(&display::name_fit(title, TITLE_COLS), cols)
}

/// A string from a reply, escaped.
pub fn text(v: &str) -> Cow<'_, str> {
    display::name(v)
}

/// An optional string from a reply, escaped ("-" when null).
fn opt(v: Option<&str>) -> Cow<'_, str> {
    display::name(v.unwrap_or("-"))
}

/// The first 8 characters of an id, escaped.
pub fn short_id(id: &str) -> String {
    let id: String = id.chars().take(8).collect();
    display::name(&id).into_owned()
}

/// Prints `value` as one JSON document whose strings hold no character a
/// terminal would obey (`hangar_core::display::json`).
pub fn print_json(value: &Value) {
    print_json_doc(value);
}

/// Prints a document whose fields are already in the order wanted, as
/// [`print_json`] prints a value.
pub fn print_json_doc<T: Serialize>(doc: &T) {
    let doc = serde_json::to_string_pretty(doc).unwrap_or_default();
    println!("{}", display::json(&doc));
}

/// Prints a reply (or any document) as JSON: through a JSON value, whose
/// keys serde_json keeps sorted, so the document reads as the daemon's
/// reply on the wire.
pub fn print_json_of<T: Serialize>(value: &T) {
    print_json(&serde_json::to_value(value).unwrap_or(Value::Null));
}

/// `--json`: the document; else the human form.
pub fn print<T: Serialize>(json: bool, value: &T, human: impl FnOnce(&T)) {
    if json {
        print_json_of(value);
    } else {
        human(value);
    }
}

/// What a command that changes something prints for a person: `what` (the
/// command's past tense) and what it was done to.
pub trait Done {
    fn done(&self, what: &str);
}

/// `{what} {id}`, and the state it is in when the reply says.
fn done_line(what: &str, id: &str, state: Option<&str>, started: Option<&str>) {
    let id = short_id(id);
    match state {
        Some(state) if started == Some("fresh") && state == "live" => {
            println!("{what} {id} ({state}, started fresh: no provider session id to resume)")
        }
        Some(state) => println!("{what} {id} ({state})"),
        None => println!("{what} {id}"),
    }
}

/// `{what}: ids` of the sessions a close took, and its worktrees.
fn done_closed(
    what: &str,
    closed: &[String],
    kept: &[reply::WorktreeKept],
    removed: &[reply::WorktreeRemoved],
) {
    let ids: Vec<String> = closed.iter().map(|id| short_id(id)).collect();
    println!(
        "{what}: {}",
        if ids.is_empty() {
            "nothing".to_owned()
        } else {
            ids.join(", ")
        }
    );
    closed_worktrees(kept, removed);
}

impl Done for reply::Placed {
    fn done(&self, what: &str) {
        done_line(what, &self.id, self.state.as_deref(), None);
    }
}

impl Done for reply::Pinned {
    fn done(&self, what: &str) {
        done_line(what, &self.id, None, None);
    }
}

impl Done for reply::Focused {
    fn done(&self, what: &str) {
        // The reply names the tab, no session.
        done_line(what, "", None, None);
    }
}

impl Done for reply::RatioSet {
    fn done(&self, what: &str) {
        done_line(what, &self.id, None, None);
    }
}

impl Done for Option<SessionView> {
    fn done(&self, what: &str) {
        match self {
            Some(v) => done_line(what, &v.id, Some(&v.state), v.started.as_deref()),
            None => done_line(what, "", None, None),
        }
    }
}

impl Done for reply::Hibernated {
    fn done(&self, what: &str) {
        done_line(what, &self.id, Some(&self.state), None);
    }
}

impl Done for reply::Sent {
    fn done(&self, what: &str) {
        done_line(what, &self.id, None, None);
    }
}

impl Done for reply::TabNamed {
    fn done(&self, what: &str) {
        done_line(what, &self.id, None, None);
    }
}

impl Done for reply::Closed {
    fn done(&self, what: &str) {
        done_closed(
            what,
            &self.closed,
            &self.kept_worktrees,
            &self.removed_worktrees,
        );
    }
}

impl Done for reply::TabClosed {
    fn done(&self, what: &str) {
        done_closed(
            what,
            &self.closed,
            &self.kept_worktrees,
            &self.removed_worktrees,
        );
    }
}

impl Done for reply::ClosedIdle {
    fn done(&self, what: &str) {
        done_closed(
            what,
            &self.closed,
            &self.kept_worktrees,
            &self.removed_worktrees,
        );
    }
}

impl Done for reply::Reloaded {
    fn done(&self, _what: &str) {
        println!(
            "dangerous mode {}; restarted {} live agent(s)",
            if self.dangerous { "on" } else { "off" },
            self.restarted.len()
        );
        for f in &self.failed {
            println!("  failed {}: {}", short_id(&f.id), text(&f.reason));
        }
        if self.config.changed {
            println!("read config.toml again");
        }
        for section in &self.config.needs_restart {
            println!(
                "  [{}] changed: it takes effect after a daemon restart (`hangar shutdown`)",
                text(section)
            );
        }
    }
}

// `&Vec`: it is `print`'s printer for the `Vec` reply `ls` gets.
#[allow(clippy::ptr_arg)]
pub fn sessions(rows: &Vec<SessionView>) {
    if rows.is_empty() {
        println!("no sessions; start one with `hangar new`");
        return;
    }
    let rows: Vec<(Option<&str>, &SessionView)> = rows.iter().map(|r| (None, r)).collect();
    session_table(&rows);
}

/// The sessions table; with a host beside a row (`ls --all-hosts`), a
/// HOST column first. Host names are config.toml's, checked to letters,
/// digits, '.', '_' and '-' (`hangar_core::hosts::validate`).
pub fn session_table(rows: &[(Option<&str>, &SessionView)]) {
    let host_cols = rows
        .iter()
        .filter_map(|(h, _)| h.map(str::len))
        .max()
        .map(|w| w.max(4));
    let host_cell = |h: Option<&str>| match host_cols {
        Some(w) => format!("{:<w$} ", text(h.unwrap_or("-"))),
        None => String::new(),
    };
    println!(
        "{}{:<9} {:<9} {:<11} {:<8} {:<7} {:<9} {:<7} {:<20} CWD",
        host_cols.map_or(String::new(), |w| format!("{:<w$} ", "HOST")),
        "ID",
        "PROVIDER",
        "STATE",
        "ACTIVITY",
        "WHERE",
        "TAB",
        "PID",
        "TITLE"
    );
    let indent = host_cell(Some("")).len() + 10;
    let under = " ".repeat(indent);
    for &(host, r) in rows {
        let pid = r.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into());
        let mut title = r.title.clone();
        if r.pinned {
            title.insert_str(0, "* ");
        }
        // `fresh`: started without a provider session id to resume.
        let state = match (text(&r.state), r.started.as_deref()) {
            (state, Some("fresh")) if state == "live" => "live fresh".into(),
            (state, _) => state,
        };
        // Its account beside its provider: `claude@work`.
        let provider = match &r.account {
            Some(account) => format!("{}@{}", text(&r.provider), text(account)),
            None => text(&r.provider).into_owned(),
        };
        println!(
            "{}{:<9} {:<9} {:<11} {:<8} {:<7} {:<9} {:<7} {} {}",
            host_cell(host),
            short_id(&r.id),
            provider,
            state,
            text(&r.activity),
            text(&r.placement),
            short_id(r.tab.as_deref().unwrap_or("-")),
            pid,
            title_cell(&title, 20),
            text(&r.cwd)
        );
        // Why it failed, or what a budget did to it (hibernated to make
        // room, a wake waiting for memory, a spent cost budget).
        if let Some(reason) = &r.reason
            && r.state != "exited"
        {
            println!("{under}reason: {}", text(reason));
        }
        if let Some(line) = r.limit.as_ref().map(crate::usage::limit_line) {
            println!("{under}{line}");
        }
        let goal = serde_json::to_value(&r.goal).unwrap_or_default();
        if let Some(line) = crate::usage::goal_line(&goal) {
            println!("{under}{line}");
        }
        for other in &r.duplicate_of {
            println!(
                "{under}duplicate of {}: both resume one conversation; `hangar doctor` fixes it",
                short_id(other)
            );
        }
    }
}

pub fn status(v: &StatusView) {
    let d = &v.daemon;
    let c = &v.sessions;
    let r = &v.restore;
    println!(
        "daemon   pid {} version {} home {}",
        d.pid,
        text(&d.version),
        text(&d.home)
    );
    println!(
        "sessions {} total: {} panes, {} parked, {} buried; {} live, {} hibernated, {} failed",
        c.total, c.panes, c.parked, c.buried, c.live, c.hibernated, c.failed
    );
    println!(
        "restore  {} of {} panes restored, {} failed, {} hibernated, {}{}",
        r.restored,
        r.expected,
        r.failed,
        r.hibernated,
        match (r.complete, r.all_live) {
            (true, true) => "complete, all live",
            (true, _) => "complete",
            _ => "in progress",
        },
        r.duration_ms
            .map(|d| format!(" in {d} ms"))
            .unwrap_or_default()
    );
    if v.dangerous {
        println!("dangerous mode is on");
    }
    let b = &v.budget;
    let q = &v.wake_queue;
    println!(
        "budget   {} live of {}, {} MiB of {} (resident {} MiB){}{}",
        b.live,
        b.max_live
            .map(|m| m.to_string())
            .unwrap_or_else(|| "unlimited".into()),
        b.memory_bytes / (1024 * 1024),
        b.max_memory_bytes
            .map(|m| format!("{} MiB", m / (1024 * 1024)))
            .unwrap_or_else(|| "unlimited".into()),
        b.resident_bytes / (1024 * 1024),
        match b.waiting_for_memory.len() {
            0 => String::new(),
            n => format!("; {n} wake(s) waiting for memory"),
        },
        match &b.reason {
            Some(reason) => format!("; {}", text(reason)),
            None => String::new(),
        }
    );
    println!(
        "wakes    {} pending, {} running, breaker {}{}",
        q.pending,
        q.running,
        text(&q.breaker),
        if q.breaker == "open" {
            " (after authentication failures; `hangar wake --resume-queue` resumes)"
        } else {
            ""
        }
    );
    let p = &v.proxy;
    let state = match (p.enabled, p.port) {
        (false, _) => "off ([proxy] enabled = false)".to_owned(),
        (_, Some(port)) => format!(
            "127.0.0.1:{port}, {} session(s) attributed, capturing {}",
            p.sessions,
            p.allow_hosts
                .iter()
                .map(|h| display::name(h))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "not started (starts with the first claude or codex session)".to_owned(),
    };
    println!("proxy    {state}");
    if let Some(fault) = &p.fault {
        println!("proxy    last start failed: {}", text(fault));
    }
    let u = &p.usage;
    println!(
        "usage    {} request(s), {} input / {} output tokens, {} error(s)",
        u.requests, u.input_tokens, u.output_tokens, u.errors
    );
    if let Some(last_error) = &u.last_error {
        println!(
            "usage    last error ({}): {}",
            short_id(p.last_error_session.as_deref().unwrap_or("-")),
            text(last_error)
        );
    }
    for f in &v.failed {
        println!(
            "failed   {} {}: {}",
            short_id(&f.id),
            display::name_fit(&f.title, TITLE_COLS),
            text(&f.reason)
        );
    }
    for l in &v.limited {
        println!(
            "limited  {} {}: {}",
            short_id(&l.id),
            display::name_fit(&l.title, TITLE_COLS),
            crate::usage::limit_line(&l.limit)
        );
    }
    for n in &v.notices {
        println!("notice   {}", text(n));
    }
}

pub fn tabs(tabs: &Vec<TabView>) {
    for t in tabs {
        println!(
            "{} {:<9} {} {} pane(s), {} parked  {}",
            if t.active { "*" } else { " " },
            short_id(&t.id),
            title_cell(&t.title, 20),
            t.panes.len(),
            t.parked.len(),
            display::name(t.cwd.as_deref().unwrap_or(""))
        );
    }
}

/// `hangar import`'s report: the daemon's (or the offline import's), and
/// the file it read.
#[derive(Serialize)]
pub struct ImportReport {
    #[serde(flatten)]
    pub imported: reply::Imported,
    pub file: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// Text from the imported file (titles, folders, ids), escaped like every
/// other untrusted string: a hostile workspace.json must not drive the
/// terminal.
fn file_text(v: &str) -> String {
    text(v).into_owned()
}

pub fn import(report: &ImportReport) {
    let dry = report.dry_run;
    let v = &report.imported;
    let source = v
        .source
        .as_deref()
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    println!(
        "{} {}{source}",
        if dry { "dry run of" } else { "imported" },
        file_text(&report.file)
    );
    // Warnings first: they change what the user should do next.
    for w in &v.warnings {
        println!("warning: {}", file_text(w));
    }
    let i = &v.imported;
    println!(
        "{} {} session(s): {} tab(s), {} pane(s) (started), {} parked, {} buried, {} pin(s)",
        if dry { "would import" } else { "imported" },
        i.sessions,
        i.tabs,
        i.panes,
        i.parked,
        i.buried,
        i.pins
    );
    if !v.kept.is_empty() {
        println!("kept in another form ({}):", v.kept.len());
        for k in &v.kept {
            println!(
                "  {} {}: {}",
                text(&k.kind),
                file_text(&k.id),
                file_text(&k.note)
            );
        }
    }
    if !v.dropped.is_empty() {
        println!(
            "{} {}:",
            if dry { "would drop" } else { "dropped" },
            v.dropped.len()
        );
        for d in &v.dropped {
            println!(
                "  {} {}: {}",
                text(&d.kind),
                file_text(&d.id),
                file_text(&d.reason)
            );
            if let Some(cwd) = &d.cwd {
                let conversation = match &d.provider_session_id {
                    Some(id) => format!("conversation {}", file_text(id)),
                    None => "no conversation id".to_owned(),
                };
                println!(
                    "      {} {conversation} in {}",
                    opt(d.provider.as_deref()),
                    file_text(cwd)
                );
            }
        }
    }
    if dry {
        println!("nothing was imported (dry run)");
    } else if !v.restoring {
        println!("the next daemon start restores it");
    }
}

pub fn evicted(v: &reply::Evicted) {
    for e in &v.skipped {
        println!(
            "skipped {} {} {}",
            short_id(&e.id),
            title_cell(&e.title, 20),
            text(&e.reason)
        );
    }
    if v.evicted.is_empty() {
        println!("no parked session is that old and free to evict");
        return;
    }
    println!(
        "{} {} parked session(s); their transcripts are kept:",
        if v.dry_run { "would evict" } else { "evicted" },
        v.evicted.len()
    );
    for e in &v.evicted {
        println!(
            "  {} {} {}",
            short_id(&e.id),
            title_cell(&e.title, 20),
            text(&e.resume_command)
        );
    }
}

/// What closing did with worktrees: kept ones say where and why.
pub fn closed_worktrees(kept: &[reply::WorktreeKept], removed: &[reply::WorktreeRemoved]) {
    for w in removed {
        let branch = if w.branch_deleted {
            "branch deleted"
        } else {
            "branch kept"
        };
        println!(
            "  removed worktree {} ({branch} {})",
            text(&w.path),
            text(&w.branch)
        );
        if let Some(note) = &w.note {
            println!("    {}", text(note));
        }
    }
    for w in kept {
        println!(
            "  kept worktree {} of {}: {}",
            text(&w.path),
            short_id(&w.id),
            text(&w.reason)
        );
    }
}

/// `hangar worktrees`.
pub fn worktrees(v: &reply::WorktreeList) {
    if v.worktrees.is_empty() {
        println!("no worktrees; `hangar new --worktree` creates one");
        return;
    }
    println!(
        "{:<9} {:<9} {:<24} {:>5} {:>6} PATH",
        "STATE", "SESSION", "BRANCH", "AHEAD", "BEHIND"
    );
    for r in &v.worktrees {
        let n = |k: Option<u32>| k.map(|n| n.to_string()).unwrap_or("-".into());
        println!(
            "{:<9} {:<9} {} {:>5} {:>6} {}{}",
            text(&r.state),
            short_id(&r.session),
            display::pad(&text(&r.branch), 24),
            n(r.ahead),
            n(r.behind),
            text(&r.path),
            if r.removed { "  (removed)" } else { "" }
        );
        if let Some(note) = &r.note {
            println!("          {}", text(note));
        }
    }
}

/// `hangar search`: one match a line, `ID title  source:line  excerpt`, the
/// match in reverse video on a terminal and between `**` otherwise. The
/// excerpt is clean already (the daemon strips escape sequences), and is
/// still shown escaped like every agent's text.
pub fn search_matches(v: &SearchView) {
    search_matches_on(None, v)
}

/// `search_matches`, each line led by `host` (`search --all-hosts`).
pub fn search_matches_on(host: Option<&str>, v: &SearchView) {
    use std::io::IsTerminal;
    let lead = host.map_or(String::new(), |h| format!("{} ", text(h)));
    let matches = &v.matches;
    let query = &v.query;
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
        .map(|m| display::width(&display::name_fit(&m.title, TITLE_COLS)))
        .max()
        .unwrap_or(0);
    for m in matches {
        let (column, length) = (m.column, m.length);
        let before: String = m.text.chars().take(column).collect();
        let hit: String = m.text.chars().skip(column).take(length).collect();
        let after: String = m.text.chars().skip(column + length).collect();
        println!(
            "{lead}{:<8} {}  {}:{}  {}{on}{}{off}{}",
            short_id(&m.session),
            title_cell(&m.title, title_cols),
            text(&m.source),
            m.line,
            display::body(&before),
            display::body(&hit),
            display::body(&after),
        );
    }
    if v.truncated {
        println!("(more matches than shown; narrow the query or add --session ID)");
    }
    for u in &v.unreadable {
        eprintln!(
            "hangar: session {} not fully searched: {}",
            short_id(&u.session),
            text(&u.reason)
        );
    }
}
