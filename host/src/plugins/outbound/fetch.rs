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
            Err(Unopened::Failed(e)) => return Err(format!("{host}:{port}: {e:?}")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AddressRule as Allowed;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server at 127.0.0.1 that answers every connection with `answer`.
    async fn answering(answer: Vec<u8>) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = stream.read(&mut request).await;
                    let _ = stream.write_all(&answer).await;
                });
            }
        });
        port
    }

    fn loopback_rules() -> Rules {
        Rules {
            allowed: vec![Allowed::Loopback],
            insecure_hosts: vec!["127.0.0.1".into()],
            max_response_size: 1024,
            ..Rules::default()
        }
    }

    #[tokio::test]
    async fn the_rules_refuse_before_anything_is_sent_and_answers_are_bounded() {
        let body = b"<md:EntityDescriptor/>".to_vec();
        let mut ok = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        ok.extend_from_slice(&body);
        let port = answering(ok).await;
        let url = format!("http://127.0.0.1:{port}/metadata");
        assert_eq!(get(&loopback_rules(), &url).await.unwrap(), body);

        // Plain HTTP to a host ALLOW_INSECURE_HOSTS does not name.
        let err = get(&Rules::default(), &url).await.unwrap_err();
        assert!(err.contains("ALLOW_INSECURE_HOSTS"), "{err}");
        // An address ALLOWED_HOST_LIST does not admit.
        let external_only = Rules {
            insecure_hosts: vec!["127.0.0.1".into()],
            ..Rules::default()
        };
        let err = get(&external_only, &url).await.unwrap_err();
        assert!(err.contains("ALLOWED_HOST_LIST"), "{err}");
        // A user name in the URL, another scheme.
        for url in [
            format!("http://admin@127.0.0.1:{port}/"),
            "file:///etc/passwd".to_string(),
        ] {
            assert!(get(&loopback_rules(), &url).await.is_err(), "{url}");
        }

        // A redirect is an answer, not followed.
        let port = answering(
            b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n"
                .to_vec(),
        )
        .await;
        let err = get(&loopback_rules(), &format!("http://127.0.0.1:{port}/"))
            .await
            .unwrap_err();
        assert!(err.contains("302"), "{err}");

        // An answer over MAX_RESPONSE_SIZE, with or without its length said.
        for head in [
            "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n",
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
        ] {
            let mut big = head.as_bytes().to_vec();
            big.extend(std::iter::repeat_n(b'x', 4096));
            let port = answering(big).await;
            let err = get(&loopback_rules(), &format!("http://127.0.0.1:{port}/"))
                .await
                .unwrap_err();
            assert!(err.contains("MAX_RESPONSE_SIZE"), "{head}: {err}");
        }
    }
}
