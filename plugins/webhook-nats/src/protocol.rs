//! The client side of the core NATS text protocol, as much of it as one
//! publish needs: the server's `INFO`, `CONNECT`, `HPUB` (a message with
//! headers, NATS 2.2 and later), `PING`/`PONG`, `+OK` and `-ERR`
//! (docs.nats.io, "Client Protocol").

use std::io::{self, BufRead, BufReader, Read, Write};

use postern_plugin_api::webhook_transport::Outcome;
use serde::{Deserialize, Serialize};

/// The longest protocol line read from the server. An `INFO` of a large
/// cluster, with its `connect_urls`, stays well under it.
const MAX_LINE: u64 = 64 * 1024;

/// Credentials for `CONNECT`, from the transport's settings. No `Debug`:
/// nothing may print them.
#[derive(Default)]
pub(crate) struct Credentials {
    pub(crate) token: Option<String>,
    /// A user name and its password.
    pub(crate) user: Option<(String, String)>,
}

/// What this transport needs to know of the server's `INFO`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct ServerInfo {
    /// The server takes `HPUB` (NATS 2.2 and later, unless turned off).
    #[serde(default)]
    pub(crate) headers: bool,
    /// The server wants a TLS handshake before anything else.
    #[serde(default)]
    pub(crate) tls_required: bool,
    /// The largest message (headers and payload) the server accepts.
    #[serde(default)]
    pub(crate) max_payload: Option<u64>,
}

/// Reads the server's greeting line, `INFO {json}`.
pub(crate) fn parse_info(line: &str) -> Result<ServerInfo, String> {
    let line = line.trim();
    let (op, json) = line.split_once([' ', '\t']).unwrap_or((line, ""));
    // Protocol operations are case-insensitive.
    if !op.eq_ignore_ascii_case("INFO") {
        return Err("the server did not greet with INFO: it is not a NATS server".into());
    }
    serde_json::from_str(json.trim())
        .map_err(|e| format!("the NATS server's INFO is not valid JSON: {e}"))
}

#[derive(Serialize)]
struct Connect<'a> {
    verbose: bool,
    pedantic: bool,
    headers: bool,
    no_responders: bool,
    name: &'a str,
    lang: &'a str,
    version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth_token: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pass: Option<&'a str>,
}

/// The `CONNECT` line. `verbose: false`: no `+OK` per operation; the
/// `PING` after the publish is the one confirmation asked for.
pub(crate) fn connect_line(credentials: &Credentials) -> String {
    let connect = Connect {
        verbose: false,
        pedantic: false,
        headers: true,
        no_responders: false,
        name: "postern-webhook",
        lang: "rust",
        version: env!("CARGO_PKG_VERSION"),
        auth_token: credentials.token.as_deref(),
        user: credentials.user.as_ref().map(|(user, _)| user.as_str()),
        pass: credentials.user.as_ref().map(|(_, pass)| pass.as_str()),
    };
    let json = serde_json::to_string(&connect).expect("a struct of strings and booleans");
    format!("CONNECT {json}\r\n")
}

/// One message to publish, framed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Publish {
    /// `HPUB <subject> <header bytes> <total bytes>\r\n<headers><payload>\r\n`.
    pub(crate) frame: Vec<u8>,
    /// Header and payload bytes: what the server's `max_payload` limits.
    pub(crate) size: usize,
}

/// Frames `body` with `headers` for `subject` (which the caller has
/// checked). A header value that holds a line break would end the header
/// block early and is refused.
pub(crate) fn hpub(
    subject: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<Publish, String> {
    let mut block = String::from("NATS/1.0\r\n");
    for (name, value) in headers {
        if value.contains(['\r', '\n']) {
            return Err(format!("the {name} header's value holds a line break"));
        }
        block.push_str(name);
        block.push_str(": ");
        block.push_str(value);
        block.push_str("\r\n");
    }
    block.push_str("\r\n");
    let size = block.len() + body.len();
    let mut frame = format!("HPUB {subject} {} {size}\r\n", block.len()).into_bytes();
    frame.extend_from_slice(block.as_bytes());
    frame.extend_from_slice(body);
    frame.extend_from_slice(b"\r\n");
    Ok(Publish { frame, size })
}

/// One line from the server without its line end; `None` at the end of
/// the stream.
fn read_line<R: BufRead>(reader: &mut R) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    reader.take(MAX_LINE).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if !line.ends_with(b"\n") {
        return Err(if line.len() as u64 == MAX_LINE {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "the server sent an overlong line",
            )
        } else {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection mid-line",
            )
        });
    }
    Ok(Some(String::from_utf8_lossy(&line).trim_end().to_string()))
}

/// The text of `-ERR 'text'`.
fn error_text(line: &str) -> &str {
    line[4..].trim().trim_matches('\'')
}

/// The protocol operation a line begins with, upper-cased.
fn operation(line: &str) -> String {
    line.split([' ', '\t'])
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase()
}

fn failed_io(e: io::Error) -> Outcome {
    match e.kind() {
        // A socket time-out reads as "would block" (EAGAIN), on
        // wasm32-wasip2 as on Linux.
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            Outcome::Retry("the NATS server did not answer in time".into())
        }
        _ => Outcome::Retry(format!("the connection to the NATS server failed: {e}")),
    }
}

/// Publishes one message on a connection the server has just accepted:
/// reads `INFO`, sends `CONNECT`, the `HPUB` and a `PING`, and waits for the
/// `PONG`.
///
/// The server handles a client's operations in order, so the `PONG` comes
/// after it has handled the publish: an `-ERR` about the publish (a
/// permissions violation, which does not close the connection) arrives
/// before it, and is the outcome. Errors that close the connection
/// (authorization, a parser error) arrive before the end of the stream.
pub(crate) fn exchange<S: Read + Write>(
    stream: S,
    credentials: &Credentials,
    publish: &Publish,
) -> Outcome {
    let mut reader = BufReader::new(stream);
    let info = match read_line(&mut reader) {
        Ok(Some(line)) if operation(&line) == "-ERR" => {
            return Outcome::Retry(format!(
                "the NATS server refused the connection: {}",
                error_text(&line)
            ));
        }
        Ok(Some(line)) => line,
        Ok(None) => {
            return Outcome::Retry("the NATS server closed the connection before its INFO".into());
        }
        Err(e) => return failed_io(e),
    };
    let info = match parse_info(&info) {
        Ok(info) => info,
        // Something else listens there, or a broken server: the operator
        // may yet fix the target, as with an HTTP receiver answering 404.
        Err(why) => return Outcome::Retry(why),
    };
    if !info.headers {
        return Outcome::Failed("the NATS server does not support headers".into());
    }
    if info.tls_required {
        return Outcome::Failed(
            "the NATS server requires TLS, which this transport does not speak".into(),
        );
    }
    if let Some(max) = info.max_payload
        && publish.size as u64 > max
    {
        // The same event will be too large for this server every time.
        return Outcome::Failed(format!(
            "the message is {} bytes, over the NATS server's max_payload of {max}",
            publish.size
        ));
    }

    let mut out = connect_line(credentials).into_bytes();
    out.extend_from_slice(&publish.frame);
    out.extend_from_slice(b"PING\r\n");
    let stream = reader.get_mut();
    if let Err(e) = stream.write_all(&out).and_then(|()| stream.flush()) {
        return failed_io(e);
    }

    // Every -ERR is worth a retry, an authorization or permissions
    // violation included: those come from the server's configuration or
    // the transport's credentials, which the operator can correct while
    // the retries back off over hours, and the HTTP transport likewise
    // retries a receiver's 401 or 403. Failing at once would send the
    // event to the dead letters on a mistake that is fixed in a minute.
    let mut refused: Option<String> = None;
    loop {
        let line = match read_line(&mut reader) {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) if refused.is_some() => break,
            Ok(None) => {
                return Outcome::Retry(
                    "the NATS server closed the connection before confirming the message".into(),
                );
            }
            Err(e) => return failed_io(e),
        };
        match operation(&line).as_str() {
            "PONG" => break,
            "PING" => {
                let stream = reader.get_mut();
                if let Err(e) = stream.write_all(b"PONG\r\n").and_then(|()| stream.flush()) {
                    return failed_io(e);
                }
            }
            "-ERR" => {
                refused.get_or_insert_with(|| error_text(&line).to_string());
            }
            // +OK, and INFO updates of the cluster's membership.
            _ => {}
        }
    }
    match refused {
        Some(why) => Outcome::Retry(format!("the NATS server answered: {why}")),
        None => Outcome::Delivered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A server that says `input` whatever it is told, and keeps what it
    /// is told.
    struct Scripted {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Scripted {
        fn new(input: &str) -> Scripted {
            Scripted {
                input: Cursor::new(input.as_bytes().to_vec()),
                output: Vec::new(),
            }
        }
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    const INFO: &str = "INFO {\"server_id\":\"NAB\",\"version\":\"2.10.18\",\"proto\":1,\"headers\":true,\"max_payload\":1048576}\r\n";

    fn message() -> Publish {
        hpub(
            "postern.events",
            &[("X-Event-ID", "e1".to_string())],
            b"{\"a\":1}",
        )
        .unwrap()
    }

    fn run(server_says: &str) -> (Outcome, String) {
        let mut server = Scripted::new(server_says);
        let outcome = exchange(&mut server, &Credentials::default(), &message());
        (outcome, String::from_utf8(server.output).unwrap())
    }

    #[test]
    fn the_frame_counts_header_and_total_bytes() {
        let publish = hpub(
            "postern.events",
            &[
                ("X-Event-ID", "e1".to_string()),
                ("Content-Type", "application/json".to_string()),
            ],
            b"{\"a\":1}",
        )
        .unwrap();
        let headers = "NATS/1.0\r\nX-Event-ID: e1\r\nContent-Type: application/json\r\n\r\n";
        assert_eq!(headers.len(), 60);
        assert_eq!(publish.size, 60 + 7);
        assert_eq!(
            String::from_utf8(publish.frame).unwrap(),
            format!("HPUB postern.events 60 67\r\n{headers}{{\"a\":1}}\r\n")
        );
    }

    #[test]
    fn a_header_value_with_a_line_break_is_refused() {
        for value in ["a\r\nX-Evil: 1", "a\nb", "a\rb"] {
            assert_eq!(
                hpub("s", &[("X-Event-Type", value.to_string())], b"{}"),
                Err("the X-Event-Type header's value holds a line break".into())
            );
        }
    }

    #[test]
    fn info_is_read() {
        assert_eq!(
            parse_info(INFO.trim_end()),
            Ok(ServerInfo {
                headers: true,
                tls_required: false,
                max_payload: Some(1_048_576),
            })
        );
        assert_eq!(
            parse_info("info {}"),
            Ok(ServerInfo {
                headers: false,
                tls_required: false,
                max_payload: None,
            })
        );
        assert!(
            parse_info("HTTP/1.1 400 Bad Request")
                .unwrap_err()
                .contains("not a NATS server")
        );
        assert!(
            parse_info("INFO {nope")
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn connect_carries_only_the_credentials_given() {
        assert_eq!(
            connect_line(&Credentials::default()),
            format!(
                "CONNECT {{\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":false,\"name\":\"postern-webhook\",\"lang\":\"rust\",\"version\":\"{}\"}}\r\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        let token = connect_line(&Credentials {
            token: Some("t\"ok".into()),
            user: None,
        });
        assert!(
            token.ends_with(",\"auth_token\":\"t\\\"ok\"}\r\n"),
            "{token}"
        );
        let user = connect_line(&Credentials {
            token: None,
            user: Some(("alice".into(), "pw".into())),
        });
        assert!(
            user.ends_with(",\"user\":\"alice\",\"pass\":\"pw\"}\r\n"),
            "{user}"
        );
    }

    #[test]
    fn pong_after_the_publish_is_delivered() {
        let (outcome, sent) = run(&format!("{INFO}+OK\r\nPONG\r\n"));
        assert!(matches!(outcome, Outcome::Delivered), "{outcome:?}");
        let lines: Vec<&str> = sent.split("\r\n").collect();
        assert!(lines[0].starts_with("CONNECT {"), "{sent}");
        assert_eq!(lines[1], "HPUB postern.events 28 35");
        assert_eq!(lines[2], "NATS/1.0");
        assert_eq!(lines[3], "X-Event-ID: e1");
        assert_eq!(lines[4], "");
        assert_eq!(lines[5], "{\"a\":1}");
        assert_eq!(lines[6], "PING");
        assert_eq!(lines[7], "");
    }

    #[test]
    fn a_ping_from_the_server_is_answered() {
        let (outcome, sent) = run(&format!("{INFO}PING\r\nPONG\r\n"));
        assert!(matches!(outcome, Outcome::Delivered), "{outcome:?}");
        assert!(sent.ends_with("PING\r\nPONG\r\n"), "{sent}");
    }

    #[test]
    fn an_error_before_pong_is_retried_with_the_servers_text() {
        let (outcome, _) = run(&format!(
            "{INFO}-ERR 'Permissions Violation for Publish to \"postern.events\"'\r\nPONG\r\n"
        ));
        assert!(
            matches!(outcome, Outcome::Retry(ref why) if why == "the NATS server answered: Permissions Violation for Publish to \"postern.events\""),
            "{outcome:?}"
        );
        let (outcome, _) = run(&format!("{INFO}-ERR 'Authorization Violation'\r\n"));
        assert!(
            matches!(outcome, Outcome::Retry(ref why) if why == "the NATS server answered: Authorization Violation"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_server_without_headers_fails_before_anything_is_sent() {
        let (outcome, sent) = run("INFO {\"headers\":false}\r\n");
        assert!(
            matches!(outcome, Outcome::Failed(ref why) if why == "the NATS server does not support headers"),
            "{outcome:?}"
        );
        assert_eq!(sent, "");
        let (outcome, _) = run("INFO {\"headers\":true,\"tls_required\":true}\r\n");
        assert!(
            matches!(outcome, Outcome::Failed(ref why) if why.contains("TLS")),
            "{outcome:?}"
        );
        let (outcome, _) = run("INFO {\"headers\":true,\"max_payload\":10}\r\n");
        assert!(
            matches!(outcome, Outcome::Failed(ref why) if why == "the message is 35 bytes, over the NATS server's max_payload of 10"),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_closed_or_strange_connection_is_retried() {
        for (server_says, why) in [
            ("", "before its INFO"),
            ("INFO {\"headers\":tr", "mid-line"),
            (
                "-ERR 'maximum connections exceeded'\r\n",
                "refused the connection: maximum connections exceeded",
            ),
            ("SSH-2.0-OpenSSH_9.6\r\n", "not a NATS server"),
            (INFO, "before confirming the message"),
        ] {
            let (outcome, _) = run(server_says);
            assert!(
                matches!(outcome, Outcome::Retry(ref text) if text.contains(why)),
                "{server_says:?}: {outcome:?}"
            );
        }
    }

    /// A server that never says anything: every read times out.
    struct Silent;

    impl Read for Silent {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }

    impl Write for Silent {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_silent_server_is_retried() {
        let outcome = exchange(Silent, &Credentials::default(), &message());
        assert!(
            matches!(outcome, Outcome::Retry(ref why) if why == "the NATS server did not answer in time"),
            "{outcome:?}"
        );
    }

    #[test]
    fn an_overlong_line_is_an_error() {
        let long = format!("INFO {}\r\n", "x".repeat(MAX_LINE as usize));
        let (outcome, _) = run(&long);
        assert!(
            matches!(outcome, Outcome::Retry(ref why) if why.contains("overlong")),
            "{outcome:?}"
        );
    }
}
