//! Fuzz the request parser with arbitrary payloads (see
//! `hangar_protocol::fuzzing::request_parser`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hangar_protocol::fuzzing::request_parser(data);
});
