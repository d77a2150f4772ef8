//! Headless Chromium (Debian's `chromium`), driven through `chromedriver`
//! over WebDriver with fantoccini.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};

/// A chromedriver process and a browser session on it.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with an empty profile.
    pub async fn start() -> Browser {
        let port = free_port();
        let mut driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is installed (Debian package chromium-driver)");
        let profile = tempfile::tempdir().expect("profile dir");
        let caps: serde_json::Map<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": "/usr/bin/chromium",
                    "args": [
                        "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-quic", "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        format!("--user-data-dir={}", profile.path().display()),
                    ]
                }
            }))
            .expect("capabilities are an object");
        let url = format!("http://127.0.0.1:{port}");
        let mut last_err = String::new();
        for _ in 0..100 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => {
                    return Browser {
                        client,
                        driver,
                        _profile: profile,
                    };
                }
                Err(e) => last_err = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let _ = driver.kill();
        panic!("could not start a Chromium session through chromedriver: {last_err}");
    }

    /// Fills in and submits the sign-in form at `login_url`.
    pub async fn sign_in(&self, login_url: &str, user: &str, password: &str) {
        use fantoccini::Locator;
        let c = &self.client;
        c.goto(login_url).await.expect("the sign-in page loads");
        c.find(Locator::Id("user_name"))
            .await
            .expect("a user name field")
            .send_keys(user)
            .await
            .expect("typing");
        c.find(Locator::Id("password"))
            .await
            .expect("a password field")
            .send_keys(password)
            .await
            .expect("typing");
        let button = c
            .find(Locator::Id("sign-in"))
            .await
            .expect("a sign-in button");
        button.clone().click().await.expect("clicking");
        // The form's answer replaces the page: until then the old button is
        // still there, and a `goto` now would cut the sign-in short (no
        // session cookie yet) on a loaded machine. A sign-in that fails
        // re-renders the page, which ends the wait too.
        for _ in 0..200 {
            if button.is_displayed().await.is_err() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Adds a virtual authenticator (the WebDriver extension of W3C
    /// WebAuthn, which chromedriver serves): a CTAP2 key that keeps resident
    /// credentials and verifies its user, answering every request at once.
    /// Returns its id.
    pub async fn add_virtual_authenticator(&self) -> String {
        let out = self
            .client
            .issue_cmd(Extension::post(
                "webauthn/authenticator",
                serde_json::json!({
                    "protocol": "ctap2",
                    "transport": "usb",
                    "hasResidentKey": true,
                    "hasUserVerification": true,
                    "isUserConsenting": true,
                    "isUserVerified": true,
                }),
            ))
            .await
            .expect("chromedriver adds a virtual authenticator");
        out.as_str()
            .expect("the authenticator's id is a string")
            .to_string()
    }

    /// The credentials a virtual authenticator holds.
    pub async fn authenticator_credentials(&self, authenticator: &str) -> Vec<serde_json::Value> {
        let out = self
            .client
            .issue_cmd(Extension {
                method: http::Method::GET,
                path: format!("webauthn/authenticator/{authenticator}/credentials"),
                body: None,
            })
            .await
            .expect("chromedriver lists the credentials");
        out.as_array().cloned().unwrap_or_default()
    }

    /// Ends the browser session and chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}

/// A WebDriver extension command on the current session.
#[derive(Debug)]
struct Extension {
    method: http::Method,
    /// The path under `/session/{id}/`.
    path: String,
    body: Option<serde_json::Value>,
}

impl Extension {
    fn post(path: &str, body: serde_json::Value) -> Extension {
        Extension {
            method: http::Method::POST,
            path: path.to_string(),
            body: Some(body),
        }
    }
}

impl fantoccini::wd::WebDriverCompatibleCommand for Extension {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            self.method.clone(),
            self.body.as_ref().map(|b| b.to_string()),
        )
    }
}
