//! Fuzz the frame decoder with arbitrary byte streams cut into arbitrary
//! chunks (see `hangar_protocol::fuzzing::frame_decoder`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hangar_protocol::fuzzing::frame_decoder(data);
});
