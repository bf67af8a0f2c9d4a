//! Fuzz the Agent Code `workspace.json` importer: any bytes must give a
//! workspace or an error, never a panic, and an accepted workspace must be
//! closed (DESIGN.md rule 2) and export deterministically.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(report) = hangar_store::import_agent_code(text) {
        assert!(hangar_core::is_closed(&report.workspace));
        let once = hangar_store::export_json(&report.workspace);
        let again = hangar_store::import_hangar_json(&once).expect("an export re-imports");
        assert_eq!(hangar_store::export_json(&again.workspace), once);
    }
});
