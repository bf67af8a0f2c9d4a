//! The cost of persistence on a large workspace: 10,000 sessions, 9 of them
//! in panes over 3 tabs, the rest parked and buried
//! (`hangar_core::fixtures::large_workspace`). Opening and loading bounds how
//! long a restart waits before the first spawn; load + `RestorePlan::new` has
//! a target of under 50 ms. Saves run with `synchronous=FULL`, so each one
//! includes an fsync of the WAL.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hangar_core::fixtures::{large_workspace, session_id};
use hangar_core::{RestorePlan, Workspace};
use hangar_store::Store;
use tempfile::TempDir;

fn saved_store(dir: &TempDir, ws: &Workspace) -> PathBuf {
    let path = dir.path().join("hangar.db");
    let mut store = Store::open(&path).expect("open").store;
    store.save(ws, &[]).expect("save");
    path
}

fn open(path: &Path) -> hangar_store::Opened {
    let opened = Store::open(path).expect("open");
    assert!(opened.recovered.is_none() && opened.pruned.is_empty());
    opened
}

fn store(c: &mut Criterion) {
    let ws = large_workspace(10_000, 9);
    assert!(hangar_core::is_closed(&ws), "the fixture is closed");
    let dir = TempDir::new().expect("tempdir");
    let path = saved_store(&dir, &ws);
    assert_eq!(open(&path).workspace, ws);

    c.bench_function("open+load 10k sessions", |b| {
        b.iter(|| black_box(open(&path)))
    });

    c.bench_function("load + RestorePlan::new 10k sessions", |b| {
        b.iter(|| {
            let opened = open(&path);
            black_box(RestorePlan::new(opened.workspace))
        })
    });

    c.bench_function("first full save 10k sessions", |b| {
        b.iter_batched(
            || {
                let dir = TempDir::new().expect("tempdir");
                let store = Store::open(&dir.path().join("hangar.db"))
                    .expect("open")
                    .store;
                (dir, store)
            },
            |(dir, mut store)| {
                black_box(store.save(&ws, &[]).expect("save"));
                (dir, store)
            },
            BatchSize::PerIteration,
        )
    });

    let mut store = open(&path).store;
    let mut changed = ws.clone();
    let id = session_id(5_000);
    let mut n = 0u64;
    c.bench_function("incremental save of one change (10k sessions)", |b| {
        b.iter(|| {
            n += 1;
            changed
                .sessions
                .get_mut(&id)
                .expect("fixture session")
                .last_active_ms = n;
            let stats = store.save(&changed, &[]).expect("save");
            assert_eq!(stats.written, 1);
            black_box(stats)
        })
    });
}

/// A proxied request as the ledger records it: session `s` of 200, one of
/// three models, tokens that vary.
fn request(i: u64) -> hangar_core::usage::UsageRecord {
    use hangar_core::usage::{Tokens, UsageRecord, UsageSource};
    UsageRecord {
        request_key: format!("msg_bench_{i}"),
        session: format!("session-{}", i % 200),
        provider: "claude".to_owned(),
        account: Some("sha256:bench".to_owned()),
        model: Some(
            ["claude-sonnet-4-5", "claude-haiku-4-5", "fake-agent"][(i % 3) as usize].to_owned(),
        ),
        at_ms: 1_800_000_000_000 + i as i64 * 1000,
        tokens: Tokens {
            input: 1000 + i % 97,
            output: 200 + i % 31,
            cache_write: i % 7,
            cache_read: 5000 + i % 13,
        },
        status: Some(200),
        source: UsageSource::Proxy,
        agent_cost_usd: None,
    }
}

/// The usage ledger (issue 29): what recording one proxied request costs
/// (a new row, a second sighting of one folded in, and an agent's own
/// record of it matched by its counts), and summing
/// 100,000 requests per session and model (`hangar usage`'s query).
fn ledger(c: &mut Criterion) {
    let dir = TempDir::new().expect("tempdir");
    let path = dir.path().join("hangar.db");
    drop(Store::open(&path).expect("open"));
    let mut ledger = hangar_store::UsageLedger::open(&path).expect("ledger");
    for i in 0..100_000 {
        ledger.record(&request(i)).expect("record");
    }
    let mut n = 100_000u64;
    c.bench_function(
        "ledger: record one proxied request (100k in the ledger)",
        |b| {
            b.iter(|| {
                n += 1;
                ledger.record(&request(n)).expect("record")
            })
        },
    );
    c.bench_function("ledger: fold a second sighting of one request", |b| {
        b.iter(|| ledger.record(&request(n)).expect("record"))
    });
    // A request an agent's own records name without the provider's id (an
    // OpenCode message): matched to the proxy's row by its counts.
    let mut own = request(n);
    own.request_key = format!("{}opencode:msg_bench", hangar_core::usage::OWN_KEY_PREFIX);
    own.source = hangar_core::usage::UsageSource::Transcript;
    c.bench_function(
        "ledger: fold an agent's own record into the proxy's row",
        |b| b.iter(|| ledger.record(&own).expect("record")),
    );
    c.bench_function("ledger: sums of 100k requests per session and model", |b| {
        b.iter(|| black_box(ledger.sums_since(0, None).expect("sums")))
    });
}

criterion_group!(benches, store, ledger);
criterion_main!(benches);
