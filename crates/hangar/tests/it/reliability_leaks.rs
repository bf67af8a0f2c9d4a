//! Issue 10, part 4: leaks. Spawn/close and wake/hibernate cycles of shell
//! sessions; afterwards the daemon's open fds, its child processes and
//! zombies are back at their baseline, and its memory has not grown with the
//! number of cycles. Short run: 100 cycles each. `HANGAR_LONG_TESTS=1`: 2,000.
//!
//! The agent path (claude: MCP config, hook settings and an MCP token per
//! spawn) gets its own run: 50 warm-up cycles, then 200 (2,000 long), after
//! which the daemon's memory is within a few MiB of its warmed-up size and no
//! file of a closed session is left under `HANGAR_HOME`.
//!
//! The cycles go through one raw client connection, so the figures measure
//! the daemon and not the cost of starting a CLI process per step.

use crate::reliability_support;
use crate::support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use reliability_support::{RawClient, fd_targets, figures, scale};
use serde_json::json;
use support::*;

/// The daemon's resources at one moment.
#[derive(Debug)]
struct Sample {
    fds: usize,
    descendants: usize,
    zombies: usize,
    rss_kib: u64,
}

fn sample(daemon: i32) -> Sample {
    let desc = descendants_of(daemon);
    Sample {
        fds: open_fds(daemon),
        zombies: desc.iter().filter(|&&p| is_zombie(p)).count(),
        descendants: desc.len(),
        rss_kib: rss_kib(daemon).unwrap_or(0),
    }
}

/// Waits until the daemon is back at `base` for fds, children and zombies;
/// returns the final sample.
fn back_to_baseline(daemon: i32, base: &Sample, what: &str) -> Sample {
    let mut last = sample(daemon);
    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until(what, DEADLINE, || {
            last = sample(daemon);
            last.fds <= base.fds && last.descendants == 0 && last.zombies == 0
        })
    }));
    if ok.is_err() {
        panic!(
            "{what}: baseline {base:?}, now {last:?}; open fds: {:#?}",
            fd_targets(daemon)
        );
    }
    last
}

/// Memory may grow a little (allocator arenas, the journal's buffers) but
/// not with the number of cycles: a per-cycle leak of even 10 KiB over 2,000
/// cycles would exceed this.
const RSS_GROWTH_LIMIT_KIB: u64 = 16 * 1024;

#[test]
fn spawn_and_close_cycles_leave_no_fd_child_zombie_or_memory_behind() {
    let cycles = scale(100, 2000);
    let h = Hangar::new();
    let daemon = h.start_daemon();
    h.ok(&[
        "tab",
        "new",
        "cycles",
        "--cwd",
        h.work.to_str().expect("utf-8"),
    ]);
    let mut c = RawClient::connect(&h.home.join("run").join("hangar.sock")).expect("connect");
    let mut cycle = |n: usize| {
        let body = c
            .request(
                "new",
                json!({"provider": "shell", "tab": "cycles", "title": format!("c{n}")}),
            )
            .unwrap_or_else(|e| panic!("cycle {n}: new failed: {e:?}"));
        assert_eq!(body["state"], "live", "cycle {n}: {body}");
        let id = body["id"].as_str().expect("id").to_owned();
        c.request("close", json!({"session": id, "yes": true}))
            .unwrap_or_else(|e| panic!("cycle {n}: close failed: {e:?}"));
    };
    // Warm up: the first spawns allocate the runtime's and allocator's pools.
    for n in 0..10 {
        cycle(n);
    }
    let base = back_to_baseline(daemon, &sample(daemon), "warm-up settled");
    let started = Instant::now();
    let mut mid = None;
    for n in 0..cycles {
        cycle(n + 10);
        if n == cycles / 2 {
            mid = Some(sample(daemon).rss_kib);
        }
    }
    let elapsed = started.elapsed();
    let end = back_to_baseline(daemon, &base, "every spawned shell is gone");
    figures(
        "spawn/close",
        format!(
            "cycles={cycles} elapsed_s={} baseline fds={} children={} zombies={} rss_kib={} | \
             end fds={} children={} zombies={} rss_kib={} (mid-run rss_kib={})",
            elapsed.as_secs(),
            base.fds,
            base.descendants,
            base.zombies,
            base.rss_kib,
            end.fds,
            end.descendants,
            end.zombies,
            end.rss_kib,
            mid.unwrap_or(0)
        ),
    );
    assert!(
        end.rss_kib.saturating_sub(base.rss_kib) < RSS_GROWTH_LIMIT_KIB,
        "daemon memory grew from {} to {} KiB over {cycles} cycles",
        base.rss_kib,
        end.rss_kib
    );
}

#[test]
fn wake_and_hibernate_cycles_leave_no_fd_child_zombie_or_memory_behind() {
    let cycles = scale(100, 2000);
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let id = h.new_agent(&["--provider", "shell", "--title", "sleeper"]);
    h.wait_state(&id, "live");
    let mut c = RawClient::connect(&h.home.join("run").join("hangar.sock")).expect("connect");
    let cycle = |c: &mut RawClient, n: usize| {
        c.request("hibernate", json!({"session": id}))
            .unwrap_or_else(|e| panic!("cycle {n}: hibernate failed: {e:?}"));
        let body = c
            .request("wake", json!({"session": id}))
            .unwrap_or_else(|e| panic!("cycle {n}: wake failed: {e:?}"));
        assert_eq!(body["state"], "live", "cycle {n}: {body}");
    };
    for n in 0..10 {
        cycle(&mut c, n);
    }
    c.request("hibernate", json!({"session": id}))
        .expect("hibernate");
    let base = back_to_baseline(daemon, &sample(daemon), "warm-up settled");
    c.request("wake", json!({"session": id})).expect("wake");
    let started = Instant::now();
    for n in 0..cycles {
        cycle(&mut c, n + 10);
    }
    let elapsed = started.elapsed();
    c.request("hibernate", json!({"session": id}))
        .expect("hibernate");
    let end = back_to_baseline(daemon, &base, "the hibernated shell is gone");
    figures(
        "wake/hibernate",
        format!(
            "cycles={cycles} elapsed_s={} baseline fds={} children={} zombies={} rss_kib={} | \
             end fds={} children={} zombies={} rss_kib={}",
            elapsed.as_secs(),
            base.fds,
            base.descendants,
            base.zombies,
            base.rss_kib,
            end.fds,
            end.descendants,
            end.zombies,
            end.rss_kib
        ),
    );
    assert!(
        end.rss_kib.saturating_sub(base.rss_kib) < RSS_GROWTH_LIMIT_KIB,
        "daemon memory grew from {} to {} KiB over {cycles} cycles",
        base.rss_kib,
        end.rss_kib
    );
    assert_eq!(h.state_of(&id), "hibernated");
}

/// Every file and folder under `dir` (recursively).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// The agent path keeps far less per session than a shell's PTY buffers
/// could hide: 200 cycles leaking even 20 KiB each would exceed this.
const AGENT_RSS_GROWTH_LIMIT_KIB: u64 = 4 * 1024;

#[test]
fn claude_spawn_and_close_cycles_keep_memory_bounded_and_leave_no_session_files_behind() {
    const WARM_UP: usize = 50;
    let cycles = scale(200, 2000);
    let h = Hangar::new();
    let daemon = h.start_daemon();
    h.ok(&[
        "tab",
        "new",
        "agents",
        "--cwd",
        h.work.to_str().expect("utf-8"),
    ]);
    let mut c = RawClient::connect(&h.home.join("run").join("hangar.sock")).expect("connect");
    let mut closed: Vec<String> = Vec::new();
    let mut cycle = |n: usize| {
        let body = c
            .request(
                "new",
                json!({"provider": "claude", "tab": "agents", "title": format!("a{n}")}),
            )
            .unwrap_or_else(|e| panic!("cycle {n}: new failed: {e:?}"));
        assert_eq!(body["state"], "live", "cycle {n}: {body}");
        let id = body["id"].as_str().expect("id").to_owned();
        // Let the agent come up and read its MCP config and hook settings,
        // so the whole agent path is exercised, not only the spawn.
        let start = Instant::now();
        loop {
            let screen = c
                .request("screen", json!({"session": id}))
                .unwrap_or_else(|e| panic!("cycle {n}: screen failed: {e:?}"));
            if screen["screen"].as_str().unwrap_or_default().contains("> ") {
                break;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "cycle {n}: the agent never showed its prompt: {screen}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        c.request("close", json!({"session": id, "yes": true}))
            .unwrap_or_else(|e| panic!("cycle {n}: close failed: {e:?}"));
        closed.push(id);
    };
    for n in 0..WARM_UP {
        cycle(n);
    }
    let base = back_to_baseline(daemon, &sample(daemon), "warm-up settled");
    let started = Instant::now();
    for n in 0..cycles {
        cycle(WARM_UP + n);
    }
    let elapsed = started.elapsed();
    let end = back_to_baseline(daemon, &base, "every claude agent is gone");
    figures(
        "claude spawn/close",
        format!(
            "warm_up={WARM_UP} cycles={cycles} elapsed_s={} baseline fds={} rss_kib={} | \
             end fds={} children={} zombies={} rss_kib={}",
            elapsed.as_secs(),
            base.fds,
            base.rss_kib,
            end.fds,
            end.descendants,
            end.zombies,
            end.rss_kib,
        ),
    );
    assert!(
        end.rss_kib.saturating_sub(base.rss_kib) < AGENT_RSS_GROWTH_LIMIT_KIB,
        "daemon memory grew from {} KiB after {WARM_UP} warm-up cycles to {} KiB after {cycles} more",
        base.rss_kib,
        end.rss_kib
    );

    // MCP configs (which hold the MCP token), hook settings, their
    // temporary files, capture folders: nothing named after a closed
    // session may outlive it.
    let left: Vec<PathBuf> = files_under(&h.home)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            closed.iter().any(|id| name.contains(id.as_str()))
        })
        .collect();
    assert!(
        left.is_empty(),
        "{} file(s) of closed sessions left under HANGAR_HOME: {left:#?}",
        left.len()
    );
    for dir in ["mcp", "hooks"] {
        let inside = files_under(&h.home.join(dir));
        assert!(inside.is_empty(), "{dir}/ still holds {inside:#?}");
    }
    assert!(h.ls().is_empty());
}
