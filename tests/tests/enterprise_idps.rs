//! Sign-in through the identity providers companies run, as they send it
//! by default: the Node provider (`oidc-provider`) set up the way Entra ID
//! answers — the user principal name `olga@corp.example` as
//! `preferred_username` and e-mail, no `email_verified`, the account's
//! object id as `sub` — signs people in under each `USERNAME` rule, with
//! the collision policy and `TRUST_EMAIL` seen at work.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use postern_tests::backends;
use postern_tests::browser::{Browser, free_port};
use postern_tests::github::{GitHubShaped, GitHubUser};
use postern_tests::oauth::location;
use postern_tests::oidc::{
    Mode, OidcProvider, TAMPER_CLIENT_ID, TAMPER_CLIENT_SECRET, TamperingProvider, page_text,
    session_user, sign_in_at_node_provider,
};
use serde_json::{Value, json};

use crate::oauth_consumer::{
    NAME, PW, SOURCE, load, signed_in_as, through_provider, whoami, with_node_source,
};

/// The user principal name every Entra-shaped account below has, or
/// shares the local part of.
const UPN: &str = "olga@corp.example";

/// An account id at the provider shaped like an Entra object id, unique to
/// the test, the backend and `n`: it is also `sub`.
fn object_id(backend: &postern_tests::Backend, n: u32) -> String {
    format!("5D9A4C1E-{n:04}-4B7E-9C2A-{backend}")
}

/// Makes the account `id` answer as Entra ID does for `upn`.
async fn entra_account(peer: &OidcProvider, id: &str, upn: &str) {
    peer.set_claims(
        id,
        json!({
            "preferred_username": upn,
            "email": upn,
            "email_verified": null,
            "nickname": "Olga.N",
            "name": "Olga Petrova",
        }),
    )
    .await;
}

#[tokio::test]
async fn identifiers_with_an_at_become_the_documented_login_under_each_username_rule() {
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    for backend in backends() {
        let userid = object_id(&backend, 3);
        for (n, rule, login) in [
            (1, "preferred_username", "olga".to_string()),
            (2, "email", "olga".to_string()),
            (3, "userid", userid.to_lowercase()),
            (4, "nickname", "olga.n".to_string()),
        ] {
            let extra = format!("AUTO_REGISTER = true\nUSERNAME = {rule}");
            let server = with_node_source(&backend, peer, &extra, "disabled").await;
            let id = object_id(&backend, n);
            entra_account(peer, &id, UPN).await;
            let landing =
                sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &id).await;
            assert_eq!(landing.path(), "/", "{backend} {rule}: {landing}");
            let me = signed_in_as(&browser, &server).await;
            assert_eq!(me["login"], login.as_str(), "{backend} {rule}: {me}");
            assert_eq!(me["email"], UPN, "{backend} {rule}");

            if rule == "email" {
                // Another person with the same local part at another domain:
                // the first free suffix.
                let other = object_id(&backend, 12);
                entra_account(peer, &other, "olga@other.example").await;
                sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &other).await;
                let second = signed_in_as(&browser, &server).await;
                assert_eq!(second["login"], "olga-2", "{backend}: {second}");
                assert_ne!(second["id"], me["id"], "{backend}");
                // The first is still recognised by its subject, not its login.
                sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &id).await;
                let again = signed_in_as(&browser, &server).await;
                assert_eq!(again["id"], me["id"], "{backend}");
            }
        }
    }
    browser.close().await;
}

/// The local account `olga` whose address is Entra's UPN.
fn local_olga(server: &postern_tests::Server) {
    let out = server.cli(&[
        "admin",
        "user",
        "create",
        "--username",
        "olga",
        "--email",
        UPN,
        "--password",
        PW,
    ]);
    assert!(out.status.success(), "{}", server.backend);
}

#[tokio::test]
async fn a_taken_login_is_refused_under_refuse_and_an_unvouched_address_links_only_with_trust_email()
 {
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    // `auto` links only where nobody registers with an address of their
    // choosing.
    let closed = "\n[service]\nDISABLE_REGISTRATION = true";
    for backend in backends() {
        let extra = format!("AUTO_REGISTER = true\nUSERNAME_COLLISION = refuse{closed}");
        let server = with_node_source(&backend, peer, &extra, "auto").await;
        local_olga(&server);
        let before = server.logins();

        // The address is the local account's, but Entra does not say it is
        // verified and TRUST_EMAIL is off: no link, and the words say why.
        let id = object_id(&backend, 21);
        entra_account(peer, &id, UPN).await;
        sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &id).await;
        let text = page_text(&browser).await;
        assert!(
            text.contains("does not confirm that the address is yours"),
            "{backend}: {text}"
        );
        assert!(session_user(&browser, &server).await.is_none(), "{backend}");

        // Another address whose local part is a taken login: refused, not
        // linked and not suffixed.
        let other = object_id(&backend, 22);
        entra_account(peer, &other, "olga@other.example").await;
        sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &other).await;
        let text = page_text(&browser).await;
        assert!(
            text.contains("\"olga\" is already taken by another account"),
            "{backend}: {text}"
        );
        assert!(session_user(&browser, &server).await.is_none(), "{backend}");
        assert_eq!(server.logins(), before, "{backend}: nobody was made");

        // TRUST_EMAIL: the same identity now links to the local account.
        let extra = format!("AUTO_REGISTER = true\nTRUST_EMAIL = true{closed}");
        let server = with_node_source(&backend, peer, &extra, "auto").await;
        local_olga(&server);
        let before = server.logins();
        sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, &id).await;
        let me = signed_in_as(&browser, &server).await;
        assert_eq!(me["login"], "olga", "{backend}: linked: {me}");
        assert_eq!(server.logins(), before, "{backend}");
    }
    browser.close().await;
}

/// Signs in through the redirect source `name`, whose provider answers at
/// once, having checked that the authorization asks for each of `scopes`:
/// the browser and the callback's status.
async fn through_asking(
    server: &postern_tests::Server,
    name: &str,
    scopes: &[&str],
) -> (reqwest::Client, reqwest::StatusCode) {
    let http = postern_tests::client();
    let res = http
        .get(server.url(&format!("/user/oauth2/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        reqwest::StatusCode::FOUND,
        "{}",
        server.backend
    );
    let authorize = location(&res);
    let asked = authorize
        .query_pairs()
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    for scope in scopes {
        assert!(
            asked.split(' ').any(|s| s == *scope),
            "{scope}: {authorize}"
        );
    }
    let res = http.get(authorize.as_str()).send().await.unwrap();
    let callback = location(&res);
    let res = http.get(callback.as_str()).send().await.unwrap();
    (http, res.status())
}

/// Signs in through the GitHub-shaped source `gh`, which asks `user:email`.
async fn through_github(server: &postern_tests::Server) -> (reqwest::Client, reqwest::StatusCode) {
    through_asking(server, "gh", &["user:email"]).await
}

#[tokio::test]
async fn a_github_shaped_provider_with_a_private_address_yields_the_verified_primary_one() {
    let peer = GitHubShaped::start();
    for backend in backends() {
        let ini = format!(
            "[source]
ENABLE_OAUTH2 = true

[source.oauth2_gh]
NAME = GitHub Enterprise
{}
AUTO_REGISTER = true

[oauth2_client]
ACCOUNT_LINKING = auto

[service]
DISABLE_REGISTRATION = true

[outbound_http]
ALLOWED_HOST_LIST = loopback
ALLOW_INSECURE_HOSTS = 127.0.0.1
",
            peer.source_keys()
        );
        let server = postern_tests::oidc::start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        let asked = peer.email_requests();

        // `email: null` in the profile; the list has an old verified
        // address and the verified primary one.
        peer.sign_in(GitHubUser {
            id: 4_100_000,
            login: "OlgaP".into(),
            emails: vec![
                ("olga@old.example".into(), false, true),
                ("olga@corp.example".into(), true, true),
            ],
            teams: Vec::new(),
        });
        let (http, status) = through_github(&server).await;
        assert_eq!(status, reqwest::StatusCode::SEE_OTHER, "{backend}");
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "olgap", "{backend}: {me}");
        assert_eq!(me["email"], "olga@corp.example", "{backend}: {me}");
        assert!(peer.email_requests() > asked, "{backend}");

        // The verified primary address is vouched for: it links to the
        // local account that has it (ACCOUNT_LINKING = auto).
        server.create_user("ivan", PW, false);
        let local_email = "ivan@example.com";
        peer.sign_in(GitHubUser {
            id: 4_200_000,
            login: "ivan-gh".into(),
            emails: vec![(local_email.into(), true, true)],
            teams: Vec::new(),
        });
        let before = server.logins();
        let (http, status) = through_github(&server).await;
        assert_eq!(status, reqwest::StatusCode::SEE_OTHER, "{backend}");
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "ivan", "{backend}: linked: {me}");
        assert_eq!(server.logins(), before, "{backend}");

        // A primary address GitHub has not verified is not taken at all:
        // no link to ivan, a new account of its own without an address.
        peer.sign_in(GitHubUser {
            id: 4_300_000,
            login: "ivan-impostor".into(),
            emails: vec![(local_email.into(), true, false)],
            teams: Vec::new(),
        });
        let (http, status) = through_github(&server).await;
        assert_eq!(status, reqwest::StatusCode::SEE_OTHER, "{backend}");
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "ivan-impostor", "{backend}: not ivan: {me}");
        assert_eq!(me["email"], "", "{backend}: {me}");
        assert_eq!(server.logins().len(), before.len() + 1, "{backend}");
    }
}

/// `tests/fixtures/saml/<name>`.
fn fixture(name: &str) -> String {
    format!("{}/fixtures/saml/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// What a vendor's metadata fixture must import as.
struct Expected<'a> {
    file: &'a str,
    /// The source's name.
    name: &'a str,
    /// `IDP_ENTITY_ID` given with the metadata.
    wanted: Option<&'a str>,
    entity: &'a str,
    /// `AUTH_URL`.
    sso: &'a str,
    /// The signing certificates' subjects, in order.
    subjects: &'a [&'a str],
    /// `SIGN_REQUESTS`.
    signs: bool,
}

#[tokio::test]
async fn every_vendors_metadata_imports_with_its_entity_certificates_and_signing_flag() {
    let tenant = "0d0f8a4c-6b2e-4c55-9f1e-7a1b2c3d4e5f";
    let entra_entity = format!("https://sts.windows.net/{tenant}/");
    let entra_sso = format!("https://login.microsoftonline.com/{tenant}/saml2");
    let azure = "CN=Microsoft Azure Federated SSO Certificate";
    let cases = [
        Expected {
            file: "entra-id.xml",
            name: "entra",
            wanted: None,
            entity: &entra_entity,
            sso: &entra_sso,
            subjects: &[azure, azure],
            signs: false,
        },
        Expected {
            file: "okta.xml",
            name: "okta",
            wanted: None,
            entity: "http://www.okta.com/exk1a2b3c4d5e6f7g8h9",
            sso: "https://dev-31337.okta.com/app/dev-31337_postern_1/exk1a2b3c4d5e6f7g8h9/sso/saml",
            subjects: &["CN=dev-31337"],
            signs: false,
        },
        Expected {
            file: "adfs.xml",
            name: "adfs",
            wanted: None,
            entity: "http://adfs.corp.example/adfs/services/trust",
            sso: "https://adfs.corp.example/adfs/ls/",
            subjects: &["CN=ADFS Signing - adfs.corp.example"],
            signs: false,
        },
        Expected {
            file: "keycloak.xml",
            name: "keycloak",
            wanted: None,
            entity: "https://keycloak.corp.example/auth/realms/corp",
            sso: "https://keycloak.corp.example/auth/realms/corp/protocol/saml",
            subjects: &["CN=corp"],
            signs: true,
        },
        Expected {
            file: "shibboleth.xml",
            name: "shibboleth",
            wanted: Some("https://idp.corp.example/idp/shibboleth"),
            entity: "https://idp.corp.example/idp/shibboleth",
            sso: "https://idp.corp.example/idp/profile/SAML2/Redirect/SSO",
            subjects: &["CN=idp.corp.example", "CN=idp.corp.example"],
            signs: false,
        },
    ];
    for backend in backends() {
        let ini = "[source]\nENABLE_OAUTH2 = true\n";
        let server = postern_tests::oidc::start_at(&backend, free_port(), "127.0.0.1", ini).await;
        server.create_user("boss", PW, true);
        for Expected {
            file,
            name,
            wanted,
            entity,
            sso,
            subjects,
            signs,
        } in &cases
        {
            let path = fixture(file);
            let mut args = vec![
                "admin",
                "auth",
                "add-saml",
                "--name",
                name,
                "--metadata-file",
                &path,
            ];
            if let Some(wanted) = wanted {
                args.extend(["--idp-entity-id", wanted]);
            }
            let out = server.cli(&args);
            assert!(
                out.status.success(),
                "{backend} {file}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let res = postern_tests::request_as(
                &server,
                reqwest::Method::GET,
                &format!("/api/v1/admin/sources/oauth2/{name}"),
                "boss",
                PW,
                None,
            )
            .await;
            assert_eq!(res.status(), reqwest::StatusCode::OK, "{backend} {file}");
            let view: Value = res.json().await.unwrap();
            assert_eq!(view["idp_entity_id"], **entity, "{backend} {file}: {view}");
            assert_eq!(view["auth_url"], **sso, "{backend} {file}: {view}");
            assert_eq!(view["sign_requests"], *signs, "{backend} {file}: {view}");
            let found: Vec<&str> = view["certificates"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["subject"].as_str().unwrap())
                .collect();
            assert_eq!(found, **subjects, "{backend} {file}: {view}");
        }
        // A federation's aggregate names several identity providers:
        // without IDP_ENTITY_ID the import says which, and adds nothing.
        let path = fixture("shibboleth.xml");
        let out = server.cli(&[
            "admin",
            "auth",
            "add-saml",
            "--name",
            "fed",
            "--metadata-file",
            &path,
        ]);
        assert!(!out.status.success(), "{backend}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("2 identity providers")
                && err.contains("https://idp.other.example/idp/shibboleth")
                && err.contains("IDP_ENTITY_ID"),
            "{backend}: {err}"
        );
        let res = postern_tests::request_as(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/sources/oauth2/fed",
            "boss",
            PW,
            None,
        )
        .await;
        assert_eq!(res.status(), reqwest::StatusCode::NOT_FOUND, "{backend}");
    }
}

/// `postern admin user <args…>` on `server`: its standard output, after
/// checking it succeeded (or, with `ok = false`, failed: then its error).
fn admin_user(server: &postern_tests::Server, args: &[&str], ok: bool) -> String {
    let mut all = vec!["admin", "user"];
    all.extend(args);
    let out = server.cli(&all);
    assert_eq!(
        out.status.success(),
        ok,
        "{}: {args:?}: {}{}",
        server.backend,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(if ok { &out.stdout } else { &out.stderr }).into_owned()
}

/// Signs in through the tampering provider as `subject`: the status of the
/// callback's answer, and who the session is then.
async fn sign_in_as(
    server: &postern_tests::Server,
    peer: &TamperingProvider,
    subject: &str,
) -> (reqwest::StatusCode, Option<String>) {
    peer.set(Mode::Honest, subject);
    let (http, callback) = through_provider(server, peer).await;
    let (status, _, _) = load(&http, &callback).await;
    let (_, me) = whoami(server, &http).await;
    (status, me["login"].as_str().map(str::to_string))
}

#[tokio::test]
async fn an_administrator_repairs_a_broken_link_with_the_cli_and_the_panel_and_the_person_signs_in()
{
    let peer = TamperingProvider::start(Mode::Honest, "sub-1");
    for backend in backends() {
        let ini = format!(
            "[source]
ENABLE_OAUTH2 = true

[source.oauth2_{SOURCE}]
NAME = {NAME}
PROVIDER = openidConnect
OPENID_CONNECT_AUTO_DISCOVERY_URL = {}
CLIENT_ID = {TAMPER_CLIENT_ID}
CLIENT_SECRET = {TAMPER_CLIENT_SECRET}
SCOPES = openid email profile

[outbound_http]
ALLOWED_HOST_LIST = loopback
ALLOW_INSECURE_HOSTS = localhost
",
            peer.discovery_url()
        );
        let server = postern_tests::oidc::start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        server.create_user("olga", PW, false);
        server.create_user("ivan", PW, false);
        let before = server.logins();

        // Linked before the first sign-in: the person lands on the account.
        let out = admin_user(
            &server,
            &[
                "link",
                "--username",
                "olga",
                "--source",
                SOURCE,
                "--external-id",
                "sub-1",
            ],
            true,
        );
        assert!(out.contains("Linked"), "{backend}: {out}");
        let (status, who) = sign_in_as(&server, &peer, "sub-1").await;
        assert_eq!(status, reqwest::StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(who.as_deref(), Some("olga"), "{backend}");
        let links = admin_user(&server, &["links", "--username", "olga"], true);
        let line = links
            .lines()
            .find(|l| l.starts_with(&format!("{SOURCE}\tsub-1\t")))
            .unwrap_or_else(|| panic!("{backend}: {links}"));
        assert!(!line.ends_with("never"), "{backend}: used: {line}");

        // The provider now sends another subject: a stranger, nobody made.
        let (status, who) = sign_in_as(&server, &peer, "sub-2").await;
        assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{backend}");
        assert_eq!(who, None, "{backend}");
        assert_eq!(server.logins(), before, "{backend}");

        // Repaired: the new subject replaces the old one on the account.
        admin_user(
            &server,
            &[
                "link",
                "--username",
                "olga",
                "--source",
                SOURCE,
                "--external-id",
                "sub-2",
            ],
            true,
        );
        let links = admin_user(&server, &["links", "--username", "olga"], true);
        assert!(
            links.contains("\tsub-2\t") && !links.contains("\tsub-1\t"),
            "{backend}: {links}"
        );
        let (_, who) = sign_in_as(&server, &peer, "sub-2").await;
        assert_eq!(who.as_deref(), Some("olga"), "{backend}");

        // Another account takes it only when told to move it.
        let err = admin_user(
            &server,
            &[
                "link",
                "--username",
                "ivan",
                "--source",
                SOURCE,
                "--external-id",
                "sub-2",
            ],
            false,
        );
        assert!(err.contains("linked to \"olga\""), "{backend}: {err}");
        let (_, who) = sign_in_as(&server, &peer, "sub-2").await;
        assert_eq!(who.as_deref(), Some("olga"), "{backend}: unchanged");
        let out = admin_user(
            &server,
            &[
                "link",
                "--username",
                "ivan",
                "--source",
                SOURCE,
                "--external-id",
                "sub-2",
                "--move",
            ],
            true,
        );
        assert!(
            out.contains("Moved") && out.contains("from olga"),
            "{backend}: {out}"
        );
        let (_, who) = sign_in_as(&server, &peer, "sub-2").await;
        assert_eq!(who.as_deref(), Some("ivan"), "{backend}");

        // Unlinked: a stranger again.
        admin_user(
            &server,
            &["unlink", "--username", "ivan", "--source", SOURCE],
            true,
        );
        let (status, who) = sign_in_as(&server, &peer, "sub-2").await;
        assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{backend}");
        assert_eq!(who, None, "{backend}");
        let err = admin_user(
            &server,
            &["unlink", "--username", "ivan", "--source", SOURCE],
            false,
        );
        assert!(err.contains("has no link"), "{backend}: {err}");
        assert_eq!(server.logins(), before, "{backend}");

        // The panel does the same, on Admin › Users › olga.
        server.create_user("boss", PW, true);
        let admin = postern_tests::client();
        postern_tests::sign_in(&admin, &server, "boss", PW).await;
        let olga: Value = postern_tests::request_as(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/users/olga",
            "boss",
            PW,
            None,
        )
        .await
        .json()
        .await
        .unwrap();
        let page_path = format!("/admin/users/{}", olga["id"]);
        let page = postern_tests::get_text(&admin, &server.url(&page_path)).await;
        assert!(page.contains("id=\"no-links\""), "{backend}: {page}");
        let csrf = postern_tests::csrf_of(&page);
        let res = admin
            .post(server.url(&format!("{page_path}/links")))
            .form(&[
                ("source", SOURCE),
                ("external_id", "sub-3"),
                ("_csrf", &csrf),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), reqwest::StatusCode::OK, "{backend}");
        let page = res.text().await.unwrap();
        assert!(
            page.contains("linked to this account") && page.contains("<code>sub-3</code>"),
            "{backend}: {page}"
        );
        let (_, who) = sign_in_as(&server, &peer, "sub-3").await;
        assert_eq!(who.as_deref(), Some("olga"), "{backend}");
        let page = postern_tests::get_text(&admin, &server.url(&page_path)).await;
        assert!(
            !page.contains("<td>never</td>"),
            "{backend}: last used shown: {page}"
        );
        let res = admin
            .post(server.url(&format!("{page_path}/unlink")))
            .form(&[("source", SOURCE), ("_csrf", &csrf)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), reqwest::StatusCode::OK, "{backend}");
        assert!(
            res.text().await.unwrap().contains("was removed"),
            "{backend}"
        );
        let (status, who) = sign_in_as(&server, &peer, "sub-3").await;
        assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{backend}");
        assert_eq!(who, None, "{backend}");

        // And the API, as an administrator's script would.
        let api = |method: reqwest::Method, path: String, body: Option<Value>| {
            let server = &server;
            async move {
                postern_tests::status_and_json(
                    postern_tests::request_as(server, method, &path, "boss", PW, body).await,
                )
                .await
            }
        };
        let links = "/api/v1/admin/users/olga/links".to_string();
        let (status, body) = api(
            reqwest::Method::POST,
            links.clone(),
            Some(json!({"source": SOURCE, "external_id": "sub-4"})),
        )
        .await;
        assert_eq!(status, reqwest::StatusCode::CREATED, "{backend}: {body}");
        assert_eq!(body["outcome"], "new", "{body}");
        let (_, who) = sign_in_as(&server, &peer, "sub-4").await;
        assert_eq!(who.as_deref(), Some("olga"), "{backend}");
        let (status, list) = api(reqwest::Method::GET, links.clone(), None).await;
        assert_eq!(status, reqwest::StatusCode::OK, "{backend}: {list}");
        assert_eq!(list[0]["source"], SOURCE, "{list}");
        assert_eq!(list[0]["external_id"], "sub-4", "{list}");
        assert!(list[0]["last_used"].is_string(), "{list}");
        // Ivan's without `move` is refused, and changes nothing; with it,
        // moved.
        let ivans = "/api/v1/admin/users/ivan/links".to_string();
        let take = json!({"source": SOURCE, "external_id": "sub-4"});
        let (status, body) = api(reqwest::Method::POST, ivans.clone(), Some(take.clone())).await;
        assert_eq!(status, reqwest::StatusCode::CONFLICT, "{backend}: {body}");
        let (_, who) = sign_in_as(&server, &peer, "sub-4").await;
        assert_eq!(who.as_deref(), Some("olga"), "{backend}");
        let mut take = take;
        take["move"] = json!(true);
        let (status, body) = api(reqwest::Method::POST, ivans.clone(), Some(take)).await;
        assert_eq!(status, reqwest::StatusCode::CREATED, "{backend}: {body}");
        assert_eq!(body["moved_from"], "olga", "{body}");
        // Bad input: an unknown source, an empty id, an unknown field.
        for (bad, want) in [
            (
                json!({"source": "nowhere", "external_id": "x"}),
                reqwest::StatusCode::NOT_FOUND,
            ),
            (
                json!({"source": SOURCE, "external_id": " "}),
                reqwest::StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                json!({"source": SOURCE, "external_id": "x", "admin": true}),
                reqwest::StatusCode::UNPROCESSABLE_ENTITY,
            ),
        ] {
            let (status, body) = api(reqwest::Method::POST, links.clone(), Some(bad)).await;
            assert_eq!(status, want, "{backend}: {body}");
            assert!(body["message"].is_string(), "{body}");
        }
        let (status, _) = api(
            reqwest::Method::DELETE,
            format!("/api/v1/admin/users/ivan/links/{SOURCE}"),
            None,
        )
        .await;
        assert_eq!(status, reqwest::StatusCode::NO_CONTENT, "{backend}");
        let (status, who) = sign_in_as(&server, &peer, "sub-4").await;
        assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{backend}");
        assert_eq!(who, None, "{backend}");
        let (status, body) = api(
            reqwest::Method::DELETE,
            format!("/api/v1/admin/users/ivan/links/{SOURCE}"),
            None,
        )
        .await;
        assert_eq!(status, reqwest::StatusCode::CONFLICT, "{backend}: {body}");
        // Not an administrator: not found, nothing listed.
        let (status, _) = postern_tests::status_and_json(
            postern_tests::request_as(&server, reqwest::Method::GET, &links, "ivan", PW, None)
                .await,
        )
        .await;
        assert!(status.is_client_error(), "{backend}: {status}");
        // Nobody was made on the way but the administrator.
        assert_eq!(server.logins().len(), before.len() + 1, "{backend}");
    }
}

/// A sign-in through the redirect source `source`, whose provider answers
/// at once (the tampering provider): the status and visible text of the
/// callback's answer, and who the session is then.
async fn through_source(
    server: &postern_tests::Server,
    source: &str,
) -> (reqwest::StatusCode, String, Option<String>) {
    let http = postern_tests::client();
    let res = http
        .get(server.url(&format!("/user/oauth2/{source}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::FOUND, "{}", server.log());
    let res = http.get(location(&res).as_str()).send().await.unwrap();
    assert!(res.status().is_redirection(), "{}", res.status());
    let (status, text, _) = load(&http, &location(&res)).await;
    let (_, me) = whoami(server, &http).await;
    (status, text, me["login"].as_str().map(str::to_string))
}

#[tokio::test]
async fn an_account_without_a_password_is_not_offered_the_password_link_page() {
    let peer = TamperingProvider::start(Mode::Honest, "olga");
    for backend in backends() {
        // Two sources at the provider; the account the first makes has no
        // password.
        let section = |name: &str, display: &str| {
            format!(
                "[source.oauth2_{name}]
NAME = {display}
PROVIDER = openidConnect
OPENID_CONNECT_AUTO_DISCOVERY_URL = {}
CLIENT_ID = {TAMPER_CLIENT_ID}
CLIENT_SECRET = {TAMPER_CLIENT_SECRET}
SCOPES = openid email profile
AUTO_REGISTER = true
",
                peer.discovery_url()
            )
        };
        let ini = format!(
            "[source]\nENABLE_OAUTH2 = true\n\n{}\n{}\n[outbound_http]\nALLOWED_HOST_LIST = loopback\nALLOW_INSECURE_HOSTS = localhost\n",
            section("first", "First SSO"),
            section("second", "Second SSO"),
        );
        let server = postern_tests::oidc::start_at(&backend, free_port(), "127.0.0.1", &ini).await;
        peer.set(Mode::Honest, "olga");
        let (status, _, who) = through_source(&server, "first").await;
        assert_eq!(status, reqwest::StatusCode::SEE_OTHER, "{backend}");
        assert_eq!(who.as_deref(), Some("olga"), "{backend}");

        // The second source's identity has the same verified address: no
        // password form, but what to do instead; nothing linked or made.
        let (status, text, who) = through_source(&server, "second").await;
        assert_eq!(
            status,
            reqwest::StatusCode::BAD_REQUEST,
            "{backend}: {text}"
        );
        assert!(
            text.contains("has no password to confirm the link with")
                && text.contains("signs in through First SSO")
                && !text.contains("Enter its password"),
            "{backend}: {text}"
        );
        assert_eq!(who, None, "{backend}");
        assert_eq!(server.logins(), ["olga"], "{backend}");

        // An account with a password still gets the page.
        server.create_user("ivan", PW, false);
        peer.set(Mode::Honest, "ivan");
        let (status, text, who) = through_source(&server, "second").await;
        assert_eq!(status, reqwest::StatusCode::OK, "{backend}: {text}");
        assert!(text.contains("Enter its password"), "{backend}: {text}");
        assert_eq!(who, None, "{backend}");
    }
}

/// An API call as `boss`.
async fn boss(
    server: &postern_tests::Server,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (reqwest::StatusCode, Value) {
    postern_tests::status_and_json(
        postern_tests::request_as(server, method, path, "boss", PW, body).await,
    )
    .await
}

/// A server with the source `name` (`keys`), whose groups map `acme/core`
/// to acme's team core and make `acme/admins` site administrators; the
/// organisation and the team made by `boss`. The server, and the team's
/// member list.
async fn with_mapped_groups(
    backend: &postern_tests::Backend,
    name: &str,
    keys: &str,
) -> (postern_tests::Server, String) {
    let ini = format!(
        "[source]
ENABLE_OAUTH2 = true

[source.oauth2_{name}]
NAME = {name}
{keys}
AUTO_REGISTER = true
GROUP_CLAIM_NAME = groups
GROUP_TEAM_MAP = {{\"acme/core\": {{\"acme\": [\"core\"]}}}}
ADMIN_GROUP = acme/admins

[outbound_http]
ALLOWED_HOST_LIST = loopback
ALLOW_INSECURE_HOSTS = 127.0.0.1
"
    );
    let server = postern_tests::oidc::start_at(backend, free_port(), "127.0.0.1", &ini).await;
    server.create_user("boss", PW, true);
    let (status, _) = boss(
        &server,
        reqwest::Method::POST,
        "/api/v1/orgs",
        Some(json!({"username": "acme"})),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{backend}");
    let (_, team) = boss(
        &server,
        reqwest::Method::POST,
        "/api/v1/orgs/acme/teams",
        Some(json!({"name": "core", "permission": "read"})),
    )
    .await;
    let members = format!("/api/v1/teams/{}/members?page_size=50", team["id"]);
    (server, members)
}

#[tokio::test]
async fn github_organisations_and_teams_are_groups_that_map_to_teams() {
    let peer = GitHubShaped::start();
    for backend in backends() {
        let (server, members) = with_mapped_groups(&backend, "gh", &peer.source_keys()).await;

        // In acme's team core (and in another organisation): a member of
        // the mapped team, not an administrator.
        peer.sign_in(GitHubUser {
            id: 5_100_000,
            login: "tove".into(),
            emails: vec![("tove@corp.example".into(), true, true)],
            teams: vec![
                ("acme".into(), "core".into()),
                ("elsewhere".into(), String::new()),
            ],
        });
        let (http, status) = through_github(&server).await;
        assert_eq!(status, reqwest::StatusCode::SEE_OTHER, "{backend}");
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "tove", "{backend}: {me}");
        assert_eq!(me["is_admin"], false, "{backend}: {me}");
        let (_, list) = boss(&server, reqwest::Method::GET, &members, None).await;
        let logins: Vec<&str> = list
            .get("results")
            .unwrap_or(&list)
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["login"].as_str())
            .collect();
        assert_eq!(logins, ["tove"], "{backend}: {list}");

        // In acme/admins: a site administrator; in no mapped team.
        peer.sign_in(GitHubUser {
            id: 5_200_000,
            login: "arne".into(),
            emails: vec![("arne@corp.example".into(), true, true)],
            teams: vec![("acme".into(), "admins".into())],
        });
        let (http, _) = through_github(&server).await;
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "arne", "{backend}: {me}");
        assert_eq!(me["is_admin"], true, "{backend}: {me}");
        let (_, list) = boss(&server, reqwest::Method::GET, &members, None).await;
        let listed = list.get("results").unwrap_or(&list);
        assert_eq!(listed.as_array().unwrap().len(), 1, "{backend}: {list}");
    }
}

#[tokio::test]
async fn gitlab_groups_and_subgroups_are_groups_that_map_to_teams() {
    let peer = GitHubShaped::start();
    for backend in backends() {
        let (server, members) =
            with_mapped_groups(&backend, "gl", &peer.gitlab_source_keys()).await;

        // In the subgroup acme/core: a member of the mapped team.
        peer.sign_in(GitHubUser {
            id: 7_100_000,
            login: "gita".into(),
            emails: vec![("gita@corp.example".into(), true, true)],
            teams: vec![("acme".into(), "core".into())],
        });
        let (http, status) = through_asking(&server, "gl", &["read_user", "read_api"]).await;
        assert_eq!(
            status,
            reqwest::StatusCode::SEE_OTHER,
            "{backend}: {}",
            server.log()
        );
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "gita", "{backend}: {me}");
        assert_eq!(me["email"], "gita@corp.example", "{backend}: {me}");
        assert_eq!(me["is_admin"], false, "{backend}: {me}");
        let (_, list) = boss(&server, reqwest::Method::GET, &members, None).await;
        let logins: Vec<&str> = list["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["login"].as_str())
            .collect();
        assert_eq!(logins, ["gita"], "{backend}: {list}");
        let (_, user) = boss(
            &server,
            reqwest::Method::GET,
            "/api/v1/admin/users/gita",
            None,
        )
        .await;
        assert_eq!(user["email"], "gita@corp.example", "{backend}: {user}");

        // In acme/admins: a site administrator, in no mapped team.
        peer.sign_in(GitHubUser {
            id: 7_200_000,
            login: "gustav".into(),
            emails: vec![("gustav@corp.example".into(), true, true)],
            teams: vec![("acme".into(), "admins".into())],
        });
        let (http, _) = through_asking(&server, "gl", &["read_user", "read_api"]).await;
        let (_, me) = whoami(&server, &http).await;
        assert_eq!(me["login"], "gustav", "{backend}: {me}");
        assert_eq!(me["is_admin"], true, "{backend}: {me}");
        let (_, list) = boss(&server, reqwest::Method::GET, &members, None).await;
        assert_eq!(
            list["results"].as_array().unwrap().len(),
            1,
            "{backend}: {list}"
        );
    }
}

#[tokio::test]
async fn a_google_shaped_account_signs_in_at_the_defaults() {
    // Google's ID token: a numeric `sub`, no `preferred_username` and no
    // `nickname`, a verified address, the Workspace domain as `hd`.
    let peer = OidcProvider::shared();
    let browser = Browser::start().await;
    let sub = "109876543210987654321";
    peer.set_claims(
        sub,
        json!({
            "preferred_username": null,
            "nickname": null,
            "email": "marta.lind@corp.example",
            "email_verified": true,
            "hd": "corp.example",
            "name": "Marta Lind",
            "given_name": "Marta",
            "family_name": "Lind",
        }),
    )
    .await;
    for backend in backends() {
        let server = with_node_source(&backend, peer, "AUTO_REGISTER = true", "disabled").await;
        let landing = sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, sub).await;
        assert_eq!(landing.path(), "/", "{backend}: {landing}");
        let me = signed_in_as(&browser, &server).await;
        // The login is the address's local part, the address verified.
        assert_eq!(me["login"], "marta.lind", "{backend}: {me}");
        assert_eq!(me["email"], "marta.lind@corp.example", "{backend}: {me}");
        assert_eq!(me["full_name"], "Marta Lind", "{backend}: {me}");
        // Again: the same account, by its subject.
        sign_in_at_node_provider(&browser, &server, peer, SOURCE, NAME, sub).await;
        let again = signed_in_as(&browser, &server).await;
        assert_eq!(again["id"], me["id"], "{backend}");
        assert_eq!(server.logins(), ["marta.lind"], "{backend}");
    }
    browser.close().await;
}
