//! `hangar usage` and `hangar limit` for people: the `--since` argument, the
//! usage table, and "limited until 16:00" (issue 29).
//!
//! Titles and model names come from agents and config: they are escaped
//! (`hangar_core::display`) before they reach the terminal (rule 11).

use anyhow::bail;
use hangar_core::display;
use hangar_core::usage_limits::parse_rfc3339_ms;
use serde_json::Value;

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
        let offset = hangar_daemon::usage::local_offset_ms(utc_midnight);
        return Ok(utc_midnight - offset);
    }
    bail!(
        "--since {given:?}: use a duration (5h, 24h, 7d), a date (2026-12-01) or an RFC 3339 time"
    )
}

/// `until 16:00` (local time), or `until an unknown time`.
pub fn until_text(resets_at: &Value) -> String {
    match resets_at.as_i64() {
        Some(ms) => format!("until {}", hangar_daemon::usage::clock_text(ms)),
        None => "until an unknown time".to_owned(),
    }
}

/// The line `hangar ls` prints under a limited session.
pub fn limit_line(limit: &Value) -> Option<String> {
    if !limit.is_object() {
        return None;
    }
    let mut line = format!(
        "limited {} ({}, from the {})",
        until_text(&limit["resets_at"]),
        display::name(limit["kind"].as_str().unwrap_or("limit")),
        display::name(limit["source"].as_str().unwrap_or("?")),
    );
    match limit["continue_at"].as_i64() {
        Some(at) => line.push_str(&format!(
            "; continues by itself at {}",
            hangar_daemon::usage::clock_text(at)
        )),
        None => line.push_str("; will not continue by itself"),
    }
    Some(line)
}

fn num(v: &Value) -> String {
    v.as_u64()
        .map(|n| n.to_string())
        .unwrap_or_else(|| "-".into())
}

fn cost(v: &Value) -> String {
    match v.as_f64() {
        Some(c) => format!("${c:.4}"),
        None => "unpriced".to_owned(),
    }
}

pub fn human(v: &Value) {
    let sessions = v["sessions"].as_array().cloned().unwrap_or_default();
    if sessions.is_empty() {
        println!("no recorded requests in this period");
    } else {
        println!(
            "{:<9} {:<9} {:>8} {:>10} {:>10} {:>11} {:>11} {:>10}  TITLE / MODELS",
            "ID", "PROVIDER", "REQUESTS", "INPUT", "OUTPUT", "CACHE-READ", "CACHE-WRITE", "COST"
        );
        for r in &sessions {
            let models: Vec<String> = r["models"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|m| display::name(m).into_owned())
                .collect();
            println!(
                "{:<9} {:<9} {:>8} {:>10} {:>10} {:>11} {:>11} {:>10}  {} [{}]",
                display::name(r["id"].as_str().unwrap_or("").get(..8).unwrap_or("")),
                display::name(r["provider"].as_str().unwrap_or("")),
                num(&r["requests"]),
                num(&r["input_tokens"]),
                num(&r["output_tokens"]),
                num(&r["cache_read_tokens"]),
                num(&r["cache_write_tokens"]),
                cost(&r["cost_usd"]),
                display::name(r["title"].as_str().unwrap_or("")),
                models.join(", "),
            );
        }
    }
    let t = &v["total"];
    println!(
        "total: {} requests, {} input and {} output tokens, {} ({} unpriced requests)",
        num(&t["requests"]),
        num(&t["input_tokens"]),
        num(&t["output_tokens"]),
        cost(&t["cost_usd"]),
        num(&t["unpriced_requests"]),
    );
    for a in v["accounts"].as_array().into_iter().flatten() {
        let windows: Vec<String> = a["windows"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| {
                let used = w["used_percent"]
                    .as_f64()
                    .map(|u| format!("{u:.0}%"))
                    .unwrap_or_else(|| "?".into());
                let reset = w["resets_at"]
                    .as_i64()
                    .map(|t| format!(", resets {}", hangar_daemon::usage::clock_text(t)))
                    .unwrap_or_default();
                format!(
                    "{} {used}{reset}",
                    display::name(w["kind"].as_str().unwrap_or("?"))
                )
            })
            .collect();
        let limited = if a["limited_until"].is_null() {
            String::new()
        } else {
            format!("; limited {}", until_text(&a["limited_until"]))
        };
        println!(
            "account {} {}: {}{limited}",
            display::name(a["provider"].as_str().unwrap_or("?")),
            display::name(a["account"].as_str().unwrap_or("?")),
            if windows.is_empty() {
                "no windows reported".to_owned()
            } else {
                windows.join("; ")
            },
        );
    }
    if let Some(note) = v["note"].as_str() {
        println!("{}", display::name(note));
    }
}

pub fn human_limit(v: &Value) {
    let id = display::name(v["id"].as_str().unwrap_or("?")).into_owned();
    match limit_line(&v["limit"]) {
        Some(line) => println!("{id}: {line}"),
        None => println!("{id}: not limited"),
    }
    println!(
        "auto-continue is {}",
        if v["auto_continue"].as_bool() == Some(true) {
            "on"
        } else {
            "off"
        }
    );
}

/// `goal 3/20 running` (and why it is paused or stopped), for `ls` and
/// the TUI; `None` when the session never had a goal.
pub fn goal_line(g: &Value) -> Option<String> {
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
pub fn human_goal(v: &Value) {
    let id = display::name(v["id"].as_str().unwrap_or("?")).into_owned();
    let g = &v["goal"];
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
