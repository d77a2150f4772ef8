//! The git plumbing pull requests are made of, without a working copy:
//! merge bases, `merge-tree --write-tree` for mergeability and for the
//! merged tree, `commit-tree` for merge, squash and replayed commits, the
//! range a pull request brings, its files and its diff.
//!
//! Every function takes the bare repository's directory; commit ids are
//! full ids the caller resolved (nothing here parses a user's revision).

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::bare;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("git failed: {0}")]
    Git(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

/// The most commits one pull request's range is read for.
pub const RANGE_MAX: usize = 10_000;
/// The largest diff or patch text served.
pub const DIFF_MAX: usize = 32 * 1024 * 1024;

fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(bare::program());
    cmd.current_dir(dir)
        .env("GIT_DIR", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs git; `ok` are the exit codes that are answers rather than
/// failures. Returns the exit code and standard output.
async fn run(dir: &Path, args: &[&str], ok: &[i32]) -> Result<(i32, Vec<u8>)> {
    let out = command(dir).args(args).output().await?;
    let code = out.status.code().unwrap_or(-1);
    if code != 0 && !ok.contains(&code) {
        return Err(Error::Git(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok((code, out.stdout))
}

fn text_lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The best common ancestor of two commits; none when their histories
/// never meet.
pub async fn merge_base(dir: &Path, a: &str, b: &str) -> Result<Option<String>> {
    let (code, out) = run(dir, &["merge-base", "--end-of-options", a, b], &[1]).await?;
    Ok((code == 0)
        .then(|| text_lines(&out).into_iter().next())
        .flatten())
}

/// Whether `a` is an ancestor of (or is) `b`.
pub async fn is_ancestor(dir: &Path, a: &str, b: &str) -> Result<bool> {
    let (code, _) = run(
        dir,
        &["merge-base", "--is-ancestor", "--end-of-options", a, b],
        &[1],
    )
    .await?;
    Ok(code == 0)
}

/// What merging two commits gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The merged tree.
    Clean(String),
    /// The paths that conflict.
    Conflicts(Vec<String>),
}

/// Merges `theirs` into `ours` with `merge-tree --write-tree` (objects
/// only; nothing checked out), from `base` when given (a replayed commit's
/// parent) or from their merge base.
pub async fn merge_tree(
    dir: &Path,
    ours: &str,
    theirs: &str,
    base: Option<&str>,
) -> Result<Merged> {
    let base_arg = base.map(|b| format!("--merge-base={b}"));
    let mut args = vec![
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "--allow-unrelated-histories",
    ];
    if let Some(b) = &base_arg {
        args.push(b);
    }
    args.extend(["--end-of-options", ours, theirs]);
    let (code, out) = run(dir, &args, &[1]).await?;
    let mut lines = text_lines(&out).into_iter();
    let tree = lines
        .next()
        .ok_or_else(|| Error::Git("merge-tree wrote no tree".into()))?;
    Ok(if code == 0 {
        Merged::Clean(tree)
    } else {
        let mut paths: Vec<String> = lines.collect();
        paths.dedup();
        Merged::Conflicts(paths)
    })
}

/// A commit's author or committer.
#[derive(Debug, Clone)]
pub struct Who<'a> {
    pub name: &'a str,
    pub email: &'a str,
    /// Seconds since the epoch and the offset in minutes; now when none.
    pub when: Option<(i64, i32)>,
}

fn git_date((time, offset): (i64, i32)) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let m = offset.unsigned_abs();
    format!("@{time} {sign}{:02}{:02}", m / 60, m % 60)
}

/// Writes a commit of `tree` with `parents` (in order) and returns its id.
pub async fn commit(
    dir: &Path,
    tree: &str,
    parents: &[&str],
    message: &str,
    author: &Who<'_>,
    committer: &Who<'_>,
) -> Result<String> {
    let mut args = vec!["commit-tree".to_string(), tree.to_string()];
    for p in parents {
        args.push("-p".into());
        args.push((*p).to_string());
    }
    let mut cmd = command(dir);
    cmd.args(&args)
        .env("GIT_AUTHOR_NAME", author.name)
        .env("GIT_AUTHOR_EMAIL", author.email)
        .env("GIT_COMMITTER_NAME", committer.name)
        .env("GIT_COMMITTER_EMAIL", committer.email)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(w) = author.when {
        cmd.env("GIT_AUTHOR_DATE", git_date(w));
    }
    if let Some(w) = committer.when {
        cmd.env("GIT_COMMITTER_DATE", git_date(w));
    }
    let mut child = cmd.spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| Error::Git("no stdin".into()))?;
    let input = message.as_bytes().to_vec();
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
    });
    let out = child.wait_with_output().await?;
    let _ = writer.await;
    if !out.status.success() {
        return Err(Error::Git(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commits reachable from `head` and not from `base`, oldest first,
/// parents before children; at most [`RANGE_MAX`].
pub async fn range(dir: &Path, base: &str, head: &str) -> Result<Vec<String>> {
    let max = format!("--max-count={RANGE_MAX}");
    let span = format!("{base}..{head}");
    let (_, out) = run(
        dir,
        &["rev-list", "--reverse", "--topo-order", &max, &span],
        &[],
    )
    .await?;
    Ok(text_lines(&out))
}

/// One file a pull request changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// Where a renamed file was.
    pub previous: Option<String>,
    /// git's letter: `A`dded, `M`odified, `D`eleted, `R`enamed, `T`ype
    /// changed.
    pub status: char,
    /// Lines added and removed; 0 for a binary file.
    pub added: u64,
    pub deleted: u64,
}

/// The files that differ from `from` to `to`, renames found. `from` may
/// be `base...` (three dots, no space) to diff from the merge base of
/// `base` and `to`, as a pull request shows its changes. One git run
/// gives both the kinds of change and the line counts.
pub async fn files(dir: &Path, from: &str, to: &str) -> Result<Vec<FileChange>> {
    let span = if from.ends_with("...") {
        format!("{from}{to}")
    } else {
        format!("{from}..{to}")
    };
    let args = [
        "diff",
        "--no-color",
        "-M",
        "-z",
        "--raw",
        "--numstat",
        &span,
    ];
    let (_, out) = run(dir, &args, &[]).await?;
    Ok(parse_changes(&out))
}

/// `diff -z --raw --numstat`: every raw entry, then every numstat entry.
fn parse_changes(out: &[u8]) -> Vec<FileChange> {
    let text = String::from_utf8_lossy(out);
    let fields: Vec<&str> = text.split('\0').collect();
    let (mut changes, rest) = parse_raw(&fields);
    for (path, added, deleted) in parse_numstat(rest) {
        if let Some(c) = changes.iter_mut().find(|c| c.path == path) {
            c.added = added;
            c.deleted = deleted;
        }
    }
    changes
}

/// Raw entries, `:modes ids status NUL path NUL [path NUL]`, for as long
/// as the fields hold them; the fields after them.
fn parse_raw<'a, 'b>(fields: &'b [&'a str]) -> (Vec<FileChange>, &'b [&'a str]) {
    let mut changes = Vec::new();
    let mut i = 0;
    while let Some(meta) = fields.get(i).and_then(|f| f.strip_prefix(':')) {
        let status = meta
            .rsplit(' ')
            .next()
            .and_then(|s| s.chars().next())
            .unwrap_or('M');
        let renamed = matches!(status, 'R' | 'C');
        let (Some(first), second) = (fields.get(i + 1), fields.get(i + 2)) else {
            break;
        };
        let (path, previous) = match (renamed, second) {
            (true, Some(to)) => (to.to_string(), Some(first.to_string())),
            (true, None) => break,
            (false, _) => (first.to_string(), None),
        };
        i += if renamed { 3 } else { 2 };
        changes.push(FileChange {
            path,
            previous,
            status,
            added: 0,
            deleted: 0,
        });
    }
    (changes, &fields[i.min(fields.len())..])
}

/// Numstat entries: `added TAB deleted TAB path NUL`, or for a rename
/// `added TAB deleted TAB NUL from NUL to NUL`.
fn parse_numstat(fields: &[&str]) -> Vec<(String, u64, u64)> {
    let mut fields = fields.iter();
    let mut all = Vec::new();
    while let Some(entry) = fields.next() {
        let mut parts = entry.splitn(3, '\t');
        let (Some(a), Some(d), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = if path.is_empty() {
            let _from = fields.next();
            match fields.next() {
                Some(to) => to.to_string(),
                None => break,
            }
        } else {
            path.to_string()
        };
        all.push((path, a.parse().unwrap_or(0), d.parse().unwrap_or(0)));
    }
    all
}

/// The unified diff from `from` to `to`, cut at [`DIFF_MAX`] bytes.
pub async fn diff(dir: &Path, from: &str, to: &str) -> Result<Vec<u8>> {
    let (_, mut out) = run(
        dir,
        &[
            "diff",
            "--no-color",
            "--full-index",
            "-M",
            "--end-of-options",
            from,
            to,
        ],
        &[],
    )
    .await?;
    out.truncate(DIFF_MAX);
    Ok(out)
}

/// The range as mails (`format-patch --stdout`), cut at [`DIFF_MAX`].
pub async fn patch(dir: &Path, base: &str, head: &str) -> Result<Vec<u8>> {
    let span = format!("{base}..{head}");
    let (_, mut out) = run(dir, &["format-patch", "--no-color", "--stdout", &span], &[]).await?;
    out.truncate(DIFF_MAX);
    Ok(out)
}

/// The hunks of one file's diff from `from` to `to`: (first old line,
/// old count, first new line, new count), as `@@` lines give them.
pub async fn hunks(dir: &Path, from: &str, to: &str, path: &str) -> Result<Vec<[u64; 4]>> {
    let (_, out) = run(
        dir,
        &["diff", "--no-color", "-U3", from, to, "--", path],
        &[],
    )
    .await?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(parse_hunk_header)
        .collect())
}

/// `@@ -a,b +c,d @@ …` → [a, b, c, d] (a missing count is 1).
fn parse_hunk_header(line: &str) -> Option<[u64; 4]> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let span = |s: &str| -> Option<(u64, u64)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (a, b) = span(old)?;
    let (c, d) = span(new)?;
    Some([a, b, c, d])
}

/// Copies branch `branch` of the repository at `from` (a fork) into `to`'s
/// ref `dest`, with the objects it needs.
pub async fn fetch_branch(to: &Path, from: &Path, branch: &str, dest: &str) -> Result<()> {
    let spec = format!("+refs/heads/{branch}:{dest}");
    let from = from.to_string_lossy();
    run(
        to,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--end-of-options",
            &from,
            &spec,
        ],
        &[],
    )
    .await?;
    Ok(())
}

/// Points `name` at `new` whatever it was (a ref Postern alone writes,
/// such as `refs/pull/<n>/head`).
pub async fn set_ref(dir: &Path, name: &str, new: &str) -> Result<()> {
    run(
        dir,
        &["update-ref", "--no-deref", "--end-of-options", name, new],
        &[],
    )
    .await?;
    Ok(())
}

/// Deletes `name` if it is still at `old`.
pub async fn delete_ref(dir: &Path, name: &str, old: &str) -> Result<()> {
    run(
        dir,
        &[
            "update-ref",
            "--no-deref",
            "-d",
            "--end-of-options",
            name,
            old,
        ],
        &[],
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::git::merges::{parse_changes, parse_hunk_header};

    #[test]
    fn hunk_headers_and_changes_parse() {
        assert_eq!(
            parse_hunk_header("@@ -1,3 +1,4 @@ fn main"),
            Some([1, 3, 1, 4])
        );
        assert_eq!(parse_hunk_header("@@ -0,0 +1 @@"), Some([0, 0, 1, 1]));
        assert_eq!(parse_hunk_header("+@@ -1 +1 @@"), None);
        // What `diff -z --raw --numstat` prints for a change, a rename and a
        // file whose name starts with the raw entries' colon.
        let out = b":100644 100644 aaa bbb M\0:x\0:100644 100644 aaa bbb R100\0old\0new\0\
            3\t1\t:x\x000\t0\t\0old\0new\0";
        let changes = parse_changes(out);
        assert_eq!(changes.len(), 2);
        assert_eq!(
            (
                changes[0].path.as_str(),
                changes[0].added,
                changes[0].deleted
            ),
            (":x", 3, 1)
        );
        assert_eq!(changes[1].path, "new");
        assert_eq!(changes[1].previous.as_deref(), Some("old"));
        assert_eq!((changes[1].added, changes[1].deleted), (0, 0));
    }
}
