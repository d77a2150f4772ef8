//! Reading a bare repository without a working copy: refs from `git
//! for-each-ref`, history from `git rev-list`, objects through one `git
//! cat-file --batch-command` process per reader (started at the first read,
//! ended when the reader is dropped, or kept for the next reader of the
//! same repository when made with [`Objects::kept`]), and large blobs and
//! archives streamed from a process of their own, never held whole. A
//! kept reader also keeps what cannot change (counts, history pages,
//! diffs and last changes by commit id; small objects by id, per
//! repository) and ref lists until the refs change ([`crate::git::memo`]).
//!
//! Revisions and paths come from callers: [`check_rev`] and [`check_path`]
//! refuse what git would read as something else (an option, a range, a
//! search, a path out of the tree) before any of it reaches git. A leaf
//! beside [`crate::git::bare`]: it imports nothing of the host.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::git::bare;
use crate::git::memo::{self, Memo};

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No such ref, commit, path or object.
    #[error("{0}")]
    NotFound(String),
    /// A revision or path git must not be given; the text says why.
    #[error("{0}")]
    Invalid(String),
    /// The repository has no commit yet.
    #[error("the repository is empty")]
    Empty,
    /// git failed or answered what it should not.
    #[error("git failed: {0}")]
    Git(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Git(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The longest revision or path accepted, in bytes (git's own limit on a
/// path is the system's, 4096 on Linux).
const MAX_REV: usize = 255;
const MAX_PATH: usize = 4096;

/// Checks a branch, tag or commit id given by a caller. Refuses what git
/// would read as more than a name: an option (`-…`), a range (`..`), a
/// reflog or search (`@{`, `:`), peeling (`^`, `~`), globs, whitespace and
/// control characters.
pub fn check_rev(rev: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::Invalid(format!("invalid ref {rev:?}: {why}")));
    if rev.is_empty() || rev.len() > MAX_REV {
        return bad("it must be 1 to 255 bytes");
    }
    if rev.starts_with(['-', '/']) || rev.ends_with(['/', '.']) {
        return bad("it may not start with '-' or '/', or end with '/' or '.'");
    }
    if rev.contains("..") || rev.contains("@{") || rev.contains("//") {
        return bad("it may not contain '..', '@{' or '//'");
    }
    if rev
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return bad("it may not contain spaces, control characters or any of ~^:?*[\\");
    }
    Ok(())
}

/// Checks a path inside the tree and returns it without leading, trailing
/// or doubled `/`. Refuses `.` and `..` components, NUL and other control
/// characters. The empty path is the root.
pub fn check_path(path: &str) -> Result<String> {
    let bad = |why: &str| Err(Error::Invalid(format!("invalid path {path:?}: {why}")));
    if path.len() > MAX_PATH {
        return bad("it is longer than 4096 bytes");
    }
    if path.chars().any(char::is_control) {
        return bad("it may not contain NUL or control characters");
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return bad("it may not contain '.' or '..' components");
    }
    Ok(parts.join("/"))
}

/// An object's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Blob,
    Tree,
    Commit,
    Tag,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "blob" => Kind::Blob,
            "tree" => Kind::Tree,
            "commit" => Kind::Commit,
            "tag" => Kind::Tag,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Blob => "blob",
            Kind::Tree => "tree",
            Kind::Commit => "commit",
            Kind::Tag => "tag",
        }
    }
}

/// What `cat-file` tells of an object before its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub sha: String,
    pub kind: Kind,
    pub size: u64,
}

/// An author or committer line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Person {
    pub name: String,
    pub email: String,
    /// Seconds since the epoch.
    pub time: i64,
    /// The writer's offset from UTC, in minutes.
    pub offset_minutes: i32,
}

impl Person {
    /// `Name <email> 1700000000 +0100`.
    fn parse(line: &str) -> Person {
        let (Some(lt), Some(gt)) = (line.find('<'), line.rfind('>')) else {
            return Person {
                name: line.trim().to_string(),
                ..Person::default()
            };
        };
        let mut rest = line[gt + 1..].split_whitespace();
        let time = rest.next().and_then(|t| t.parse().ok()).unwrap_or(0);
        let offset_minutes = rest
            .next()
            .and_then(|z| {
                let sign = if z.starts_with('-') { -1 } else { 1 };
                let digits = z.trim_start_matches(['+', '-']);
                let n: i32 = digits.parse().ok()?;
                Some(sign * ((n / 100) * 60 + n % 100))
            })
            .unwrap_or(0);
        Person {
            name: line[..lt].trim().to_string(),
            email: line[lt + 1..gt.max(lt + 1)].to_string(),
            time,
            offset_minutes,
        }
    }
}

/// A commit object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub sha: String,
    pub tree: String,
    pub parents: Vec<String>,
    pub author: Person,
    pub committer: Person,
    pub message: String,
}

impl Commit {
    /// Parses a raw commit object (`git cat-file commit`).
    pub fn parse(sha: &str, raw: &[u8]) -> Commit {
        let text = String::from_utf8_lossy(raw);
        let (head, message) = text.split_once("\n\n").unwrap_or((&text, ""));
        let mut commit = Commit {
            sha: sha.to_string(),
            tree: String::new(),
            parents: Vec::new(),
            author: Person::default(),
            committer: Person::default(),
            message: message.to_string(),
        };
        // Continuation lines (a signature's) start with a space.
        for line in head.lines().filter(|l| !l.starts_with(' ')) {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "tree" => commit.tree = value.to_string(),
                "parent" => commit.parents.push(value.to_string()),
                "author" => commit.author = Person::parse(value),
                "committer" => commit.committer = Person::parse(value),
                _ => {}
            }
        }
        commit
    }

    /// The first line of the message.
    pub fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// An annotated tag object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub sha: String,
    pub object: String,
    pub tagger: Person,
    pub message: String,
}

impl Tag {
    fn parse(sha: &str, raw: &[u8]) -> Tag {
        let text = String::from_utf8_lossy(raw);
        let (head, message) = text.split_once("\n\n").unwrap_or((&text, ""));
        let mut tag = Tag {
            sha: sha.to_string(),
            object: String::new(),
            tagger: Person::default(),
            message: message.to_string(),
        };
        for line in head.lines() {
            match line.split_once(' ') {
                Some(("object", v)) => tag.object = v.to_string(),
                Some(("tagger", v)) => tag.tagger = Person::parse(v),
                _ => {}
            }
        }
        tag
    }
}

/// What a tree entry is, by its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Executable,
    Symlink,
    Dir,
    Submodule,
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The mode as git writes it (`100644`, `40000`, …).
    pub mode: String,
    pub kind: EntryKind,
    pub name: String,
    pub sha: String,
}

/// Parses a raw tree object: `mode SP name NUL 20-byte-id`, repeated.
pub fn parse_tree(raw: &[u8]) -> Result<Vec<Entry>> {
    let bad = || Error::Git("a tree object is malformed".into());
    let mut entries = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ').ok_or_else(bad)?;
        let nul = rest.iter().position(|b| *b == 0).ok_or_else(bad)?;
        if nul < space || rest.len() < nul + 21 {
            return Err(bad());
        }
        let mode = String::from_utf8_lossy(&rest[..space]).into_owned();
        let name = String::from_utf8_lossy(&rest[space + 1..nul]).into_owned();
        let sha = hex::encode(&rest[nul + 1..nul + 21]);
        let kind = match mode.as_str() {
            "40000" | "040000" => EntryKind::Dir,
            "120000" => EntryKind::Symlink,
            "160000" => EntryKind::Submodule,
            "100755" => EntryKind::Executable,
            _ => EntryKind::File,
        };
        entries.push(Entry {
            mode,
            kind,
            name,
            sha,
        });
        rest = &rest[nul + 21..];
    }
    Ok(entries)
}

/// One file a commit changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    /// git's letter: `A`dded, `M`odified, `D`eleted, `T`ype changed.
    pub status: char,
    /// Lines added and removed; 0 for a binary file.
    pub added: u64,
    pub deleted: u64,
}

/// Parses `diff-tree --stdin --raw --numstat`: a commit id line, then its
/// raw lines (`:modes ids status TAB path`), then its numstat lines
/// (`added TAB deleted TAB path`).
fn parse_changes(out: &str) -> Vec<(String, Vec<Change>)> {
    let mut all: Vec<(String, Vec<Change>)> = Vec::new();
    for line in out.lines() {
        if let Some(raw) = line.strip_prefix(':') {
            let Some((meta, path)) = raw.split_once('\t') else {
                continue;
            };
            let status = meta.rsplit(' ').next().and_then(|s| s.chars().next());
            if let (Some((_, changes)), Some(status)) = (all.last_mut(), status) {
                changes.push(Change {
                    path: path.to_string(),
                    status,
                    added: 0,
                    deleted: 0,
                });
            }
        } else if let [added, deleted, path] = line.splitn(3, '\t').collect::<Vec<_>>()[..] {
            if let Some(c) = all
                .last_mut()
                .and_then(|(_, cs)| cs.iter_mut().find(|c| c.path == path))
            {
                c.added = added.parse().unwrap_or(0);
                c.deleted = deleted.parse().unwrap_or(0);
            }
        } else if is_full_id(line) {
            all.push((line.to_string(), Vec::new()));
        }
    }
    all
}

/// A ref, as `for-each-ref` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    /// The full name: `refs/heads/main`.
    pub name: String,
    /// The object it names: a commit, or an annotated tag.
    pub sha: String,
    pub kind: Kind,
    /// For an annotated tag, the commit it points at.
    pub peeled: Option<String>,
}

impl Ref {
    /// The commit this ref leads to.
    pub fn commit(&self) -> &str {
        self.peeled.as_deref().unwrap_or(&self.sha)
    }
}

/// One change to a tree.
#[derive(Debug, Clone, Copy)]
pub enum TreeEdit<'a> {
    Set { path: &'a str, blob: &'a str },
    Remove { path: &'a str },
}

/// Who wrote or committed a commit.
#[derive(Debug, Clone, Copy)]
pub struct Signature<'a> {
    pub name: &'a str,
    pub email: &'a str,
}

/// A `cat-file --batch-command` process.
pub struct Cat {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// No answer is half read: the process may serve another reader. A
    /// read cancelled midway (a client gone) leaves it false, and the
    /// process ends with its reader.
    clean: bool,
}

/// What every kept reader of a server shares.
pub type Kept = Memo<Cat, Vec<Change>>;

/// The most changes a commit may have for its diff to be kept.
const DIFF_KEPT_MAX: usize = 100;

/// Reads one repository. Cheap to make; the object process starts at the
/// first object read.
pub struct Objects {
    dir: PathBuf,
    cat: Option<Cat>,
    /// The shared memo and this repository's key in it.
    kept: Option<(Arc<Kept>, String)>,
}

impl Drop for Objects {
    fn drop(&mut self) {
        if let (Some((memo, key)), Some(cat)) = (&self.kept, self.cat.take())
            && cat.clean
        {
            memo.give(key.clone(), cat);
        }
    }
}

impl Objects {
    pub fn new(dir: &Path) -> Objects {
        Objects {
            dir: dir.to_path_buf(),
            cat: None,
            kept: None,
        }
    }

    /// A reader of repository `id` at `dir` that shares `memo` with the
    /// server's other readers.
    pub fn kept(dir: &Path, id: i64, memo: &Arc<Kept>) -> Objects {
        Objects {
            dir: dir.to_path_buf(),
            cat: None,
            kept: Some((memo.clone(), format!("{id} {}", dir.display()))),
        }
    }

    /// The shared memo, for answers that cannot change.
    fn memo(&self) -> Option<&Kept> {
        self.kept.as_ref().map(|(memo, _)| &**memo)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(bare::program());
        cmd.current_dir(&self.dir)
            .env("GIT_DIR", &self.dir)
            // No pager, no prompt, nothing from the server's own config
            // beyond the repository's.
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs git and returns its standard output; a failing git is
    /// [`Error::Git`] with its message.
    async fn run(&self, args: &[&str]) -> Result<Vec<u8>> {
        let out = self.command().args(args).output().await?;
        if !out.status.success() {
            return Err(Error::Git(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(out.stdout)
    }

    async fn cat(&mut self) -> Result<&mut Cat> {
        if self.cat.is_none()
            && let Some((memo, key)) = &self.kept
        {
            self.cat = memo.take(key);
        }
        if self.cat.is_none() {
            let mut child = self
                .command()
                .args(["cat-file", "--batch-command"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?;
            let stdin = child
                .stdin
                .take()
                .ok_or_else(|| Error::Git("no stdin".into()))?;
            let stdout = child
                .stdout
                .take()
                .ok_or_else(|| Error::Git("no stdout".into()))?;
            self.cat = Some(Cat {
                _child: child,
                stdin,
                stdout: BufReader::new(stdout),
                clean: true,
            });
        }
        Ok(self.cat.as_mut().expect("started above"))
    }

    /// Sends one command and reads the header line that answers it: `None`
    /// when the object is missing (or the name ambiguous).
    async fn ask(&mut self, command: &str, spec: &str) -> Result<Option<Info>> {
        if spec.contains(['\n', '\0']) {
            return Err(Error::Invalid(format!("invalid object name {spec:?}")));
        }
        let cat = self.cat().await?;
        cat.clean = false;
        cat.stdin
            .write_all(format!("{command} {spec}\n").as_bytes())
            .await?;
        cat.stdin.flush().await?;
        let mut line = String::new();
        if cat.stdout.read_line(&mut line).await? == 0 {
            return Err(Error::Git("cat-file ended".into()));
        }
        // `info` and a missing object end at the header; `contents` leaves
        // the content to read (`read` marks the end).
        cat.clean =
            command == "info" || line.ends_with(" missing\n") || line.ends_with(" ambiguous\n");
        let mut parts = line.trim_end().split(' ');
        let (Some(sha), Some(kind), Some(size), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            // `<spec> missing` or `<spec> ambiguous`.
            return Ok(None);
        };
        let (Some(kind), Ok(size)) = (Kind::parse(kind), size.parse()) else {
            return Ok(None);
        };
        Ok(Some(Info {
            sha: sha.to_string(),
            kind,
            size,
        }))
    }

    /// The object `spec` names (a sha, `rev:path`, `rev^{commit}`), or
    /// `None`.
    pub async fn info(&mut self, spec: &str) -> Result<Option<Info>> {
        self.ask("info", spec).await
    }

    /// An object and its content, or `None`. Read whole: callers check the
    /// size with [`Objects::info`] first where it may be large.
    pub async fn read(&mut self, spec: &str) -> Result<Option<(Info, Vec<u8>)>> {
        // An object named by its full id reads the same for ever: kept.
        let key = match &self.kept {
            Some((_, repo)) if is_full_id(spec) => Some(format!("{repo} {spec}")),
            _ => None,
        };
        if let (Some(memo), Some(key)) = (self.memo(), &key)
            && let Some((kind, bytes)) = memo.object(key)
            && let Some(kind) = Kind::parse(kind)
        {
            let info = Info {
                sha: spec.to_string(),
                kind,
                size: bytes.len() as u64,
            };
            return Ok(Some((info, bytes.to_vec())));
        }
        let Some(info) = self.ask("contents", spec).await? else {
            return Ok(None);
        };
        let cat = self.cat.as_mut().expect("asked above");
        let mut content = vec![0; info.size as usize];
        cat.stdout.read_exact(&mut content).await?;
        let mut newline = [0u8; 1];
        cat.stdout.read_exact(&mut newline).await?;
        cat.clean = true;
        if let (Some(memo), Some(key)) = (self.memo(), key)
            && content.len() <= memo::OBJECT_MAX
        {
            memo.keep_object(key, (info.kind.name(), Arc::new(content.clone())));
        }
        Ok(Some((info, content)))
    }

    /// The commit `rev` (a branch, tag or sha) leads to.
    pub async fn commit(&mut self, rev: &str) -> Result<Option<Commit>> {
        // A commit's own id reads it directly (and from what is kept); the
        // id of a tag object goes on to peel.
        if is_full_id(rev)
            && let Some((info, raw)) = self.read(rev).await?
            && info.kind == Kind::Commit
        {
            return Ok(Some(Commit::parse(&info.sha, &raw)));
        }
        match self.read(&format!("{rev}^{{commit}}")).await? {
            Some((info, raw)) if info.kind == Kind::Commit => {
                Ok(Some(Commit::parse(&info.sha, &raw)))
            }
            _ => Ok(None),
        }
    }

    /// An annotated tag object.
    pub async fn tag(&mut self, sha: &str) -> Result<Option<Tag>> {
        match self.read(sha).await? {
            Some((info, raw)) if info.kind == Kind::Tag => Ok(Some(Tag::parse(&info.sha, &raw))),
            _ => Ok(None),
        }
    }

    /// A tree's entries.
    pub async fn tree(&mut self, spec: &str) -> Result<Option<Vec<Entry>>> {
        match self.read(spec).await? {
            Some((info, raw)) if info.kind == Kind::Tree => Ok(Some(parse_tree(&raw)?)),
            _ => Ok(None),
        }
    }

    /// The refs under each of `prefixes` (`refs/heads/`, `refs/tags/`,
    /// `refs/` for all), in the order of `sort` (a `for-each-ref --sort`
    /// key: `refname`, `-creatordate`).
    pub async fn refs(&self, sort: &str, prefixes: &[&str]) -> Result<Vec<Ref>> {
        let sort = format!("--sort={sort}");
        let mut args = vec![
            "for-each-ref",
            &sort,
            "--format=%(refname)%00%(objectname)%00%(objecttype)%00%(*objectname)",
        ];
        args.extend(prefixes);
        // The stamp first: a list read after it is at least as new. No
        // stamp (hooks older than it), no list kept.
        let kept = self.kept.as_ref().and_then(|(memo, repo)| {
            let stamp = memo::stamp(&self.dir)?;
            Some((memo, format!("{repo} {}", args.join(" ")), stamp))
        });
        let out = match kept {
            Some((memo, key, stamp)) => match memo.list(&key, &stamp) {
                Some(out) => out,
                None => {
                    let out = Arc::new(self.run(&args).await?);
                    memo.keep_list(key, stamp, out.clone());
                    out
                }
            },
            None => Arc::new(self.run(&args).await?),
        };
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|line| {
                let mut f = line.split('\0');
                let name = f.next()?.to_string();
                let sha = f.next()?.to_string();
                let kind = Kind::parse(f.next()?)?;
                let peeled = f.next().filter(|p| !p.is_empty()).map(str::to_string);
                Some(Ref {
                    name,
                    sha,
                    kind,
                    peeled,
                })
            })
            .collect())
    }

    /// Whether the repository has no branch or tag (nothing pushed yet).
    pub async fn is_empty(&self) -> Result<bool> {
        // From the ref files: `for-each-ref --count=1` still reads and
        // sorts every ref (55 ms for 5 000 loose branches).
        Ok(bare::is_empty(&self.dir))
    }

    /// How many commits `history` would list without paging.
    pub async fn count(&self, walk: &Walk<'_>) -> Result<u64> {
        let mut args = vec!["rev-list".to_string(), "--count".to_string()];
        args.extend(walk.args());
        // The walk starts from commit ids: the count is the same for ever.
        let key = args.join(" ");
        if let Some(count) = self.memo().and_then(|m| m.count(&key)) {
            return Ok(count);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.run(&args).await?;
        let count = String::from_utf8_lossy(&out)
            .trim()
            .parse()
            .map_err(|_| Error::Git("rev-list --count answered no number".into()))?;
        if let Some(memo) = self.memo() {
            memo.keep_count(key, count);
        }
        Ok(count)
    }

    /// The ids of the commits of `walk`, newest first, `skip` left out and
    /// at most `max`.
    pub async fn history(&self, walk: &Walk<'_>, skip: u64, max: u64) -> Result<Vec<String>> {
        let mut args = vec![
            "rev-list".to_string(),
            format!("--skip={skip}"),
            format!("--max-count={max}"),
        ];
        args.extend(walk.args());
        // From commit ids, a page is the same for ever.
        let key =
            (is_full_id(walk.from) && walk.not.is_none_or(is_full_id)).then(|| args.join(" "));
        if let (Some(memo), Some(key)) = (self.memo(), &key)
            && let Some(page) = memo.page(key)
        {
            return Ok(page.to_vec());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.run(&args).await?;
        let page: Vec<String> = String::from_utf8_lossy(&out)
            .lines()
            .map(str::to_string)
            .collect();
        if let (Some(memo), Some(key)) = (self.memo(), key) {
            memo.keep_page(key, Arc::new(page.clone()));
        }
        Ok(page)
    }

    /// The newest commit from `commit` (a commit id) that changed `path`.
    pub async fn last_change(&self, commit: &str, path: &str) -> Result<Option<String>> {
        let key = format!("{commit} {path}");
        if let Some(change) = self.memo().and_then(|m| m.change(&key)) {
            return Ok(change);
        }
        let walk = Walk {
            from: commit,
            not: None,
            path,
            since: None,
            until: None,
        };
        let change = self.history(&walk, 0, 1).await?.into_iter().next();
        if let Some(memo) = self.memo() {
            memo.keep_change(key, change.clone());
        }
        Ok(change)
    }

    /// What each of `commits` changed against its first parent (the empty
    /// tree for a root commit), in one `git diff-tree --stdin`.
    pub async fn changes(&self, commits: &[String]) -> Result<Vec<(String, Vec<Change>)>> {
        // What a commit changed never changes: kept by its id.
        let key = |c: &str| {
            self.kept
                .as_ref()
                .filter(|_| is_full_id(c))
                .map(|(_, repo)| format!("{repo} {c}"))
        };
        let mut known = Vec::new();
        let mut asked = Vec::new();
        for c in commits {
            match key(c).and_then(|k| self.memo()?.diff(&k)) {
                Some(diff) => known.push((c.clone(), diff.to_vec())),
                None => asked.push(c.clone()),
            }
        }
        let fresh = self.diff_tree(&asked).await?;
        if let Some(memo) = self.memo() {
            for c in &asked {
                let diff = fresh
                    .iter()
                    .find(|(s, _)| s == c)
                    .map(|(_, d)| d.clone())
                    .unwrap_or_default();
                if let Some(k) = key(c)
                    && diff.len() <= DIFF_KEPT_MAX
                {
                    memo.keep_diff(k, Arc::new(diff));
                }
            }
        }
        known.extend(fresh);
        Ok(known)
    }

    /// [`Objects::changes`] from git.
    async fn diff_tree(&self, commits: &[String]) -> Result<Vec<(String, Vec<Change>)>> {
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        let mut child = self
            .command()
            .args([
                "-c",
                "core.quotepath=false",
                "diff-tree",
                "--stdin",
                "-r",
                "--root",
                "--raw",
                "--numstat",
                "--diff-merges=first-parent",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::Git("no stdin".into()))?;
        let input = commits.join("\n") + "\n";
        // Written while the output is read: a long list would fill the pipe.
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(input.as_bytes()).await;
        });
        let out = child.wait_with_output().await?;
        let _ = writer.await;
        Ok(parse_changes(&String::from_utf8_lossy(&out.stdout)))
    }

    /// The entries of a tree by `git ls-tree -l`, each with its path from
    /// the tree and, for blobs, its size; with `recursive`, every subtree's
    /// too (the subtrees themselves listed).
    pub async fn ls_tree(&self, tree: &str, recursive: bool) -> Result<Vec<(Entry, Option<u64>)>> {
        let mut args = vec!["ls-tree", "-l", "-z"];
        if recursive {
            args.extend(["-r", "-t"]);
        }
        args.extend(["--end-of-options", tree]);
        let out = self.run(&args).await?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .filter_map(|record| {
                let record = String::from_utf8_lossy(record);
                let (meta, path) = record.split_once('\t')?;
                let mut f = meta.split_whitespace();
                let (mode, _kind, sha, size) = (f.next()?, f.next()?, f.next()?, f.next()?);
                let kind = match mode {
                    "040000" => EntryKind::Dir,
                    "120000" => EntryKind::Symlink,
                    "160000" => EntryKind::Submodule,
                    "100755" => EntryKind::Executable,
                    _ => EntryKind::File,
                };
                Some((
                    Entry {
                        mode: mode.to_string(),
                        kind,
                        name: path.to_string(),
                        sha: sha.to_string(),
                    },
                    size.parse().ok(),
                ))
            })
            .collect())
    }

    /// Stores `content` as a blob and returns its id.
    pub async fn write_blob(&self, content: &[u8]) -> Result<String> {
        let out = self
            .pipe(&["hash-object", "-w", "--stdin"], &[], content)
            .await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// The tree of `base` (a tree id; none for the empty tree) with each of
    /// `edits` applied: a path set to a blob (mode `100644`), or removed.
    /// Made in an index file of its own, never the repository's.
    pub async fn edit_tree(&self, base: Option<&str>, edits: &[TreeEdit<'_>]) -> Result<String> {
        let scratch = tempfile::tempdir()?;
        let index = scratch.path().join("index");
        let index = index.to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index.as_str())];
        match base {
            Some(tree) => {
                self.pipe(&["read-tree", "--end-of-options", tree], &env, b"")
                    .await?
            }
            None => self.pipe(&["read-tree", "--empty"], &env, b"").await?,
        };
        // Removals first, so that a move can reuse a name. `--cacheinfo`
        // (not `--index-info`) refuses a path that is a file in one place
        // and a directory in another instead of replacing one silently.
        // (`--force-remove` wants a work tree; mode 0 in `--index-info`
        // removes without one.)
        let removals: String = edits
            .iter()
            .filter_map(|e| match e {
                TreeEdit::Remove { path } => Some(format!("0 {}\t{path}\n", "0".repeat(40))),
                TreeEdit::Set { .. } => None,
            })
            .collect();
        if !removals.is_empty() {
            self.pipe(&["update-index", "--index-info"], &env, removals.as_bytes())
                .await?;
        }
        for edit in edits {
            if let TreeEdit::Set { path, blob } = edit {
                let info = format!("100644,{blob},{path}");
                self.pipe(&["update-index", "--add", "--cacheinfo", &info], &env, b"")
                    .await?;
            }
        }
        let out = self.pipe(&["write-tree"], &env, b"").await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Makes a commit of `tree` on `parent` (none for a first commit).
    pub async fn commit_tree(
        &self,
        tree: &str,
        parent: Option<&str>,
        message: &str,
        author: &Signature<'_>,
        committer: &Signature<'_>,
    ) -> Result<String> {
        let mut args = vec!["commit-tree", tree];
        if let Some(p) = parent {
            args.extend(["-p", p]);
        }
        let env = [
            ("GIT_AUTHOR_NAME", author.name),
            ("GIT_AUTHOR_EMAIL", author.email),
            ("GIT_COMMITTER_NAME", committer.name),
            ("GIT_COMMITTER_EMAIL", committer.email),
        ];
        let out = self.pipe(&args, &env, message.as_bytes()).await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Moves `name` from `old` (none: the ref must not exist) to `new`,
    /// atomically: false when the ref is no longer at `old`.
    pub async fn update_ref(&self, name: &str, new: &str, old: Option<&str>) -> Result<bool> {
        let zero = "0".repeat(new.len());
        let old = old.unwrap_or(&zero);
        let out = self
            .command()
            .args([
                "update-ref",
                "--no-deref",
                "--end-of-options",
                name,
                new,
                old,
            ])
            .output()
            .await?;
        Ok(out.status.success())
    }

    /// Brings the commit-graph up to date after a write made without a
    /// push (a push runs the post-receive hook that does the same). A
    /// failure only leaves reads by path slower.
    pub async fn refresh_graph(&self) {
        let _ = self.run(bare::GRAPH_WRITE).await;
    }

    /// Runs git with `input` on its standard input and extra environment;
    /// its standard output, or [`Error::Invalid`] with git's message (these
    /// fail on what the caller asked: a path both file and directory).
    async fn pipe(&self, args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Result<Vec<u8>> {
        let mut child = self
            .command()
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::Git("no stdin".into()))?;
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
        let out = child.wait_with_output().await?;
        let _ = writer.await;
        if !out.status.success() {
            return Err(Error::Invalid(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(out.stdout)
    }

    /// A blob's content as a stream, from a process of its own: for bodies
    /// too large to hold. The child ends when the stream is dropped.
    pub fn stream_blob(&self, sha: &str) -> Result<tokio_util::io::ReaderStream<ChildOut>> {
        self.stream(&["cat-file", "blob", sha])
    }

    /// `git archive` of a commit, streamed.
    pub fn stream_archive(
        &self,
        format: &str,
        prefix: &str,
        commit: &str,
    ) -> Result<tokio_util::io::ReaderStream<ChildOut>> {
        let format = format!("--format={format}");
        let prefix = format!("--prefix={prefix}/");
        self.stream(&["archive", &format, &prefix, commit])
    }

    fn stream(&self, args: &[&str]) -> Result<tokio_util::io::ReaderStream<ChildOut>> {
        let mut child = self
            .command()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let out = child
            .stdout
            .take()
            .ok_or_else(|| Error::Git("no stdout".into()))?;
        // Bodies are large: 64 KiB frames rather than the default 4 KiB.
        Ok(tokio_util::io::ReaderStream::with_capacity(
            ChildOut { _child: child, out },
            64 * 1024,
        ))
    }
}

/// A child's standard output that keeps the child (killed on drop).
pub struct ChildOut {
    _child: Child,
    out: ChildStdout,
}

impl tokio::io::AsyncRead for ChildOut {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.out).poll_read(cx, buf)
    }
}

/// Whether `spec` is a full object id (SHA-1 or SHA-256, lowercase hex).
fn is_full_id(spec: &str) -> bool {
    matches!(spec.len(), 40 | 64) && spec.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A walk of history: from a commit, through one path or all, within
/// dates.
pub struct Walk<'a> {
    /// A resolved commit id.
    pub from: &'a str,
    /// A resolved commit id whose history is left out (`from` not in
    /// `not`, as in `not..from`).
    pub not: Option<&'a str>,
    /// Empty for every commit.
    pub path: &'a str,
    /// Seconds since the epoch.
    pub since: Option<i64>,
    pub until: Option<i64>,
}

impl Walk<'_> {
    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        // `--since`/`--until` as the timestamps git turns them into.
        if let Some(t) = self.since {
            args.push(format!("--max-age={t}"));
        }
        if let Some(t) = self.until {
            args.push(format!("--min-age={t}"));
        }
        args.push("--end-of-options".into());
        args.push(self.from.to_string());
        if let Some(not) = self.not {
            args.push(format!("^{not}"));
        }
        args.push("--".into());
        if !self.path.is_empty() {
            args.push(format!(":(literal){}", self.path));
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use crate::git::objects::*;

    #[test]
    fn revisions_that_git_would_read_as_more_than_a_name_are_refused() {
        for ok in ["main", "release/1.0", "v1.2.3", "0123abcd", "feature-x_y"] {
            assert!(check_rev(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "-n", "--all", "a..b", "main@{1}", "main^", "main~2", "HEAD:x", ":/fix", "a b",
            "a\0b", "a\nb", "/main", "main/", "a//b", "x*", "main.",
        ] {
            assert!(
                matches!(check_rev(bad), Err(Error::Invalid(_))),
                "{bad:?} was accepted"
            );
        }
        assert!(check_rev(&"a".repeat(256)).is_err());
    }

    #[test]
    fn paths_are_cleaned_and_escapes_refused() {
        assert_eq!(check_path("").unwrap(), "");
        assert_eq!(check_path("/a//b/").unwrap(), "a/b");
        assert_eq!(check_path("src/main.rs").unwrap(), "src/main.rs");
        for bad in ["..", "a/../b", "./a", "a/.", "a\0b", "a\nb", "a\u{7f}"] {
            assert!(
                matches!(check_path(bad), Err(Error::Invalid(_))),
                "{bad:?} was accepted"
            );
        }
        assert!(check_path(&"a".repeat(4097)).is_err());
    }

    #[test]
    fn a_signed_merge_commit_parses() {
        let raw = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
parent 1111111111111111111111111111111111111111\n\
parent 2222222222222222222222222222222222222222\n\
author Ada Lovelace <ada@example.com> 1700000000 +0130\n\
committer Bob <bob@example.com> 1700000100 -0800\n\
gpgsig -----BEGIN SSH SIGNATURE-----\n \n U1NIU0lH\n -----END SSH SIGNATURE-----\n\
\n\
Merge things\n\nThe body.\n";
        let c = Commit::parse("abc", raw);
        assert_eq!(c.tree, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        assert_eq!(c.parents.len(), 2);
        assert_eq!(c.author.name, "Ada Lovelace");
        assert_eq!(c.author.email, "ada@example.com");
        assert_eq!(c.author.time, 1_700_000_000);
        assert_eq!(c.author.offset_minutes, 90);
        assert_eq!(c.committer.offset_minutes, -480);
        assert_eq!(c.subject(), "Merge things");
        assert_eq!(c.message, "Merge things\n\nThe body.\n");
    }

    #[test]
    fn changes_parse_per_commit_with_their_line_counts() {
        let out = "bd95fbd4d8ba12d77794f694ad4f36ec16b42020\n\
:100644 000000 422c 0000 D\ta\n\
0\t2\ta\n\
de7b45060d1ff503638c438a365aa85609fbe235\n\
:100644 100644 7898 422c M\ta b\n\
:000000 100644 0000 f2ad A\tc\n\
1\t0\ta b\n\
-\t-\tc\n";
        let all = parse_changes(out);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].1[0].status, 'D');
        assert_eq!(all[0].1[0].deleted, 2);
        assert_eq!(all[1].1[0].path, "a b");
        assert_eq!(all[1].1[0].added, 1);
        assert_eq!(all[1].1[1].status, 'A');
        assert_eq!(all[1].1[1].added, 0);
    }

    #[test]
    fn trees_parse_and_truncated_ones_are_refused() {
        let mut raw = b"100644 a.txt\0".to_vec();
        raw.extend([0x11; 20]);
        raw.extend(b"40000 dir\0");
        raw.extend([0x22; 20]);
        let entries = parse_tree(&raw).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].kind, EntryKind::File);
        assert_eq!(entries[0].sha, "11".repeat(20));
        assert_eq!(entries[1].kind, EntryKind::Dir);
        assert!(parse_tree(&raw[..raw.len() - 1]).is_err());
    }
}
