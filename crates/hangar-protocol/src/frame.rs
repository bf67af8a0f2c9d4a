//! Framing of the control socket byte stream.
//!
//! Every frame is `u32 big-endian length` + `u8 tag` + payload, where the
//! length counts the tag and the payload. The tag says how to read the
//! payload; tags are permanent and never renumbered. A frame with a tag this
//! build does not know decodes to [`Frame::Unknown`] so an older peer can
//! answer "unsupported" instead of breaking the connection.

use thiserror::Error;

/// A JSON control message (requests, replies, events).
pub const TAG_MESSAGE: u8 = 1;
/// Raw terminal bytes: session output to an attached client, or keyboard
/// input from it.
pub const TAG_DATA: u8 = 2;

/// The largest frame a client may send the daemon. Requests are small; a
/// bigger one is refused before it is read into memory.
pub const MAX_CLIENT_FRAME: usize = 1024 * 1024;
/// The largest frame a client accepts from the daemon. The daemon is the
/// same user's own process, so this only guards against a corrupt stream; it
/// was 16 MiB, and `ls --json` of 100,000 sessions (about 50 MB) failed.
pub const MAX_SERVER_FRAME: usize = 512 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    Message(Vec<u8>),
    Data(Vec<u8>),
    Unknown { tag: u8, len: usize },
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame of {len} bytes is larger than the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("empty frame (a frame carries at least its tag byte)")]
    Empty,
}

/// Encode one frame.
pub fn encode(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    encode_into(&mut out, tag, payload);
    out
}

pub fn encode_into(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    let len = (payload.len() + 1) as u32;
    out.extend_from_slice(&len.to_be_bytes());
    out.push(tag);
    out.extend_from_slice(payload);
}

/// Incremental decoder over a byte buffer: push bytes as they arrive, pop
/// whole frames. It never holds more than one frame plus one read chunk.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    max: usize,
    /// Bytes of an unknown or oversized frame still to skip.
    skipping: usize,
}

impl Decoder {
    pub fn new(max_frame: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            max: max_frame,
            skipping: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let mut bytes = bytes;
        if self.skipping > 0 {
            let n = self.skipping.min(bytes.len());
            self.skipping -= n;
            bytes = &bytes[n..];
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed. An
    /// oversized frame is reported once and its payload skipped, so the
    /// stream stays in sync.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        Ok(self.next_raw()?.map(|(tag, payload)| match tag {
            TAG_MESSAGE => Frame::Message(payload),
            TAG_DATA => Frame::Data(payload),
            tag => Frame::Unknown {
                tag,
                len: payload.len() + 1,
            },
        }))
    }

    /// The next complete frame as its tag and payload, whatever the tag
    /// (the mux stream of `mux` has tags of its own).
    pub fn next_raw(&mut self) -> Result<Option<(u8, Vec<u8>)>, FrameError> {
        if self.skipping > 0 || self.buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
        if len == 0 {
            self.buf.drain(..4);
            return Err(FrameError::Empty);
        }
        if len > self.max {
            let available = self.buf.len() - 4;
            let skip_now = available.min(len);
            self.buf.drain(..4 + skip_now);
            self.skipping = len - skip_now;
            return Err(FrameError::TooLarge { len, max: self.max });
        }
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let tag = self.buf[4];
        let payload = self.buf[5..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some((tag, payload)))
    }

    /// Bytes buffered but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_split_across_reads_decode_whole() {
        let mut wire = encode(TAG_MESSAGE, b"{\"a\":1}");
        wire.extend(encode(TAG_DATA, b"hello"));
        let mut d = Decoder::new(MAX_CLIENT_FRAME);
        let mut frames = Vec::new();
        for b in &wire {
            d.push(std::slice::from_ref(b));
            while let Some(f) = d.next_frame().unwrap() {
                frames.push(f);
            }
        }
        assert_eq!(
            frames,
            vec![
                Frame::Message(b"{\"a\":1}".to_vec()),
                Frame::Data(b"hello".to_vec())
            ]
        );
    }

    #[test]
    fn an_unknown_tag_decodes_to_unknown_and_the_stream_continues() {
        let mut wire = encode(77, b"future");
        wire.extend(encode(TAG_DATA, b"x"));
        let mut d = Decoder::new(MAX_CLIENT_FRAME);
        d.push(&wire);
        assert_eq!(d.next_frame(), Ok(Some(Frame::Unknown { tag: 77, len: 7 })));
        assert_eq!(d.next_frame(), Ok(Some(Frame::Data(b"x".to_vec()))));
    }

    #[test]
    fn an_oversized_frame_is_refused_and_skipped_without_buffering_it() {
        let mut d = Decoder::new(16);
        let mut wire = encode(TAG_MESSAGE, &[b'x'; 100]);
        wire.extend(encode(TAG_DATA, b"ok"));
        d.push(&wire[..10]);
        assert_eq!(
            d.next_frame(),
            Err(FrameError::TooLarge { len: 101, max: 16 })
        );
        d.push(&wire[10..]);
        assert_eq!(d.next_frame(), Ok(Some(Frame::Data(b"ok".to_vec()))));
        assert!(d.buffered() == 0);
    }

    proptest! {
        #[test]
        fn any_byte_stream_never_panics_the_decoder(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32)) {
            let mut d = Decoder::new(128);
            for c in chunks {
                d.push(&c);
                for _ in 0..64 {
                    if let Ok(None) = d.next_frame() {
                        break;
                    }
                }
                prop_assert!(d.buffered() <= 128 + 64 + 4);
            }
        }

        #[test]
        fn encoded_frames_round_trip(tag in prop_oneof![Just(TAG_MESSAGE), Just(TAG_DATA)], payload in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut d = Decoder::new(MAX_CLIENT_FRAME);
            d.push(&encode(tag, &payload));
            let f = d.next_frame().unwrap().unwrap();
            let expected = if tag == TAG_MESSAGE { Frame::Message(payload) } else { Frame::Data(payload) };
            prop_assert_eq!(f, expected);
        }
    }
}
