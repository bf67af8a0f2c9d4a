//! Keyboard input for the TUI and `hangar attach`: raw terminal bytes
//! decoded into keys, the bytes typed in pass-through mode split into "for
//! the pane" and "the prefix key was pressed", and the detach key.
//!
//! The TUI reads stdin itself instead of using crossterm's event reader so
//! that pass-through forwards exactly the bytes the user typed (bracketed
//! paste included); only command mode needs keys decoded. `hangar attach`
//! splits its input with the same paste-aware filter.

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

/// Decode a chunk of terminal input into keys. A lone ESC at the end of a
/// chunk is the Esc key (terminals send a whole escape sequence in one
/// write). Pasted text arrives as its characters.
pub fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let key = match c {
            '\r' | '\n' => Key::Enter,
            '\t' => Key::Tab,
            '\x7f' | '\x08' => Key::Backspace,
            '\x1b' => {
                let rest = &chars[i..];
                match rest {
                    [] => Key::Esc,
                    ['[', 'A', ..] | ['O', 'A', ..] => {
                        i += 2;
                        Key::Up
                    }
                    ['[', 'B', ..] | ['O', 'B', ..] => {
                        i += 2;
                        Key::Down
                    }
                    ['[', 'C', ..] | ['O', 'C', ..] => {
                        i += 2;
                        Key::Right
                    }
                    ['[', 'D', ..] | ['O', 'D', ..] => {
                        i += 2;
                        Key::Left
                    }
                    ['[', 'Z', ..] => {
                        i += 2;
                        Key::BackTab
                    }
                    ['[', '1', ';', '2', d, ..] if matches!(d, 'A'..='D') => {
                        let d = *d;
                        i += 5;
                        match d {
                            'A' => Key::ShiftUp,
                            'B' => Key::ShiftDown,
                            'C' => Key::ShiftRight,
                            _ => Key::ShiftLeft,
                        }
                    }
                    ['[', ..] => {
                        // Page keys, Home/End and the mouse; any other CSI
                        // sequence (paste markers, function keys) is skipped.
                        match rest[1..].iter().position(|c| ('\x40'..='\x7e').contains(c)) {
                            Some(p) => {
                                let params: String = rest[1..p + 1].iter().collect();
                                let last = rest[p + 1];
                                i += p + 2;
                                csi_key(&params, last)
                            }
                            None => {
                                i += rest.len();
                                Key::Other
                            }
                        }
                    }
                    ['\x1b', ..] => Key::Esc,
                    _ => {
                        // Alt plus a key: ignored in command mode.
                        i += 1;
                        Key::Other
                    }
                }
            }
            c if (c as u32) < 0x20 => Key::Ctrl(((c as u8) | 0x60) as char),
            c => Key::Char(c),
        };
        keys.push(key);
    }
    keys
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
        }
    }

    pub fn feed(&mut self, input: &[u8]) -> PassThrough {
        let mut forward = Vec::with_capacity(input.len());
        let mut mouse_events = Vec::new();
        let mut i = 0;
        while i < input.len() {
            let rest = &input[i..];
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
