//! Channels over one byte stream: how one SSH connection carries every
//! connection a hangar process makes to another machine's daemon.
//!
//! The stream between a client and `hangar bridge --mux` is a sequence of
//! frames in the ordinary framing (`frame`), with tags of their own: a
//! channel is opened by the client, carries the daemon connection's bytes
//! both ways untouched (the daemon's own frames, handshake included, inside
//! them), and is closed by either side. The tags are permanent, and never
//! used on the daemon socket itself, so a mux frame that reaches a daemon by
//! mistake is an unknown tag there, not a request.

use crate::frame;

/// Client to bridge: open channel N (a fresh connection to the daemon).
pub const TAG_OPEN: u8 = 16;
/// Either way: bytes of channel N's daemon connection.
pub const TAG_CHANNEL_DATA: u8 = 17;
/// Either way: channel N is closed; from the bridge, the rest of the
/// payload says why when the daemon could not be reached.
pub const TAG_CLOSE: u8 = 18;
/// Bridge to client, once, first: the bridge speaks this mux version.
pub const TAG_MUX_READY: u8 = 19;

/// The mux version this build speaks.
pub const MUX_VERSION: u32 = 1;

/// The most bytes of a daemon connection one frame carries.
pub const MAX_CHUNK: usize = 64 * 1024;

/// One frame of the mux stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MuxFrame {
    Open(u32),
    Data(u32, Vec<u8>),
    Close(u32, String),
    Ready(u32),
    /// A tag this build does not know (a newer peer's): skipped.
    Unknown(u8),
}

impl MuxFrame {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            MuxFrame::Open(ch) => frame::encode_into(out, TAG_OPEN, &ch.to_be_bytes()),
            MuxFrame::Ready(v) => frame::encode_into(out, TAG_MUX_READY, &v.to_be_bytes()),
            MuxFrame::Data(ch, bytes) => encode_with_channel(out, TAG_CHANNEL_DATA, *ch, bytes),
            MuxFrame::Close(ch, why) => {
                encode_with_channel(out, TAG_CLOSE, *ch, why.as_bytes());
            }
            MuxFrame::Unknown(_) => {}
        }
    }

    /// A frame from its tag and payload (as `frame::Decoder::next_raw`
    /// gives them); `None` when a known tag's payload is too short.
    pub fn decode(tag: u8, payload: &[u8]) -> Option<MuxFrame> {
        let channel = || {
            payload
                .get(..4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        Some(match tag {
            TAG_OPEN => MuxFrame::Open(channel()?),
            TAG_MUX_READY => MuxFrame::Ready(channel()?),
            TAG_CHANNEL_DATA => MuxFrame::Data(channel()?, payload[4..].to_vec()),
            TAG_CLOSE => MuxFrame::Close(
                channel()?,
                String::from_utf8_lossy(&payload[4..]).into_owned(),
            ),
            other => MuxFrame::Unknown(other),
        })
    }
}

fn encode_with_channel(out: &mut Vec<u8>, tag: u8, channel: u32, bytes: &[u8]) {
    let len = (bytes.len() + 5) as u32;
    out.extend_from_slice(&len.to_be_bytes());
    out.push(tag);
    out.extend_from_slice(&channel.to_be_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Decoder, MAX_CLIENT_FRAME};
    use proptest::prelude::*;

    fn decode_all(wire: &[u8], cut: usize) -> Vec<MuxFrame> {
        let mut d = Decoder::new(MAX_CLIENT_FRAME);
        let mut out = Vec::new();
        for part in [&wire[..cut], &wire[cut..]] {
            d.push(part);
            while let Ok(Some((tag, payload))) = d.next_raw() {
                out.push(MuxFrame::decode(tag, &payload).expect("well formed"));
            }
        }
        out
    }

    #[test]
    fn a_short_payload_is_refused_not_read_past_its_end() {
        assert_eq!(MuxFrame::decode(TAG_CHANNEL_DATA, &[0, 1]), None);
        assert_eq!(MuxFrame::decode(99, b"later"), Some(MuxFrame::Unknown(99)));
    }

    proptest! {
        #[test]
        fn mux_frames_round_trip_whatever_the_read_boundaries(
            frames in proptest::collection::vec(prop_oneof![
                any::<u32>().prop_map(MuxFrame::Open),
                any::<u32>().prop_map(MuxFrame::Ready),
                (any::<u32>(), proptest::collection::vec(any::<u8>(), 0..300)).prop_map(|(c, b)| MuxFrame::Data(c, b)),
                (any::<u32>(), "[a-z ]{0,40}").prop_map(|(c, s)| MuxFrame::Close(c, s)),
            ], 0..12),
            cut in 0usize..4000,
        ) {
            let mut wire = Vec::new();
            for f in &frames {
                f.encode_into(&mut wire);
            }
            let cut = cut.min(wire.len());
            prop_assert_eq!(decode_all(&wire, cut), frames);
        }
    }
}
