//! Files and trees at Gitea's paths: `contents` (a file with its content,
//! a directory's listing), `raw` and `media` bodies (streamed), `git/trees`,
//! `git/blobs` and archives.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{GIT_TREES_PER_PAGE, MAX_BLOB_SIZE, Reading, RefQuery};
use crate::api::paths::RepoPath;
use crate::api::{ApiError, ApiQuery, ApiVersion, ErrorBody, MaybePrincipal};
use crate::git::objects::{self, Commit, EntryKind, Info, Kind};
use crate::state::App;

/// Bodies up to this size are read through the reader's one git process
/// and their type told from their bytes; larger ones stream from a process
/// of their own and are typed by their name.
const IN_MEMORY: u64 = 1024 * 1024;

/// Gitea's `FileLinksResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileLinks {
    #[serde(rename = "self")]
    pub this: String,
    pub git: String,
    pub html: String,
}

/// Gitea's `ContentsResponse`: a file (with its content, base64, when it
/// is at most `default_max_blob_size`), a directory, a symlink or a
/// submodule.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContentsView {
    pub name: String,
    pub path: String,
    pub sha: String,
    /// The newest commit that changed it (files only; null in listings).
    pub last_commit_sha: Option<String>,
    pub last_commit_message: Option<String>,
    pub last_author_date: Option<String>,
    pub last_committer_date: Option<String>,
    /// `file`, `dir`, `symlink` or `submodule`.
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    /// `base64` when `content` is given.
    pub encoding: Option<String>,
    pub content: Option<String>,
    /// A symlink's target.
    pub target: Option<String>,
    pub url: String,
    pub html_url: String,
    pub git_url: String,
    pub download_url: Option<String>,
    pub submodule_git_url: Option<String>,
    pub lfs_oid: Option<String>,
    pub lfs_size: Option<u64>,
    pub _links: FileLinks,
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File | EntryKind::Executable => "file",
        EntryKind::Dir => "dir",
        EntryKind::Symlink => "symlink",
        EntryKind::Submodule => "submodule",
    }
}

/// The view of one entry, without content.
pub(super) fn entry_view(
    reading: &Reading,
    r#ref: &str,
    path: &str,
    kind: EntryKind,
    sha: &str,
    size: u64,
) -> ContentsView {
    let name = path.rsplit('/').next().unwrap_or(path).to_string();
    let q = form_urlencoded::byte_serialize(r#ref.as_bytes()).collect::<String>();
    let url = format!("{}/contents/{path}?ref={q}", reading.api);
    let git_url = match kind {
        EntryKind::Dir => format!("{}/git/trees/{sha}", reading.api),
        _ => format!("{}/git/blobs/{sha}", reading.api),
    };
    let html_url = format!("{}/src/{}/{path}", reading.html, r#ref);
    let download_url = matches!(
        kind,
        EntryKind::File | EntryKind::Executable | EntryKind::Symlink
    )
    .then(|| format!("{}/raw/{path}?ref={q}", reading.api));
    ContentsView {
        name,
        path: path.to_string(),
        sha: sha.to_string(),
        last_commit_sha: None,
        last_commit_message: None,
        last_author_date: None,
        last_committer_date: None,
        kind: kind_name(kind).to_string(),
        size,
        encoding: None,
        content: None,
        target: None,
        _links: FileLinks {
            this: url.clone(),
            git: git_url.clone(),
            html: html_url.clone(),
        },
        url,
        html_url,
        git_url,
        download_url,
        submodule_git_url: None,
        lfs_oid: None,
        lfs_size: None,
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct FilePath {
    /// Owner login
    pub owner: String,
    /// Repository name
    pub repo: String,
    /// The path inside the repository; may hold `/`.
    pub filepath: String,
}

/// What a path names at a commit: its mode (from the parent tree) and its
/// object.
async fn lookup(
    reading: &mut Reading,
    commit: &Commit,
    path: &str,
) -> Result<(EntryKind, Info), ApiError> {
    let not_found = || {
        ApiError::NotFound(format!(
            "{path:?} does not exist at {}",
            &commit.sha[..12.min(commit.sha.len())]
        ))
    };
    if path.is_empty() {
        let info = reading
            .objects
            .info(&commit.tree)
            .await?
            .ok_or_else(not_found)?;
        return Ok((EntryKind::Dir, info));
    }
    let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
    let tree = reading
        .objects
        .tree(&format!("{}:{parent}", commit.sha))
        .await?
        .ok_or_else(not_found)?;
    let entry = tree
        .into_iter()
        .find(|e| e.name == name)
        .ok_or_else(not_found)?;
    if entry.kind == EntryKind::Submodule {
        // The commit of another repository: not in this object store.
        return Ok((
            EntryKind::Submodule,
            Info {
                sha: entry.sha,
                kind: Kind::Commit,
                size: 0,
            },
        ));
    }
    let info = reading
        .objects
        .info(&entry.sha)
        .await?
        .ok_or_else(not_found)?;
    Ok((entry.kind, info))
}

async fn contents_of(
    app: &App,
    version: ApiVersion,
    caller: &crate::access::Caller,
    (owner, repo): (&str, &str),
    filepath: &str,
    asked: Option<&str>,
) -> Result<Response, ApiError> {
    let path = objects::check_path(filepath)?;
    let mut reading = Reading::open(app, version, caller, owner, repo).await?;
    let (name, commit) = reading.resolve(asked).await?;
    let (kind, info) = lookup(&mut reading, &commit, &path).await?;
    if kind == EntryKind::Dir {
        let entries = reading.objects.ls_tree(&info.sha, false).await?;
        let views: Vec<ContentsView> = entries
            .into_iter()
            .map(|(e, size)| {
                let full = if path.is_empty() {
                    e.name.clone()
                } else {
                    format!("{path}/{}", e.name)
                };
                entry_view(&reading, &name, &full, e.kind, &e.sha, size.unwrap_or(0))
            })
            .collect();
        return Ok(Json(views).into_response());
    }
    let mut view = entry_view(&reading, &name, &path, kind, &info.sha, info.size);
    match kind {
        EntryKind::Symlink => {
            if let Some((_, target)) = reading.objects.read(&info.sha).await? {
                view.target = Some(String::from_utf8_lossy(&target).into_owned());
            }
        }
        EntryKind::File | EntryKind::Executable if info.size <= MAX_BLOB_SIZE => {
            if let Some((_, content)) = reading.objects.read(&info.sha).await? {
                view.encoding = Some("base64".into());
                view.content = Some(STANDARD.encode(content));
            }
        }
        _ => {}
    }
    if let Some(last) = reading.objects.last_change(&commit.sha, &path).await?
        && let Some(c) = reading.objects.commit(&last).await?
    {
        view.last_commit_message = Some(c.message.clone());
        view.last_author_date = Some(crate::api::rfc3339(c.author.time));
        view.last_committer_date = Some(crate::api::rfc3339(c.committer.time));
        view.last_commit_sha = Some(c.sha);
    }
    Ok(Json(view).into_response())
}

/// A file (with its content, base64, up to `default_max_blob_size`; larger
/// ones with their metadata only) or a directory's entries, at a branch,
/// tag or commit. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/contents/{filepath}", tag = "repository", params(FilePath, RefQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The file; for a directory, an array of its entries", body = ContentsView),
    (status = 400, description = "A bad path or ref", body = ErrorBody),
    (status = 404, description = "No such path, ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn contents(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<FilePath>,
    ApiQuery(query): ApiQuery<RefQuery>,
) -> Result<Response, ApiError> {
    contents_of(
        &app,
        version,
        &caller,
        (&path.owner, &path.repo),
        &path.filepath,
        query.r#ref.as_deref(),
    )
    .await
}

/// The entries of the repository's top directory. Permission: read
/// access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/contents", tag = "repository", params(RepoPath, RefQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The entries", body = Vec<ContentsView>),
    (status = 404, description = "No such ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn contents_root(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<RepoPath>,
    ApiQuery(query): ApiQuery<RefQuery>,
) -> Result<Response, ApiError> {
    contents_of(
        &app,
        version,
        &caller,
        (&path.owner, &path.repo),
        "",
        query.r#ref.as_deref(),
    )
    .await
}

/// The type a raw body is served with. Anything that is text is served as
/// plain text, so that a repository's HTML or SVG never runs as this
/// site's page; binary files keep the type their name tells.
fn content_type(path: &str, head: Option<&[u8]>) -> String {
    let guess = mime_guess::from_path(path).first();
    let texty = |m: &mime_guess::Mime| {
        m.type_() == mime_guess::mime::TEXT
            || m.subtype() == mime_guess::mime::JSON
            || m.subtype() == mime_guess::mime::XML
            || m.subtype() == mime_guess::mime::JAVASCRIPT
            || m.suffix().is_some()
    };
    let binary = match head {
        Some(bytes) => bytes.iter().take(8000).any(|b| *b == 0),
        None => guess.as_ref().is_some_and(|m| !texty(m)),
    };
    match guess {
        Some(m) if binary && !texty(&m) => m.essence_str().to_string(),
        _ if binary => "application/octet-stream".into(),
        _ => "text/plain; charset=utf-8".into(),
    }
}

/// Splits `ref/…/path` where no `ref` query was given: the longest leading
/// segments that name a branch, tag or commit holding the rest (Gitea's
/// `/raw/{ref}/{path}`); otherwise the default branch and the whole path.
async fn split_ref(
    reading: &mut Reading,
    path: &str,
) -> Result<(Option<String>, String), ApiError> {
    let parts: Vec<&str> = path.split('/').collect();
    for cut in (1..parts.len()).rev() {
        let candidate = parts[..cut].join("/");
        if objects::check_rev(&candidate).is_err() {
            continue;
        }
        let rest = parts[cut..].join("/");
        if reading
            .objects
            .info(&format!("{candidate}^{{commit}}:{rest}"))
            .await?
            .is_some()
        {
            return Ok((Some(candidate), rest));
        }
    }
    Ok((None, path.to_string()))
}

/// A file's bytes, at a branch, tag or commit (`ref`, or the path's
/// leading segments), streamed: `ETag` is the blob's id and answers
/// `If-None-Match`; text is served as `text/plain`. Permission: read
/// access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/raw/{filepath}", tag = "repository", params(FilePath, RefQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The file's bytes", content_type = "application/octet-stream"),
    (status = 304, description = "Unchanged since the ETag sent"),
    (status = 400, description = "A bad path or ref", body = ErrorBody),
    (status = 404, description = "No such file, ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn raw(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<FilePath>,
    ApiQuery(query): ApiQuery<RefQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let file = objects::check_path(&path.filepath)?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let (asked, file) = match query.r#ref.filter(|r| !r.trim().is_empty()) {
        Some(r) => (Some(r), file),
        None => split_ref(&mut reading, &file).await?,
    };
    let (_, commit) = reading.resolve(asked.as_deref()).await?;
    let (kind, info) = lookup(&mut reading, &commit, &file).await?;
    if !matches!(
        kind,
        EntryKind::File | EntryKind::Executable | EntryKind::Symlink
    ) {
        return Err(ApiError::NotFound(format!("{file:?} is not a file")));
    }
    serve_blob(&mut reading, &info, &file, &headers).await
}

/// A file's bytes, as `raw` serves them (Postern stores no LFS objects, so
/// a pointer file is served as it is). Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/media/{filepath}", tag = "repository", params(FilePath, RefQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The file's bytes", content_type = "application/octet-stream"),
    (status = 304, description = "Unchanged since the ETag sent"),
    (status = 400, description = "A bad path or ref", body = ErrorBody),
    (status = 404, description = "No such file, ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn media(
    state: State<App>,
    version: ApiVersion,
    caller: MaybePrincipal,
    path: Path<FilePath>,
    query: ApiQuery<RefQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    raw(state, version, caller, path, query, headers).await
}

async fn serve_blob(
    reading: &mut Reading,
    info: &Info,
    file: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let etag = format!("\"{}\"", info.sha);
    let mut response = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else if info.size <= IN_MEMORY {
        let (_, bytes) = reading
            .objects
            .read(&info.sha)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("{file:?} is gone")))?;
        let kind = content_type(file, Some(&bytes));
        let mut r = Body::from(bytes).into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, header_value(&kind));
        r
    } else {
        let stream = reading.objects.stream_blob(&info.sha)?;
        let kind = content_type(file, None);
        let mut r = Body::from_stream(stream).into_response();
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, header_value(&kind));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(info.size));
        r
    };
    let h = response.headers_mut();
    h.insert(header::ETAG, header_value(&etag));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=300"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    Ok(response)
}

fn header_value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

/// Gitea's `GitEntry`.
#[derive(Debug, Serialize, ToSchema)]
pub struct GitEntry {
    pub path: String,
    pub mode: String,
    /// `blob`, `tree` or `commit` (a submodule).
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    pub sha: String,
    pub url: String,
}

/// Gitea's `GitTreeResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TreeView {
    pub sha: String,
    pub url: String,
    pub tree: Vec<GitEntry>,
    /// More entries follow on the next page.
    pub truncated: bool,
    pub page: u64,
    pub total_count: u64,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ObjectPath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// An object id (for trees, a commit or a ref names its tree)
    sha: String,
}

/// Gitea's tree paging.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TreeQuery {
    /// Every subtree's entries too.
    recursive: Option<String>,
    /// From 1.
    page: Option<u64>,
    /// Entries a page; `default_git_trees_per_page` when absent.
    per_page: Option<u64>,
}

/// A tree's entries, paged as Gitea pages them. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/git/trees/{sha}", tag = "repository", params(ObjectPath, TreeQuery), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The tree", body = TreeView),
    (status = 400, description = "A bad id or paging value", body = ErrorBody),
    (status = 404, description = "No such tree or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn tree(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ObjectPath>,
    ApiQuery(query): ApiQuery<TreeQuery>,
) -> Result<Json<TreeView>, ApiError> {
    let recursive = crate::api::pagination::flag("recursive", &query.recursive)?.unwrap_or(false);
    let page = query.page.unwrap_or(1).max(1);
    let per_page = query
        .per_page
        .filter(|n| *n > 0)
        .unwrap_or(GIT_TREES_PER_PAGE)
        .min(GIT_TREES_PER_PAGE);
    objects::check_rev(&path.sha)?;
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let tree = reading
        .objects
        .info(&format!("{}^{{tree}}", path.sha))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("tree {:?} not found", path.sha)))?;
    let all = reading.objects.ls_tree(&tree.sha, recursive).await?;
    let total = all.len() as u64;
    let skip = (page - 1).saturating_mul(per_page);
    let entries = all
        .into_iter()
        .skip(skip as usize)
        .take(per_page as usize)
        .map(|(e, size)| {
            let kind = match e.kind {
                EntryKind::Dir => "tree",
                EntryKind::Submodule => "commit",
                _ => "blob",
            };
            GitEntry {
                url: format!("{}/git/{}s/{}", reading.api, kind, e.sha),
                path: e.name,
                mode: e.mode,
                kind: kind.into(),
                size: size.unwrap_or(0),
                sha: e.sha,
            }
        })
        .collect();
    Ok(Json(TreeView {
        url: format!("{}/git/trees/{}", reading.api, tree.sha),
        sha: tree.sha,
        tree: entries,
        truncated: skip + per_page < total,
        page,
        total_count: total,
    }))
}

/// Gitea's `GitBlobResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BlobView {
    /// Base64; null when the blob is larger than `default_max_blob_size`.
    pub content: Option<String>,
    pub encoding: Option<String>,
    pub url: String,
    pub sha: String,
    pub size: u64,
}

/// A blob by id. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/git/blobs/{sha}", tag = "repository", params(ObjectPath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The blob", body = BlobView),
    (status = 400, description = "A bad id", body = ErrorBody),
    (status = 404, description = "No such blob or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn blob(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ObjectPath>,
) -> Result<Json<BlobView>, ApiError> {
    if path.sha.is_empty()
        || path.sha.len() > 64
        || !path.sha.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(ApiError::BadRequest(format!(
            "{:?} is not an object id",
            path.sha
        )));
    }
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let not_found = || ApiError::NotFound(format!("blob {:?} not found", path.sha));
    let info = reading
        .objects
        .info(&path.sha)
        .await?
        .ok_or_else(not_found)?;
    if info.kind != Kind::Blob {
        return Err(not_found());
    }
    let content = if info.size <= MAX_BLOB_SIZE {
        reading
            .objects
            .read(&info.sha)
            .await?
            .map(|(_, bytes)| STANDARD.encode(bytes))
    } else {
        None
    };
    Ok(Json(BlobView {
        encoding: content.is_some().then(|| "base64".to_string()),
        content,
        url: format!("{}/git/blobs/{}", reading.api, info.sha),
        sha: info.sha,
        size: info.size,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ArchivePath {
    /// Owner login
    owner: String,
    /// Repository name
    repo: String,
    /// `{ref}.tar.gz` or `{ref}.zip`
    archive: String,
}

/// An archive of the repository at a branch, tag or commit, streamed from
/// `git archive`. Permission: read access.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{repo}/archive/{archive}", tag = "repository", params(ArchivePath), security((), ("session" = []), ("basic" = []), ("token" = [])), responses(
    (status = 200, description = "The archive", content_type = "application/octet-stream"),
    (status = 400, description = "Not `{ref}.tar.gz` or `{ref}.zip`, or a bad ref", body = ErrorBody),
    (status = 404, description = "No such ref or repository, or hidden", body = ErrorBody),
))]
pub(crate) async fn archive(
    State(app): State<App>,
    version: ApiVersion,
    MaybePrincipal(caller): MaybePrincipal,
    Path(path): Path<ArchivePath>,
) -> Result<Response, ApiError> {
    let (r#ref, format, content_type) = if let Some(r) = path.archive.strip_suffix(".tar.gz") {
        (r, "tar.gz", "application/gzip")
    } else if let Some(r) = path.archive.strip_suffix(".zip") {
        (r, "zip", "application/zip")
    } else {
        return Err(ApiError::BadRequest(format!(
            "{:?}: ask for {{ref}}.tar.gz or {{ref}}.zip",
            path.archive
        )));
    };
    let mut reading = Reading::open(&app, version, &caller, &path.owner, &path.repo).await?;
    let (name, commit) = reading.resolve(Some(r#ref)).await?;
    let prefix = reading.repo.name.clone();
    let stream = reading
        .objects
        .stream_archive(format, &prefix, &commit.sha)?;
    let file = format!("{}-{}.{format}", reading.repo.name, name.replace('/', "-"));
    let mut response = Body::from_stream(stream).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_DISPOSITION,
        header_value(&format!("attachment; filename=\"{file}\"")),
    );
    Ok(response)
}
