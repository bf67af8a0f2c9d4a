//! `hangar journal`: read the daemon's lifecycle journal straight from
//! `$HANGAR_HOME/journal.jsonl` (no daemon needed), follow it, or summarize
//! it.

use std::io::{BufRead, Seek, SeekFrom};
use std::process::ExitCode;
use std::time::Duration;

use hangar_core::display;
use hangar_daemon::journal::{read_entries, summarize};
use hangar_protocol::paths::Paths;

pub fn run(
    paths: &Paths,
    json: bool,
    action: Option<&str>,
    follow: bool,
    storm_wakes: usize,
    storm_window: Duration,
) -> anyhow::Result<ExitCode> {
    let path = paths.home.join("journal.jsonl");
    if action == Some("summarize") {
        let entries = read_entries(&path);
        let s = summarize(&entries, storm_wakes, storm_window.as_millis() as u64);
        if json {
            crate::human::print_json(&serde_json::to_value(&s)?);
            return Ok(ExitCode::SUCCESS);
        }
        println!("{} journal entries", s.entries);
        for r in &s.restores {
            let hibernated = r
                .hibernated
                .map(|n| format!(", {n} left hibernated"))
                .unwrap_or_default();
            println!(
                "restore: {} restored, {} failed in {} ms{hibernated}",
                r.restored, r.failed, r.duration_ms
            );
        }
        if !s.stuck_spawning.is_empty() {
            println!(
                "stuck spawning: {}",
                display::name(&s.stuck_spawning.join(", "))
            );
        }
        for w in &s.wake_storms {
            println!(
                "wake storm: {} wakes in {} ms",
                w.wakes,
                w.end_ms - w.start_ms
            );
        }
        for (kind, n) in &s.failed_spawns {
            println!("failed spawns ({}): {n}", display::name(kind));
        }
        println!("budget hibernations: {}", s.budget_hibernations);
        println!("breaker trips: {}", s.breaker_trips);
        return Ok(ExitCode::SUCCESS);
    }
    if json && !follow {
        let entries = read_entries(&path);
        crate::human::print_json(&serde_json::to_value(&entries)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(_) if !follow => {
            eprintln!("hangar: no journal yet at {}", display::path(&path));
            return Ok(ExitCode::SUCCESS);
        }
        Err(_) => {
            while !path.exists() {
                std::thread::sleep(Duration::from_millis(200));
            }
            std::fs::File::open(&path)?
        }
    };
    let mut reader = std::io::BufReader::new(&mut file);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        if n == 0 {
            if !follow {
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep(Duration::from_millis(200));
            // Rotation: start over on the new file.
            let pos = reader.stream_position()?;
            if std::fs::metadata(&path)
                .map(|m| m.len() < pos)
                .unwrap_or(false)
            {
                reader.seek(SeekFrom::Start(0))?;
            }
            continue;
        }
        // A journal line is JSON (its strings are titles and reasons); a
        // hand-edited or torn line may hold anything: escaped either way.
        println!("{}", display::json(line.trim_end_matches('\n')));
    }
}
