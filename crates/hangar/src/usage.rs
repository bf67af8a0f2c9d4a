//! `hangar usage` and `hangar limit` for people: the `--since` argument, the
//! usage table, and "limited until 16:00" (issue 29).
//!
//! Titles and model names come from agents and config: they are escaped
//! (`hangar_core::display`) before they reach the terminal (rule 11).

use anyhow::bail;
use hangar_core::display;
use hangar_core::usage_limits::parse_rfc3339_ms;
use hangar_protocol::reply::{GoalState, LimitState, UsageReport};
use hangar_protocol::view::LimitView;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `--since`: a duration back from now (`5h`, `24h`, `7d`), a date
/// (`2026-12-01`, local midnight) or an RFC 3339 time.
pub fn since_ms(given: &str) -> anyhow::Result<i64> {
    let given = given.trim();
    if let Ok(d) = humantime::parse_duration(given) {
        let back = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        return Ok(now_ms().saturating_sub(back));
    }
    if let Some(t) = parse_rfc3339_ms(given) {
        return Ok(t);
    }
    if given.len() == 10
        && let Some(utc_midnight) = parse_rfc3339_ms(&format!("{given}T00:00:00Z"))
    {
        let offset = hangar_clock::local_offset_ms(u64::try_from(utc_midnight).unwrap_or(0));
        return Ok(utc_midnight - offset);
    }
    bail!(
        "--since {given:?}: use a duration (5h, 24h, 7d), a date (2026-12-01) or an RFC 3339 time"
    )
}

/// `until 16:00` (local time), or `until an unknown time`.
pub fn until_text(resets_at: Option<i64>) -> String {
    match resets_at {
        Some(ms) => format!("until {}", clock_text(ms)),
        None => "until an unknown time".to_owned(),
    }
}

/// The line `hangar ls` prints under a limited session.
pub fn limit_line(limit: &LimitView) -> String {
    let mut line = format!(
        "limited {} ({}, from the {})",
        until_text(limit.resets_at),
        display::name(&limit.kind),
        display::name(&limit.source),
    );
    match limit.continue_at {
        Some(at) => line.push_str(&format!("; continues by itself at {}", clock_text(at))),
        None => line.push_str("; will not continue by itself"),
    }
    line
}

fn cost(c: Option<f64>) -> String {
    match c {
        Some(c) => format!("${c:.4}"),
        None => "unpriced".to_owned(),
    }
}

pub fn human(v: &UsageReport) {
    if v.sessions.is_empty() {
        println!("no recorded requests in this period");
    } else {
        println!(
            "{:<9} {:<9} {:>8} {:>10} {:>10} {:>11} {:>11} {:>10}  TITLE / MODELS",
            "ID", "PROVIDER", "REQUESTS", "INPUT", "OUTPUT", "CACHE-READ", "CACHE-WRITE", "COST"
        );
        for r in &v.sessions {
            let models: Vec<String> = r
                .models
                .iter()
                .map(|m| display::name(m).into_owned())
                .collect();
            println!(
                "{:<9} {:<9} {:>8} {:>10} {:>10} {:>11} {:>11} {:>10}  {} [{}]",
                display::name(r.id.get(..8).unwrap_or("")),
                display::name(&r.provider),
                r.requests,
                r.input_tokens,
                r.output_tokens,
                r.cache_read_tokens,
                r.cache_write_tokens,
                cost(r.cost_usd),
                display::name(&r.title),
                models.join(", "),
            );
            // A figure that is not hangar's own list price says whose it is.
            let own: Vec<String> = r
                .cost_from
                .iter()
                .filter(|f| *f != "prices")
                .map(|f| display::name(f).into_owned())
                .collect();
            if !own.is_empty() {
                println!(
                    "{:<9} cost from {}'s own figures (no price in hangar's table)",
                    "",
                    own.join(" and ")
                );
            }
        }
    }
    let t = &v.total;
    println!(
        "total: {} requests, {} input and {} output tokens, {} ({} unpriced requests)",
        t.requests,
        t.input_tokens,
        t.output_tokens,
        cost(Some(t.cost_usd)),
        t.unpriced_requests,
    );
    for a in &v.accounts {
        let windows: Vec<String> = a
            .windows
            .iter()
            .map(|w| {
                let used = w
                    .used_percent
                    .map(|u| format!("{u:.0}%"))
                    .unwrap_or_else(|| "?".into());
                let reset = w
                    .resets_at
                    .map(|t| format!(", resets {}", clock_text(t)))
                    .unwrap_or_default();
                format!("{} {used}{reset}", display::name(&w.kind))
            })
            .collect();
        let limited = match a.limited_until {
            None => String::new(),
            Some(at) => format!("; limited {}", until_text(Some(at))),
        };
        println!(
            "account {} {}: {}{limited}",
            display::name(&a.provider),
            display::name(&a.account),
            if windows.is_empty() {
                "no windows reported".to_owned()
            } else {
                windows.join("; ")
            },
        );
    }
    for a in &v.named_accounts {
        println!(
            "[accounts.{}] ({}): {} session(s), {} requests, {} input and {} output tokens, {}{}",
            display::name(&a.name),
            display::name(&a.provider),
            a.sessions,
            a.requests,
            a.input_tokens,
            a.output_tokens,
            cost(Some(a.cost_usd)),
            match a.unpriced_sessions {
                0 => String::new(),
                n => format!(" ({n} unpriced session(s))"),
            },
        );
    }
    println!("{}", display::name(&v.note));
}

pub fn human_limit(v: &LimitState) {
    let id = display::name(&v.id).into_owned();
    match &v.limit {
        Some(limit) => println!("{id}: {}", limit_line(limit)),
        None => println!("{id}: not limited"),
    }
    println!(
        "auto-continue is {}",
        if v.auto_continue { "on" } else { "off" }
    );
    if let Some(account) = &v.account {
        println!("account {}", display::name(account));
    }
}

/// `goal 3/20 running` (and why it is paused or stopped), for `ls` and
/// the TUI; `None` when the session never had a goal.
pub fn goal_line(g: &serde_json::Value) -> Option<String> {
    let state = g["state"].as_str()?;
    let mut line = format!(
        "goal {}/{} {state}",
        g["turns"].as_u64().unwrap_or(0),
        g["max_turns"].as_u64().unwrap_or(0)
    );
    if let Some(r) = g["reason"].as_str() {
        line.push_str(&format!(" ({})", display::name(r)));
    }
    Some(line)
}

/// `hangar goal` without `--json`.
pub fn human_goal(v: &GoalState) {
    let id = display::name(&v.id).into_owned();
    let g = &serde_json::to_value(&v.goal).unwrap_or_default();
    let Some(line) = goal_line(g) else {
        println!("{id}: no goal");
        return;
    };
    println!("{id}: {line}");
    println!("  {}", display::name(g["text"].as_str().unwrap_or("")));
    if let Some(s) = g["summary"].as_str() {
        println!("  summary: {}", display::name(s));
    }
}

/// `16:00` in local time.
fn clock_text(ms: i64) -> String {
    let offset = hangar_clock::local_offset_ms(u64::try_from(ms).unwrap_or(0));
    hangar_core::usage_limits::clock_text(ms, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_durations_dates_and_times() {
        let now = now_ms();
        let t = since_ms("5h").unwrap();
        assert!((now - 5 * 3_600_000 - t).abs() < 60_000);
        assert_eq!(
            since_ms("2026-12-02T10:00:00Z").unwrap(),
            parse_rfc3339_ms("2026-12-02T10:00:00Z").unwrap()
        );
        assert!(since_ms("2026-12-02").is_ok());
        assert!(since_ms("yesterday-ish").is_err());
    }
}
