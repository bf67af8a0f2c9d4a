//! `hangar diff`, `hangar review` and `hangar finish` (issue 30): the
//! requests, the diff's pages put together, and what a person sees. File
//! names and patch text are the agent's (rule 11): shown escaped.

use std::io::Write;
use std::process::ExitCode;

use hangar_core::display;
use hangar_core::review::{ReviewComment, parse_location};
use hangar_protocol::message as msg;
use hangar_protocol::reply::{DiffPage, Finished};

use crate::api;
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
    let first = api::diff(&mut c, ask.clone())?;
    let mut patch = first.patch.clone();
    if !json_out {
        print_stat(&first);
        if let Some(p) = &patch {
            print_patch(p);
        }
    }
    let mut next = first.next_file;
    while let Some(from) = next {
        ask.from_file = from;
        ask.tree = Some(first.tree.clone());
        ask.merge_base = Some(first.merge_base.clone());
        ask.without_files = true;
        let page = api::diff(&mut c, ask.clone())?;
        let text = page.patch.as_deref().unwrap_or_default();
        if json_out {
            if let Some(p) = patch.as_mut() {
                p.push_str(text);
            }
        } else {
            print_patch(text);
        }
        next = page.next_file;
    }
    if json_out {
        print_diff_json(&first, patch.as_deref());
    }
    Ok(ExitCode::SUCCESS)
}

/// `hangar diff --json`'s document, written straight from the pages (ten
/// thousand rows through a JSON value tree cost more than the diff):
/// fields in the sorted order a value tree prints them, so the bytes are
/// the same.
fn print_diff_json(first: &DiffPage, patch: Option<&str>) {
    #[derive(serde::Serialize)]
    struct Row<'a> {
        additions: u64,
        binary: bool,
        deletions: u64,
        old_path: &'a Option<String>,
        path: &'a str,
        status: &'a str,
    }
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        base: &'a str,
        files: Vec<Row<'a>>,
        head: &'a str,
        merge_base: &'a str,
        patch: Option<&'a str>,
    }
    let files = first.files.iter().map(|f| Row {
        additions: f.additions,
        binary: f.binary,
        deletions: f.deletions,
        old_path: &f.old_path,
        path: &f.path,
        status: &f.status,
    });
    human::print_json_doc(&Doc {
        base: &first.base,
        files: files.collect(),
        head: &first.head,
        merge_base: &first.merge_base,
        patch,
    });
}

fn print_stat(v: &DiffPage) {
    let files = &v.files;
    println!(
        "against {} (merge-base {}), HEAD {}",
        human::text(&v.base),
        human::short_id(&v.merge_base),
        human::short_id(&v.head)
    );
    if files.is_empty() {
        println!("no changes");
        return;
    }
    let (mut adds, mut dels) = (0, 0);
    for f in files {
        let letter = hangar_core::patch::status_letter(&f.status);
        let name = match &f.old_path {
            Some(old) => format!("{} -> {}", display::name(old), human::text(&f.path)),
            None => human::text(&f.path).into_owned(),
        };
        let change = if f.binary {
            "binary".to_owned()
        } else {
            let (a, d) = (f.additions, f.deletions);
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
    let v = api::review(
        &mut c,
        msg::Review {
            session: id,
            comments,
        },
    )?;
    human::print(json_out, &v, |v| {
        println!(
            "sent {} comment(s) to {}",
            v.comments,
            human::short_id(&v.sent.id)
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// `hangar fork ID ...`: prints the new session's id (`{"id", ...}` with
/// `--json`).
pub fn fork(target: &Target, json_out: bool, req: msg::Fork) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = api::fork(&mut c, req)?;
    human::print(json_out, &v, |v| {
        let how = if v.handoff { "handed over" } else { "forked" };
        println!(
            "{} ({how} from {}, {})",
            human::text(&v.id),
            human::short_id(&v.forked_from),
            human::text(&v.state)
        );
        if let Some(w) = &v.worktree {
            println!(
                "  in worktree {} on branch {}",
                human::text(&w.path),
                human::text(&w.branch)
            );
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// `hangar finish ID ...`.
pub fn finish(target: &Target, json_out: bool, req: msg::Finish) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = api::finish(&mut c, req)?;
    human::print(json_out, &v, |v| match v {
        Finished::PullRequestPlan {
            branch,
            remote,
            target,
            ..
        } => println!(
            "would push {} to {} and open a pull request into {}",
            human::text(branch),
            human::text(remote),
            human::text(target)
        ),
        Finished::LandingPlan {
            strategy,
            branch,
            commits,
            target,
            ..
        } => println!(
            "would {} {} ({} commit(s)) into {}; nothing was changed",
            human::text(strategy),
            human::text(branch),
            commits,
            human::text(target)
        ),
        Finished::PullRequest { url, .. } => println!("pull request: {}", human::text(url)),
        Finished::Landed(l) => {
            println!(
                "landed {} into {} ({}) at {}",
                human::text(&l.branch),
                human::text(&l.target),
                human::text(&l.strategy),
                human::short_id(&l.commit)
            );
            for r in &l.refs {
                println!(
                    "  moved {} (backup {})",
                    human::text(&r.refname),
                    human::text(&r.backup)
                );
            }
            for k in l.kept_worktrees.iter().flatten() {
                println!(
                    "  kept worktree {}: {}",
                    human::text(&k.path),
                    human::text(&k.reason)
                );
            }
            if let Some(note) = &l.note {
                println!("  {}", display::body(note));
            }
        }
        Finished::Resolving(r) => println!(
            "asked {} to rebase and resolve {} file(s)",
            human::short_id(&r.sent.id),
            r.conflicts.len()
        ),
    });
    Ok(ExitCode::SUCCESS)
}
