//! The host's own requests to a URL an administrator gave (a SAML source's
//! `METADATA_URL`): the same `[outbound_http]` rules as a plugin's, on the
//! same connection code, so the address checked is the address reached.

use http_body_util::BodyExt;

use super::rules::Rules;
use super::send::{Unopened, open};

/// `GET url` under the rules: HTTPS unless `ALLOW_INSECURE_HOSTS` names
/// the host, only at addresses `ALLOWED_HOST_LIST` admits, within
/// `TIMEOUT`, at most `MAX_RESPONSE_SIZE` bytes. Redirects are not
/// followed: the URL the administrator wrote is the one read. The error
/// names the setting to change where one would help.
pub async fn get(rules: &Rules, url: &str) -> Result<Vec<u8>, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(format!("{url:?}: expected an http:// or https:// URL")),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| format!("{url:?}: expected a host"))?
        .clone();
    if authority.as_str().contains('@') {
        return Err(format!("{url:?}: a URL with a user name is refused"));
    }
    let host = authority
        .host()
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    if !tls && !rules.insecure_allowed(&host) {
        return Err(format!(
            "plain HTTP to {host} (allow it in [outbound_http] ALLOW_INSECURE_HOSTS, or use https)"
        ));
    }
    let work = async {
        let (mut sender, driver) = match open::<http_body_util::Empty<hyper::body::Bytes>>(
            rules,
            &host,
            port,
            tls,
            rules.timeout,
        )
        .await
        {
            Ok(opened) => opened,
            Err(Unopened::Refused(why)) => return Err(why),
            Err(Unopened::Failed(e)) => return Err(format!("{host}:{port}: {e}")),
        };
        let request = http::Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(http::header::HOST, authority.as_str())
            .header(
                http::header::USER_AGENT,
                concat!("Postern/", env!("CARGO_PKG_VERSION")),
            )
            .header(
                http::header::ACCEPT,
                "application/samlmetadata+xml, application/xml, text/xml",
            )
            .body(http_body_util::Empty::new())
            .map_err(|e| format!("{url:?}: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let max = rules.max_response_size;
        let body = http_body_util::Limited::new(response.into_body(), max)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    format!(
                        "{url} answered more than {max} bytes ([outbound_http] MAX_RESPONSE_SIZE)"
                    )
                } else {
                    format!("{url}: {e}")
                }
            })?;
        driver.abort();
        Ok(body.to_bytes().to_vec())
    };
    // One deadline for the whole exchange: a slow or endless answer fails
    // the fetch, never the host.
    tokio::time::timeout(rules.timeout * 2, work)
        .await
        .map_err(|_| {
            format!(
                "{url} did not answer within {} seconds ([outbound_http] TIMEOUT)",
                rules.timeout.as_secs() * 2
            )
        })?
}
