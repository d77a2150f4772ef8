//! A host stub for a plugin's unit tests (feature `testing`, native
//! targets): it lends in-memory capabilities to the plugin's code, called
//! directly, without a Postern host.
//!
//! ```ignore
//! use postern_plugin_api::testing::Harness;
//!
//! let mut host = Harness::new()
//!     .with_kv("greeting", b"hello")
//!     .on_http(|request| {
//!         assert_eq!(request.uri(), "https://directory.example/authenticate");
//!         Ok(http::Response::builder().status(200).body(br#"{"login":"ann"}"#.to_vec()).unwrap())
//!     });
//! let answer = host.run(|| MySource::authenticate(request));
//! assert!(host.logs().iter().any(|line| line.contains("ann signed in")));
//! ```
//!
//! `credentials` is lent with a stand-in scheme, not argon2: a hash is
//! [`hash`]`(password)`, `$test$` and the password, so that a test can
//! write the hashes it expects. `directory` answers from the entries given
//! with [`Harness::with_entry`]; `http` from the closure given with
//! [`Harness::on_http`] (feature `http`). A capability the harness was not
//! given fails the way a host's unavailable capability does.
//!
//! The capabilities reach the harness through the same encoded calls a
//! native host receives, so a test exercises the plugin's side of the C ABI
//! as well as its logic.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Value, json};

/// A stand-in password hash the harness's `credentials` accepts.
pub fn hash(password: &str) -> String {
    format!("$test${password}")
}

/// An HTTP answer of the test's making, or the reason the request failed.
#[cfg(feature = "http")]
pub type HttpAnswer = Result<::http::Response<Vec<u8>>, String>;

/// A directory entry: its DN and its attributes, each with its values.
type StoredEntry = (String, Vec<(String, Vec<Vec<u8>>)>);

/// The test's answerer of `http` requests.
#[cfg(feature = "http")]
type HttpAnswerer = Box<dyn FnMut(::http::Request<Vec<u8>>) -> HttpAnswer>;

/// The in-memory host. Build it, then [`run`](Harness::run) plugin code
/// inside it.
#[derive(Default)]
pub struct Harness {
    kv: HashMap<String, Vec<u8>>,
    logs: Vec<String>,
    entries: Vec<StoredEntry>,
    binds: HashMap<String, String>,
    #[cfg(feature = "http")]
    http: Option<HttpAnswerer>,
    #[cfg(feature = "http")]
    requests: Vec<::http::Request<Vec<u8>>>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("kv", &self.kv.keys().collect::<Vec<_>>())
            .field("logs", &self.logs)
            .finish_non_exhaustive()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

impl Harness {
    /// A host with nothing stored.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value` under `key` in the plugin's `kv`.
    pub fn with_kv(mut self, key: &str, value: &[u8]) -> Self {
        self.kv.insert(key.to_string(), value.to_vec());
        self
    }

    /// A directory entry `dn` with `attributes` (name, values), which
    /// `directory.search` returns when its filter names one of the values;
    /// `password`, when given, is what `directory.bind-check` accepts for
    /// it.
    pub fn with_entry(
        mut self,
        dn: &str,
        attributes: &[(&str, &[&str])],
        password: Option<&str>,
    ) -> Self {
        let attributes = attributes
            .iter()
            .map(|(name, values)| {
                (
                    name.to_string(),
                    values.iter().map(|v| v.as_bytes().to_vec()).collect(),
                )
            })
            .collect();
        self.entries.push((dn.to_string(), attributes));
        if let Some(password) = password {
            self.binds.insert(dn.to_string(), password.to_string());
        }
        self
    }

    /// Answers the plugin's `http` requests with `answer`.
    #[cfg(feature = "http")]
    pub fn on_http(
        mut self,
        answer: impl FnMut(::http::Request<Vec<u8>>) -> HttpAnswer + 'static,
    ) -> Self {
        self.http = Some(Box::new(answer));
        self
    }

    /// Runs `f` (the plugin's code) with this host lending its
    /// capabilities on this thread.
    pub fn run<R>(&mut self, f: impl FnOnce() -> R) -> R {
        CURRENT.with(|c| *c.borrow_mut() = Some(std::mem::take(self)));
        let out = f();
        *self = CURRENT
            .with(|c| c.borrow_mut().take())
            .expect("the harness is still installed");
        out
    }

    /// The lines the plugin logged, as `LEVEL message`.
    pub fn logs(&self) -> &[String] {
        &self.logs
    }

    /// What the plugin stored under `key`.
    pub fn kv(&self, key: &str) -> Option<&[u8]> {
        self.kv.get(key).map(|v| v.as_slice())
    }

    /// The HTTP requests the plugin sent, in order.
    #[cfg(feature = "http")]
    pub fn requests(&self) -> &[::http::Request<Vec<u8>>] {
        &self.requests
    }

    fn answer(&mut self, name: &str, request: Value) -> Result<Value, String> {
        let text = |key: &str| request[key].as_str().unwrap_or_default().to_string();
        Ok(match name {
            "log.write" => {
                let level = request["level"].as_str().unwrap_or("Info").to_uppercase();
                self.logs.push(format!("{level} {}", text("message")));
                Value::Null
            }
            "kv.get" => json!({ "Ok": self.kv.get(&text("key")) }),
            "kv.set" => {
                let value: Vec<u8> =
                    serde_json::from_value(request["value"].clone()).map_err(|e| e.to_string())?;
                self.kv.insert(text("key"), value);
                json!({ "Ok": null })
            }
            "kv.delete" => {
                self.kv.remove(&text("key"));
                json!({ "Ok": null })
            }
            "credentials.hash-password" => json!({ "Ok": hash(&text("password")) }),
            "credentials.verify-password" => match text("hash").strip_prefix("$test$") {
                Some(expected) => json!({ "Ok": expected == text("password") }),
                None => json!({ "Err": "MalformedHash" }),
            },
            "credentials.equalize-timing" => Value::Null,
            "directory.bind-check" => {
                let password = text("password");
                let ok = !password.is_empty()
                    && self.binds.get(&text("dn")).is_some_and(|p| *p == password);
                json!({ "Ok": ok })
            }
            "directory.search" => {
                let filter = text("filter");
                let found: Vec<Value> = self
                    .entries
                    .iter()
                    .filter(|(_, attributes)| {
                        attributes.iter().any(|(_, values)| {
                            values
                                .iter()
                                .any(|v| filter.contains(&*String::from_utf8_lossy(v)))
                        })
                    })
                    .map(|(dn, attributes)| {
                        json!({
                            "dn": dn,
                            "attributes": attributes
                                .iter()
                                .map(|(name, values)| json!({ "name": name, "values": values }))
                                .collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                json!({ "Ok": found })
            }
            #[cfg(feature = "http")]
            "http.send" => self.http_send(request)?,
            other => return Err(format!("the test harness lends no {other}")),
        })
    }

    #[cfg(feature = "http")]
    fn http_send(&mut self, request: Value) -> Result<Value, String> {
        let wire: crate::http::WireRequest =
            serde_json::from_value(request).map_err(|e| e.to_string())?;
        let request = wire.into_request()?;
        self.requests.push(request.clone());
        let Some(answer) = self.http.as_mut() else {
            return Ok(json!({ "Err": { "Other": "the test harness was given no on_http" } }));
        };
        Ok(match answer(request) {
            Ok(response) => json!({ "Ok": crate::http::WireResponse::from_response(&response) }),
            Err(why) => json!({ "Err": { "Other": why } }),
        })
    }
}

/// A capability call, answered by the harness running on this thread if
/// there is one.
pub(crate) fn call(name: &str, request: &[u8]) -> Option<Result<Vec<u8>, String>> {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let harness = current.as_mut()?;
        let answer = serde_json::from_slice(request)
            .map_err(|e| e.to_string())
            .and_then(|request| harness.answer(name, request))
            .and_then(|v| serde_json::to_vec(&v).map_err(|e| e.to_string()));
        Some(answer)
    })
}
