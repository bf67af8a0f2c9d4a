//! `hangar hosts [--json]`: this machine and every configured host, each
//! reached at the same time in the background, so one that is down costs
//! its connect timeout once, never one per host.

use std::process::ExitCode;
use std::sync::mpsc;

use hangar_protocol::message::PROTOCOL_VERSION;
use hangar_protocol::paths::Paths;
use serde_json::{Value, json};

use crate::api;
use crate::conn::Target;
use crate::remote;

/// One host's row (the target's host, or this machine): reachable or not,
/// and what its daemon says.
pub fn probe(target: &Target) -> Value {
    let connected = target.connect();
    let (name, ssh) = match target.host.as_deref() {
        Some(h) => (h.name.clone(), Value::from(h.config.ssh.clone())),
        None => (hangar_core::hosts::LOCAL.to_owned(), Value::Null),
    };
    let mut row = json!({
        "name": name,
        "ssh": ssh,
        "reachable": false,
        "version": null,
        "protocol_version": null,
        "sessions": null,
        "live": null,
        "error": null,
    });
    let answer = connected.and_then(|mut c| api::status(&mut c));
    match answer {
        Ok(status) => {
            row["reachable"] = true.into();
            row["version"] = status.daemon.version.into();
            row["protocol_version"] = PROTOCOL_VERSION.into();
            row["sessions"] = status.sessions.total.into();
            row["live"] = status.sessions.live.into();
        }
        Err(e) => row["error"] = format!("{e:#}").into(),
    }
    row
}

pub fn run(paths: &Paths, json_out: bool) -> anyhow::Result<ExitCode> {
    let hosts = remote::configured(paths)?;
    let (tx, rx) = mpsc::channel();
    let mut order = vec![hangar_core::hosts::LOCAL.to_owned()];
    {
        let tx = tx.clone();
        let paths = paths.clone();
        std::thread::spawn(move || {
            let here = Target::local(paths);
            let _ = tx.send((hangar_core::hosts::LOCAL.to_owned(), probe(&here)));
        });
    }
    for (name, config) in hosts {
        order.push(name.clone());
        let tx = tx.clone();
        let there = Target::local(paths.clone()).with_host(Some(remote::Host {
            name: name.clone(),
            config,
        }));
        std::thread::spawn(move || {
            let _ = tx.send((name, probe(&there)));
        });
    }
    drop(tx);
    let mut rows: std::collections::BTreeMap<String, Value> = rx.into_iter().collect();
    let rows: Vec<Value> = order.iter().filter_map(|n| rows.remove(n)).collect();
    if json_out {
        crate::human::print_json(&Value::Array(rows));
    } else {
        print_table(&rows);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(rows: &[Value]) {
    println!(
        "{:<16} {:<28} {:<12} {:<9} {:>8} {:>5}",
        "HOST", "SSH", "STATE", "VERSION", "SESSIONS", "LIVE"
    );
    for r in rows {
        let text = |v: &Value| match v {
            Value::Null => "-".to_owned(),
            Value::String(s) => printable(s),
            other => other.to_string(),
        };
        let state = if r["reachable"] == true {
            "reachable"
        } else {
            "unreachable"
        };
        println!(
            "{:<16} {:<28} {:<12} {:<9} {:>8} {:>5}",
            text(&r["name"]),
            text(&r["ssh"]),
            state,
            text(&r["version"]),
            text(&r["sessions"]),
            text(&r["live"])
        );
        if let Some(e) = r["error"].as_str() {
            println!("  {}", printable(e));
        }
    }
}

/// Text from ssh and the far machine, shown with its control characters
/// escaped (DESIGN.md rule 11).
pub fn printable(s: &str) -> String {
    hangar_core::display::name(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_text_cannot_drive_the_terminal() {
        assert_eq!(printable("ok"), "ok");
        assert_eq!(printable("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
    }
}
