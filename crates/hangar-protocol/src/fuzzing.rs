//! The bodies of the protocol's fuzz targets, shared by `cargo fuzz` (the
//! `fuzz/` crate, nightly) and the bounded corpus-and-proptest run in the
//! normal test suite (stable), so both exercise exactly the same code.
//!
//! Each target panics only when an invariant breaks; any input at all must
//! otherwise be handled. They must never allocate in proportion to a length
//! the input merely claims.

use crate::frame::{Decoder, Frame, FrameError};
use crate::message::Request;

/// The largest frame the fuzzed decoder accepts: small, so oversized-frame
/// skipping is reached often.
pub const FUZZ_MAX_FRAME: usize = 256;

/// Feed `data` to a decoder in chunks (each chunk's length is taken from the
/// input itself), draining frames after every push. Checks that the decoder
/// never buffers more than one frame plus one chunk, that a decoded frame is
/// within the limit, and that every message frame goes through the request
/// parser too.
pub fn frame_decoder(data: &[u8]) {
    let mut d = Decoder::new(FUZZ_MAX_FRAME);
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let take = (n as usize % 64 + 1).min(tail.len());
        let (chunk, after) = tail.split_at(take);
        rest = after;
        d.push(chunk);
        // A frame needs at least 5 bytes, so this many pops always drain.
        for _ in 0..=chunk.len() + 1 {
            match d.next_frame() {
                Ok(None) => break,
                Ok(Some(Frame::Message(p))) => {
                    assert!(p.len() < FUZZ_MAX_FRAME);
                    request_parser(&p);
                }
                Ok(Some(Frame::Data(p))) => assert!(p.len() < FUZZ_MAX_FRAME),
                Ok(Some(Frame::Unknown { len, .. })) => assert!(len <= FUZZ_MAX_FRAME),
                Err(FrameError::TooLarge { len, max }) => assert!(len > max),
                Err(FrameError::Empty) => {}
            }
        }
        assert!(
            d.buffered() <= FUZZ_MAX_FRAME + 4 + 64,
            "the decoder buffered {} bytes",
            d.buffered()
        );
    }
}

/// Parse `data` as a request payload. A payload that decodes must encode
/// back to one that decodes to the same request (kind names are permanent).
pub fn request_parser(data: &[u8]) {
    if let Ok((id, req)) = Request::decode(data) {
        // A ratio beyond f32's range decodes to infinity, which JSON cannot
        // carry back; the daemon refuses it (`op_ratio`), so it never
        // reaches the model or the store.
        if let Request::Ratio(r) = &req
            && !r.ratio.is_finite()
        {
            return;
        }
        let again = req.encode(id);
        let (id2, req2) = Request::decode(&again)
            .unwrap_or_else(|e| panic!("a decoded request does not re-decode: {}", e.message));
        assert_eq!(id, id2);
        assert_eq!(req, req2, "a request changed on a round trip");
    }
}
