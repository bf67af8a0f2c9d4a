//! Reading a `git diff -p` patch for the review views (issue 30): the TUI's
//! `D` view and the web page's diff. A page of `hangar diff` holds the patch
//! of a run of files; this cuts it into one section per file, reads each
//! section's hunks into lines numbered on both sides, moves between hunks,
//! and says which `FILE:LINE` a comment on a line of it names (the
//! location `hangar review --comment FILE:LINE` takes). Nothing here runs a
//! program; the text is the agent's and is escaped by whoever shows it.

/// What a line of a file's patch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// `diff --git`, `index`, `---`, `+++`, `rename from`, `Binary files`...
    Header,
    /// `@@ -a,b +c,d @@`: a hunk starts.
    Hunk,
    Context,
    Added,
    Removed,
    /// `\ No newline at end of file`.
    NoNewline,
}

/// One line of a file's patch, with the line numbers it has on each side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchLine {
    pub kind: LineKind,
    /// The line as git wrote it (its `+`, `-` or space included).
    pub text: String,
    /// Its number in the old file (context and removed lines).
    pub old: Option<u32>,
    /// Its number in the new file (context and added lines).
    pub new: Option<u32>,
    /// The line of the new file a comment on it names (see [`comment_line`]).
    pub target: Option<u32>,
}

/// The patch of a run of files cut into one section per file, in order: a
/// section starts at each line that begins with `diff --git `. (Every line
/// inside a hunk starts with ` `, `+`, `-` or `\`, so a file's own text
/// never starts one.)
pub fn split_files(patch: &str) -> Vec<&str> {
    file_ranges(patch).into_iter().map(|r| &patch[r]).collect()
}

/// Where each file's section of `patch` lies ([`split_files`]): one after
/// the other, the last to the patch's end.
pub fn file_ranges(patch: &str) -> Vec<std::ops::Range<usize>> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            starts.push(at);
        }
        at += line.len();
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, &s) in starts.iter().enumerate() {
        out.push(s..starts.get(i + 1).copied().unwrap_or(patch.len()));
    }
    out
}

/// What `git diff --numstat` says of one file's section of a patch, read
/// from the section itself: `(additions, deletions, binary)`. A diff then
/// needs one content pass (the patch) instead of two (numstat and patch).
pub fn count_changes(section: &str) -> (u64, u64, bool) {
    let (mut add, mut del) = (0u64, 0u64);
    let mut in_hunk = false;
    for line in section.lines() {
        if line.starts_with("@@ -") && hunk_header(line).is_some() {
            in_hunk = true;
        } else if in_hunk {
            match line.as_bytes().first() {
                Some(b'+') => add += 1,
                Some(b'-') => del += 1,
                _ => {}
            }
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            return (0, 0, true);
        }
    }
    (add, del, false)
}

/// `@@ -a[,b] +c[,d] @@ ...` -> (a, c, d).
fn hunk_header(line: &str) -> Option<(u32, u32, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let start = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((s, n)) => Some((s.parse().ok()?, n.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, _) = start(old)?;
    let (c, d) = start(new)?;
    Some((a, c, d))
}

/// One file's section of a patch, read into numbered lines.
///
/// A comment's line ([`PatchLine::target`]) is the new file's: an added or
/// context line names its own number; a removed line names the line of the
/// new file where it was (the one that now follows it, or the one before
/// when the hunk ends there), its old number when the new side is empty
/// (a deleted file); a hunk's header names the hunk's first line; the
/// file's header lines name none.
pub fn parse_file(section: &str) -> Vec<PatchLine> {
    let mut out = Vec::new();
    let (mut old, mut new) = (0u32, 0u32);
    let mut new_empty = false;
    let mut in_hunk = false;
    for raw in section.lines() {
        let text = raw.to_owned();
        if let Some((a, c, d)) = hunk_header(raw) {
            in_hunk = true;
            (old, new) = (a, c);
            new_empty = d == 0;
            let target = if c == 0 { a.max(1) } else { c };
            out.push(PatchLine {
                kind: LineKind::Hunk,
                text,
                old: None,
                new: None,
                target: Some(target),
            });
            continue;
        }
        if !in_hunk {
            out.push(PatchLine {
                kind: LineKind::Header,
                text,
                old: None,
                new: None,
                target: None,
            });
            continue;
        }
        let line = match raw.as_bytes().first() {
            Some(b'+') => {
                let n = new;
                new += 1;
                PatchLine {
                    kind: LineKind::Added,
                    text,
                    old: None,
                    new: Some(n),
                    target: Some(n),
                }
            }
            Some(b'-') => {
                let o = old;
                old += 1;
                let target = if new_empty || new == 0 { o } else { new };
                PatchLine {
                    kind: LineKind::Removed,
                    text,
                    old: Some(o),
                    new: None,
                    target: Some(target.max(1)),
                }
            }
            Some(b'\\') => PatchLine {
                kind: LineKind::NoNewline,
                text,
                old: None,
                new: None,
                target: out.last().and_then(|l: &PatchLine| l.target),
            },
            _ => {
                let (o, n) = (old, new);
                old += 1;
                new += 1;
                PatchLine {
                    kind: LineKind::Context,
                    text,
                    old: Some(o),
                    new: Some(n),
                    target: Some(n),
                }
            }
        };
        out.push(line);
    }
    out
}

/// The line a comment on line `cursor` of a file's patch names, or `None`
/// on the file's header (nothing of the file is there).
pub fn comment_line(lines: &[PatchLine], cursor: usize) -> Option<u32> {
    lines.get(cursor)?.target
}

/// The first line of the next hunk after `cursor`, if any.
pub fn next_hunk(lines: &[PatchLine], cursor: usize) -> Option<usize> {
    lines
        .iter()
        .enumerate()
        .skip(cursor + 1)
        .find(|(_, l)| l.kind == LineKind::Hunk)
        .map(|(i, _)| i)
}

/// The start of the hunk before the one `cursor` is in (or of the one it
/// is in, when the cursor is inside it, below its header), if any.
pub fn previous_hunk(lines: &[PatchLine], cursor: usize) -> Option<usize> {
    lines
        .iter()
        .enumerate()
        .take(cursor.min(lines.len()))
        .rev()
        .find(|(_, l)| l.kind == LineKind::Hunk)
        .map(|(i, _)| i)
}

/// How many hunks a file's patch has.
pub fn hunk_count(lines: &[PatchLine]) -> usize {
    lines.iter().filter(|l| l.kind == LineKind::Hunk).count()
}

/// Git's one-letter status of a file row (`hangar diff`'s `status` word).
pub fn status_letter(status: &str) -> char {
    match status {
        "added" => 'A',
        "deleted" => 'D',
        "renamed" => 'R',
        "copied" => 'C',
        "type-changed" => 'T',
        "unmerged" => 'U',
        _ => 'M',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leading spaces matter (context lines): one string per line.
    const PATCH_LINES: &[&str] = &[
        "diff --git a/src/a.rs b/src/a.rs",
        "index 1111111..2222222 100644",
        "--- a/src/a.rs",
        "+++ b/src/a.rs",
        "@@ -1,4 +1,4 @@",
        " fn one() {}",
        "-fn two() {}",
        "+fn two() -> u8 { 2 }",
        " fn three() {}",
        " fn four() {}",
        "@@ -20,3 +20,4 @@ impl X {",
        " a",
        "+b",
        "+diff --git looks like a header but is a line of the file",
        " c",
        "diff --git a/gone.txt b/gone.txt",
        "deleted file mode 100644",
        "index 3333333..0000000",
        "--- a/gone.txt",
        "+++ /dev/null",
        "@@ -1,2 +0,0 @@",
        "-x",
        "-y",
        "\\ No newline at end of file",
        "diff --git a/pic.png b/pic.png",
        "new file mode 100644",
        "index 0000000..4444444",
        "Binary files /dev/null and b/pic.png differ",
    ];

    fn patch() -> String {
        PATCH_LINES.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn a_page_splits_into_one_section_per_file_and_a_files_text_never_starts_one() {
        let patch = patch();
        let files = split_files(&patch);
        assert_eq!(files.len(), 3);
        assert!(files[0].starts_with("diff --git a/src/a.rs"));
        assert!(files[0].contains("+diff --git looks like a header"));
        assert!(files[1].starts_with("diff --git a/gone.txt"));
        assert!(files[2].contains("Binary files"));
        assert_eq!(files.concat(), patch, "nothing is lost between sections");
        assert!(split_files("").is_empty());
    }

    #[test]
    fn each_line_under_the_cursor_names_the_new_files_line() {
        let lines = parse_file(split_files(&patch())[0]);
        let at = |text: &str| lines.iter().position(|l| l.text == text).unwrap();
        assert_eq!(comment_line(&lines, 0), None, "the file's header");
        assert_eq!(comment_line(&lines, at("@@ -1,4 +1,4 @@")), Some(1));
        assert_eq!(comment_line(&lines, at(" fn one() {}")), Some(1));
        assert_eq!(
            comment_line(&lines, at("-fn two() {}")),
            Some(2),
            "a removed line names where it was in the new file"
        );
        assert_eq!(comment_line(&lines, at("+fn two() -> u8 { 2 }")), Some(2));
        assert_eq!(comment_line(&lines, at(" fn four() {}")), Some(4));
        assert_eq!(comment_line(&lines, at(" a")), Some(20));
        assert_eq!(comment_line(&lines, at("+b")), Some(21));
        assert_eq!(
            comment_line(
                &lines,
                at("+diff --git looks like a header but is a line of the file")
            ),
            Some(22)
        );
        assert_eq!(comment_line(&lines, at(" c")), Some(23));
        let removed = lines.iter().find(|l| l.text == "-fn two() {}").unwrap();
        assert_eq!((removed.old, removed.new), (Some(2), None));
        assert_eq!(comment_line(&lines, lines.len() + 5), None);
    }

    #[test]
    fn a_deleted_files_lines_name_their_old_numbers() {
        let lines = parse_file(split_files(&patch())[1]);
        let targets: Vec<Option<u32>> = lines.iter().map(|l| l.target).collect();
        assert_eq!(
            targets,
            [
                None,
                None,
                None,
                None,
                None,
                Some(1),
                Some(1),
                Some(2),
                Some(2)
            ]
        );
        assert_eq!(lines.last().unwrap().kind, LineKind::NoNewline);
        let binary = parse_file(split_files(&patch())[2]);
        assert!(binary.iter().all(|l| l.kind == LineKind::Header));
        assert_eq!(hunk_count(&binary), 0);
    }

    #[test]
    fn n_and_p_go_to_the_next_and_previous_hunk() {
        let lines = parse_file(split_files(&patch())[0]);
        let first = lines.iter().position(|l| l.kind == LineKind::Hunk).unwrap();
        let second = lines
            .iter()
            .rposition(|l| l.kind == LineKind::Hunk)
            .unwrap();
        assert_eq!(hunk_count(&lines), 2);
        assert_eq!(next_hunk(&lines, 0), Some(first), "from the header");
        assert_eq!(next_hunk(&lines, first), Some(second));
        assert_eq!(next_hunk(&lines, second), None, "the last hunk");
        assert_eq!(previous_hunk(&lines, second + 2), Some(second), "its own");
        assert_eq!(previous_hunk(&lines, second), Some(first));
        assert_eq!(previous_hunk(&lines, first), None);
    }

    #[test]
    fn hunk_headers_without_counts_and_status_letters_read() {
        assert_eq!(hunk_header("@@ -3 +3 @@"), Some((3, 3, 1)));
        assert_eq!(hunk_header("@@ -0,0 +1,2 @@"), Some((0, 1, 2)));
        assert_eq!(hunk_header("@@ nonsense"), None);
        assert_eq!(status_letter("renamed"), 'R');
        assert_eq!(status_letter("modified"), 'M');
    }

    #[test]
    fn a_sections_counts_are_numstats() {
        let section = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n+--- not a header\n\\ No newline at end of file\n@@ -9 +9,0 @@\n-nine\n";
        assert_eq!(count_changes(section), (2, 2, false));
        let binary = "diff --git a/i b/i\nindex 1..2 100644\nBinary files a/i and b/i differ\n";
        assert_eq!(count_changes(binary), (0, 0, true));
        let mode = "diff --git a/r b/r\nold mode 100644\nnew mode 100755\n";
        assert_eq!(count_changes(mode), (0, 0, false));
    }
}
