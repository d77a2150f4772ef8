//! The settings pages and the admin panel, walked in headless Chromium as
//! a new user and an administrator would; the run-time settings from the
//! CLI; who may create organizations. On every backend.

// In a test a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use fantoccini::{Client, Locator};
use postern_tests::browser::Browser;
use postern_tests::ldap::{PEOPLE, READER_DN, READER_PASSWORD, Slapd, person};
use postern_tests::{Options, Server, backends, client, get_text, sign_in, submit_form};
use reqwest::StatusCode;

const ROOT_PASSWORD: &str = "correct-horse-battery";
const DANA_PASSWORD: &str = "dana-first-password";

/// Where the walk leaves its screenshots: under the system's temp dir, so
/// that they outlive the servers' own temp dirs.
fn screenshot_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("postern-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn wait(c: &Client, id: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Id(id))
        .await
        .unwrap_or_else(|e| panic!("#{id} never appeared: {e}"))
}

async fn wait_css(c: &Client, css: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css} never appeared: {e}"))
}

/// Runs `act` on what `css` finds, once more whenever the element went
/// stale: a form's answer may replace the page between finding and acting.
async fn on_element<T, F, Fut>(c: &Client, css: &str, act: F) -> T
where
    F: Fn(fantoccini::elements::Element) -> Fut,
    Fut: std::future::Future<Output = Result<T, fantoccini::error::CmdError>>,
{
    for _ in 0..40 {
        match act(wait_css(c, css).await).await {
            Ok(v) => return v,
            Err(e) if e.to_string().contains("stale element") => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => panic!("{css}: {e}"),
        }
    }
    panic!("{css} kept going stale")
}

fn by_id(id: &str) -> String {
    format!("[id='{id}']")
}

async fn click_css(c: &Client, css: &str) {
    on_element(c, css, |e| async move { e.click().await }).await
}

async fn click(c: &Client, id: &str) {
    click_css(c, &by_id(id)).await
}

async fn fill(c: &Client, id: &str, value: &str) {
    on_element(c, &by_id(id), |e| async move {
        e.clear().await?;
        e.send_keys(value).await
    })
    .await
}

async fn select(c: &Client, id: &str, value: &str) {
    on_element(
        c,
        &by_id(id),
        |e| async move { e.select_by_value(value).await },
    )
    .await
}

async fn text(c: &Client, id: &str) -> String {
    text_css(c, &by_id(id)).await
}

async fn text_css(c: &Client, css: &str) -> String {
    on_element(c, css, |e| async move { e.text().await }).await
}

/// What a page must have at every width: a heading, the navigation, and
/// nothing wider than the viewport (a wide table scrolls inside its own
/// box, so what is inside a table is not counted).
const LAYOUT_CHECK: &str = r#"
const width = document.documentElement.clientWidth;
const wide = [...document.querySelectorAll('body *')]
  .filter(e => !e.parentElement.closest('table'))
  .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > width + 1; })
  .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : ''));
return {
  width,
  scroll: document.documentElement.scrollWidth,
  wide,
  heading: !!document.querySelector('main h1'),
  nav: !!document.querySelector('header.site') && !!document.querySelector('nav'),
};
"#;

/// Opens `path` at 1280 and 390 px, checks the layout and saves a
/// screenshot of each.
async fn check_page(c: &Client, server: &Server, name: &str, path: &str, backend: &str) {
    for width in [1280u32, 390] {
        c.set_window_size(width, 900).await.unwrap();
        c.goto(&server.url(path)).await.unwrap();
        let report = c.execute(LAYOUT_CHECK, vec![]).await.unwrap();
        let case = format!("{backend}: {path} at {width} px: {report}");
        assert_eq!(report["heading"], true, "no heading: {case}");
        assert_eq!(report["nav"], true, "no navigation: {case}");
        assert!(
            report["scroll"].as_i64().unwrap() <= report["width"].as_i64().unwrap(),
            "the page is wider than the viewport: {case}"
        );
        assert!(
            report["wide"].as_array().unwrap().is_empty(),
            "elements overflow: {case}"
        );
        let png = c.screenshot().await.unwrap();
        let file = screenshot_dir().join(format!("{backend}-{name}-{width}.png"));
        std::fs::write(&file, png).unwrap();
    }
    c.set_window_size(1280, 900).await.unwrap();
}

#[tokio::test]
async fn a_new_user_and_an_administrator_walk_the_pages() {
    let slapd = Slapd::start(&person("lena", "Lena", "Oxton", "lena-directory-pw"));
    for backend in backends() {
        let name = backend.to_string();
        // An ini-set run-time key, which the panel must show locked.
        let ini = "[service]\nREQUIRE_SIGNIN_VIEW = false\n\n[source]\nENABLE_LDAP = true\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("root", ROOT_PASSWORD, true);
        server.create_user("mulder", "mulder-long-password", false);

        // Be created: the sign-up page.
        let dana = Browser::start().await;
        let c = &dana.client;
        c.goto(&server.url("/user/sign_up")).await.unwrap();
        fill(c, "user_name", "dana").await;
        fill(c, "email", "dana@example.com").await;
        fill(c, "password", DANA_PASSWORD).await;
        fill(c, "retype", DANA_PASSWORD).await;
        click_css(c, "button.primary").await;
        assert_eq!(text(c, "signed-in-user").await, "dana", "{name}");

        // Settings › Profile.
        click(c, "nav-settings").await;
        fill(c, "full_name", "Dana Scully").await;
        fill(c, "email", "scully@example.com").await;
        click(c, "save-profile").await;
        assert!(
            text(c, "flash-ok").await.contains("updated"),
            "{name}: {}",
            server.log()
        );
        // The current password is needed to change it.
        fill(c, "old_password", "not-my-password").await;
        fill(c, "password", "dana-second-password").await;
        fill(c, "retype", "dana-second-password").await;
        click(c, "change-password").await;
        assert!(
            text(c, "password-error")
                .await
                .contains("current password is wrong"),
            "{name}"
        );

        // Settings › Applications: a token, used on the API.
        click(c, "applications-link").await;
        fill(c, "token-name", "ci").await;
        select(c, "scope_repository", "write").await;
        select(c, "scope_organization", "write").await;
        select(c, "scope_user", "read").await;
        click(c, "generate-token").await;
        let token = text(c, "new-token-secret").await;
        assert_eq!(token.len(), 40, "{name}: {token}");
        let api = reqwest::Client::new();
        let me: serde_json::Value = api
            .get(server.url("/api/v1/user"))
            .header("Authorization", format!("token {token}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["login"], "dana", "{name}");
        assert_eq!(me["full_name"], "Dana Scully", "{name}");
        assert_eq!(me["email"], "scully@example.com", "{name}");

        // A new organization, then a repository in it, from the pages.
        click(c, "nav-new-org").await;
        fill(c, "org_name", "xfiles").await;
        click(c, "create-org-button").await;
        assert_eq!(text(c, "owner").await, "xfiles", "{name}");
        click(c, "nav-new-repo").await;
        // The organization's page has an element `owner` too: wait for the form.
        fill(c, "repo_name", "cases").await;
        select(c, "owner", "xfiles").await;
        click(c, "private").await;
        click(c, "create-repo-button").await;
        wait(c, "clone-http").await;
        assert_eq!(
            c.current_url().await.unwrap().path(),
            "/xfiles/cases",
            "{name}"
        );
        let repo = api
            .get(server.url("/api/v1/repos/xfiles/cases"))
            .header("Authorization", format!("token {token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(repo.status(), StatusCode::OK, "{name}");
        let repo: serde_json::Value = repo.json().await.unwrap();
        assert_eq!(repo["private"], true, "{name}");

        // The repository's Settings: a collaborator, a branch rule, the
        // visibility.
        let with_token = |path: &str| {
            api.get(server.url(path))
                .header("Authorization", format!("token {token}"))
                .send()
        };
        click(c, "repo-settings-link").await;
        fill(c, "collaborator-login", "mulder").await;
        select(c, "collaborator-permission", "read").await;
        click(c, "add-collaborator-button").await;
        let permission = text_css(c, "tr[data-collaborator='mulder'] .permission").await;
        assert_eq!(permission, "read", "{name}");
        click(c, "new-rule").await;
        fill(c, "rule_name", "main").await;
        click(c, "enable_push_whitelist").await;
        fill(c, "push_whitelist_usernames", "dana").await;
        click(c, "require_signed_commits").await;
        click(c, "save-rule").await;
        wait(c, "rules").await;
        let rules: serde_json::Value =
            with_token("/api/v1/repos/xfiles/cases/branch_protections?page_size=50")
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        let rule = &rules["results"][0];
        assert_eq!(rule["rule_name"], "main", "{name}: {rules}");
        assert_eq!(rule["enable_push_whitelist"], true, "{name}");
        assert_eq!(rule["push_whitelist_usernames"][0], "dana", "{name}");
        assert_eq!(rule["require_signed_commits"], true, "{name}");
        click(c, "private").await;
        click(c, "save-options").await;
        // The form answers with a redirect to itself: wait for the change.
        let mut private = serde_json::Value::Null;
        for _ in 0..80 {
            let repo: serde_json::Value = with_token("/api/v1/repos/xfiles/cases")
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            private = repo["private"].clone();
            if private == false {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert_eq!(private, false, "{name}");

        // The organization's Teams: a team with a member and a repository.
        c.goto(&server.url("/org/xfiles/teams")).await.unwrap();
        fill(c, "team_name", "agents").await;
        select(c, "team-permission", "write").await;
        click(c, "create-team-button").await;
        let agents = "section[data-team='agents']";
        for (form, value, done) in [
            ("add-member", "mulder", "members/mulder/delete"),
            ("add-repo", "cases", "repos/cases/delete"),
        ] {
            let field = format!("{agents} form.{form} input[name='name']");
            on_element(c, &field, |e| async move { e.send_keys(value).await }).await;
            click_css(c, &format!("{agents} form.{form} button")).await;
            // The page that answers shows the removal form of what was added.
            wait_css(c, &format!("{agents} form[action$='{done}']")).await;
        }
        let team = text_css(c, agents).await;
        assert!(
            team.contains("Members: mulder") && team.contains("Repositories: cases"),
            "{name}: {team}"
        );
        // A member sees the teams, without the forms.
        let mulder = server.signed_in("mulder", "mulder-long-password").await;
        let seen = get_text(&mulder, &server.url("/org/xfiles/teams")).await;
        assert!(
            seen.contains("agents") && !seen.contains("create-team"),
            "{name}"
        );

        // A second repository, deleted from its Settings.
        c.goto(&server.url("/repo/create")).await.unwrap();
        fill(c, "repo_name", "scratch").await;
        click(c, "create-repo-button").await;
        click(c, "repo-settings-link").await;
        fill(c, "confirm", "scratch").await;
        click(c, "delete-repo-button").await;
        wait(c, "owner").await;
        let gone = with_token("/api/v1/repos/dana/scratch").await.unwrap();
        assert_eq!(gone.status(), StatusCode::NOT_FOUND, "{name}");

        for (page, path) in [
            ("profile", "/user/settings"),
            ("applications", "/user/settings/applications"),
            ("ssh-keys", "/user/settings/keys"),
            ("security", "/user/settings/security"),
            ("sessions", "/user/settings/sessions"),
            ("new-repository", "/repo/create"),
            ("new-organization", "/org/create"),
            ("repository", "/xfiles/cases"),
            ("repository-settings", "/xfiles/cases/settings"),
            (
                "branch-rule",
                "/xfiles/cases/settings/branches/edit?rule=main",
            ),
            ("organization-teams", "/org/xfiles/teams"),
            ("organization-settings", "/org/xfiles/settings"),
        ] {
            check_page(c, &server, page, path, &name).await;
        }

        // The administrator deactivates dana in Admin › Users.
        let root = Browser::start().await;
        let a = &root.client;
        root.sign_in(&server.url("/user/login"), "root", ROOT_PASSWORD)
            .await;
        click(a, "nav-admin").await;
        click(a, "nav-users").await;
        fill(a, "q", "scully").await;
        click(a, "search-users").await;
        // The list before the search shows dana too: wait for the answer.
        for _ in 0..80 {
            if a.current_url()
                .await
                .unwrap()
                .query()
                .is_some_and(|q| q.contains("q=scully"))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        click_css(a, "tr[data-user='dana'] a.user-link").await;
        click(a, "active").await;
        click(a, "save-user").await;
        assert!(text(a, "flash-ok").await.contains("updated"), "{name}");

        // Dana's session and token stop working at once.
        c.goto(&server.url("/user/settings")).await.unwrap();
        wait(c, "user_name").await;
        assert_eq!(c.current_url().await.unwrap().path(), "/user/login");
        let refused = api
            .get(server.url("/api/v1/user"))
            .header("Authorization", format!("token {token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{name}");

        // Admin › Configuration: registration closes without a restart;
        // the ini-set key is locked.
        click(a, "nav-config").await;
        wait(a, "locked-service-REQUIRE_SIGNIN_VIEW").await;
        assert_eq!(
            text_css(a, "#key-service-REQUIRE_SIGNIN_VIEW .origin").await,
            "ini",
            "{name}"
        );
        let open = client()
            .get(server.url("/user/sign_up"))
            .send()
            .await
            .unwrap();
        assert_eq!(open.status(), StatusCode::OK, "{name}");
        select(a, "value-service-DISABLE_REGISTRATION", "true").await;
        click_css(a, "#form-service-DISABLE_REGISTRATION button.save-setting").await;
        let audit = text(a, "audit").await;
        assert!(
            audit.contains("root") && audit.contains("service.DISABLE_REGISTRATION"),
            "{name}: {audit}"
        );
        let closed = client()
            .get(server.url("/user/sign_up"))
            .send()
            .await
            .unwrap();
        assert_eq!(closed.status(), StatusCode::FORBIDDEN, "{name}");
        assert!(
            closed
                .text()
                .await
                .unwrap()
                .contains("Registration is disabled"),
            "{name}"
        );

        // Admin › Plugins: turn totp off and on again; the switch is kept.
        a.goto(&server.url("/admin/plugins")).await.unwrap();
        let totp = "section[data-plugin='totp']";
        click_css(a, &format!("{totp} button.disable-plugin")).await;
        // The page that answers offers the opposite switch.
        wait_css(a, &format!("{totp} button.enable-plugin")).await;
        let state = |a: &Client| {
            let a = a.clone();
            async move { text_css(&a, "section[data-plugin='totp'] .state").await }
        };
        assert_eq!(state(a).await, "disabled", "{name}");
        let stored = server
            .plugin_list()
            .into_iter()
            .find(|p| p["id"] == "totp")
            .unwrap();
        assert_eq!(
            stored["state"], "disabled",
            "{name}: another process reads the switch"
        );
        click_css(a, &format!("{totp} button.enable-plugin")).await;
        wait_css(a, &format!("{totp} button.disable-plugin")).await;
        assert_eq!(state(a).await, "ready", "{name}");

        // Admin › Authentication: an ldaps directory with a private CA.
        a.goto(&server.url("/admin/auths/new")).await.unwrap();
        fill(a, "NAME", "Corporate directory").await;
        select(a, "SECURITY_PROTOCOL", "ldaps").await;
        fill(a, "HOST", "127.0.0.1").await;
        fill(a, "PORT", &slapd.ldaps_port.to_string()).await;
        fill(a, "CA_FILE", &slapd.ca.display().to_string()).await;
        fill(a, "USER_DN", READER_DN).await;
        fill(a, "USER_PASSWD", READER_PASSWORD).await;
        fill(a, "USER_SEARCH_BASE_DN", PEOPLE).await;
        fill(a, "USER_FILTER", "(&(objectClass=inetOrgPerson)(uid=%s))").await;
        click(a, "test-connection").await;
        let ok = text(a, "flash-ok").await;
        assert!(ok.contains("the user filter finds 1 users"), "{name}: {ok}");

        for (page, path) in [
            ("admin-dashboard", "/admin"),
            ("admin-users", "/admin/users"),
            ("admin-user", "/admin/users/1"),
            ("admin-new-user", "/admin/users/new"),
            ("admin-organizations", "/admin/orgs"),
            ("admin-repositories", "/admin/repos"),
            ("admin-authentication", "/admin/auths"),
            ("admin-new-source", "/admin/auths/new"),
            ("admin-plugins", "/admin/plugins"),
            ("admin-webhooks", "/admin/hooks"),
            ("admin-configuration", "/admin/config"),
        ] {
            check_page(a, &server, page, path, &name).await;
        }
        dana.close().await;
        root.close().await;
    }
}

/// `admin config get|set|list|audit`: a change reaches a running server
/// within seconds; locked, fixed, unknown and invalid keys are refused and
/// nothing is stored.
#[tokio::test]
async fn run_time_settings_from_the_cli_reach_the_running_server() {
    for backend in backends() {
        let server = Server::start(
            &backend,
            Options {
                ini: "[security]\nMIN_PASSWORD_LENGTH = 10\n".into(),
                ..Options::default()
            },
        )
        .await;
        let run = |args: &[&str]| {
            let out = server.cli(args);
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).to_string(),
                String::from_utf8_lossy(&out.stderr).to_string(),
            )
        };
        let (ok, out, _) = run(&["admin", "config", "get", "service.DISABLE_REGISTRATION"]);
        assert!(
            ok && out.starts_with("false\t[default]"),
            "{backend}: {out}"
        );
        assert_eq!(
            client()
                .get(server.url("/user/sign_up"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::OK
        );

        for (args, says) in [
            (
                vec!["security.MIN_PASSWORD_LENGTH", "12"],
                "is set in the ini",
            ),
            (
                vec!["server.HTTP_PORT", "4000"],
                "cannot change while Postern runs",
            ),
            (vec!["service.NO_SUCH_KEY", "1"], "no such key"),
            (
                vec!["service.DISABLE_REGISTRATION", "maybe"],
                "expected a boolean",
            ),
            (
                vec!["oauth2.ACCESS_TOKEN_EXPIRATION", "0"],
                "a whole number",
            ),
        ] {
            let mut full = vec!["admin", "config", "set"];
            full.extend(args.iter().copied());
            let (ok, _, err) = run(&full);
            assert!(!ok, "{backend}: {args:?} was taken");
            assert!(err.contains(says), "{backend}: {args:?}: {err}");
        }
        let (_, audit, _) = run(&["admin", "config", "audit"]);
        assert!(
            audit.trim().is_empty(),
            "{backend}: refused, yet audited: {audit}"
        );

        let (ok, out, err) = run(&[
            "admin",
            "config",
            "set",
            "service.DISABLE_REGISTRATION",
            "true",
        ]);
        assert!(ok, "{backend}: {err}");
        assert!(out.contains("(default) -> true"), "{backend}: {out}");
        // The server looks every few seconds.
        let mut status = StatusCode::OK;
        for _ in 0..60 {
            status = client()
                .get(server.url("/user/sign_up"))
                .send()
                .await
                .unwrap()
                .status();
            if status == StatusCode::FORBIDDEN {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert_eq!(status, StatusCode::FORBIDDEN, "{backend}: {}", server.log());

        let (_, out, _) = run(&["admin", "config", "get", "service.DISABLE_REGISTRATION"]);
        assert!(out.starts_with("true\t[panel]"), "{backend}: {out}");
        let (_, out, _) = run(&["admin", "config", "get", "security.MIN_PASSWORD_LENGTH"]);
        assert!(out.starts_with("10\t[ini]"), "{backend}: {out}");
        let (_, audit, _) = run(&["admin", "config", "audit"]);
        assert!(
            audit.contains("cli\tservice.DISABLE_REGISTRATION\t(default) -> true"),
            "{backend}: {audit}"
        );

        // Secrets are masked; the environment is named as the origin.
        let out = postern_tests::run_cli(
            &server.dir.path().join("app.ini"),
            &[(
                "POSTERN__DATABASE__PASSWD".to_string(),
                "hunter2-secret".to_string(),
            )],
            &["admin", "config", "list"],
        );
        let list = String::from_utf8_lossy(&out.stdout);
        assert!(
            list.contains("database.PASSWD = ********\t[environment]"),
            "{backend}: {list}"
        );
        assert!(!list.contains("hunter2-secret"), "{backend}");

        // Back to the default.
        let (ok, out, _) = run(&[
            "admin",
            "config",
            "set",
            "--reset",
            "service.DISABLE_REGISTRATION",
        ]);
        assert!(ok && out.contains("true -> (default)"), "{backend}: {out}");
    }
}

/// The panel's pages and forms do not exist for anyone but administrators,
/// and a refused change leaves the setting as it was.
#[tokio::test]
async fn the_panel_is_for_administrators_only() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("root", ROOT_PASSWORD, true);
        server.create_user("eve", "eve-long-password", false);
        let eve = server.signed_in("eve", "eve-long-password").await;
        for path in [
            "/admin/users",
            "/admin/users/1",
            "/admin/users/new",
            "/admin/orgs",
            "/admin/repos",
            "/admin/config",
        ] {
            let res = eve.get(server.url(path)).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}: {path}");
        }
        let csrf = postern_tests::csrf_of(&get_text(&eve, &server.url("/user/settings")).await);
        for (path, form) in [
            (
                "/admin/config",
                vec![
                    ("section", "service"),
                    ("key", "DISABLE_REGISTRATION"),
                    ("value", "true"),
                ],
            ),
            ("/admin/users/1", vec![("email", "eve@example.com")]),
            ("/admin/users/1/reset_2fa", vec![]),
        ] {
            let mut form = form.clone();
            form.push(("_csrf", &csrf));
            let res = eve.post(server.url(path)).form(&form).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend}: {path}");
        }
        let out = server.cli(&["admin", "config", "get", "service.DISABLE_REGISTRATION"]);
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("false\t[default]"));
        let users = server.cli(&["admin", "user", "list", "--admin"]);
        let users = String::from_utf8_lossy(&users.stdout);
        assert!(
            users.contains("root") && !users.contains("eve"),
            "{backend}"
        );

        // An administrator's bad value: the form says why, nothing changes.
        let root = server.signed_in("root", ROOT_PASSWORD).await;
        let res = submit_form(
            &root,
            &server,
            "/admin/config",
            &[
                ("section", "webhook"),
                ("key", "MAX_ATTEMPTS"),
                ("value", "-3"),
            ],
        )
        .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let page = res.text().await.unwrap();
        assert!(
            postern_tests::flash_error(&page)
                .unwrap()
                .contains("[webhook] MAX_ATTEMPTS"),
            "{backend}: {page}"
        );
        let out = server.cli(&["admin", "config", "audit"]);
        assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty());
    }
}

/// `DISABLE_REGISTRATION_ORG` refuses organizations to accounts made on the
/// sign-up page; `ALLOW_ONLY_ADMIN_CREATE_ORG` to everyone but
/// administrators. Each on the page and the API.
#[tokio::test]
async fn who_may_create_organizations() {
    for backend in backends() {
        for (key, self_made, admin_made) in [
            ("DISABLE_REGISTRATION_ORG", false, true),
            ("ALLOW_ONLY_ADMIN_CREATE_ORG", false, false),
        ] {
            let server = Server::start(
                &backend,
                Options {
                    ini: format!("[service]\n{key} = true\n"),
                    ..Options::default()
                },
            )
            .await;
            server.create_user("made", "made-long-password", false);
            server.create_user("root", ROOT_PASSWORD, true);
            let joined = client();
            let res = submit_form(
                &joined,
                &server,
                "/user/sign_up",
                &[
                    ("user_name", "joined"),
                    ("email", "joined@example.com"),
                    ("password", "joined-long-password"),
                    ("retype", "joined-long-password"),
                ],
            )
            .await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
            let made = server.signed_in("made", "made-long-password").await;
            let root = server.signed_in("root", ROOT_PASSWORD).await;
            for (who, http, allowed) in [
                ("joined", &joined, self_made),
                ("made", &made, admin_made),
                ("root", &root, true),
            ] {
                let case = format!("{backend}, {key}, {who}");
                let page = http.get(server.url("/org/create")).send().await.unwrap();
                let expected = if allowed {
                    StatusCode::OK
                } else {
                    StatusCode::FORBIDDEN
                };
                assert_eq!(page.status(), expected, "{case}");
                let api = http
                    .post(server.url("/api/v1/orgs"))
                    .json(&serde_json::json!({"username": format!("{who}-org")}))
                    .send()
                    .await
                    .unwrap();
                let expected = if allowed {
                    StatusCode::CREATED
                } else {
                    StatusCode::FORBIDDEN
                };
                assert_eq!(api.status(), expected, "{case}");
            }
        }
    }
}

/// The sign-in form still works for a user whose password was changed on
/// the Profile page, and the old one does not.
#[tokio::test]
async fn a_password_changed_on_the_profile_page_is_the_one_that_works() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("finn", "finn-first-password", false);
        let finn = server.signed_in("finn", "finn-first-password").await;
        for (new, status) in [
            ("short", StatusCode::UNPROCESSABLE_ENTITY),
            ("finn-second-password", StatusCode::OK),
        ] {
            let csrf =
                postern_tests::csrf_of(&get_text(&finn, &server.url("/user/settings")).await);
            let res = finn
                .post(server.url("/user/settings/password"))
                .form(&[
                    ("old_password", "finn-first-password"),
                    ("password", new),
                    ("retype", new),
                    ("_csrf", csrf.as_str()),
                ])
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), status, "{backend}: {new}");
        }
        let old = sign_in(&client(), &server, "finn", "finn-first-password").await;
        assert_eq!(old.status(), StatusCode::UNAUTHORIZED, "{backend}");
        let new = sign_in(&client(), &server, "finn", "finn-second-password").await;
        assert_eq!(new.status(), StatusCode::SEE_OTHER, "{backend}");
    }
}

/// A repository's Settings and an organization's team forms exist only for
/// those who administer them: a reader or an outsider gets the 404 page,
/// and nothing changes.
#[tokio::test]
async fn settings_pages_are_for_those_who_administer() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("kim", "kim-long-password", false);
        server.create_user("lee", "lee-long-password", false);
        let kim = server.signed_in("kim", "kim-long-password").await;
        let lee = server.signed_in("lee", "lee-long-password").await;
        let res = submit_form(
            &kim,
            &server,
            "/repo/create",
            &[("owner", "kim"), ("repo_name", "notes")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let res = submit_form(&kim, &server, "/org/create", &[("org_name", "kimco")]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        // A repository of someone else's is not the viewer's to create.
        let res = submit_form(
            &lee,
            &server,
            "/repo/create",
            &[("owner", "kimco"), ("repo_name", "x")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{backend}");

        let csrf =
            postern_tests::csrf_of(&get_text(&kim, &server.url("/kim/notes/settings")).await);
        let added = kim
            .post(server.url("/kim/notes/settings/collaborators"))
            .form(&[("login", "lee"), ("permission", "read"), ("_csrf", &csrf)])
            .send()
            .await
            .unwrap();
        assert_eq!(added.status(), StatusCode::SEE_OTHER, "{backend}");
        // lee reads the repository, but its settings do not exist for lee.
        assert_eq!(
            lee.get(server.url("/kim/notes"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::OK
        );
        let lee_csrf = postern_tests::csrf_of(&get_text(&lee, &server.url("/user/settings")).await);
        for (path, form) in [
            ("/kim/notes/settings", vec![("private", "on")]),
            ("/kim/notes/settings/delete", vec![("confirm", "notes")]),
            (
                "/kim/notes/settings/collaborators",
                vec![("login", "lee"), ("permission", "admin")],
            ),
            (
                "/kim/notes/settings/branches/edit",
                vec![("rule_name", "main")],
            ),
            (
                "/org/kimco/teams",
                vec![("team_name", "mine"), ("permission", "admin")],
            ),
        ] {
            let get = lee.get(server.url(path)).send().await.unwrap();
            if !path.ends_with("/delete") && !path.ends_with("/collaborators") {
                assert_eq!(get.status(), StatusCode::NOT_FOUND, "{backend}: GET {path}");
            }
            let mut form = form.clone();
            form.push(("_csrf", &lee_csrf));
            let post = lee.post(server.url(path)).form(&form).send().await.unwrap();
            assert_eq!(
                post.status(),
                StatusCode::NOT_FOUND,
                "{backend}: POST {path}"
            );
        }
        let settings = get_text(&kim, &server.url("/kim/notes/settings")).await;
        assert!(
            settings.contains("data-collaborator=\"lee\"")
                && settings.contains("<td class=\"permission\">read</td>")
                && settings.contains("id=\"no-rules\""),
            "{backend}: {settings}"
        );
        assert_eq!(
            kim.get(server.url("/kim/notes"))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::OK,
            "{backend}: the repository is still there"
        );
        let teams = get_text(&kim, &server.url("/org/kimco/teams")).await;
        assert!(!teams.contains("data-team=\"mine\""), "{backend}");
    }
}

/// The POST of a form on `path` with the page's CSRF token, as the browser
/// sends it (the form's action may differ from the page).
async fn post_from(
    http: &reqwest::Client,
    server: &Server,
    page: &str,
    action: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let csrf = postern_tests::csrf_of(&get_text(http, &server.url(page)).await);
    let mut form = fields.to_vec();
    form.push(("_csrf", &csrf));
    http.post(server.url(action))
        .form(&form)
        .send()
        .await
        .unwrap()
}

/// Applications' token form keeps expiry and repository limits; SSH keys
/// are added and removed; Sessions signs out every other browser.
#[tokio::test]
async fn tokens_keys_and_sessions_from_the_settings_pages() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("nia", "nia-long-password", false);
        let nia = server.signed_in("nia", "nia-long-password").await;
        let other = server.signed_in("nia", "nia-long-password").await;
        let res = submit_form(
            &nia,
            &server,
            "/repo/create",
            &[("owner", "nia"), ("repo_name", "one")],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");

        // A token limited to one repository, expiring at the end of a day.
        let apps = "/user/settings/applications";
        let action = "/user/settings/applications/tokens";
        let bad = post_from(
            &nia,
            &server,
            apps,
            action,
            &[
                ("name", "bad"),
                ("scope_repository", "read"),
                ("repositories", "nia/none"),
            ],
        )
        .await;
        assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let why = bad.text().await.unwrap();
        assert!(
            why.contains("no repository") && why.contains("nia/none"),
            "{backend}: {why}"
        );
        let none = post_from(&nia, &server, apps, action, &[("name", "nothing")]).await;
        assert_eq!(none.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let made = post_from(
            &nia,
            &server,
            apps,
            action,
            &[
                ("name", "deploy"),
                ("scope_repository", "write"),
                ("scope_user", "read"),
                ("expires", "2099-12-31"),
                ("repositories", "nia/one"),
            ],
        )
        .await;
        assert_eq!(made.status(), StatusCode::OK, "{backend}");
        assert_eq!(made.headers()["cache-control"], "no-store");
        let page = made.text().await.unwrap();
        let secret = page
            .split("id=\"new-token-secret\">")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .unwrap()
            .to_string();
        let tokens: serde_json::Value = reqwest::Client::new()
            .get(server.url("/api/v1/users/nia/tokens"))
            .header("Authorization", format!("token {secret}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let list = tokens["results"]
            .as_array()
            .or(tokens.as_array())
            .unwrap()
            .clone();
        assert_eq!(list.len(), 1, "{backend}: only the good one: {tokens}");
        assert_eq!(list[0]["name"], "deploy");
        assert_eq!(list[0]["expires_at"], "2100-01-01T00:00:00Z", "{backend}");
        assert_eq!(list[0]["repositories"].as_array().unwrap().len(), 1);
        let id = list[0]["id"].as_i64().unwrap().to_string();
        let deleted = post_from(
            &nia,
            &server,
            apps,
            &format!("/user/settings/applications/tokens/{id}/delete"),
            &[],
        )
        .await;
        assert_eq!(deleted.status(), StatusCode::SEE_OTHER, "{backend}");
        let refused = reqwest::Client::new()
            .get(server.url("/api/v1/user"))
            .header("Authorization", format!("token {secret}"))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{backend}");

        // SSH keys.
        let (_, line) = postern_tests::ssh_keygen(server.dir.path(), "nia-key");
        let keys = "/user/settings/keys";
        let bad = post_from(
            &nia,
            &server,
            keys,
            keys,
            &[("title", "laptop"), ("content", "ssh-rsa nonsense")],
        )
        .await;
        assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend}");
        let added = post_from(
            &nia,
            &server,
            keys,
            keys,
            &[("title", "laptop"), ("content", &line)],
        )
        .await;
        assert_eq!(added.status(), StatusCode::SEE_OTHER, "{backend}");
        let page = get_text(&nia, &server.url(keys)).await;
        assert!(page.contains("class=\"key-title\">laptop<"), "{backend}");
        let id = page
            .split("data-key=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap()
            .to_string();
        let gone = post_from(
            &nia,
            &server,
            keys,
            &format!("/user/settings/keys/{id}/delete"),
            &[],
        )
        .await;
        assert_eq!(gone.status(), StatusCode::SEE_OTHER, "{backend}");
        assert!(
            get_text(&nia, &server.url(keys))
                .await
                .contains("id=\"no-keys\"")
        );

        // Sessions: both browsers listed; signing out the others ends one.
        let sessions = "/user/settings/sessions";
        let page = get_text(&nia, &server.url(sessions)).await;
        assert_eq!(page.matches("data-session=").count(), 2, "{backend}");
        assert_eq!(page.matches("id=\"current-session\"").count(), 1);
        let res = post_from(
            &nia,
            &server,
            sessions,
            "/user/settings/sessions/others/delete",
            &[],
        )
        .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend}");
        let me = |http: &reqwest::Client| http.get(server.url("/api/v1/user")).send();
        assert_eq!(
            me(&nia).await.unwrap().status(),
            StatusCode::OK,
            "{backend}"
        );
        assert_eq!(
            me(&other).await.unwrap().status(),
            StatusCode::UNAUTHORIZED,
            "{backend}"
        );
    }
}

/// Admin › Users: create an account, make bypass codes for it, reset its
/// second factors; a taken name is refused and creates nothing.
#[tokio::test]
async fn administrators_create_users_and_help_them_back_in() {
    for backend in backends() {
        let server = Server::start(&backend, Options::default()).await;
        server.create_user("root", ROOT_PASSWORD, true);
        let root = server.signed_in("root", ROOT_PASSWORD).await;
        let new = "/admin/users/new";
        let made = post_from(
            &root,
            &server,
            new,
            new,
            &[
                ("user_name", "otto"),
                ("email", "otto@example.com"),
                ("password", "otto-long-password"),
            ],
        )
        .await;
        assert_eq!(made.status(), StatusCode::SEE_OTHER, "{backend}");
        let page = made.headers()["location"].to_str().unwrap().to_string();
        let again = post_from(
            &root,
            &server,
            new,
            new,
            &[
                ("user_name", "otto"),
                ("email", "otto2@example.com"),
                ("password", "otto-long-password"),
            ],
        )
        .await;
        assert_eq!(again.status(), StatusCode::CONFLICT, "{backend}");
        assert_eq!(server.logins(), ["root", "otto"], "{backend}");
        // The new account signs in with its password.
        server.signed_in("otto", "otto-long-password").await;

        let codes = post_from(&root, &server, &page, &format!("{page}/bypass_codes"), &[]).await;
        assert_eq!(codes.status(), StatusCode::OK, "{backend}");
        assert_eq!(codes.headers()["cache-control"], "no-store");
        let html = codes.text().await.unwrap();
        let shown = html.split("id=\"bypass-codes\"").nth(1).unwrap();
        assert_eq!(shown.matches("<code>").count(), 5, "{backend}");
        let reset = post_from(&root, &server, &page, &format!("{page}/reset_2fa"), &[]).await;
        assert_eq!(reset.status(), StatusCode::SEE_OTHER, "{backend}");

        // Paging and search.
        let list = get_text(&root, &server.url("/admin/users?q=OTTO")).await;
        assert!(list.contains("data-user=\"otto\"") && !list.contains("data-user=\"root\""));
        assert!(list.contains("1 users"), "{backend}");
    }
}

/// Where the documentation's screenshots are written when
/// `POSTERN_DOC_SCREENSHOTS` names a directory (`docs/screenshots`); the
/// layout is checked either way.
fn doc_screenshot(name: &str, png: &[u8]) {
    if let Ok(dir) = std::env::var("POSTERN_DOC_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }
}

/// The width of each element `css` finds, in CSS pixels.
async fn widths(c: &Client, css: &str) -> Vec<f64> {
    let script = format!(
        "return [...document.querySelectorAll({css:?})].map(e => e.getBoundingClientRect().width);"
    );
    let found = c.execute(&script, vec![]).await.unwrap();
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_f64().unwrap())
        .collect()
}

#[tokio::test]
async fn the_sign_in_page_an_error_page_and_the_sources_table_fit_1280_and_390_pixels() {
    for backend in backends() {
        let name = backend.to_string();
        // Three providers; none is reached to show the page.
        let ini = "[source]\nENABLE_OAUTH2 = true\n\n\
            [source.oauth2_github]\nNAME = GitHub\nPROVIDER = github\nCLIENT_ID = a-client-id-of-some-length\nCLIENT_SECRET = s\n\n\
            [source.oauth2_gitlab]\nNAME = GitLab\nPROVIDER = gitlab\nCLIENT_ID = another-client-id\nCLIENT_SECRET = s\n\n\
            [source.oauth2_corp]\nNAME = Corp single sign-on (Entra ID)\nPROVIDER = oauth2\nCLIENT_ID = 8f2c1a7e-1b2c-4d5e-9f00-0123456789ab\nCLIENT_SECRET = s\n\
            AUTH_URL = https://login.microsoftonline.com/0d0f8a4c-6b2e-4c55-9f1e-7a1b2c3d4e5f/oauth2/v2.0/authorize\n\
            TOKEN_URL = https://login.microsoftonline.com/0d0f8a4c-6b2e-4c55-9f1e-7a1b2c3d4e5f/oauth2/v2.0/token\n\
            PROFILE_URL = https://graph.microsoft.com/oidc/userinfo\n";
        let server = Server::start(
            &backend,
            Options {
                ini: ini.into(),
                ..Options::default()
            },
        )
        .await;
        server.create_user("root", ROOT_PASSWORD, true);
        let browser = Browser::start().await;
        let c = &browser.client;
        for width in [1280u32, 390] {
            c.set_window_size(width, 900).await.unwrap();
            c.goto(&server.url("/user/login")).await.unwrap();
            let report = c.execute(LAYOUT_CHECK, vec![]).await.unwrap();
            let case = format!("{name}: the sign-in page at {width} px: {report}");
            assert!(report["wide"].as_array().unwrap().is_empty(), "{case}");
            // One button per provider, with its name, all as wide as the
            // form.
            let buttons = widths(c, "#providers a.button").await;
            assert_eq!(buttons.len(), 3, "{case}");
            let form = widths(c, "main form").await[0];
            assert!(
                buttons.iter().all(|w| (w - form).abs() < 2.0),
                "{case}: buttons {buttons:?}, form {form}"
            );
            assert_eq!(
                text(c, "provider-corp").await,
                "Sign in with Corp single sign-on (Entra ID)"
            );
            doc_screenshot(&format!("sign-in-{width}"), &c.screenshot().await.unwrap());

            // A callback that answers no sign-in begun here: the page says
            // so, and leads back to the sign-in page.
            c.goto(&server.url("/user/oauth2/corp/callback?code=x&state=y"))
                .await
                .unwrap();
            let message = text(c, "message").await;
            assert!(message.contains("expired"), "{name}: {message}");
            let report = c.execute(LAYOUT_CHECK, vec![]).await.unwrap();
            assert!(
                report["wide"].as_array().unwrap().is_empty(),
                "{name}: {report}"
            );
            doc_screenshot(
                &format!("sign-in-error-{width}"),
                &c.screenshot().await.unwrap(),
            );
            click(c, "back-to-sign-in").await;
            wait(c, "providers").await;
        }

        // The administrator's sources table: no sideways scrolling.
        c.set_window_size(1280, 900).await.unwrap();
        c.goto(&server.url("/user/login")).await.unwrap();
        fill(c, "user_name", "root").await;
        fill(c, "password", ROOT_PASSWORD).await;
        click(c, "sign-in").await;
        wait(c, "signed-in-user").await;
        for width in [1280u32, 390] {
            c.set_window_size(width, 900).await.unwrap();
            c.goto(&server.url("/admin/auths")).await.unwrap();
            wait(c, "sources").await;
            let fits = c
                .execute(
                    "const t = document.getElementById('sources'); return [t.scrollWidth, t.clientWidth, document.documentElement.scrollWidth, document.documentElement.clientWidth];",
                    vec![],
                )
                .await
                .unwrap();
            let [table, table_box, page, viewport] =
                [0, 1, 2, 3].map(|i| fits[i].as_i64().unwrap());
            assert!(
                table <= table_box + 1 && page <= viewport,
                "{name}: the sources table scrolls sideways at {width} px: {fits}"
            );
            doc_screenshot(
                &format!("admin-sources-{width}"),
                &c.screenshot().await.unwrap(),
            );
        }
        browser.close().await;
    }
}
