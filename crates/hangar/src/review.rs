//! `hangar diff`, `hangar review` and `hangar finish` (issue 30): the
//! requests, the diff's pages put together, and what a person sees. File
//! names and patch text are the agent's (rule 11): shown escaped.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use hangar_core::display;
use hangar_core::review::{ReviewComment, parse_location};
use hangar_protocol::message::{self as msg, Request};
use serde_json::{Value, json};

use crate::conn::Target;
use crate::human;

/// `hangar diff ID [--stat] [--base REF] [--json]`. The daemon sends the
/// patch a page of files at a time; people see each page as it comes,
/// `--json` gets one document `{base, merge_base, head, files, patch}`.
pub fn diff(
    target: &Target,
    json_out: bool,
    id: String,
    stat: bool,
    base: Option<String>,
) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let mut ask = msg::Diff {
        session: id,
        base,
        stat,
        ..Default::default()
    };
    let first = c.request(Request::Diff(ask.clone()))?;
    let mut patch = first["patch"].as_str().map(str::to_owned);
    if !json_out {
        print_stat(&first);
        if let Some(p) = &patch {
            print_patch(p);
        }
    }
    let mut next = first["next_file"].as_u64();
    while let Some(from) = next {
        ask.from_file = usize::try_from(from).context("a page number out of range")?;
        ask.tree = first["tree"].as_str().map(str::to_owned);
        ask.merge_base = first["merge_base"].as_str().map(str::to_owned);
        let page = c.request(Request::Diff(ask.clone()))?;
        let text = page["patch"].as_str().unwrap_or_default();
        if json_out {
            if let Some(p) = patch.as_mut() {
                p.push_str(text);
            }
        } else {
            print_patch(text);
        }
        next = page["next_file"].as_u64();
    }
    if json_out {
        human::print_json(&json!({
            "base": first["base"],
            "merge_base": first["merge_base"],
            "head": first["head"],
            "files": first["files"],
            "patch": patch,
        }));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_stat(v: &Value) {
    let files = v["files"].as_array().cloned().unwrap_or_default();
    println!(
        "against {} (merge-base {}), HEAD {}",
        human::s(&v["base"]),
        human::short(&v["merge_base"]),
        human::short(&v["head"])
    );
    if files.is_empty() {
        println!("no changes");
        return;
    }
    let (mut adds, mut dels) = (0, 0);
    for f in &files {
        let letter = match f["status"].as_str().unwrap_or_default() {
            "added" => "A",
            "deleted" => "D",
            "renamed" => "R",
            "copied" => "C",
            "type-changed" => "T",
            _ => "M",
        };
        let name = match f["old_path"].as_str() {
            Some(old) => format!("{} -> {}", display::name(old), human::s(&f["path"])),
            None => human::s(&f["path"]).into_owned(),
        };
        let change = if f["binary"].as_bool() == Some(true) {
            "binary".to_owned()
        } else {
            let (a, d) = (
                f["additions"].as_u64().unwrap_or(0),
                f["deletions"].as_u64().unwrap_or(0),
            );
            adds += a;
            dels += d;
            format!("+{a} -{d}")
        };
        println!(" {letter} {name} | {change}");
    }
    println!(
        " {} file(s) changed, {adds} insertion(s), {dels} deletion(s)",
        files.len()
    );
}

fn print_patch(p: &str) {
    if p.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    // Escaped line by line: a patch holds whatever the files held.
    for line in p.lines() {
        let _ = writeln!(out, "{}", display::body(line));
    }
}

/// `hangar review ID --comment FILE:LINE TEXT ...`.
pub fn review(
    target: &Target,
    json_out: bool,
    id: String,
    comment: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let mut comments = Vec::new();
    for pair in comment.chunks(2) {
        let [loc, text] = pair else {
            anyhow::bail!("--comment takes FILE:LINE and TEXT");
        };
        let (file, line) = parse_location(loc).map_err(anyhow::Error::msg)?;
        comments.push(ReviewComment {
            file,
            line,
            text: text.clone(),
        });
    }
    let mut c = target.connect()?;
    let v = c.request(Request::Review(msg::Review {
        session: id,
        comments,
    }))?;
    human::print(json_out, &v, |v| {
        println!(
            "sent {} comment(s) to {}",
            v["comments"].as_u64().unwrap_or(0),
            human::short(&v["id"])
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// `hangar finish ID ...`.
pub fn finish(target: &Target, json_out: bool, req: msg::Finish) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = c.request(Request::Finish(req))?;
    human::print(json_out, &v, |v| {
        if v["dry_run"].as_bool() == Some(true) {
            if v["pr"].as_bool() == Some(true) {
                println!(
                    "would push {} to {} and open a pull request into {}",
                    human::s(&v["branch"]),
                    human::s(&v["remote"]),
                    human::s(&v["target"])
                );
            } else {
                println!(
                    "would {} {} ({} commit(s)) into {}; nothing was changed",
                    human::s(&v["strategy"]),
                    human::s(&v["branch"]),
                    v["commits"].as_u64().unwrap_or(0),
                    human::s(&v["target"])
                );
            }
        } else if v["pr"].as_bool() == Some(true) {
            println!("pull request: {}", human::s(&v["url"]));
        } else if v["landed"].as_bool() == Some(true) {
            println!(
                "landed {} into {} ({}) at {}",
                human::s(&v["branch"]),
                human::s(&v["target"]),
                human::s(&v["strategy"]),
                human::short(&v["commit"])
            );
            for r in v["refs"].as_array().into_iter().flatten() {
                println!(
                    "  moved {} (backup {})",
                    human::s(&r["ref"]),
                    human::s(&r["backup"])
                );
            }
            for k in v["kept_worktrees"].as_array().into_iter().flatten() {
                println!(
                    "  kept worktree {}: {}",
                    human::s(&k["path"]),
                    human::s(&k["reason"])
                );
            }
            if let Some(note) = v["note"].as_str() {
                println!("  {}", display::body(note));
            }
        } else if v["prompt"].is_string() {
            println!(
                "asked {} to rebase and resolve {} file(s)",
                human::short(&v["id"]),
                v["conflicts"].as_array().map_or(0, Vec::len)
            );
        }
    });
    Ok(ExitCode::SUCCESS)
}
