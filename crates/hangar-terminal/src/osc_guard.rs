//! Bounds operating-system commands (`ESC ] ... BEL`) before the parser sees
//! them.
//!
//! The parser (vte, as alacritty builds it) collects an OSC's bytes in a
//! vector with no limit until its terminator: a program printing `ESC ]0;`
//! and then endless text grew the daemon's memory without bound. This guard
//! passes the first [`MAX_OSC`] bytes of each OSC and drops the rest, so the
//! OSC still ends where the program ended it, just truncated.

/// Bytes of one OSC passed to the parser (a title, a hyperlink, a colour).
pub(crate) const MAX_OSC: usize = 4096;

#[derive(Default)]
enum State {
    #[default]
    Ground,
    /// Saw ESC: the next byte may open an OSC.
    Escape,
    /// Inside an OSC, with this many bytes passed so far.
    Osc(usize),
}

#[derive(Default)]
pub(crate) struct OscGuard {
    state: State,
}

/// Bytes that end an OSC in vte's state table: BEL, CAN, SUB, ESC.
fn ends_osc(b: u8) -> bool {
    matches!(b, 0x07 | 0x18 | 0x1a | 0x1b)
}

impl OscGuard {
    /// Outside any escape sequence: plain bytes pass through unchanged.
    pub(crate) fn is_ground(&self) -> bool {
        matches!(self.state, State::Ground)
    }

    /// Call `out` with the parts of `bytes` to parse, in order.
    pub(crate) fn filter(&mut self, bytes: &[u8], mut out: impl FnMut(&[u8])) {
        let mut i = 0;
        let mut from = 0;
        while i < bytes.len() {
            match self.state {
                State::Ground => match memchr::memchr(0x1b, &bytes[i..]) {
                    Some(at) => {
                        i += at + 1;
                        self.state = State::Escape;
                    }
                    None => break,
                },
                State::Escape => {
                    self.state = if bytes[i] == b']' {
                        State::Osc(0)
                    } else if bytes[i] == 0x1b {
                        State::Escape
                    } else {
                        State::Ground
                    };
                    i += 1;
                }
                State::Osc(passed) => {
                    let rest = &bytes[i..];
                    let end = rest.iter().position(|&b| ends_osc(b));
                    let body = end.unwrap_or(rest.len());
                    let room = MAX_OSC.saturating_sub(passed);
                    if body > room {
                        // Pass what fits, drop the rest of the body.
                        out(&bytes[from..i + room]);
                        from = i + body;
                    }
                    match end {
                        Some(at) => {
                            i += at + 1;
                            self.state = if rest[at] == 0x1b {
                                State::Escape
                            } else {
                                State::Ground
                            };
                        }
                        None => {
                            i = bytes.len();
                            self.state = State::Osc(passed.saturating_add(body).min(MAX_OSC));
                        }
                    }
                }
            }
        }
        if from < bytes.len() {
            out(&bytes[from..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(guard: &mut OscGuard, chunks: &[&[u8]]) -> Vec<u8> {
        let mut passed = Vec::new();
        for c in chunks {
            guard.filter(c, |p| passed.extend_from_slice(p));
        }
        passed
    }

    #[test]
    fn ordinary_output_passes_unchanged() {
        let input = b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07 done\r\n";
        assert_eq!(run(&mut OscGuard::default(), &[input]), input.to_vec());
    }

    #[test]
    fn an_endless_osc_is_cut_to_its_first_bytes_across_chunks() {
        let mut g = OscGuard::default();
        let big = vec![b'a'; 3000];
        let mut chunks: Vec<&[u8]> = vec![b"\x1b]0;"];
        for _ in 0..100 {
            chunks.push(&big);
        }
        chunks.push(b"\x07after");
        let passed = run(&mut g, &chunks);
        assert_eq!(passed.len(), 2 + MAX_OSC + b"\x07after".len());
        assert!(passed.ends_with(b"\x07after"));
    }
}
