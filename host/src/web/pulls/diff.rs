//! A unified diff (git's output, already cut at `merges::DIFF_MAX`) read
//! into files and numbered lines for the "Files changed" view, where each
//! line can carry line comments. Bounded: past [`LINES_MAX`] lines the
//! rest is left out and the view says so.

/// The most diff lines shown on one page.
pub(super) const LINES_MAX: usize = 20_000;

pub(crate) struct FileDiff {
    pub path: String,
    pub lines: Vec<DiffLine>,
    /// "Binary files differ" and the like: no lines to show.
    pub binary: bool,
}

pub(crate) struct DiffLine {
    /// `+`, `-`, ` ` or `@` for a hunk header.
    pub kind: char,
    /// The line's number in the old file (the merge base's side, `LEFT`).
    pub old: Option<u64>,
    /// The line's number in the new file (the head's side, `RIGHT`).
    pub new: Option<u64>,
    pub text: String,
}

impl DiffLine {
    /// The side and line a comment on this line is written against: the
    /// head's line where there is one, else the base's.
    pub fn anchor(&self) -> Option<(&'static str, u64)> {
        match (self.kind, self.old, self.new) {
            ('@', _, _) => None,
            (_, _, Some(n)) => Some(("RIGHT", n)),
            (_, Some(o), None) => Some(("LEFT", o)),
            _ => None,
        }
    }

    pub fn class(&self) -> &'static str {
        match self.kind {
            '+' => "add",
            '-' => "del",
            '@' => "hunk",
            _ => "ctx",
        }
    }
}

/// The files of `diff`, and whether lines were left out.
pub(crate) fn parse(diff: &[u8]) -> (Vec<FileDiff>, bool) {
    let text = String::from_utf8_lossy(diff);
    let mut files: Vec<FileDiff> = Vec::new();
    let (mut old, mut new) = (0u64, 0u64);
    let mut in_hunk = false;
    let mut shown = 0usize;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.push(FileDiff {
                path: path_of_header(rest),
                lines: Vec::new(),
                binary: false,
            });
            in_hunk = false;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if !in_hunk {
            if let Some(p) = line.strip_prefix("+++ ") {
                if let Some(p) = unquote(p).strip_prefix("b/") {
                    file.path = p.to_string();
                }
            } else if line.starts_with("Binary files ") {
                file.binary = true;
            }
        }
        if let Some(header) = line.strip_prefix("@@ ") {
            let (o, n) = hunk_starts(header);
            (old, new, in_hunk) = (o, n, true);
        } else if !in_hunk {
            continue;
        }
        if shown >= LINES_MAX {
            return (files, true);
        }
        shown += 1;
        let kind = line.chars().next().unwrap_or(' ');
        let body = line.get(1..).unwrap_or("").to_string();
        let numbered = match kind {
            '@' => DiffLine {
                kind,
                old: None,
                new: None,
                text: line.to_string(),
            },
            '+' => {
                new += 1;
                DiffLine {
                    kind,
                    old: None,
                    new: Some(new - 1),
                    text: body,
                }
            }
            '-' => {
                old += 1;
                DiffLine {
                    kind,
                    old: Some(old - 1),
                    new: None,
                    text: body,
                }
            }
            // "\ No newline at end of file" belongs to the line before.
            '\\' => continue,
            _ => {
                (old, new) = (old + 1, new + 1);
                DiffLine {
                    kind: ' ',
                    old: Some(old - 1),
                    new: Some(new - 1),
                    text: body,
                }
            }
        };
        file.lines.push(numbered);
    }
    (files, false)
}

/// `a/x b/y` → `y`; a name git quoted keeps its quotes' content as is.
fn path_of_header(rest: &str) -> String {
    let rest = unquote(rest);
    match rest.rfind(" b/") {
        Some(i) => unquote(&rest[i + 3..]).to_string(),
        None => rest.to_string(),
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

/// `-12,3 +14,5 @@ …` → (12, 14).
fn hunk_starts(header: &str) -> (u64, u64) {
    let mut parts = header.split(' ');
    let start = |p: Option<&str>, sign: char| {
        p.and_then(|p| p.strip_prefix(sign))
            .and_then(|p| p.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
    };
    let old = start(parts.next(), '-');
    let new = start(parts.next(), '+');
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_on_both_sides() {
        let diff = b"diff --git a/f.txt b/f.txt\nindex 1..2 100644\n--- a/f.txt\n+++ b/f.txt\n\
@@ -1,3 +1,3 @@\n one\n-two\n+deux\n three\n\\ No newline at end of file\n\
diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n";
        let (files, cut) = parse(diff);
        assert!(!cut);
        assert_eq!(files.len(), 2);
        let f = &files[0];
        assert_eq!(f.path, "f.txt");
        let anchors: Vec<_> = f.lines.iter().map(DiffLine::anchor).collect();
        assert_eq!(
            anchors,
            vec![
                None,
                Some(("RIGHT", 1)),
                Some(("LEFT", 2)),
                Some(("RIGHT", 2)),
                Some(("RIGHT", 3))
            ]
        );
        assert!(files[1].binary && files[1].lines.is_empty());
    }

    #[test]
    fn a_long_diff_is_cut() {
        let mut diff = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1,30000 @@\n".to_vec();
        for _ in 0..30_000 {
            diff.extend_from_slice(b"+x\n");
        }
        let (files, cut) = parse(&diff);
        assert!(cut);
        assert_eq!(files[0].lines.len(), LINES_MAX);
    }
}
