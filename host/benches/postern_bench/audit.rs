//! Provisioning and the audit log: a SCIM `userName eq` lookup among
//! 100 000 provisioned accounts against a trivial GET; switching off an
//! account that holds 50 sessions, 20 tokens and 5 OAuth2 grants against
//! one that holds nothing; what the audit row adds to a password sign-in
//! and to a token's creation; `audit verify` over 1 000 000 rows against
//! reading the same rows through the pool.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use postern::audit::{self, Actor, Event};
use postern::oauth_provider::apps;
use postern::users::{self, NewUser};
use postern::{identity, scim, sessions, tokens};

use crate::common::{Instance, trivial_server};
use crate::report::{Figure, Goal};

const ACCOUNTS: usize = 100_000;
const LOOKUPS: usize = 2_000;
const SWITCHED_OFF: usize = 20;
const SESSIONS: usize = 50;
const TOKENS: usize = 20;
const GRANTS: usize = 5;
const SIGN_INS: usize = 30;
const CREATIONS: usize = 500;
const ROWS: usize = 1_000_000;
const PASSWORD: &str = "a-benchmark-password";

fn percentile(mut ms: Vec<f64>, q: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(pg: Option<&str>) -> anyhow::Result<Vec<Figure>> {
    let instance = Instance::new("audit", pg).await?;
    let (app, addr) = instance.serve(&[]).await?;
    let mut out = Vec::new();
    out.extend(lookups(&app, addr).await?);
    out.extend(switching_off(&app).await?);
    out.extend(audit_share(&app, addr).await?);
    out.extend(verifying(&app).await?);
    Ok(out)
}

/// `ACCOUNTS` accounts of SCIM source `okta`, written in bulk.
async fn provision(app: &postern::state::App) -> anyhow::Result<()> {
    const CHUNK: usize = 1_000;
    for start in (0..ACCOUNTS).step_by(CHUNK) {
        let mut tx = app.db.begin().await?;
        let news: Vec<NewUser> = (start..start + CHUNK)
            .map(|i| NewUser {
                login: format!("p{i}"),
                full_name: String::new(),
                email: format!("p{i}@example.com"),
                password_hash: None,
                login_source: users::LOCAL_SOURCE.into(),
                is_admin: false,
                self_registered: false,
            })
            .collect();
        let made = users::insert_many(&mut tx, &news).await?;
        let ids = made
            .into_iter()
            .map(|u| u.map(|u| u.id))
            .collect::<Result<Vec<_>, _>>()?;
        let sql = format!(
            "INSERT INTO scim_users (user_id, source, user_name, lower_user_name, external_id, created) VALUES {}",
            postern::db::row_placeholders(&tx, ids.len(), 6)
        );
        let mut query = sqlx::query(&sql);
        for (n, id) in ids.iter().enumerate() {
            let name = format!("person{}@corp.example", start + n);
            query = query
                .bind(*id)
                .bind("okta")
                .bind(name.clone())
                .bind(name)
                .bind(format!("ext-{}", start + n))
                .bind(0i64);
        }
        query.execute(&mut *tx).await?;
        tx.commit().await?;
    }
    Ok(())
}

/// Sequential GETs of each URL; their latencies in milliseconds.
async fn latencies(urls: &[String], auth: Option<&str>) -> anyhow::Result<Vec<f64>> {
    let client = reqwest::Client::new();
    let mut ms = Vec::with_capacity(urls.len());
    for url in urls {
        let t = Instant::now();
        let mut req = client.get(url);
        if let Some(a) = auth {
            req = req.bearer_auth(a);
        }
        let res = req.send().await?;
        anyhow::ensure!(res.status().is_success(), "{url}: {}", res.status());
        let body = res.bytes().await?;
        ms.push(millis(t.elapsed()));
        anyhow::ensure!(!body.is_empty(), "{url}: an empty answer");
    }
    Ok(ms)
}

async fn lookups(
    app: &postern::state::App,
    addr: std::net::SocketAddr,
) -> anyhow::Result<Vec<Figure>> {
    provision(app).await?;
    let (_, secret) = scim::create_token(&app.db, "okta").await?;
    let trivial = trivial_server().await?;
    let urls: Vec<String> = (0..LOOKUPS)
        .map(|i| {
            let n = (i * 7919) % ACCOUNTS;
            format!(
                "http://{addr}/scim/v2/Users?filter=userName%20eq%20%22person{n}@corp.example%22"
            )
        })
        .collect();
    // One lookup checked: it finds exactly its account.
    let page: serde_json::Value = reqwest::Client::new()
        .get(&urls[1])
        .bearer_auth(&secret)
        .send()
        .await?
        .json()
        .await?;
    anyhow::ensure!(page["totalResults"] == 1, "the lookup found {page}");
    let found = latencies(&urls, Some(&secret)).await?;
    let floor = latencies(&vec![format!("http://{trivial}/"); LOOKUPS], None).await?;
    Ok(vec![
        Figure::against(
            "audit",
            format!("SCIM userName eq among {ACCOUNTS} accounts, p99"),
            percentile(found, 0.99),
            "ms",
            "trivial GET handler",
            percentile(floor, 0.99),
        )
        .goal(Goal::AtMost(5.0)),
    ])
}

/// An account with what a busy user holds: sessions, tokens, OAuth2
/// grants with a token each.
async fn busy_account(
    app: &postern::state::App,
    n: usize,
    client: &apps::Client,
    holdings: bool,
) -> anyhow::Result<users::User> {
    let login = format!("leaver{n}{}", if holdings { "" } else { "-empty" });
    identity::register(
        app,
        &login,
        &format!("{login}@example.com"),
        PASSWORD,
        false,
        false,
    )
    .await?;
    let user = users::find_by_login(&app.db, &login)
        .await?
        .ok_or_else(|| anyhow::anyhow!("{login} was just made"))?;
    if !holdings {
        return Ok(user);
    }
    for _ in 0..SESSIONS {
        sessions::create(&app.db, user.id, false, "bench").await?;
    }
    let scopes = tokens::Scopes::parse(&["all".to_string()]).map_err(anyhow::Error::msg)?;
    for t in 0..TOKENS {
        let name = format!("t{t}");
        tokens::create(
            &app.db,
            user.id,
            &name,
            &scopes,
            (&[], None),
            &Actor::System,
        )
        .await?;
    }
    // Grants of GRANTS applications: the first is `client`, the rest made
    // for this account.
    let mut app_ids = vec![client.id];
    for g in 1..GRANTS {
        let registration = apps::Registration {
            name: format!("app{n}-{g}"),
            redirect_uris: vec!["https://app.example/cb".into()],
            confidential: true,
            id_token_signed_response_alg: None,
        };
        let (made, _) = apps::create(&app.db, None, registration, 32, &Actor::System).await?;
        app_ids.push(made.id);
    }
    for id in app_ids {
        sqlx::query(
            "INSERT INTO oauth_grants (app_id, user_id, scope, created) VALUES ($1, $2, 'openid', 0)",
        )
        .bind(id)
        .bind(user.id)
        .execute(app.db.pool())
        .await?;
    }
    Ok(user)
}

async fn switching_off(app: &postern::state::App) -> anyhow::Result<Vec<Figure>> {
    let registration = apps::Registration {
        name: "shared".into(),
        redirect_uris: vec!["https://app.example/cb".into()],
        confidential: true,
        id_token_signed_response_alg: None,
    };
    let (client, _) = apps::create(&app.db, None, registration, 32, &Actor::System).await?;
    let (mut busy, mut empty) = (Vec::new(), Vec::new());
    for n in 0..SWITCHED_OFF {
        for (holdings, times) in [(true, &mut busy), (false, &mut empty)] {
            let user = busy_account(app, n, &client, holdings).await?;
            let t = Instant::now();
            users::set_active(&app.db, user.id, false, "bench").await?;
            times.push(millis(t.elapsed()));
        }
    }
    // Switched off means holding nothing.
    let left: i64 = sqlx::query_scalar(
        "SELECT (SELECT COUNT(*) FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.is_active = 0) \
         + (SELECT COUNT(*) FROM access_tokens t JOIN users u ON u.id = t.user_id WHERE u.is_active = 0) \
         + (SELECT COUNT(*) FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE u.is_active = 0)",
    )
    .fetch_one(app.db.pool())
    .await?;
    anyhow::ensure!(left == 0, "{left} credentials outlived their account");
    Ok(vec![
        Figure::against(
            "audit",
            format!(
                "switching off an account with {SESSIONS} sessions, {TOKENS} tokens, {GRANTS} grants (slowest of {SWITCHED_OFF})"
            ),
            percentile(busy, 1.0),
            "ms",
            "an account holding nothing",
            percentile(empty, 1.0),
        )
        .goal(Goal::AtMost(50.0)),
    ])
}

/// The audit row's share of a password sign-in (the sign-in, then its
/// row, as the sign-in page does) and of a token's creation, as a request
/// and as the domain call (the row is written inside it, in the trip of the
/// token's INSERT; its share is what the same row adds to such a trip).
async fn audit_share(
    app: &postern::state::App,
    addr: std::net::SocketAddr,
) -> anyhow::Result<Vec<Figure>> {
    identity::register(app, "signer", "signer@example.com", PASSWORD, false, false).await?;
    let user = users::find_by_login(&app.db, "signer")
        .await?
        .ok_or_else(|| anyhow::anyhow!("signer was just made"))?;
    let (mut signing, mut recording) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..SIGN_INS {
        let t = Instant::now();
        let result = identity::sign_in(app, "signer", PASSWORD, None, None, None).await;
        signing += t.elapsed();
        anyhow::ensure!(result.is_ok(), "the sign-in failed");
        let t = Instant::now();
        identity::audit_sign_in(
            app,
            "signer",
            &result,
            identity::Door::Page,
            audit::Origin::default(),
        )
        .await?;
        recording += t.elapsed();
    }
    let per = |d: Duration, n: usize| millis(d) / n as f64;
    let mut out = vec![
        Figure::against(
            "audit",
            "password sign-in with its audit row",
            per(signing + recording, SIGN_INS),
            "ms",
            "the sign-in alone",
            per(signing, SIGN_INS),
        )
        .goal(Goal::RatioAtMost(1.10)),
    ];

    // A token's creation as a signed-in browser asks for it (`POST
    // /api/v1/users/{name}/tokens` with its session; Basic authentication
    // would add an argon2id verification to each), and the domain call
    // alone.
    let scopes = tokens::Scopes::parse(&["all".to_string()]).map_err(anyhow::Error::msg)?;
    let (cookie, _) = sessions::create(&app.db, user.id, false, "bench").await?;
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/api/v1/users/signer/tokens");
    let t = Instant::now();
    for i in 0..CREATIONS {
        let res = http
            .post(&url)
            .header("cookie", format!("{}={cookie}", sessions::COOKIE))
            .json(&serde_json::json!({"name": format!("r{i}"), "scopes": ["all"]}))
            .send()
            .await?;
        let status = res.status();
        anyhow::ensure!(
            status.is_success(),
            "token creation: {status}: {}",
            res.text().await?
        );
    }
    let requesting = t.elapsed();
    let t = Instant::now();
    for i in 0..CREATIONS {
        let name = format!("c{i}");
        tokens::create(&app.db, user.id, &name, &scopes, (&[], None), &user.actor()).await?;
    }
    let creating = t.elapsed();
    let event = Event::new(
        user.actor(),
        "token.created",
        "token:x".into(),
        Some(user.id),
    );
    // The row goes in the trip of the token's INSERT
    // (`audit::record_along`), so its own time is what it adds to such a
    // trip: the same statement (an UPDATE that returns a row) with and
    // without it, each in a transaction, so that both pay the commit.
    const TOUCH: &str = "UPDATE users SET updated = $1 WHERE id = $2 RETURNING id";
    let (mut with_row, mut without) = (Duration::ZERO, Duration::ZERO);
    for i in 0..CREATIONS as i64 {
        for audited in [true, false] {
            // A value of its own each time: SQLite writes nothing for an
            // UPDATE that leaves the row as it was, and its commit would
            // then flush nothing, which charged the row with the whole
            // commit.
            let value = i * 2 + i64::from(audited);
            let t = Instant::now();
            let mut tx = app.db.begin().await?;
            if audited {
                audit::record_along(&mut tx, &event, (TOUCH, 2), |q| q.bind(value).bind(user.id))
                    .await?;
            } else {
                sqlx::query(TOUCH)
                    .bind(value)
                    .bind(user.id)
                    .fetch_one(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            let took = t.elapsed();
            if audited {
                with_row += took;
            } else {
                without += took;
            }
        }
    }
    let row = with_row.saturating_sub(without);
    out.push(
        Figure::against(
            "audit",
            "token creation request (session) with its audit row",
            per(requesting, CREATIONS),
            "ms",
            "less the row's own time",
            per(requesting.saturating_sub(row), CREATIONS),
        )
        .goal(Goal::RatioAtMost(1.10)),
    );
    out.push(Figure::against(
        "audit",
        "tokens::create with its audit row (the domain call alone)",
        per(creating, CREATIONS),
        "ms",
        "less the row's own time",
        per(creating.saturating_sub(row), CREATIONS),
    ));
    Ok(out)
}

async fn verifying(app: &postern::state::App) -> anyhow::Result<Vec<Figure>> {
    const BATCH: usize = 20_000;
    let mut event = Event::new(Actor::System, "bench.row", "bench:row".into(), None);
    event.details = serde_json::json!({"reason": "a row of typical size, with a reason"});
    let batch = vec![event; BATCH];
    let written: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_events")
        .fetch_one(app.db.pool())
        .await?;
    for _ in 0..(ROWS.saturating_sub(written as usize)).div_ceil(BATCH) {
        let mut tx = app.db.begin().await?;
        audit::record_many(&mut tx, app.db.backend(), &batch).await?;
        tx.commit().await?;
    }
    let t = Instant::now();
    let verdict = audit::verify(&app.db, &app.key).await?;
    let took = t.elapsed();
    let audit::Verdict::Intact { rows } = verdict else {
        anyhow::bail!("the chain does not verify: {verdict:?}");
    };
    // For comparison: the same rows read in the same order through the
    // pool (sqlx), nothing checked. On PostgreSQL verify reads this way too;
    // on SQLite it reads the file in process.
    let t = Instant::now();
    let mut stream = sqlx::query("SELECT * FROM audit_events ORDER BY id").fetch(app.db.pool());
    let mut read = 0u64;
    while stream.try_next().await?.is_some() {
        read += 1;
    }
    let reading = t.elapsed();
    anyhow::ensure!(read == rows, "read {read} of {rows} rows");
    let rate = |d: Duration| rows as f64 / d.as_secs_f64();
    Ok(vec![
        Figure::against(
            "audit",
            format!("audit verify over {rows} rows"),
            rate(took),
            "rows/s",
            "reading the rows through the pool",
            rate(reading),
        )
        .goal(Goal::AtLeast(200_000.0)),
    ])
}
