//! Keyboard input for the TUI and `hangar attach`: raw terminal bytes
//! decoded into keys, the bytes typed in pass-through mode split into "for
//! the pane" and "the prefix key was pressed", and the detach key.
//!
//! The TUI reads stdin itself instead of using crossterm's event reader so
//! that pass-through forwards exactly the bytes the user typed (bracketed
//! paste included); only command mode needs keys decoded. An attached
//! terminal's input (read by the daemon when it holds the terminal, else by
//! `hangar attach`) is split with the same paste-aware filter
//! (`DetachFilter`).

/// The default prefix key: Ctrl-b, as in tmux (`[attach] detach_key`
/// changes it).
pub const PREFIX: u8 = 0x02;

/// The `Key::Ctrl` letter a prefix byte decodes to (`0x02` -> `b`).
pub fn ctrl_letter(prefix: u8) -> char {
    (prefix | 0x60) as char
}

/// A detach sequence: a prefix byte then a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetachKey {
    pub prefix: u8,
    pub key: u8,
}

impl DetachKey {
    /// Parse `C-b d` style specs.
    pub fn parse(spec: &str) -> DetachKey {
        let mut parts = spec.split_whitespace();
        let prefix = parts
            .next()
            .and_then(|p| p.strip_prefix("C-"))
            .and_then(|c| c.bytes().next())
            .map(|c| c.to_ascii_lowercase() & 0x1f)
            .unwrap_or(0x02);
        let key = parts.next().and_then(|k| k.bytes().next()).unwrap_or(b'd');
        DetachKey { prefix, key }
    }

    pub fn describe(&self) -> String {
        format!("Ctrl-{} {}", (self.prefix | 0x60) as char, self.key as char)
    }
}

/// Splits keyboard input into bytes for the session and a detach request.
/// The prefix is found by the TUI's pass-through filter, so a prefix byte
/// inside a bracketed paste is pasted text, never the start of a detach.
#[derive(Debug)]
pub struct DetachFilter {
    key: DetachKey,
    prefix: PassThroughFilter,
    pending_prefix: bool,
}

impl DetachFilter {
    pub fn new(key: DetachKey) -> Self {
        DetachFilter {
            key,
            prefix: PassThroughFilter::new(key.prefix),
            pending_prefix: false,
        }
    }

    /// The start of a sequence a read cut off waits for its rest.
    pub fn pending(&self) -> bool {
        self.prefix.pending()
    }

    /// No byte came for the escape time: the bytes held go to the session.
    pub fn flush(&mut self) -> Vec<u8> {
        self.prefix.flush()
    }

    /// Returns the bytes to forward and whether the user asked to detach.
    pub fn feed(&mut self, input: &[u8]) -> (Vec<u8>, bool) {
        let mut out = Vec::with_capacity(input.len());
        let mut rest = input.to_vec();
        loop {
            if self.pending_prefix {
                let Some(&b) = rest.first() else {
                    return (out, false);
                };
                self.pending_prefix = false;
                if b == self.key.key {
                    return (out, true);
                }
                // Prefix twice sends one literal prefix; anything else passes
                // both (the key itself goes through the filter: it may start
                // a paste).
                out.push(self.key.prefix);
                if b == self.key.prefix {
                    rest.remove(0);
                }
            }
            let split = self.prefix.feed(&rest);
            out.extend_from_slice(&split.forward);
            match split.left {
                None => return (out, false),
                Some(after) => {
                    self.pending_prefix = true;
                    rest = after;
                }
            }
        }
    }
}

const PASTE_START: &[u8] = b"\x1b[200~";
const SHIFT_PAGE_UP: &[u8] = b"\x1b[5;2~";
const PASTE_END: &[u8] = b"\x1b[201~";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    /// Ctrl plus a letter, lower case (`Ctrl('b')` is the prefix).
    Ctrl(char),
    Enter,
    Esc,
    Backspace,
    Tab,
    BackTab,
    Up,
    Down,
    Left,
    Right,
    ShiftUp,
    ShiftDown,
    ShiftLeft,
    ShiftRight,
    PageUp,
    PageDown,
    ShiftPageUp,
    ShiftPageDown,
    Home,
    End,
    Mouse(Mouse),
    /// A sequence command mode has no use for.
    Other,
}

/// A mouse event (SGR encoding, `CSI < b ; x ; y M|m`), at a 0-based cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mouse {
    pub kind: MouseKind,
    pub col: u16,
    pub row: u16,
    /// The SGR button code as the terminal sent it (button, modifiers,
    /// motion and wheel bits), for passing the event on to a pane's program.
    pub button: u16,
    /// Sent as a release (`m`), not a press (`M`).
    pub released: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MouseKind {
    /// The left button went down.
    Press,
    /// Moved with the left button held.
    Drag,
    Release,
    WheelUp,
    WheelDown,
    /// Another button.
    Other,
}

/// Turns on mouse reporting (clicks, drags, SGR coordinates) in the outer
/// terminal, and off again (motion without a button too, which a pane's
/// program may have had turned on: `pane_mouse::outer_motion`).
pub const MOUSE_ON: &[u8] = b"\x1b[?1000h\x1b[?1002h\x1b[?1006h";
pub const MOUSE_OFF: &[u8] = b"\x1b[?1006l\x1b[?1003l\x1b[?1002l\x1b[?1000l";

/// The key a CSI sequence is, from its parameters and final character.
fn csi_key(params: &str, last: char) -> Key {
    match (params, last) {
        ("5", '~') => Key::PageUp,
        ("6", '~') => Key::PageDown,
        ("5;2", '~') => Key::ShiftPageUp,
        ("6;2", '~') => Key::ShiftPageDown,
        ("1" | "7", '~') | ("", 'H') => Key::Home,
        ("4" | "8", '~') | ("", 'F') => Key::End,
        (p, 'M' | 'm') if p.starts_with('<') => mouse(&p[1..], last == 'M').unwrap_or(Key::Other),
        _ => Key::Other,
    }
}

fn mouse(params: &str, down: bool) -> Option<Key> {
    let mut it = params.split(';').map(|v| v.parse::<u16>().ok());
    let (b, x, y) = (it.next()??, it.next()??, it.next()??);
    let kind = if b & 64 != 0 {
        if b & 1 == 0 {
            MouseKind::WheelUp
        } else {
            MouseKind::WheelDown
        }
    } else if b & 3 != 0 {
        MouseKind::Other
    } else if b & 32 != 0 {
        MouseKind::Drag
    } else if down {
        MouseKind::Press
    } else {
        MouseKind::Release
    };
    Some(Key::Mouse(Mouse {
        kind,
        col: x.saturating_sub(1),
        row: y.saturating_sub(1),
        button: b,
        released: !down,
    }))
}

/// The length of the CSI sequence at the start of `bytes` (which starts
/// with `ESC [`), if it is complete.
fn csi_len(bytes: &[u8]) -> Option<usize> {
    bytes
        .iter()
        .skip(2)
        .position(|b| (0x40..=0x7e).contains(b))
        .map(|p| p + 3)
}

/// How long an incomplete escape sequence (or UTF-8 character) waits for
/// the rest of its bytes before it is taken as it is: a lone ESC is then the
/// Esc key. A terminal writes a key's sequence in one go, but a read can
/// still end inside it (a 4 KiB PTY buffer full of mouse reports, an ssh
/// link's packets, a loaded machine). tmux waits 500 ms (`escape-time`),
/// which every vim user in tmux shortens: the wait delays each Esc typed
/// into a pane. 50 ms joins the halves a local or ssh terminal delivers
/// (they follow within a few milliseconds) and is below what a person
/// notices after pressing Esc.
pub const ESCAPE_TIME: std::time::Duration = std::time::Duration::from_millis(50);

/// What the bytes at the start of a buffer are.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// A key, and how many bytes it took.
    Key(Key, usize),
    /// The start of a key whose other bytes have not arrived.
    Incomplete,
}

/// The key at the start of `bytes` (not empty). With `last`, no more bytes
/// are coming: an incomplete sequence is taken as it is. Without it, a
/// decision is made only when no later byte could change it, so decoding a
/// stream cut anywhere gives the keys of the uncut stream.
fn step(bytes: &[u8], last: bool) -> Step {
    let more = |n: usize| {
        if last {
            Step::Key(Key::Other, n)
        } else {
            Step::Incomplete
        }
    };
    match bytes[0] {
        0x1b => match bytes.get(1) {
            None if last => Step::Key(Key::Esc, 1),
            None => Step::Incomplete,
            Some(0x1b) => Step::Key(Key::Esc, 1),
            Some(b'[') => csi(bytes, last),
            Some(b'O') => match bytes.get(2) {
                None => more(2),
                Some(&c) => Step::Key(
                    match c {
                        b'A' => Key::Up,
                        b'B' => Key::Down,
                        b'C' => Key::Right,
                        b'D' => Key::Left,
                        b'H' => Key::Home,
                        b'F' => Key::End,
                        _ => Key::Other,
                    },
                    3,
                ),
            },
            // Alt plus a key (one character): ignored in command mode.
            Some(_) => match utf8(&bytes[1..], last) {
                Step::Key(_, n) => Step::Key(Key::Other, 1 + n),
                Step::Incomplete => Step::Incomplete,
            },
        },
        b'\r' | b'\n' => Step::Key(Key::Enter, 1),
        b'\t' => Step::Key(Key::Tab, 1),
        0x7f | 0x08 => Step::Key(Key::Backspace, 1),
        c if c < 0x20 => Step::Key(Key::Ctrl((c | 0x60) as char), 1),
        _ => utf8(bytes, last),
    }
}

/// A CSI sequence (`ESC [`, parameter and intermediate bytes, a final byte).
fn csi(bytes: &[u8], last: bool) -> Step {
    for (i, &b) in bytes.iter().enumerate().skip(2) {
        if (0x40..=0x7e).contains(&b) {
            let params = String::from_utf8_lossy(&bytes[2..i]);
            let key = match (params.as_ref(), b) {
                ("", b'A') => Key::Up,
                ("", b'B') => Key::Down,
                ("", b'C') => Key::Right,
                ("", b'D') => Key::Left,
                ("", b'Z') => Key::BackTab,
                ("1;2", b'A') => Key::ShiftUp,
                ("1;2", b'B') => Key::ShiftDown,
                ("1;2", b'C') => Key::ShiftRight,
                ("1;2", b'D') => Key::ShiftLeft,
                (p, last) => csi_key(p, last as char),
            };
            return Step::Key(key, i + 1);
        }
        if !(0x20..=0x3f).contains(&b) {
            // Not a CSI byte (a control, another ESC): the sequence was
            // broken off; what follows is keys of its own.
            return Step::Key(Key::Other, i);
        }
    }
    if last {
        Step::Key(Key::Other, bytes.len())
    } else {
        Step::Incomplete
    }
}

/// One UTF-8 character; a byte that cannot start or continue one is the
/// replacement character, as `String::from_utf8_lossy` shows it.
fn utf8(bytes: &[u8], last: bool) -> Step {
    const BAD: Step = Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), 1);
    let len = match bytes[0] {
        0x00..=0x7f => return Step::Key(Key::Char(bytes[0] as char), 1),
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return BAD,
    };
    let have = bytes.len().min(len);
    // The second byte's range depends on the first (no overlong forms, no
    // surrogates, nothing past U+10FFFF), the later ones are 0x80..=0xbf.
    let second = match bytes[0] {
        0xe0 => 0xa0..=0xbf,
        0xed => 0x80..=0x9f,
        0xf0 => 0x90..=0xbf,
        0xf4 => 0x80..=0x8f,
        _ => 0x80..=0xbf,
    };
    for (i, b) in bytes[1..have].iter().enumerate() {
        let ok = if i == 0 {
            second.contains(b)
        } else {
            (0x80..=0xbf).contains(b)
        };
        if !ok {
            return BAD;
        }
    }
    if have < len {
        return if last { BAD } else { Step::Incomplete };
    }
    match std::str::from_utf8(&bytes[..len])
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) => Step::Key(Key::Char(c), len),
        None => BAD,
    }
}

/// Decodes terminal input into keys across reads: the bytes of a key cut
/// between two reads wait in here for the rest. `flush` takes them as they
/// are, once no byte came for `ESCAPE_TIME`.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole key, if its bytes have all arrived.
    pub fn next_key(&mut self) -> Option<Key> {
        self.take(false)
    }

    /// The next key, an incomplete one taken as it is (no more bytes are
    /// coming: the escape time passed).
    pub fn flush_key(&mut self) -> Option<Key> {
        self.take(true)
    }

    fn take(&mut self, last: bool) -> Option<Key> {
        if self.buf.is_empty() {
            return None;
        }
        match step(&self.buf, last) {
            Step::Key(key, n) => {
                self.buf.drain(..n);
                Some(key)
            }
            Step::Incomplete => None,
        }
    }

    /// Bytes not decoded yet (an incomplete key's, or keys after a switch
    /// to typing, which are the pane's bytes).
    pub fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Bytes wait for the rest of their key.
    pub fn pending(&self) -> bool {
        !self.buf.is_empty()
    }
}

/// Decode input that is complete as it is into keys.
#[cfg(test)]
fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut d = Decoder::default();
    d.push(bytes);
    std::iter::from_fn(|| d.flush_key()).collect()
}

/// What pass-through mode does with a chunk of input.
#[derive(Debug, PartialEq, Eq)]
pub struct PassThrough {
    /// Bytes for the focused pane.
    pub forward: Vec<u8>,
    /// Mouse events, which are the TUI's, not the pane's.
    pub mouse: Vec<Mouse>,
    /// The prefix key was pressed: leave pass-through; `rest` are the bytes
    /// typed after it, for command mode.
    pub left: Option<Vec<u8>>,
}

/// Splits pass-through input at the prefix key. Inside a bracketed paste the
/// prefix byte is pasted text, not a key.
#[derive(Debug)]
pub struct PassThroughFilter {
    prefix: u8,
    in_paste: bool,
    /// The start of a sequence the filter looks for (a paste marker, a
    /// mouse report, Shift-PageUp) that a read cut off: it waits for the
    /// rest of its bytes, or for `flush`.
    held: Vec<u8>,
}

impl Default for PassThroughFilter {
    fn default() -> Self {
        PassThroughFilter::new(PREFIX)
    }
}

impl PassThroughFilter {
    pub fn new(prefix: u8) -> Self {
        PassThroughFilter {
            prefix,
            in_paste: false,
            held: Vec::new(),
        }
    }

    /// Bytes wait for the rest of a sequence.
    pub fn pending(&self) -> bool {
        !self.held.is_empty()
    }

    /// The escape time passed: the bytes held are the pane's as they are.
    pub fn flush(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }

    pub fn feed(&mut self, input: &[u8]) -> PassThrough {
        let joined;
        let input = if self.held.is_empty() {
            input
        } else {
            let mut held = std::mem::take(&mut self.held);
            held.extend_from_slice(input);
            joined = held;
            &joined[..]
        };
        let mut forward = Vec::with_capacity(input.len());
        let mut mouse_events = Vec::new();
        let mut i = 0;
        while i < input.len() {
            let rest = &input[i..];
            if rest[0] == 0x1b && could_grow_into_a_sequence(rest) {
                self.held = rest.to_vec();
                break;
            }
            if rest.starts_with(PASTE_START) {
                self.in_paste = true;
                forward.extend_from_slice(PASTE_START);
                i += PASTE_START.len();
                continue;
            }
            if rest.starts_with(PASTE_END) {
                self.in_paste = false;
                forward.extend_from_slice(PASTE_END);
                i += PASTE_END.len();
                continue;
            }
            if !self.in_paste {
                if rest[0] == self.prefix {
                    return PassThrough {
                        forward,
                        mouse: mouse_events,
                        left: Some(rest[1..].to_vec()),
                    };
                }
                if rest.starts_with(SHIFT_PAGE_UP) {
                    // Scrolling back leaves typing for copy mode, a page up.
                    return PassThrough {
                        forward,
                        mouse: mouse_events,
                        left: Some(rest.to_vec()),
                    };
                }
                if rest.starts_with(b"\x1b[<")
                    && let Some(len) = csi_len(rest)
                {
                    let seq = String::from_utf8_lossy(&rest[2..len - 1]).into_owned();
                    if let Key::Mouse(m) = csi_key(&seq, rest[len - 1] as char) {
                        mouse_events.push(m);
                    }
                    i += len;
                    continue;
                }
            }
            forward.push(rest[0]);
            i += 1;
        }
        PassThrough {
            forward,
            mouse: mouse_events,
            left: None,
        }
    }
}

/// `bytes` (which starts with ESC) are the incomplete start of a sequence
/// the pass-through filter acts on.
fn could_grow_into_a_sequence(bytes: &[u8]) -> bool {
    let shorter_start = |seq: &[u8]| bytes.len() < seq.len() && seq.starts_with(bytes);
    shorter_start(PASTE_START)
        || shorter_start(PASTE_END)
        || shorter_start(SHIFT_PAGE_UP)
        || shorter_start(b"\x1b[<")
        || (bytes.starts_with(b"\x1b[<")
            && csi_len(bytes).is_none()
            && bytes[3..].iter().all(|b| (0x20..=0x3f).contains(b)))
}

/// Adapt typed bytes to the modes the pane's program switched on: the
/// outer terminal always sends plain arrows and paste markers, the program
/// may want application-cursor arrows and may not know about pastes.
pub fn adapt_for_pane(bytes: &[u8], application_cursor: bool, bracketed_paste: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if !bracketed_paste && (rest.starts_with(PASTE_START) || rest.starts_with(PASTE_END)) {
            i += PASTE_START.len();
            continue;
        }
        if application_cursor
            && rest.len() >= 3
            && rest[0] == 0x1b
            && rest[1] == b'['
            && matches!(rest[2], b'A'..=b'D')
        {
            out.extend_from_slice(&[0x1b, b'O', rest[2]]);
            i += 3;
            continue;
        }
        out.push(rest[0]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_detach_key_is_ctrl_b_d() {
        let k = DetachKey::parse("C-b d");
        assert_eq!(
            k,
            DetachKey {
                prefix: 0x02,
                key: b'd'
            }
        );
        assert_eq!(k.describe(), "Ctrl-b d");
    }

    #[test]
    fn prefix_then_detach_key_detaches_and_forwards_what_came_before() {
        let mut f = DetachFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(f.feed(b"ls\x02d"), (b"ls".to_vec(), true));
    }

    #[test]
    fn a_prefix_split_across_reads_still_detaches() {
        let mut f = DetachFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(f.feed(b"\x02"), (vec![], false));
        assert_eq!(f.feed(b"d"), (vec![], true));
    }

    #[test]
    fn a_prefix_inside_a_bracketed_paste_is_pasted_and_never_detaches() {
        let mut f = DetachFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(
            f.feed(b"\x1b[200~a\x02d"),
            (b"\x1b[200~a\x02d".to_vec(), false)
        );
        // Still inside the paste in the next read; after it, keys count again.
        assert_eq!(
            f.feed(b"\x02d\x1b[201~\x02d"),
            (b"\x02d\x1b[201~".to_vec(), true)
        );
    }

    #[test]
    fn prefix_twice_sends_one_literal_prefix_and_other_keys_pass() {
        let mut f = DetachFilter::new(DetachKey::parse("C-b d"));
        assert_eq!(f.feed(b"\x02\x02x\x02c"), (b"\x02x\x02c".to_vec(), false));
    }

    #[test]
    fn letters_arrows_and_controls_decode_to_keys() {
        assert_eq!(
            decode(b"a\x1b[A\x1b[D\x02\r\x7f\x1b"),
            vec![
                Key::Char('a'),
                Key::Up,
                Key::Left,
                Key::Ctrl('b'),
                Key::Enter,
                Key::Backspace,
                Key::Esc
            ]
        );
    }

    #[test]
    fn shift_arrows_and_backtab_decode() {
        assert_eq!(
            decode(b"\x1b[1;2C\x1b[Z"),
            vec![Key::ShiftRight, Key::BackTab]
        );
    }

    #[test]
    fn page_keys_and_mouse_events_decode() {
        assert_eq!(
            decode(b"\x1b[5~\x1b[6~\x1b[5;2~\x1b[<64;10;5M\x1b[<0;3;4M\x1b[<32;4;4M\x1b[<0;4;4m"),
            vec![
                Key::PageUp,
                Key::PageDown,
                Key::ShiftPageUp,
                Key::Mouse(Mouse {
                    kind: MouseKind::WheelUp,
                    col: 9,
                    row: 4,
                    button: 64,
                    released: false
                }),
                Key::Mouse(Mouse {
                    kind: MouseKind::Press,
                    col: 2,
                    row: 3,
                    button: 0,
                    released: false
                }),
                Key::Mouse(Mouse {
                    kind: MouseKind::Drag,
                    col: 3,
                    row: 3,
                    button: 32,
                    released: false
                }),
                Key::Mouse(Mouse {
                    kind: MouseKind::Release,
                    col: 3,
                    row: 3,
                    button: 0,
                    released: true
                }),
            ]
        );
    }

    #[test]
    fn mouse_events_while_typing_are_the_tuis_and_shift_page_up_leaves_for_copy_mode() {
        let mut f = PassThroughFilter::default();
        let out = f.feed(b"ab\x1b[<65;2;2Mc");
        assert_eq!(out.forward, b"abc");
        assert_eq!(
            out.mouse,
            vec![Mouse {
                kind: MouseKind::WheelDown,
                col: 1,
                row: 1,
                button: 65,
                released: false
            }]
        );
        let out = f.feed(b"x\x1b[5;2~y");
        assert_eq!(out.forward, b"x");
        assert_eq!(out.left, Some(b"\x1b[5;2~y".to_vec()));
    }

    /// Keys of `chunks` read one after the other, none late: the decoder
    /// waits for a cut key's rest, and the end is flushed.
    fn decode_chunks(chunks: &[&[u8]]) -> Vec<Key> {
        let mut d = Decoder::default();
        let mut keys = Vec::new();
        for c in chunks {
            d.push(c);
            keys.extend(std::iter::from_fn(|| d.next_key()));
        }
        keys.extend(std::iter::from_fn(|| d.flush_key()));
        keys
    }

    /// What the pass-through filter makes of `chunks`: the pane's bytes,
    /// the mouse events, and the bytes from the prefix key on (for command
    /// mode, with every chunk after it).
    fn filter_chunks(chunks: &[&[u8]]) -> (Vec<u8>, Vec<Mouse>, Option<Vec<u8>>) {
        let mut f = PassThroughFilter::default();
        let (mut forward, mut mouse) = (Vec::new(), Vec::new());
        for (i, c) in chunks.iter().enumerate() {
            let out = f.feed(c);
            forward.extend(out.forward);
            mouse.extend(out.mouse);
            if let Some(mut left) = out.left {
                left.extend(chunks[i + 1..].concat());
                return (forward, mouse, Some(left));
            }
        }
        forward.extend(f.flush());
        (forward, mouse, None)
    }

    #[test]
    fn an_escape_sequence_cut_after_its_esc_is_still_one_key() {
        assert_eq!(decode_chunks(&[b"\x1b", b"[A"]), vec![Key::Up]);
        let mut d = Decoder::default();
        d.push(b"\x1b");
        assert_eq!(d.next_key(), None, "the ESC waits for the rest");
        assert!(d.pending());
        d.push(b"[<64;3;4");
        assert_eq!(d.next_key(), None);
        d.push(b"M");
        assert!(matches!(d.next_key(), Some(Key::Mouse(m)) if m.kind == MouseKind::WheelUp));
        assert!(!d.pending());
    }

    #[test]
    fn a_lone_esc_is_the_esc_key_once_the_escape_time_passed() {
        let mut d = Decoder::default();
        d.push(b"\x1b");
        assert_eq!(d.next_key(), None);
        assert_eq!(d.flush_key(), Some(Key::Esc));
        assert!(!d.pending());
        // Esc Esc is two Esc keys without waiting for the first.
        d.push(b"\x1b\x1b");
        assert_eq!(d.next_key(), Some(Key::Esc));
        assert_eq!(d.flush_key(), Some(Key::Esc));
    }

    #[test]
    fn a_utf8_character_cut_between_reads_is_one_character() {
        let e = "é".as_bytes();
        assert_eq!(decode_chunks(&[&e[..1], &e[1..]]), vec![Key::Char('é')]);
        let crab = "🦀".as_bytes();
        assert_eq!(
            decode_chunks(&[&crab[..1], &crab[1..3], &crab[3..]]),
            vec![Key::Char('🦀')]
        );
        // Bytes that are no UTF-8 are each the replacement character.
        assert_eq!(
            decode(b"\xff\xc3x"),
            vec![
                Key::Char(char::REPLACEMENT_CHARACTER),
                Key::Char(char::REPLACEMENT_CHARACTER),
                Key::Char('x')
            ]
        );
    }

    #[test]
    fn a_broken_off_sequence_does_not_swallow_the_keys_after_it() {
        assert_eq!(
            decode(b"\x1b[12\rq"),
            vec![Key::Other, Key::Enter, Key::Char('q')]
        );
    }

    #[test]
    fn pass_through_holds_a_cut_mouse_report_paste_marker_or_shift_page_up() {
        let mut f = PassThroughFilter::default();
        let out = f.feed(b"ab\x1b[<64;2");
        assert_eq!(out.forward, b"ab");
        assert!(f.pending());
        let out = f.feed(b";3Mc");
        assert_eq!(out.forward, b"c");
        assert_eq!(out.mouse.len(), 1);
        let out = f.feed(b"\x1b[5;");
        assert_eq!(
            (out.forward.as_slice(), out.left.as_ref()),
            (&b""[..], None)
        );
        let out = f.feed(b"2~");
        assert_eq!(out.left, Some(b"\x1b[5;2~".to_vec()));
        // A lone Esc typed into the pane reaches it after the escape time.
        let mut f = PassThroughFilter::default();
        assert_eq!(f.feed(b"\x1b").forward, b"");
        assert_eq!(f.flush(), b"\x1b");
        // Other sequences are not held: they are the pane's program's.
        assert_eq!(f.feed(b"\x1b[1").forward, b"\x1b[1");
    }

    /// Input to cut: keys of every kind a terminal sends, in any order,
    /// and bytes of any value.
    fn terminal_input() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\x1b".to_vec()),
            Just(b"\x1b[A".to_vec()),
            Just(b"\x1bOB".to_vec()),
            Just(b"\x1b[1;2C".to_vec()),
            Just(b"\x1b[5;2~".to_vec()),
            Just(b"\x1b[6~".to_vec()),
            Just(b"\x1b[200~".to_vec()),
            Just(b"\x1b[201~".to_vec()),
            Just(b"\x1bx".to_vec()),
            Just(b"\x02".to_vec()),
            Just(b"\r".to_vec()),
            (0u16..200, 1u16..300, 1u16..100, any::<bool>()).prop_map(|(b, x, y, up)| format!(
                "\x1b[<{b};{x};{y}{}",
                if up { 'm' } else { 'M' }
            )
            .into_bytes()),
            any::<char>().prop_map(|c| c.to_string().into_bytes()),
            "[a-z ]{1,4}".prop_map(String::into_bytes),
            proptest::collection::vec(any::<u8>(), 1..4),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    /// `input` cut at the given points (sorted, deduplicated, in range).
    fn cut<'a>(input: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
        let mut at: Vec<usize> = points.iter().map(|p| p % (input.len() + 1)).collect();
        at.sort_unstable();
        at.dedup();
        let mut chunks = Vec::new();
        let mut from = 0;
        for p in at {
            chunks.push(&input[from..p]);
            from = p;
        }
        chunks.push(&input[from..]);
        chunks
    }

    proptest! {
        #[test]
        fn input_cut_at_every_point_decodes_to_the_keys_of_the_uncut_input(
            input in terminal_input()
        ) {
            let whole = decode_chunks(&[&input]);
            let filtered = filter_chunks(&[&input]);
            for at in 0..=input.len() {
                let (a, b) = input.split_at(at);
                prop_assert_eq!(&decode_chunks(&[a, b]), &whole, "cut at {}", at);
                prop_assert_eq!(&filter_chunks(&[a, b]), &filtered, "cut at {}", at);
            }
        }

        #[test]
        fn input_cut_into_random_chunks_decodes_to_the_keys_of_the_uncut_input(
            input in terminal_input(),
            points in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let chunks = cut(&input, &points);
            prop_assert_eq!(decode_chunks(&chunks), decode_chunks(&[&input]));
            prop_assert_eq!(filter_chunks(&chunks), filter_chunks(&[&input]));
        }
    }

    #[test]
    fn unknown_csi_sequences_are_one_other_key() {
        assert_eq!(decode(b"\x1b[15~x"), vec![Key::Other, Key::Char('x')]);
    }

    #[test]
    fn pass_through_stops_at_the_prefix_and_hands_the_rest_to_command_mode() {
        let mut f = PassThroughFilter::default();
        let out = f.feed(b"ls\x02%");
        assert_eq!(out.forward, b"ls");
        assert_eq!(out.left, Some(b"%".to_vec()));
    }

    #[test]
    fn a_prefix_byte_inside_a_paste_is_pasted_not_a_key() {
        let mut f = PassThroughFilter::default();
        let out = f.feed(b"\x1b[200~a\x02b");
        assert_eq!(out.left, None);
        let out = f.feed(b"c\x1b[201~\x02");
        assert_eq!(out.forward, b"c\x1b[201~");
        assert_eq!(out.left, Some(vec![]));
    }

    #[test]
    fn another_prefix_key_splits_pass_through_and_ctrl_b_is_then_typed() {
        let mut f = PassThroughFilter::new(0x01);
        let out = f.feed(b"a\x02b\x01z");
        assert_eq!(out.forward, b"a\x02b");
        assert_eq!(out.left, Some(b"z".to_vec()));
        assert_eq!(ctrl_letter(0x01), 'a');
        assert_eq!(ctrl_letter(PREFIX), 'b');
    }

    #[test]
    fn arrows_follow_the_panes_cursor_mode_and_paste_markers_are_dropped_when_unwanted() {
        assert_eq!(adapt_for_pane(b"\x1b[A", true, true), b"\x1bOA");
        assert_eq!(adapt_for_pane(b"\x1b[A", false, true), b"\x1b[A");
        assert_eq!(adapt_for_pane(b"\x1b[200~hi\x1b[201~", false, false), b"hi");
        assert_eq!(
            adapt_for_pane(b"\x1b[200~hi\x1b[201~", false, true),
            b"\x1b[200~hi\x1b[201~"
        );
    }
}
