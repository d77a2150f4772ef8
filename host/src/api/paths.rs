//! Path parameters that several resources share, each described once for
//! both the extractor and the OpenAPI description.

use serde::Deserialize;
use utoipa::IntoParams;

/// `{owner}/{repo}`: a repository.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RepoPath {
    /// Owner login
    pub owner: String,
    /// Repository name
    pub repo: String,
}
