//! The mouse for a pane's own program, by tmux's rules with `mouse on`.
//!
//! A program that turned on mouse reporting (`CSI ? 1000/1002/1003 h`, with
//! the 1005 or 1006 encoding, or none) gets the events inside its pane, at
//! pane-relative cells, in the mode and encoding it asked for. The TUI knows
//! a pane's modes from the pane's own terminal: the daemon's attach stream
//! starts with a redraw that sets every mode the program had set, and the
//! program's later changes arrive in its output. What is passed on and how
//! it is written follows tmux's `input_key_get_mouse` (input-keys.c):
//! motion only in 1002/1003, motion without a button only in 1003, SGR
//! when asked for, else UTF-8 (1005) when asked for, else the legacy bytes
//! with coordinates clamped. Like tmux, 1015 (urxvt) is not spoken: such a
//! program gets the legacy encoding. The X10 mode (`CSI ? 9 h`) is not
//! spoken either: the daemon's engine (alacritty's) does not track it.
//!
//! Which events are the program's and which stay the TUI's (borders,
//! dividers, copy mode, a pane without mouse reporting) is `App::mouse`'s.

use hangar_terminal::{MouseEncoding as MouseProtocolEncoding, MouseMode as MouseProtocolMode};

use hangar_core::keys::Mouse;

/// The motion bit of a mouse button code.
const MOTION: u16 = 32;
/// The wheel bit (buttons 4 and 5 and beyond).
const WHEEL: u16 = 64;
/// The button bits; 3 is "no button" (a release in the legacy encoding).
const BUTTONS: u16 = 0b1100_0011;
const NO_BUTTON: u16 = 3;
/// Offsets of the legacy encodings (`CSI M Cb Cx Cy`).
const BUTTON_OFFSET: u32 = 0x20;
const POSITION_OFFSET: u32 = 0x21;
/// The largest value a legacy byte, and a UTF-8 (1005) character, carries.
const LEGACY_MAX: u32 = 0xff;
const UTF8_MAX: u32 = 0x7ff;

/// Arrow presses one wheel notch sends to a full-screen program without
/// mouse reporting: the wheel's three lines of history elsewhere.
pub const WHEEL_ARROWS: usize = 3;

/// Whether the event is a wheel notch (up or down).
pub fn is_wheel(m: &Mouse) -> bool {
    matches!(m.button & BUTTONS, b if b == WHEEL || b == WHEEL | 1)
}

/// Whether the event is a button going down (the wheel included).
pub fn is_press(m: &Mouse) -> bool {
    !m.released && m.button & MOTION == 0
}

/// Whether the outer terminal must report motion without a button held
/// (1003): some visible pane's program asked for it, as tmux turns it on
/// when a pane of the window has.
pub fn outer_motion(modes: impl IntoIterator<Item = MouseProtocolMode>) -> bool {
    modes.into_iter().any(|m| m == MouseProtocolMode::AnyMotion)
}

/// The bytes the program in a pane reads for `m` at the pane-relative cell
/// (`col`, `row`), 0-based; `None` when its mode does not report this event.
pub fn encode(
    m: &Mouse,
    col: u16,
    row: u16,
    mode: MouseProtocolMode,
    encoding: MouseProtocolEncoding,
) -> Option<Vec<u8>> {
    let motion = m.button & MOTION != 0;
    let moved_without_button = motion && m.button & BUTTONS == NO_BUTTON;
    match mode {
        MouseProtocolMode::None => return None,
        MouseProtocolMode::PressRelease if motion => return None,
        MouseProtocolMode::ButtonMotion if moved_without_button => return None,
        _ => {}
    }
    // A wheel has no release; some terminals send one anyway (tmux drops it).
    if m.released && is_wheel(m) {
        return None;
    }
    let (x, y) = (u32::from(col), u32::from(row));
    if encoding == MouseProtocolEncoding::Sgr {
        let end = if m.released { 'm' } else { 'M' };
        return Some(format!("\x1b[<{};{};{}{end}", m.button, x + 1, y + 1).into_bytes());
    }
    // The legacy encodings cannot say which button was released.
    let button = if m.released {
        u32::from(NO_BUTTON)
    } else {
        u32::from(m.button)
    };
    let mut out = b"\x1b[M".to_vec();
    if encoding == MouseProtocolEncoding::Utf8 {
        if button + BUTTON_OFFSET > UTF8_MAX
            || x + POSITION_OFFSET > UTF8_MAX
            || y + POSITION_OFFSET > UTF8_MAX
        {
            return None;
        }
        for v in [
            button + BUTTON_OFFSET,
            x + POSITION_OFFSET,
            y + POSITION_OFFSET,
        ] {
            let c = char::from_u32(v)?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        return Some(out);
    }
    if button + BUTTON_OFFSET > LEGACY_MAX {
        return None;
    }
    // Coordinates past what a byte holds are clamped to its last cell.
    for v in [
        button + BUTTON_OFFSET,
        (x + POSITION_OFFSET).min(LEGACY_MAX),
        (y + POSITION_OFFSET).min(LEGACY_MAX),
    ] {
        out.push(v as u8);
    }
    Some(out)
}

/// The keys one wheel notch sends to a program on the alternate screen that
/// did not ask for the mouse (a pager, an editor): arrows, as WezTerm does
/// and xterm's alternate scroll mode (1007). tmux did this too for a while
/// in 2014 (commit 353d1825, reverted in b8b00aad); today it drops the wheel
/// there, which leaves such a program unscrollable. Plain arrows: the pane
/// turns them into application-cursor ones when the program asked for those.
pub fn wheel_arrows(m: &Mouse) -> Option<Vec<u8>> {
    if !is_wheel(m) || m.released {
        return None;
    }
    let arrow: &[u8] = match m.button & BUTTONS {
        b if b == WHEEL => b"\x1b[A",
        b if b == WHEEL | 1 => b"\x1b[B",
        _ => return None,
    };
    Some(arrow.repeat(WHEEL_ARROWS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::keys::MouseKind;

    fn ev(button: u16, released: bool) -> Mouse {
        Mouse {
            kind: MouseKind::Other,
            col: 0,
            row: 0,
            button,
            released,
        }
    }

    const SGR: MouseProtocolEncoding = MouseProtocolEncoding::Sgr;
    const LEGACY: MouseProtocolEncoding = MouseProtocolEncoding::Default;
    const UTF8: MouseProtocolEncoding = MouseProtocolEncoding::Utf8;

    #[test]
    fn sgr_programs_get_press_and_release_at_one_based_pane_cells() {
        let mode = MouseProtocolMode::PressRelease;
        assert_eq!(
            encode(&ev(0, false), 18, 7, mode, SGR).unwrap(),
            b"\x1b[<0;19;8M"
        );
        assert_eq!(
            encode(&ev(0, true), 18, 7, mode, SGR).unwrap(),
            b"\x1b[<0;19;8m"
        );
        // Modifiers and the wheel keep their bits.
        assert_eq!(
            encode(&ev(64 | 4, false), 0, 0, mode, SGR).unwrap(),
            b"\x1b[<68;1;1M"
        );
    }

    #[test]
    fn legacy_programs_get_offset_bytes_a_release_as_button_3_and_clamped_cells() {
        let mode = MouseProtocolMode::PressRelease;
        assert_eq!(
            encode(&ev(2, false), 4, 9, mode, LEGACY).unwrap(),
            b"\x1b[M\x22\x25\x2a"
        );
        assert_eq!(
            encode(&ev(2, true), 4, 9, mode, LEGACY).unwrap(),
            b"\x1b[M\x23\x25\x2a"
        );
        assert_eq!(
            encode(&ev(0, false), 300, 1, mode, LEGACY).unwrap(),
            b"\x1b[M\x20\xff\x22"
        );
    }

    #[test]
    fn utf8_programs_get_wide_cells_as_two_byte_characters() {
        let mode = MouseProtocolMode::PressRelease;
        // 300 + 0x21 = 0x14d: U+014D is 0xc5 0x8d.
        assert_eq!(
            encode(&ev(0, false), 300, 1, mode, UTF8).unwrap(),
            b"\x1b[M\x20\xc5\x8d\x22"
        );
        assert_eq!(encode(&ev(0, false), 2100, 1, mode, UTF8), None);
    }

    #[test]
    fn motion_is_reported_only_in_the_modes_that_ask_for_it() {
        let drag = ev(32, false);
        let hover = ev(35, false);
        assert_eq!(
            encode(&drag, 1, 1, MouseProtocolMode::PressRelease, SGR),
            None
        );
        assert!(encode(&drag, 1, 1, MouseProtocolMode::ButtonMotion, SGR).is_some());
        assert_eq!(
            encode(&hover, 1, 1, MouseProtocolMode::ButtonMotion, SGR),
            None
        );
        assert!(encode(&hover, 1, 1, MouseProtocolMode::AnyMotion, SGR).is_some());
        assert_eq!(
            encode(&ev(0, false), 1, 1, MouseProtocolMode::None, SGR),
            None
        );
        // A wheel "release" is a terminal's mistake and is dropped.
        assert_eq!(
            encode(&ev(64, true), 1, 1, MouseProtocolMode::AnyMotion, SGR),
            None
        );
    }

    #[test]
    fn the_wheel_is_three_arrows_up_or_down_and_a_click_is_none() {
        assert_eq!(wheel_arrows(&ev(64, false)).unwrap(), b"\x1b[A\x1b[A\x1b[A");
        assert_eq!(wheel_arrows(&ev(65, false)).unwrap(), b"\x1b[B\x1b[B\x1b[B");
        assert_eq!(wheel_arrows(&ev(0, false)), None);
        assert!(is_wheel(&ev(65 | 16, false)));
        assert!(!is_wheel(&ev(0, false)));
        assert!(is_press(&ev(64, false)) && !is_press(&ev(32, false)));
    }

    #[test]
    fn the_outer_terminal_reports_hover_when_a_visible_program_wants_it() {
        assert!(outer_motion([
            MouseProtocolMode::None,
            MouseProtocolMode::AnyMotion
        ]));
        assert!(!outer_motion([MouseProtocolMode::ButtonMotion]));
    }
}
