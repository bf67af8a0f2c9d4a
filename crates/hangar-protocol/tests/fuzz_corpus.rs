//! The fuzz targets of `fuzz/` run on stable, bounded, in the normal test
//! suite: every file of the committed corpus, then generated inputs
//! (arbitrary bytes, and corpus entries with bytes flipped, cut or spliced).
//! The nightly `cargo fuzz` run explores further; anything it finds goes into
//! the corpus, and from then on this test replays it on every run.
//!
//! `HANGAR_LONG_TESTS=1` raises the number of generated cases tenfold.

use std::fs;
use std::path::PathBuf;

use hangar_protocol::fuzzing::{frame_decoder, request_parser};
use proptest::prelude::*;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("corpus")
        .join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {} is missing: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| fs::read(p).expect("read corpus file"))
        .collect()
}

fn cases() -> u32 {
    if std::env::var("HANGAR_LONG_TESTS").is_ok_and(|v| v == "1") {
        20_000
    } else {
        2_000
    }
}

#[test]
fn every_frame_decoder_corpus_entry_is_handled() {
    let entries = corpus("frame_decoder");
    assert!(entries.len() >= 10, "the frame corpus is too small");
    for e in &entries {
        frame_decoder(e);
    }
}

#[test]
fn every_request_parser_corpus_entry_is_handled() {
    let entries = corpus("request_parser");
    assert!(entries.len() >= 10, "the request corpus is too small");
    for e in &entries {
        request_parser(e);
    }
}

/// A corpus entry with `edits` applied: (position, byte) overwrites, then a
/// cut somewhere in its second half, then `tail` appended.
fn mutate(base: &[u8], edits: &[(usize, u8)], cut: usize, tail: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for &(at, b) in edits {
        if !v.is_empty() {
            let i = at % v.len();
            v[i] = b;
        }
    }
    let keep = if v.is_empty() { 0 } else { cut % (v.len() + 1) };
    v.truncate(keep.max(v.len() / 2));
    v.extend_from_slice(tail);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn the_frame_decoder_target_holds_for_arbitrary_bytes(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        frame_decoder(&data);
    }

    #[test]
    fn the_request_parser_target_holds_for_arbitrary_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        request_parser(&data);
    }

    #[test]
    fn the_targets_hold_for_mutated_corpus_entries(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in any::<usize>(),
        tail in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let frames = corpus("frame_decoder");
        let requests = corpus("request_parser");
        let f = &frames[pick.index(frames.len())];
        let r = &requests[pick.index(requests.len())];
        frame_decoder(&mutate(f, &edits, cut, &tail));
        request_parser(&mutate(r, &edits, cut, &tail));
    }

    #[test]
    fn the_request_parser_target_holds_for_any_json_shape(
        id in prop_oneof![
            Just(serde_json::json!(1)), Just(serde_json::json!(-1)), Just(serde_json::json!("x")),
            Just(serde_json::json!(null)), Just(serde_json::json!(u64::MAX))
        ],
        kind in prop_oneof![
            Just("hello"), Just("new"), Just("send"), Just("close"), Just("attach"),
            Just("resize"), Just("tab_new"), Just("import"), Just("ratio"), Just("evict"),
            Just("close_idle"), Just("focus"), Just("history"), Just("nope"), Just("")
        ],
        body in prop_oneof![
            Just(serde_json::json!(null)), Just(serde_json::json!({})), Just(serde_json::json!([])),
            Just(serde_json::json!({"session": "a", "text": "b", "rows": 70000, "cols": -1})),
            Just(serde_json::json!({"session": 5, "title": {"x": 1}})),
            Just(serde_json::json!({"ratio": 1e308, "session": "a"})),
        ],
    ) {
        let payload = serde_json::json!({"id": id, "kind": kind, "body": body}).to_string();
        request_parser(payload.as_bytes());
    }
}
