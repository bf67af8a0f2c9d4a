//! The CLI side of provider identity: `hangar transcript`, `hangar doctor`,
//! and `hangar export` (which reads the store directly when no daemon runs,
//! so exporting never starts a single agent).
//!
//! Everything here only asks the daemon and prints; the rules live in
//! `hangar_core::ledger` and the daemon's `identity` module.

use std::process::ExitCode;

use anyhow::bail;
use hangar_core::display;
use hangar_protocol::message as msg;

use hangar_protocol::reply::{DoctorFix, DoctorReport};

use crate::api;
use crate::conn::Target;
use crate::human::{print, text};

/// `hangar transcript ID [--tail N] [--json]`.
pub fn transcript(
    target: &Target,
    json: bool,
    id: String,
    tail: usize,
) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = api::transcript(
        &mut c,
        msg::Transcript {
            session: id,
            tail: Some(tail),
        },
    )?;
    print(json, &v, |v| {
        if v.messages.is_empty() {
            println!("(no messages yet in {})", text(&v.path));
        }
        // A message is the model's (or a web page's) text: shown as a body,
        // its lines kept and anything a terminal would obey escaped.
        for m in &v.messages {
            println!("{}: {}", text(&m.role), display::body(&m.text));
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// `hangar doctor [--fork ID] [--forget ID [--yes]] [--json]`. Exits non-zero
/// when duplicates remain, so scripts can check a workspace.
pub fn doctor(
    target: &Target,
    json: bool,
    fork: Option<String>,
    forget: Option<String>,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = api::doctor(&mut c, msg::Doctor { fork, forget, yes })?;
    print(json, &v, |v| {
        print_clis(v);
        for f in &v.fixed {
            match f {
                DoctorFix::Fork {
                    session,
                    forgot_provider_session_id,
                } => println!(
                    "forked {}: its next wake starts a fresh conversation (forgot {})",
                    text(session),
                    display::name(forgot_provider_session_id.as_deref().unwrap_or("nothing"))
                ),
                DoctorFix::Forget { session, .. } => println!("forgot {}", text(session)),
            }
        }
        let groups = &v.duplicates;
        if groups.is_empty() {
            println!("no duplicate provider session ids");
            return;
        }
        for g in groups {
            println!(
                "{} session {} is held by {} sessions; only one may run at a time:",
                text(&g.provider),
                text(&g.provider_session_id),
                g.sessions.len()
            );
            for one in &g.sessions {
                // Quoted, as before, but in hangar's escape notation (Rust's
                // `{:?}` leaves bidi controls raw).
                println!(
                    "  {}  {:<10} \"{}\"",
                    text(&one.id),
                    text(&one.state),
                    display::name_fit(&one.title, 60)
                );
            }
            println!("  fix one of them:");
            for f in &g.fixes {
                println!("    {}", text(f));
            }
        }
        println!(
            "--fork starts that session as a fresh conversation next time it wakes; \
             --forget closes that session record"
        );
    });
    Ok(if v.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `hangar export [--json]`: the export document, exactly as written (it is
/// already one JSON document). From the daemon when one runs, else from the
/// store without starting one.
pub fn export(target: &Target) -> anyhow::Result<ExitCode> {
    let text = match target.connect_existing()? {
        Some(mut c) => api::export(&mut c)?.text,
        None => hangar_daemon::export_offline(&target.paths)?,
    };
    if text.is_empty() {
        bail!("the export came back empty");
    }
    print!("{}", display::json(&text));
    Ok(ExitCode::SUCCESS)
}

/// `hangar doctor`'s lines about the agent CLIs: version found and the
/// version hangar is tested with.
fn print_clis(v: &DoctorReport) {
    for c in &v.clis {
        let provider = plain(&c.provider);
        let tested = c.tested.as_deref().unwrap_or("?");
        match (c.program.as_deref(), c.version.as_deref()) {
            (None, _) => println!("{provider}: not installed (tested with {tested})"),
            (Some(p), None) => println!(
                "{provider}: {} (version unknown; tested with {tested})",
                plain(p)
            ),
            (Some(p), Some(ver)) => println!(
                "{provider}: {} {} (tested with {tested})",
                plain(p),
                plain(ver)
            ),
        }
        if let Some(n) = &c.notice {
            println!("  {}", plain(n));
        }
    }
}

/// A program path or version as text: control characters and bidi
/// overrides escaped (DESIGN.md rule 11; a path is a file name anyone
/// could choose).
fn plain(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let hidden =
                c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
            let shown: Vec<char> = if hidden {
                c.escape_unicode().collect()
            } else {
                vec![c]
            };
            shown
        })
        .collect()
}
