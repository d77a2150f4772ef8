//! Requests to the provider, through the host's `http` capability, and what
//! their failures mean for a sign-in.

use oauth2::{ErrorResponseType, RequestTokenError, StandardErrorResponse};
use postern_plugin_api::http::{self, HttpError, Request, Response, header};
use postern_plugin_api::identity_source::{SignInError, log};
use serde_json::Value;

/// The HTTP client handed to `oauth2` and `openidconnect`: their
/// `SyncHttpClient` is implemented for such a function.
pub(crate) fn client(mut request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, HttpError> {
    // GitHub's API refuses requests without a User-Agent.
    request
        .headers_mut()
        .entry(header::USER_AGENT)
        .or_insert(header::HeaderValue::from_static("Postern"));
    log::write(
        log::Level::Debug,
        &format!(
            "{} {}://{}{}",
            request.method(),
            request.uri().scheme_str().unwrap_or("https"),
            request.uri().authority().map_or("", |a| a.as_str()),
            request.uri().path()
        ),
    );
    http::send(request)
}

/// A failed request: the host's refusal names the destination, so that the
/// operator knows which URL setting is missing.
pub(crate) fn unreachable(e: &HttpError) -> SignInError {
    match e {
        HttpError::Denied { host } => SignInError::Unavailable(format!(
            "the host refused a request to {host}: it is not one of this source's URLs"
        )),
        other => SignInError::Unavailable(other.to_string()),
    }
}

/// Up to 200 characters of a body, for an error message.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// GETs a JSON object: a discovery document, a profile. Non-2xx answers
/// are the provider being unavailable; a body that is not a JSON object is
/// an invalid response.
pub(crate) fn get_json(
    url: &str,
    bearer: Option<&str>,
) -> Result<serde_json::Map<String, Value>, SignInError> {
    match get_json_value(url, bearer)? {
        Value::Object(object) => Ok(object),
        _ => Err(SignInError::InvalidResponse(format!(
            "{url} answered with JSON that is not an object"
        ))),
    }
}

/// GETs any JSON value (a list of e-mail addresses); as [`get_json`]
/// otherwise.
pub(crate) fn get_json_value(url: &str, bearer: Option<&str>) -> Result<Value, SignInError> {
    let mut request = Request::get(url).header(header::ACCEPT, "application/json");
    if let Some(token) = bearer {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request
        .body(Vec::new())
        .map_err(|e| SignInError::Misconfigured(format!("{url} cannot be requested: {e}")))?;
    let response = client(request).map_err(|e| unreachable(&e))?;
    if !response.status().is_success() {
        return Err(SignInError::Unavailable(format!(
            "{url} answered {}: {}",
            response.status(),
            excerpt(response.body())
        )));
    }
    match serde_json::from_slice::<Value>(response.body()) {
        Ok(value) => Ok(value),
        Err(e) => Err(SignInError::InvalidResponse(format!(
            "{url} answered with something that is not JSON: {e}"
        ))),
    }
}

/// A failed exchange at the token endpoint (RFC 6749 §5.2).
pub(crate) fn token_error<T>(
    e: RequestTokenError<HttpError, StandardErrorResponse<T>>,
) -> SignInError
where
    T: ErrorResponseType + std::fmt::Display + 'static,
{
    match e {
        RequestTokenError::ServerResponse(response) => {
            let code = serde_json::to_value(response.error())
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            refused(&code, &response.to_string())
        }
        RequestTokenError::Request(e) => unreachable(&e),
        // GitHub answers a bad code with 200 and an error object, which
        // does not parse as a token.
        RequestTokenError::Parse(e, body) => {
            match serde_json::from_slice::<Value>(&body)
                .ok()
                .as_ref()
                .and_then(|v| v.get("error"))
                .and_then(Value::as_str)
            {
                Some(code) => {
                    let description = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|v| v.get("error_description")?.as_str().map(str::to_string));
                    let text = match description {
                        Some(d) => format!("{code}: {d}"),
                        None => code.to_string(),
                    };
                    refused(code, &text)
                }
                None => SignInError::InvalidResponse(format!(
                    "the token endpoint's answer is not a token response: {e}"
                )),
            }
        }
        RequestTokenError::Other(why) => {
            SignInError::Unavailable(format!("the token endpoint failed: {why}"))
        }
    }
}

/// The token endpoint refused: a refused client is the settings' fault;
/// anything else (an expired or replayed code) fails this sign-in.
fn refused(code: &str, text: &str) -> SignInError {
    if matches!(code, "invalid_client" | "unauthorized_client") {
        SignInError::Misconfigured(format!(
            "the token endpoint refused the client ({text}): check CLIENT_ID and CLIENT_SECRET"
        ))
    } else {
        SignInError::Unavailable(format!("the token endpoint refused the code: {text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oauth2::basic::BasicErrorResponseType;

    type Error = RequestTokenError<HttpError, StandardErrorResponse<BasicErrorResponseType>>;

    #[test]
    fn a_denied_request_names_the_host() {
        let err = unreachable(&HttpError::Denied {
            host: "evil.example".into(),
        });
        assert!(matches!(
            err,
            SignInError::Unavailable(why)
                if why == "the host refused a request to evil.example: it is not one of this source's URLs"
        ));
    }

    #[test]
    fn a_refused_client_is_misconfigured() {
        let response: StandardErrorResponse<BasicErrorResponseType> =
            serde_json::from_str(r#"{"error":"invalid_client","error_description":"bad secret"}"#)
                .expect("an error response");
        let err = token_error(Error::ServerResponse(response));
        assert!(
            matches!(&err, SignInError::Misconfigured(why) if why.contains("invalid_client: bad secret")),
            "{err:?}"
        );
    }

    #[test]
    fn githubs_error_with_200_is_read() {
        let body = br#"{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}"#;
        let parse = serde_path_to_error::deserialize::<_, Value>(
            &mut serde_json::Deserializer::from_slice(b"[}"),
        )
        .expect_err("malformed");
        let err = token_error(Error::Parse(parse, body.to_vec()));
        assert!(
            matches!(&err, SignInError::Unavailable(why)
                if why == "the token endpoint refused the code: bad_verification_code: The code passed is incorrect or expired."),
            "{err:?}"
        );
    }

    #[test]
    fn excerpts_are_cut() {
        assert_eq!(excerpt(b"  short \n"), "short");
        let long = "é".repeat(300);
        assert_eq!(excerpt(long.as_bytes()).chars().count(), 201);
    }
}
