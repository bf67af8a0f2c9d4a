//! Issue 18, fault: an agent printing as fast as it can. While one session
//! floods its terminal (`yes | head -c N`, which a PTY takes as fast as the
//! daemon reads it), another session still answers `send` and `screen`, the
//! daemon's memory stays bounded (its screen keeps a bounded scrollback, and
//! nobody attached means nothing queued), and the flooding session can be
//! closed at once.
//!
//! The quick version floods for a bounded time (or 200 MB, whichever comes
//! first); `HANGAR_LONG_TESTS=1` floods 1 GB to the end. RSS is read from
//! /proc; the bound is stated here and in RELIABILITY.md.

use crate::reliability_support;
use crate::support;

use std::time::{Duration, Instant};

use reliability_support::{figures, long_run};
use support::*;

/// The daemon's RSS must stay under this while a session floods.
const RSS_BOUND_KIB: u64 = 128 * 1024;

/// Bytes written so far by the flooding `head` (its `wchar` in /proc).
fn flooded_bytes(shell_pid: i32) -> u64 {
    descendants_of(shell_pid)
        .into_iter()
        .filter(|&p| cmdline(p).first().is_some_and(|c| c.ends_with("head")))
        .filter_map(|p| {
            let io = std::fs::read_to_string(format!("/proc/{p}/io")).ok()?;
            io.lines()
                .find(|l| l.starts_with("wchar:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_flooding_session_leaves_others_responsive_and_memory_bounded() {
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let flood = h.new_agent(&["--provider", "shell", "--title", "flood"]);
    let other = h.new_agent(&["--provider", "shell", "--title", "other"]);
    h.wait_state(&flood, "live");
    h.wait_state(&other, "live");
    let rss_before = rss_kib(daemon).unwrap_or(0);
    let shell_pid = h.pid_of(&flood);

    let total: u64 = if long_run() { 1 << 30 } else { 200 << 20 };
    let flood_for = if long_run() {
        Duration::from_secs(3600)
    } else {
        Duration::from_secs(25)
    };
    h.ok(&[
        "send",
        &flood,
        &format!(
            "yes 'flood 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789' | head -c {total}; echo flood-''done"
        ),
    ]);
    wait_until("the flood started", DEADLINE, || {
        flooded_bytes(shell_pid) > 0
    });

    let begun = Instant::now();
    let mut probes = 0u32;
    let mut slowest = Duration::ZERO;
    let mut rss_max = rss_before;
    let mut last_bytes = 0;
    let mut done = false;
    while begun.elapsed() < flood_for {
        let t = Instant::now();
        let marker = format!("ping-{probes}");
        h.ok(&["send", &other, &format!("echo {marker}")]);
        h.wait_screen(&other, &format!("\n{marker}"));
        let flood_screen = h.screen(&flood);
        slowest = slowest.max(t.elapsed());
        probes += 1;
        rss_max = rss_max.max(rss_kib(daemon).unwrap_or(0));
        assert!(
            rss_max < RSS_BOUND_KIB,
            "daemon RSS {rss_max} KiB passed the bound of {RSS_BOUND_KIB} KiB"
        );
        last_bytes = last_bytes.max(flooded_bytes(shell_pid));
        if flood_screen.contains("flood-done") {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let flood_secs = begun.elapsed().as_secs_f64();
    if done {
        last_bytes = total;
    }
    assert!(
        probes >= 3,
        "the other session answered while the flood ran"
    );
    assert!(
        last_bytes > 1 << 20,
        "the flood really ran: {last_bytes} bytes"
    );

    // The flooding session closes at once, and takes its pipeline with it.
    let group = pgid(shell_pid).expect("pgid");
    let t = Instant::now();
    h.ok(&["close", &flood]);
    let close_took = t.elapsed();
    wait_until("the flood's processes are gone", DEADLINE, || {
        processes_in_group(group).iter().all(|&p| !is_running(p))
    });
    h.ok(&["send", &other, "echo after-flood"]);
    h.wait_screen(&other, "\nafter-flood");
    let rss_after = rss_kib(daemon).unwrap_or(0);
    figures(
        "flood",
        format!(
            "bytes={last_bytes} finished={done} seconds={flood_secs:.1} MB_per_s={:.1} probes={probes} \
             slowest_probe_ms={} rss_kib_before={rss_before} max={rss_max} after={rss_after} \
             bound={RSS_BOUND_KIB} close_ms={}",
            last_bytes as f64 / 1e6 / flood_secs,
            slowest.as_millis(),
            close_took.as_millis()
        ),
    );
}
