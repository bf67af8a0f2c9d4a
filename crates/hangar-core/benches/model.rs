//! The cost of the model rules on a large workspace: 10,000 sessions, 9 of
//! them in panes over 3 tabs, the rest parked and buried. `prune` and
//! `RestorePlan::new` run on every load, so they bound restore latency
//! before the first spawn.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hangar_core::fixtures::{field_workspace, large_workspace};
use hangar_core::{RestorePlan, prune};

fn model(c: &mut Criterion) {
    let large = large_workspace(10_000, 9);
    assert!(prune(large.clone()).1.is_empty(), "the fixture is closed");
    let field = field_workspace();

    c.bench_function("prune 10k sessions (closed)", |b| {
        b.iter_batched(
            || large.clone(),
            |ws| black_box(prune(ws)),
            BatchSize::LargeInput,
        )
    });
    c.bench_function("restore plan 10k sessions", |b| {
        b.iter_batched(
            || large.clone(),
            |ws| black_box(RestorePlan::new(ws)),
            BatchSize::LargeInput,
        )
    });
    c.bench_function("restore plan field workspace (49)", |b| {
        b.iter_batched(
            || field.clone(),
            |ws| black_box(RestorePlan::new(ws)),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("large_workspace fixture build 10k", |b| {
        b.iter(|| black_box(large_workspace(10_000, 9)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = model
}
criterion_main!(benches);
