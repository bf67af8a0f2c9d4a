//! Claude Code's project folder name for a working directory: where its
//! transcripts of that folder live (`$CLAUDE_CONFIG_DIR/projects/<slug>/`).
//!
//! The rule, as Claude Code 2.1.197 applies it (observed with the published
//! binary, see `docs/src/cli-facts.md`): every UTF-16 code unit of the path that
//! is not an ASCII letter or digit becomes `-` (so `é` is one `-` and an emoji,
//! two units, is two); a slug longer than 200 characters is cut to 200 and
//! gets `-` and the base-36 absolute value of a Java-style 32-bit string hash
//! of the whole path. A wrong slug looks in a folder that does not exist, so
//! nothing of the session is ever found.

/// The longest slug kept whole.
pub const MAX_SLUG_LEN: usize = 200;

/// The project folder name of `cwd` (an absolute path as the kernel sees it).
pub fn claude_project_slug(cwd: &str) -> String {
    let slug: String = cwd
        .encode_utf16()
        .map(|unit| match u8::try_from(unit) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect();
    if slug.len() <= MAX_SLUG_LEN {
        return slug;
    }
    // Every character of `slug` is ASCII, so byte and character counts agree.
    format!(
        "{}-{}",
        &slug[..MAX_SLUG_LEN],
        base36(java_string_hash(cwd).unsigned_abs())
    )
}

/// `String.hashCode()` over UTF-16 units: `h = 31 * h + unit`, wrapping at 32 bits.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every expected value below is a folder the real Claude Code 2.1.197
    // created for that cwd on this project's machine (2026-12-01).

    #[test]
    fn every_character_but_ascii_letters_and_digits_becomes_a_dash() {
        assert_eq!(
            claude_project_slug("/tmp/obs/w/my.proj_dir/a b/é"),
            "-tmp-obs-w-my-proj-dir-a-b--"
        );
        assert_eq!(
            claude_project_slug("/tmp/x/my.proj_dir/a b/é"),
            "-tmp-x-my-proj-dir-a-b--"
        );
    }

    #[test]
    fn a_character_outside_the_bmp_is_two_utf16_units_and_so_two_dashes() {
        assert_eq!(
            claude_project_slug("/tmp/obs/w/x😀y~+@z"),
            "-tmp-obs-w-x--y---z"
        );
    }

    #[test]
    fn a_long_path_is_cut_to_200_and_suffixed_with_its_hash_in_base36() {
        let mut path = String::from("/tmp/obs/long/");
        for i in 1..=22 {
            path.push_str(&format!("segment_{i:02}.x/"));
        }
        path.push_str("end");
        assert_eq!(path.len(), 303);
        assert_eq!(
            claude_project_slug(&path),
            "-tmp-obs-long-segment-01-x-segment-02-x-segment-03-x-segment-04-x-segment-05-x-\
             segment-06-x-segment-07-x-segment-08-x-segment-09-x-segment-10-x-segment-11-x-\
             segment-12-x-segment-13-x-segment-14-x-segm-ia1fnx"
        );
    }

    #[test]
    fn a_slug_of_exactly_200_is_kept_whole() {
        let path = format!("/{}", "a".repeat(199));
        assert_eq!(claude_project_slug(&path), format!("-{}", "a".repeat(199)));
        let longer = format!("/{}", "a".repeat(200));
        assert!(claude_project_slug(&longer).starts_with(&format!("-{}-", "a".repeat(199))));
    }

    #[test]
    fn the_hash_is_javas_string_hash() {
        // Known values of java.lang.String#hashCode.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }
}
