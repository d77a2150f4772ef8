//! An identity source backed by an HTTP JSON user directory: a service that
//! answers `POST <DIRECTORY_URL>/authenticate` with the user when the
//! password is right, and `GET <DIRECTORY_URL>/users` with every user.
//!
//! ```ini
//! [plugin.people]
//! PATH = /srv/postern/plugins/postern_example_http_directory.wasm
//! SHA256 = …
//! KIND = identity-source
//! GRANTS = log, http
//! DIRECTORY_URL = https://people.example.com/api
//! API_TOKEN = …
//! ```
//!
//! The directory's answers:
//! - `POST /authenticate` with `{"login": …, "password": …}`: 200 and a
//!   user, or 401 (403, 404) when the login is unknown or the password
//!   wrong;
//! - `GET /users`: 200 and a list of users;
//! - a user is `{"id": …, "login": …, "email": …, "name": …, "groups": […],
//!   "disabled": false}` (only `id` and `login` are required).
//!
//! The host grants `http` to the hosts the source's `*_URL` settings name, so
//! `DIRECTORY_URL` is all the operator writes for the plugin to reach the
//! directory, and nothing else.

use postern_plugin_api::http::{self, HttpError, Request, StatusCode, header};
use postern_plugin_api::identity_source::{
    Identity, IdentitySource, ListedUser, PasswordSignIn, Setting, SignInError, log, setting,
};
use serde::Deserialize;

struct HttpDirectory;

/// A user as the directory describes one.
#[derive(Debug, Deserialize)]
struct User {
    id: serde_json::Value,
    login: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    ssh_keys: Vec<String>,
    #[serde(default)]
    disabled: bool,
}

impl User {
    fn identity(self) -> Identity {
        Identity {
            // A number or a string, kept as the directory writes it.
            external_id: match self.id {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            },
            login: self.login,
            full_name: self.name,
            // The directory is the operator's own: its addresses are vouched
            // for.
            email_verified: !self.email.is_empty(),
            email: self.email,
            ssh_keys: self.ssh_keys,
            groups: self.groups,
            organizations: Vec::new(),
        }
    }
}

/// `DIRECTORY_URL` with `path` after it.
fn endpoint(settings: &[Setting], path: &str) -> Result<String, SignInError> {
    let base = setting(settings, "DIRECTORY_URL")
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| {
            SignInError::Misconfigured("DIRECTORY_URL: expected the directory's base URL".into())
        })?;
    Ok(format!("{}/{path}", base.trim_end_matches('/')))
}

/// Sends a request to the directory, with the API token when one is set.
fn send(
    settings: &[Setting],
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<http::Response<Vec<u8>>, SignInError> {
    let mut request = Request::builder()
        .method(method)
        .uri(endpoint(settings, path)?)
        .header(header::ACCEPT, "application/json")
        .header(header::USER_AGENT, "postern-example-http-directory");
    if !body.is_empty() {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    if let Some(token) = setting(settings, "API_TOKEN").filter(|t| !t.is_empty()) {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request
        .body(body)
        .map_err(|e| SignInError::Misconfigured(format!("DIRECTORY_URL: {e}")))?;
    http::send(request).map_err(|e| match e {
        HttpError::Denied { host } => SignInError::Misconfigured(format!(
            "the host refused {host}: grant the plugin http, and name the directory in DIRECTORY_URL"
        )),
        other => SignInError::Unavailable(other.to_string()),
    })
}

fn unexpected(status: StatusCode) -> SignInError {
    SignInError::Unavailable(format!("the directory answered {status}"))
}

fn users(settings: &[Setting]) -> Result<Vec<User>, SignInError> {
    let response = send(settings, "GET", "users", Vec::new())?;
    if response.status() != StatusCode::OK {
        return Err(unexpected(response.status()));
    }
    serde_json::from_slice(response.body()).map_err(|e| {
        SignInError::Unavailable(format!("the directory's user list is not readable: {e}"))
    })
}

impl IdentitySource for HttpDirectory {
    fn authenticate(request: PasswordSignIn) -> Result<Identity, SignInError> {
        let body = serde_json::json!({ "login": request.login, "password": request.password });
        let response = send(
            &request.settings,
            "POST",
            "authenticate",
            body.to_string().into(),
        )?;
        match response.status() {
            StatusCode::OK => {
                let user: User = serde_json::from_slice(response.body()).map_err(|e| {
                    SignInError::Unavailable(format!("the directory's user is not readable: {e}"))
                })?;
                if user.disabled {
                    return Err(SignInError::AccountDisabled(
                        "the directory has disabled this account".into(),
                    ));
                }
                log::write(log::Level::Info, &format!("{} signed in", user.login));
                Ok(user.identity())
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND => {
                Err(SignInError::InvalidCredentials)
            }
            other => Err(unexpected(other)),
        }
    }

    fn list_users(settings: Vec<Setting>) -> Result<Vec<ListedUser>, SignInError> {
        Ok(users(&settings)?
            .into_iter()
            .map(|u| ListedUser {
                disabled: u.disabled,
                identity: u.identity(),
            })
            .collect())
    }

    fn test_connection(settings: Vec<Setting>) -> Result<String, SignInError> {
        let n = users(&settings)?.len();
        Ok(format!("the directory lists {n} users"))
    }
}

postern_plugin_api::export_identity_source!(HttpDirectory);

#[cfg(test)]
mod tests {
    use super::*;
    use postern_plugin_api::testing::Harness;

    fn settings() -> Vec<Setting> {
        vec![Setting {
            key: "DIRECTORY_URL".into(),
            value: "https://people.example.com/api/".into(),
        }]
    }

    fn sign_in(login: &str, password: &str) -> PasswordSignIn {
        PasswordSignIn {
            login: login.into(),
            password: password.into(),
            known_account: None,
            settings: settings(),
        }
    }

    /// A directory with one user, ann, whose password is "right".
    fn directory() -> Harness {
        Harness::new().on_http(|request| {
            let answer = |status: u16, body: &str| {
                Ok(::http::Response::builder()
                    .status(status)
                    .body(body.as_bytes().to_vec())
                    .unwrap())
            };
            match (request.method().as_str(), request.uri().path()) {
                ("POST", "/api/authenticate") => {
                    let asked: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
                    if asked["login"] == "ann" && asked["password"] == "right" {
                        answer(
                            200,
                            r#"{"id": 7, "login": "ann", "email": "ann@example.com", "groups": ["dev"]}"#,
                        )
                    } else {
                        answer(401, "")
                    }
                }
                ("GET", "/api/users") => answer(200, r#"[{"id": 7, "login": "ann"}]"#),
                _ => answer(404, ""),
            }
        })
    }

    #[test]
    fn the_right_password_signs_in_and_is_logged() {
        let mut host = directory();
        let identity = host
            .run(|| HttpDirectory::authenticate(sign_in("ann", "right")))
            .unwrap();
        assert_eq!(identity.external_id, "7");
        assert_eq!(identity.email, "ann@example.com");
        assert_eq!(identity.groups, ["dev"]);
        assert!(host.logs().iter().any(|l| l == "INFO ann signed in"));
        let sent = &host.requests()[0];
        assert_eq!(
            sent.uri(),
            "https://people.example.com/api/authenticate",
            "one slash between the base and the path"
        );
    }

    #[test]
    fn a_wrong_password_is_invalid_credentials() {
        let out = directory().run(|| HttpDirectory::authenticate(sign_in("ann", "wrong")));
        assert!(matches!(out, Err(SignInError::InvalidCredentials)));
    }

    #[test]
    fn a_directory_that_fails_is_unavailable_not_a_wrong_password() {
        let mut host = Harness::new().on_http(|_| Err("connection refused".into()));
        let out = host.run(|| HttpDirectory::authenticate(sign_in("ann", "right")));
        assert!(matches!(out, Err(SignInError::Unavailable(_))), "{out:?}");
    }

    #[test]
    fn the_connection_test_counts_the_users() {
        let out = directory().run(|| HttpDirectory::test_connection(settings()));
        assert_eq!(out.unwrap(), "the directory lists 1 users");
    }
}
