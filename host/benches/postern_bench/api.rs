//! `GET /api/v1/user` with a personal access token and with an OAuth
//! Bearer token, at 64 concurrent connections, against a trivial axum
//! handler served the same way; and the OAuth code exchange against a
//! trivial POST handler.

use std::time::Duration;

use base64::Engine as _;
use postern::oauth_provider::{apps, codes};
use postern::{identity, tokens, users};
use sha2::Digest;

use crate::common::{Instance, get_load, trivial_server};
use crate::report::{Figure, Goal};

const CLIENTS: usize = 64;
const TIME: Duration = Duration::from_secs(4);
const CODES: usize = 1000;
const CODE_CLIENTS: usize = 16;
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const REDIRECT: &str = "http://127.0.0.1:9/cb";

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("api", pg).await?;
    let (app, addr) = instance
        .serve(&[("POSTERN__OAUTH2__ENABLE", "true")])
        .await?;
    postern::oauth_provider::keys::ensure(
        &app.db,
        &app.key,
        &app.config().oauth2.jwt_signing_algorithm,
    )
    .await?;
    let trivial = trivial_server().await?;
    identity::register(
        &app,
        "bench",
        "bench@example.com",
        "a-benchmark-password",
        false,
        false,
    )
    .await?;
    let user = users::find_by_login(&app.db, "bench")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the user was just made"))?;
    let scopes = tokens::Scopes::parse(&["all".to_string()]).map_err(anyhow::Error::msg)?;
    let (pat, _) = tokens::create(
        &app.db,
        user.id,
        "bench",
        &scopes,
        (&[], None),
        &user.actor(),
    )
    .await?;

    // An OAuth application, codes made beforehand, and one exchanged for
    // the Bearer figure.
    let registration = apps::Registration {
        name: "bench".into(),
        redirect_uris: vec![REDIRECT.into()],
        confidential: true,
        id_token_signed_response_alg: None,
    };
    let (client, secret) =
        apps::create(&app.db, Some(user.id), registration, 32, &user.actor()).await?;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(VERIFIER.as_bytes()));
    let request = codes::AuthorizeRequest {
        response_type: "code".into(),
        client_id: client.client_id.clone(),
        redirect_uri: REDIRECT.into(),
        scope: "openid profile email".into(),
        nonce: "n".into(),
        code_challenge: challenge,
        code_challenge_method: "S256".into(),
        ..Default::default()
    };
    let checked = codes::check(&app.db, &request)
        .await
        .map_err(|r| anyhow::anyhow!("the request was refused: {r:?}"))?;
    let mut bodies = Vec::with_capacity(CODES + 1);
    for _ in 0..=CODES {
        let code = codes::issue(&app.db, &checked, &user, 0).await?;
        bodies.push(format!(
            "grant_type=authorization_code&code={code}&redirect_uri={}&code_verifier={VERIFIER}",
            url_escape(REDIRECT)
        ));
    }
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{secret}", client.client_id))
    );
    let token_url = format!("http://{addr}/login/oauth/access_token");
    let token: serde_json::Value = reqwest::Client::new()
        .post(&token_url)
        .header("authorization", &basic)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(bodies.pop().expect("codes were made"))
        .send()
        .await?
        .json()
        .await?;
    let bearer = token["access_token"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no access token in {token}"))?
        .to_string();

    let floor = get_load(&format!("http://{trivial}/"), None, CLIENTS, TIME).await;
    let api_url = format!("http://{addr}/api/v1/user");
    let with_pat = get_load(&api_url, Some(&format!("token {pat}")), CLIENTS, TIME).await;
    let with_bearer = get_load(&api_url, Some(&format!("Bearer {bearer}")), CLIENTS, TIME).await;
    anyhow::ensure!(
        floor.errors + with_pat.errors + with_bearer.errors == 0,
        "requests failed: {floor:?} {with_pat:?} {with_bearer:?}"
    );
    let trivial_name = format!("trivial axum handler, {CLIENTS} clients");
    let mut out = vec![];
    for (what, load) in [
        ("personal token", &with_pat),
        ("OAuth Bearer", &with_bearer),
    ] {
        out.push(
            Figure::against(
                "api",
                format!("GET /api/v1/user, {what}, {CLIENTS} clients"),
                load.per_second,
                "req/s",
                &trivial_name,
                floor.per_second,
            )
            .goal(Goal::RatioAtLeast(0.5)),
        );
        out.push(
            Figure::against(
                "api",
                format!("GET /api/v1/user, {what}, p99"),
                load.p99,
                "ms",
                &trivial_name,
                floor.p99,
            )
            .goal(Goal::AtMost(5.0)),
        );
    }

    // Code exchanges (PKCE S256, client_secret_basic, ID token signed).
    let floor = crate::common::post_all(
        &format!("http://{trivial}/"),
        None,
        bodies.clone(),
        CODE_CLIENTS,
    )
    .await;
    let exchanges = crate::common::post_all(&token_url, Some(basic), bodies, CODE_CLIENTS).await;
    let node = node_exchanges().await?;
    for (baseline, value, goal) in [
        ("trivial POST handler", floor, 0.05),
        ("node oidc-provider's token endpoint", node, 3.0),
    ] {
        out.push(
            Figure::against(
                "api",
                format!("OAuth code exchanges, {CODE_CLIENTS} clients"),
                exchanges,
                "req/s",
                baseline,
                value,
            )
            .goal(Goal::RatioAtLeast(goal)),
        );
    }
    Ok(out)
}

/// The same exchanges (PKCE S256, client_secret_basic, an RS256 ID token)
/// at panva's `oidc-provider`, the certified provider the sign-in tests
/// run, its codes minted beforehand as Postern's are; in exchanges a
/// second. Its development store keeps at most 1 000 objects (the oldest
/// go first), so the codes are minted and exchanged a batch at a time and
/// only the exchanges are timed.
async fn node_exchanges() -> anyhow::Result<f64> {
    const BATCH: usize = 250;
    let node = postern_tests::oidc::OidcProvider::shared();
    let (client_id, secret) = node.register_client(REDIRECT).await;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(VERIFIER.as_bytes()));
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"))
    );
    let mut seconds = 0.0;
    let mut exchanged = 0;
    while exchanged < CODES {
        let codes = node
            .mint_codes(
                (&client_id, REDIRECT),
                "bench",
                "openid profile email",
                &challenge,
                BATCH,
            )
            .await;
        let bodies: Vec<String> = codes
            .iter()
            .map(|code| {
                format!(
                    "grant_type=authorization_code&code={code}&redirect_uri={}&code_verifier={VERIFIER}",
                    url_escape(REDIRECT)
                )
            })
            .collect();
        if exchanged == 0 {
            // One exchange first: a refusal would otherwise pass as speed.
            let first = reqwest::Client::new()
                .post(node.token_endpoint())
                .header("authorization", &basic)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(bodies[0].clone())
                .send()
                .await?;
            let status = first.status();
            let answer: serde_json::Value = first.json().await?;
            anyhow::ensure!(
                status.is_success() && answer["id_token"].is_string(),
                "oidc-provider refused an exchange ({status}): {answer}"
            );
        }
        let n = bodies.len() - 1;
        let rate = crate::common::post_all(
            &node.token_endpoint(),
            Some(basic.clone()),
            bodies[1..].to_vec(),
            CODE_CLIENTS,
        )
        .await;
        seconds += n as f64 / rate;
        exchanged += n;
    }
    Ok(exchanged as f64 / seconds)
}

fn url_escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
