//! SAML sign-in against a second identity provider of another
//! implementation than simplesamlphp: PyPI's `pysaml2`, signing and
//! encrypting with Debian's `xmlsec1` (tests/src/pysaml2.rs). Each source
//! is made over the API from the metadata pysaml2 writes, and pysaml2
//! reads Postern's SP from the metadata Postern serves; the responses come
//! in each vendor's shape: claim names, NameID formats, what is signed,
//! encryption algorithms, IdP-initiated.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::pysaml2::{self, Claims, Idp, Person, Shape};
use postern_tests::saml::Posted;
use postern_tests::{Server, backends};
use reqwest::StatusCode;
use serde_json::json;

use crate::oauth_consumer::whoami;
use crate::saml::{
    admin_server, admin_server_with, as_boss, browser_like, session_login, sp_metadata,
};

const XENC: &str = "http://www.w3.org/2001/04/xmlenc#";
const XENC11: &str = "http://www.w3.org/2009/xmlenc11#";

/// The Entra ID source's button icon.
const ICON: &str = "https://aadcdn.msftauth.net/shared/1.0/content/images/microsoft_logo.svg";

/// An Entra ID group's object id.
const ENTRA_GROUP: &str = "5f8e2a3c-91b4-4c6e-8d2f-3a7b9c1d0e42";

/// Adds the SAML source `name` over the API from the IdP's metadata, with
/// `settings` besides, and registers its SP at the IdP from the metadata
/// Postern serves for it.
async fn add_source(server: &Server, idp: &Idp, name: &str, settings: &[(&str, &str)]) {
    let mut all = json!({"PROVIDER": "saml", "METADATA": idp.metadata(), "AUTO_REGISTER": "true"});
    for (key, value) in settings {
        all[*key] = json!(value);
    }
    let (status, body) = as_boss(
        server,
        reqwest::Method::POST,
        "/api/v1/admin/sources/oauth2",
        Some(json!({"name": name, "settings": all})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{}: {body}", server.backend);
    idp.register_sp(&sp_metadata(server, name).await).await;
}

/// Begins a sign-in at `source` in a new "browser", has the IdP answer
/// with a response about `person` in `shape`, and posts it back: the
/// browser and Postern's answer.
async fn sign_in(
    server: &Server,
    idp: &Idp,
    source: &str,
    person: &Person,
    shape: &Shape,
) -> (reqwest::Client, reqwest::Response) {
    let client = browser_like();
    let res = client
        .get(server.url(&format!("/user/oauth2/{source}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FOUND, "{}", server.log());
    let to = res.headers()["location"].to_str().unwrap().to_string();
    assert!(to.starts_with(&idp.sso_url()), "{to}");
    let posted = idp.respond(&to, person, shape).await;
    assert_eq!(
        posted.action,
        server.url(&format!("/user/oauth2/{source}/callback"))
    );
    let res = post(&client, &posted).await;
    (client, res)
}

/// Posts `posted` where the IdP's page would have the browser post it.
async fn post(client: &reqwest::Client, posted: &Posted) -> reqwest::Response {
    client
        .post(&posted.action)
        .form(&[
            ("SAMLResponse", posted.saml_response.as_str()),
            ("RelayState", posted.relay_state.as_str()),
        ])
        .send()
        .await
        .unwrap()
}

/// Signs `person` in through `source` in `shape`; the session is
/// `login`'s, whose e-mail and full name are the person's.
async fn signs_in_as(
    server: &Server,
    idp: &Idp,
    source: &str,
    person: &Person,
    shape: &Shape,
    login: &str,
) {
    let (client, res) = sign_in(server, idp, source, person, shape).await;
    let status = res.status();
    assert!(
        status.is_redirection(),
        "{} {source} {shape:?}: {status} {}\n{}\n{}",
        server.backend,
        res.text().await.unwrap_or_default(),
        server.log(),
        idp.log()
    );
    let (_, user) = whoami(server, &client).await;
    assert_eq!(
        user["login"], login,
        "{} {source} {shape:?}",
        server.backend
    );
    assert_eq!(user["email"], person.email.as_str(), "{user}");
    assert_eq!(user["full_name"], person.name.as_str(), "{user}");
}

#[tokio::test]
async fn each_vendors_claim_names_name_id_formats_and_signing_sign_in() {
    let idp = pysaml2::shared();
    for backend in backends() {
        let server = admin_server(&backend).await;
        let (_, team) = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs",
            Some(json!({"username": "corp"})),
        )
        .await;
        assert!(team["id"].is_i64(), "{team}");
        let (status, team) = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/orgs/corp/teams",
            Some(json!({"name": "developers", "permission": "read"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{team}");
        // Entra ID sends its groups as object ids; the map is keyed by one.
        let map = format!("{{\"{ENTRA_GROUP}\": {{\"corp\": [\"developers\"]}}}}");
        let entra_settings = [
            Claims::Entra.settings().as_slice(),
            &[
                ("GROUP_TEAM_MAP", map.as_str()),
                ("NAME", "Entra ID"),
                ("ICON_URL", ICON),
            ],
        ]
        .concat();
        add_source(&server, idp, "entra", &entra_settings).await;
        // Its button carries its icon; an icon that is no URL is refused
        // by name, and no source is made.
        let page = postern_tests::get_text(&browser_like(), &server.url("/user/login")).await;
        assert!(
            page.contains(&format!(
                "id=\"provider-entra\"><img class=\"icon\" src=\"{ICON}\" alt=\"\" width=\"20\" height=\"20\"> Sign in with Entra ID</a>"
            )),
            "{page}"
        );
        let (status, body) = as_boss(
            &server,
            reqwest::Method::POST,
            "/api/v1/admin/sources/oauth2",
            Some(json!({"name": "iconless", "settings": {
                "PROVIDER": "saml", "METADATA": idp.metadata(), "ICON_URL": "javascript:alert(1)"
            }})),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("ICON_URL"),
            "{body}"
        );
        for (name, claims) in [
            ("shib", Claims::Oid),
            ("okta", Claims::Okta),
            ("keycloak", Claims::Keycloak),
        ] {
            add_source(&server, idp, name, &claims.settings()).await;
        }

        // Entra ID: the UPN as username claim and NameID in the
        // emailAddress format; the login is its local part, and the group
        // object id puts her in the team.
        let olga = Person::new(
            "olga@corp.example",
            "olga@corp.example",
            "Olga Berg",
            &[ENTRA_GROUP, "0b0e8c3c-2d8f-4a55-9a43-5f1c0e6f7a10"],
        );
        let entra = Shape {
            claims: Claims::Entra,
            name_id: "emailAddress",
            ..Shape::default()
        };
        signs_in_as(&server, idp, "entra", &olga, &entra, "olga").await;
        let (_, members) = as_boss(
            &server,
            reqwest::Method::GET,
            &format!("/api/v1/teams/{}/members", team["id"]),
            None,
        )
        .await;
        let logins: Vec<&str> = members
            .get("results")
            .unwrap_or(&members)
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["login"].as_str())
            .collect();
        assert_eq!(logins, ["olga"], "{backend}: {members}");

        // Shibboleth: eduPerson OIDs, a persistent NameID. The NameID is
        // the link: the same NameID with another uid is the same person.
        let sven = Person::new("sven", "sven@uni.example", "Sven Ek", &[]);
        let shib = Shape {
            claims: Claims::Oid,
            name_id: "persistent",
            persistent: Some("AAdzZWNyZXQxLsven".into()),
            ..Shape::default()
        };
        signs_in_as(&server, idp, "shib", &sven, &shib, "sven").await;
        let renamed = Person::new("sven.ek", "sven@uni.example", "Sven Ek", &[]);
        signs_in_as(&server, idp, "shib", &renamed, &shib, "sven").await;

        // Okta: plain claim names, an unspecified NameID; signed as a
        // whole, the assertion alone, or the response alone.
        let kim = Person::new("kim@corp.example", "kim@corp.example", "Kim Lee", &[]);
        for sign in ["both", "assertion", "response"] {
            let okta = Shape {
                claims: Claims::Okta,
                sign,
                ..Shape::default()
            };
            signs_in_as(&server, idp, "okta", &kim, &okta, "kim").await;
        }

        // Keycloak: plain names as FriendlyName, a transient NameID.
        let lena = Person::new("lena", "lena@corp.example", "Lena Sand", &[]);
        let keycloak = Shape {
            claims: Claims::Keycloak,
            name_id: "transient",
            ..Shape::default()
        };
        signs_in_as(&server, idp, "keycloak", &lena, &keycloak, "lena").await;

        // Signed with RSA-SHA1: refused, and the log names SHA-1.
        let sha1 = Shape {
            sign_alg: Some("http://www.w3.org/2000/09/xmldsig#rsa-sha1"),
            ..Shape::default()
        };
        let nils = Person::new("nils", "nils@corp.example", "Nils", &[]);
        let (client, res) = sign_in(&server, idp, "okta", &nils, &sha1).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert_eq!(session_login(&client, &server).await, None, "{backend}");
        assert!(
            server
                .log()
                .contains("the signature uses SHA-1 (http://www.w3.org/2000/09/xmldsig#rsa-sha1)"),
            "{backend}: {}",
            server.log()
        );

        // Nothing signed: refused, and nobody is created.
        let unsigned = Shape {
            sign: "none",
            ..Shape::default()
        };
        let (client, res) = sign_in(&server, idp, "okta", &nils, &unsigned).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert_eq!(session_login(&client, &server).await, None, "{backend}");
        assert!(!server.logins().contains(&"nils".to_string()), "{backend}");
    }
}

#[tokio::test]
async fn assertions_pysaml2_encrypts_to_the_sp_metadata_sign_in_with_each_cipher() {
    let idp = pysaml2::shared();
    for backend in backends() {
        let server = admin_server(&backend).await;
        add_source(
            &server,
            idp,
            "sealed",
            &[
                Claims::Okta.settings().as_slice(),
                &[("WANT_ASSERTIONS_ENCRYPTED", "true")],
            ]
            .concat(),
        )
        .await;
        let ada = Person::new("ada", "ada@corp.example", "Ada L", &[]);
        // pysaml2's own default is 3DES; the rest are what Entra ID, Okta
        // and AD FS send.
        let ciphers = [
            format!("{XENC}tripledes-cbc"),
            format!("{XENC}aes128-cbc"),
            format!("{XENC}aes192-cbc"),
            format!("{XENC}aes256-cbc"),
            format!("{XENC11}aes128-gcm"),
            format!("{XENC11}aes256-gcm"),
        ];
        for (i, cipher) in ciphers.iter().enumerate() {
            let shape = Shape {
                encrypt: Some(cipher.clone()),
                // The signature inside the encrypted assertion, or only on
                // the response around it.
                sign: if i % 2 == 0 { "assertion" } else { "response" },
                ..Shape::default()
            };
            signs_in_as(&server, idp, "sealed", &ada, &shape, "ada").await;
        }
    }
}

#[tokio::test]
async fn idp_initiated_responses_sign_in_only_where_allowed_and_only_once() {
    let idp = pysaml2::shared();
    for backend in backends() {
        let server = admin_server(&backend).await;
        add_source(&server, idp, "tiles", &[("ALLOW_IDP_INITIATED", "true")]).await;
        add_source(&server, idp, "strict", &[]).await;
        let tiles = server.url("/user/oauth2/tiles/callback");
        let strict = server.url("/user/oauth2/strict/callback");
        let mia = Person::new("mia", "mia@corp.example", "Mia", &[]);
        let shape = Shape::default();

        // Where not allowed: refused, nobody created.
        let posted = idp
            .unsolicited(&strict, "/explore/repos", &mia, &shape)
            .await;
        let client = browser_like();
        let res = post(&client, &posted).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}");
        assert_eq!(session_login(&client, &server).await, None);
        assert!(!server.logins().contains(&"mia".to_string()), "{backend}");

        // Allowed: signed in, landing on RelayState's local path.
        let posted = idp
            .unsolicited(&tiles, "/explore/repos", &mia, &shape)
            .await;
        assert!(!posted.xml().contains("InResponseTo"), "{}", posted.xml());
        let client = browser_like();
        let res = post(&client, &posted).await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "{backend}: {}",
            server.log()
        );
        assert_eq!(res.headers()["location"], "/explore/repos");
        assert_eq!(
            session_login(&client, &server).await.as_deref(),
            Some("mia")
        );

        // The same response again: its assertion was used.
        let again = browser_like();
        let res = post(&again, &posted).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{backend}: a replay");
        assert_eq!(session_login(&again, &server).await, None);

        // A RelayState off the site is not followed.
        let posted = idp
            .unsolicited(&tiles, "https://evil.example/", &mia, &shape)
            .await;
        let res = post(&browser_like(), &posted).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(res.headers()["location"], "/", "{backend}");

        // A post of several MiB gets this site's page with its way back,
        // and signs nobody in.
        let huge = Posted {
            saml_response: "A".repeat(3 << 20),
            ..posted
        };
        // A connection of its own for each request: the server closes the
        // one whose body it did not read.
        let client = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let res = post(&client, &huge).await;
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE, "{backend}");
        let page = res.text().await.unwrap();
        assert!(
            page.contains("too large") && page.contains("Back to sign in"),
            "{page}"
        );
        assert_eq!(session_login(&client, &server).await, None);
    }
}

/// The outbound rules that let a server read the IdP's metadata at
/// 127.0.0.1 over plain HTTP.
const LOOPBACK_METADATA: &str =
    "[outbound_http]\nALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = 127.0.0.1\n";

/// The subjects of a source's certificates, as the API shows them.
async fn certificate_subjects(server: &Server, name: &str) -> Vec<String> {
    let (status, view) = as_boss(
        server,
        reqwest::Method::GET,
        &format!("/api/v1/admin/sources/oauth2/{name}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    view["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap().to_string())
        .collect()
}

/// Adds the source `name` from the IdP's metadata URL (and the claim
/// names of [`Shape::default`]'s responses).
async fn add_by_url(server: &Server, url: &str, name: &str) -> (StatusCode, serde_json::Value) {
    let mut settings = json!({"PROVIDER": "saml", "METADATA_URL": url, "AUTO_REGISTER": "true"});
    for (key, value) in Shape::default().claims.settings() {
        settings[key] = json!(value);
    }
    as_boss(
        server,
        reqwest::Method::POST,
        "/api/v1/admin/sources/oauth2",
        Some(json!({"name": name, "settings": settings})),
    )
    .await
}

#[tokio::test]
async fn a_source_that_follows_its_metadata_url_takes_the_rolled_over_certificate() {
    // An IdP of its own: this test changes its key.
    let idp = Idp::start();
    let ada = Person::new("ada", "ada@corp.example", "Ada", &[]);
    let shape = Shape::default();
    for (round, backend) in backends().into_iter().enumerate() {
        let first = format!("CN=pysaml2 rollover {round}a");
        idp.rotate(&first[3..]).await;

        // Where [outbound_http] does not allow it, the URL is refused by
        // the setting's name, and no source is made.
        let closed = admin_server(&backend).await;
        let (status, body) = add_by_url(&closed, &idp.entity_id(), "corp").await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.starts_with("METADATA_URL: ") && message.contains("ALLOW_INSECURE_HOSTS"),
            "{body}"
        );
        let (status, _) = as_boss(
            &closed,
            reqwest::Method::GET,
            "/api/v1/admin/sources/oauth2/corp",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend}");
        drop(closed);

        // Made from the URL alone; a refresh on demand (the CLI) follows
        // a new certificate.
        let server = admin_server_with(&backend, LOOPBACK_METADATA).await;
        let (status, body) = add_by_url(&server, &idp.entity_id(), "corp").await;
        assert_eq!(status, StatusCode::CREATED, "{backend}: {body}");
        assert_eq!(
            certificate_subjects(&server, "corp").await,
            [first.as_str()]
        );
        idp.register_sp(&sp_metadata(&server, "corp").await).await;
        signs_in_as(&server, &idp, "corp", &ada, &shape, "ada").await;

        let second = format!("CN=pysaml2 rollover {round}b");
        idp.rotate(&second[3..]).await;
        let (_, res) = sign_in(&server, &idp, "corp", &ada, &shape).await;
        assert_eq!(
            res.status(),
            StatusCode::BAD_REQUEST,
            "{backend}: signed by a key the source does not know yet"
        );
        let out = server.cli(&["admin", "auth", "refresh-metadata"]);
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{printed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(printed.trim(), "source.oauth2_corp: changed, served anew");
        // The running server serves what the CLI stored (heard at once on
        // PostgreSQL, within seconds on SQLite).
        assert_eq!(
            certificate_subjects(&server, "corp").await,
            [second.as_str()]
        );
        let mut tries = 0;
        while !sign_in(&server, &idp, "corp", &ada, &shape)
            .await
            .1
            .status()
            .is_redirection()
        {
            assert!(
                tries < 50,
                "{backend}: the new key is not verified: {}",
                server.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            tries += 1;
        }
        let out = server.cli(&["admin", "auth", "refresh-metadata"]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "source.oauth2_corp: unchanged"
        );

        // A URL that does not answer metadata is refused, and the source
        // keeps what it had.
        let (status, body) = as_boss(
            &server,
            reqwest::Method::PATCH,
            "/api/v1/admin/sources/oauth2/corp",
            Some(json!({"METADATA_URL": format!("{}/nothing-here", idp.base())})),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body["message"].as_str().unwrap().contains("404"), "{body}");
        signs_in_as(&server, &idp, "corp", &ada, &shape, "ada").await;
        drop(server);

        // On [server] CRON_REFRESH_SAML_METADATA, the running server
        // follows a rollover by itself, and logs the change.
        let server = admin_server_with(
            &backend,
            &format!("{LOOPBACK_METADATA}\n[server]\nCRON_REFRESH_SAML_METADATA = @every 1s\n"),
        )
        .await;
        let (status, body) = add_by_url(&server, &idp.entity_id(), "corp").await;
        assert_eq!(status, StatusCode::CREATED, "{backend}: {body}");
        idp.register_sp(&sp_metadata(&server, "corp").await).await;
        let third = format!("CN=pysaml2 rollover {round}c");
        idp.rotate(&third[3..]).await;
        let mut waited = 0;
        while certificate_subjects(&server, "corp").await != [third.clone()] {
            assert!(
                waited < 300,
                "{backend}: no scheduled refresh: {}",
                server.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            waited += 1;
        }
        signs_in_as(&server, &idp, "corp", &ada, &shape, "ada").await;
        let log = server.log();
        assert!(
            log.contains(&format!("signing certificate {third}"))
                && log.contains(&format!("signing certificate {second}")),
            "{log}"
        );
    }
}
