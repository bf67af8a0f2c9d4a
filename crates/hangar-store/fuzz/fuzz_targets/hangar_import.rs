//! Fuzz hangar's own export importer: never a panic, and whatever it accepts
//! round-trips byte-identically through export.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(report) = hangar_store::import_hangar_json(text) {
        let once = hangar_store::export_json(&report.workspace);
        let again = hangar_store::import_hangar_json(&once).expect("an export re-imports");
        assert_eq!(hangar_store::export_json(&again.workspace), once);
    }
});
