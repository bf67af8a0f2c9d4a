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

criterion_group!(benches, store);
criterion_main!(benches);
