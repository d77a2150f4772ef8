//! The NATS webhook transport: each delivery attempt publishes the event's
//! JSON body, with the same signed headers as the HTTP transport, to a
//! subject of a NATS server, speaking the core NATS text protocol over a
//! TCP connection of its own.
//!
//! The hook's target is `nats://host[:port]/<subject>`: the port defaults
//! to 4222, and the subject (the path without its leading slash) is one
//! subject, without white space or the wildcards `*` and `>`. The message
//! carries these NATS headers (their names are case-sensitive for most NATS
//! clients, so receivers look them up spelled so):
//!
//! | Header | Value |
//! |---|---|
//! | `Content-Type` | `application/json` |
//! | `X-Signature` | `sha256=<lowercase hex HMAC-SHA256 of the JSON body>` |
//! | `X-Event-ID`, `X-Event-Type`, `X-Timestamp` | the body's `event_id`, `event_type`, `timestamp` (Unix seconds) |
//! | `webhook-id`, `webhook-timestamp` | the event id and timestamp again, for Standard Webhooks receivers |
//! | `webhook-signature` | `v1,<base64 HMAC-SHA256 of "{event_id}.{timestamp}.{body}">` |
//!
//! Both HMACs are keyed by the hook's secret, its UTF-8 bytes as they are
//! (a Standard Webhooks library is given `whsec_<base64 of the secret>`).
//!
//! Settings, in the transport's `[plugin.<id>]` section:
//!
//! - `NATS_TOKEN`: a token for servers that authenticate by token.
//! - `NATS_USER` and `NATS_PASSWORD`: a user and its password, both or
//!   neither.
//!
//! The server must speak headers (NATS 2.2 or later) and take plain TCP:
//! this transport does not speak TLS, and fails `tls://` targets (and
//! servers whose `INFO` says `tls_required`) for good.
//!
//! # What "delivered" means
//!
//! Core NATS gives no receiver acknowledgement: "delivered" means the
//! server accepted the message (it answered the `PING` sent after the
//! publish with `PONG`, and said no `-ERR` first). Whether anyone was
//! subscribed is not known; a message published while no subscriber
//! listens is gone. Receivers that need durability use a JetStream stream
//! bound to the subject: the server then stores each message until the
//! receiver's consumer acknowledges it.
//!
//! # The socket
//!
//! The connection is a `std::net::TcpStream`, which on `wasm32-wasip2`
//! goes through `wasi:sockets`: a host name is resolved through
//! `ip-name-lookup` (an IP address is used as it is), then connected
//! through `tcp`. The host lends sockets only to a transport granted
//! `tcp`, and only to the addresses of the target it checked. It enforces
//! the 10-second time-out (the socket's own read and write time-outs, 8
//! seconds, turn a silent server into a retry with a reason); this plugin
//! logs nothing, and never the secret or the credentials.

mod protocol;
mod target;

use std::net::TcpStream;
use std::time::Duration;

use postern_plugin_api::webhook_transport::{
    Delivery, Outcome, Setting, WebhookTransport, setting,
};

use protocol::{Credentials, Publish};
use target::Target;

/// Read and write time-out on the socket: under the host's 10-second
/// deadline, so that a silent server gives a retry with a reason rather
/// than a trap.
const IO_TIMEOUT: Duration = Duration::from_secs(8);

/// The `CONNECT` credentials the settings give.
fn credentials(settings: &[Setting]) -> Result<Credentials, String> {
    let given = |key| setting(settings, key).filter(|v| !v.is_empty());
    let user = match (given("NATS_USER"), given("NATS_PASSWORD")) {
        (Some(user), Some(password)) => Some((user.to_string(), password.to_string())),
        (None, None) => None,
        (Some(_), None) => return Err("NATS_USER is set but NATS_PASSWORD is not".into()),
        (None, Some(_)) => return Err("NATS_PASSWORD is set but NATS_USER is not".into()),
    };
    Ok(Credentials {
        token: given("NATS_TOKEN").map(str::to_string),
        user,
    })
}

/// Every header of the message, in order, with its value.
fn headers(delivery: &Delivery) -> Vec<(&'static str, String)> {
    let mut headers = vec![("Content-Type", "application/json".to_string())];
    headers.extend(postern_webhook_verify::signed_headers(
        &delivery.secret,
        &delivery.event_id,
        &delivery.event_type,
        delivery.timestamp,
        &delivery.body,
    ));
    headers
}

/// All that can be decided before connecting; an error is a failure for
/// good (a bad target or setting).
fn prepare(delivery: &Delivery) -> Result<(Target, Credentials, Publish), String> {
    let target = Target::parse(&delivery.target)?;
    let credentials = credentials(&delivery.settings)?;
    let publish = protocol::hpub(&target.subject, &headers(delivery), &delivery.body)?;
    Ok((target, credentials, publish))
}

/// `host:port`, with an IPv6 address in brackets.
fn server(target: &Target) -> String {
    if target.host.contains(':') {
        format!("[{}]:{}", target.host, target.port)
    } else {
        format!("{}:{}", target.host, target.port)
    }
}

struct WebhookNats;

impl WebhookTransport for WebhookNats {
    fn deliver(delivery: Delivery) -> Outcome {
        let (target, credentials, publish) = match prepare(&delivery) {
            Ok(prepared) => prepared,
            Err(why) => return Outcome::Failed(why),
        };
        // A refused connection, a name that does not resolve (yet), the
        // host's refusal of a socket: the server may be back, or allowed,
        // later.
        let stream = match TcpStream::connect((target.host.as_str(), target.port)) {
            Ok(stream) => stream,
            Err(e) => {
                return Outcome::Retry(format!(
                    "could not connect to the NATS server {}: {e}",
                    server(&target)
                ));
            }
        };
        // Best effort: where the platform has no socket time-outs, the
        // host's deadline still ends the call.
        let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
        let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
        protocol::exchange(stream, &credentials, &publish)
    }
}

postern_plugin_api::export_webhook_transport!(WebhookNats);

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Child, Command, Stdio};
    use std::time::Instant;

    const BODY: &str = r#"{"event_id":"0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e","event_type":"user.created","timestamp":1700000000,"data":{"id":"42","name":"alice","email":"alice@example.com"}}"#;

    fn delivery(target: &str, settings: &[(&str, &str)]) -> Delivery {
        Delivery {
            event_id: "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e".into(),
            event_type: "user.created".into(),
            timestamp: 1_700_000_000,
            body: BODY.as_bytes().to_vec(),
            target: target.into(),
            secret: "postern-test-secret".into(),
            settings: settings
                .iter()
                .map(|(key, value)| Setting {
                    key: key.to_string(),
                    value: value.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_headers_are_signed() {
        let headers = headers(&delivery("nats://h/s", &[]));
        let expected = [
            ("Content-Type", "application/json"),
            (
                "X-Signature",
                "sha256=c3efbd369447aa3da08c0c8e36e650caf7892a04a6b118f1b2effa0520598ad6",
            ),
            ("X-Event-ID", "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e"),
            ("X-Event-Type", "user.created"),
            ("X-Timestamp", "1700000000"),
            ("webhook-id", "0b5a1c1e-7d3f-4c9a-9e2b-3f1a2b4c5d6e"),
            ("webhook-timestamp", "1700000000"),
            (
                "webhook-signature",
                "v1,2t7kgY3U0XqBluYo6BDgwc3Z+m/KEKice857QqxB7pg=",
            ),
        ]
        .map(|(k, v)| (k, v.to_string()));
        assert_eq!(headers, expected);
    }

    #[test]
    fn credentials_come_in_pairs() {
        let none = credentials(&[]).unwrap();
        assert!(none.token.is_none() && none.user.is_none());
        let both =
            credentials(&delivery("", &[("NATS_USER", "u"), ("NATS_PASSWORD", "p")]).settings)
                .unwrap();
        assert_eq!(both.user, Some(("u".into(), "p".into())));
        let token = credentials(&delivery("", &[("NATS_TOKEN", "t")]).settings).unwrap();
        assert_eq!(token.token.as_deref(), Some("t"));
        assert_eq!(
            credentials(&delivery("", &[("NATS_USER", "u")]).settings).err(),
            Some("NATS_USER is set but NATS_PASSWORD is not".into())
        );
        assert_eq!(
            credentials(&delivery("", &[("NATS_PASSWORD", "p"), ("NATS_USER", "")]).settings).err(),
            Some("NATS_PASSWORD is set but NATS_USER is not".into())
        );
    }

    #[test]
    fn bad_targets_fail_and_unreachable_servers_are_retried() {
        let failed = WebhookNats::deliver(delivery("nats://127.0.0.1/events.>", &[]));
        assert!(
            matches!(failed, Outcome::Failed(ref why) if why.contains("wildcards")),
            "{failed:?}"
        );
        let failed = WebhookNats::deliver(delivery("https://example.com/hook", &[]));
        assert!(matches!(failed, Outcome::Failed(_)), "{failed:?}");
        // A port nobody listens on: bound, then released.
        let port = free_port();
        let retry = WebhookNats::deliver(delivery(&format!("nats://127.0.0.1:{port}/events"), &[]));
        assert!(
            matches!(retry, Outcome::Retry(ref why) if why.starts_with(&format!("could not connect to the NATS server 127.0.0.1:{port}: "))),
            "{retry:?}"
        );
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    /// A `nats-server` of the test's own on 127.0.0.1, stopped when dropped.
    struct NatsServer {
        child: Child,
        port: u16,
    }

    impl NatsServer {
        /// `None` when `nats-server` is not installed (Debian's package
        /// `nats-server`).
        fn start(args: &[&str]) -> Option<NatsServer> {
            let port = free_port();
            let child = Command::new("nats-server")
                .args(["-a", "127.0.0.1", "-p", &port.to_string()])
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            let server = NatsServer { child, port };
            // Ready once it greets a client with INFO: a port that only
            // accepts (still starting, or another server's) is not it.
            let deadline = Instant::now() + Duration::from_secs(10);
            while server.greet().is_err() {
                assert!(Instant::now() < deadline, "nats-server did not start");
                std::thread::sleep(Duration::from_millis(50));
            }
            Some(server)
        }

        /// A connection that has read the server's INFO line.
        fn greet(&self) -> std::io::Result<BufReader<TcpStream>> {
            let stream = TcpStream::connect(("127.0.0.1", self.port))?;
            stream.set_read_timeout(Some(Duration::from_secs(10)))?;
            let mut reader = BufReader::new(stream);
            let mut info = String::new();
            reader.read_line(&mut info)?;
            if !info.starts_with("INFO ") {
                return Err(std::io::Error::other(format!(
                    "not a NATS greeting: {info}"
                )));
            }
            Ok(reader)
        }

        fn target(&self, subject: &str) -> String {
            format!("nats://127.0.0.1:{}/{subject}", self.port)
        }

        /// A subscriber to `subject`, subscribed once this returns.
        fn subscribe(&self, subject: &str, connect: &str) -> BufReader<TcpStream> {
            let mut reader = self.greet().unwrap();
            write!(
                reader.get_mut(),
                "CONNECT {connect}\r\nSUB {subject} 1\r\nPING\r\n"
            )
            .unwrap();
            let mut pong = String::new();
            reader.read_line(&mut pong).unwrap();
            assert_eq!(pong, "PONG\r\n");
            reader
        }
    }

    impl Drop for NatsServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Reads one `HMSG` off `reader`: its headers and payload.
    fn receive(reader: &mut BufReader<TcpStream>) -> (Vec<(String, String)>, Vec<u8>) {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let parts: Vec<&str> = line.trim_end().split(' ').collect();
        assert_eq!(parts[0], "HMSG", "{line}");
        let header_len: usize = parts[parts.len() - 2].parse().unwrap();
        let total_len: usize = parts[parts.len() - 1].parse().unwrap();
        let mut message = vec![0; total_len + 2];
        reader.read_exact(&mut message).unwrap();
        let block = std::str::from_utf8(&message[..header_len]).unwrap();
        let mut lines = block.split("\r\n");
        assert_eq!(lines.next(), Some("NATS/1.0"));
        let headers = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once(": ").unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        (headers, message[header_len..total_len].to_vec())
    }

    #[test]
    fn a_real_nats_server_gets_the_signed_message() {
        let Some(server) = NatsServer::start(&[]) else {
            eprintln!("nats-server is not installed: skipped");
            return;
        };
        let mut subscriber =
            server.subscribe("postern.hooks", r#"{"verbose":false,"headers":true}"#);
        let outcome = WebhookNats::deliver(delivery(&server.target("postern.hooks"), &[]));
        assert!(matches!(outcome, Outcome::Delivered), "{outcome:?}");
        let (received, body) = receive(&mut subscriber);
        assert_eq!(body, BODY.as_bytes());
        let expected: Vec<(String, String)> = headers(&delivery("nats://h/s", &[]))
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(received, expected);
    }

    #[test]
    fn a_real_nats_server_checks_the_token() {
        let Some(server) = NatsServer::start(&["--auth", "right-token"]) else {
            eprintln!("nats-server is not installed: skipped");
            return;
        };
        let mut subscriber = server.subscribe(
            "postern.hooks",
            r#"{"verbose":false,"headers":true,"auth_token":"right-token"}"#,
        );
        let wrong = WebhookNats::deliver(delivery(
            &server.target("postern.hooks"),
            &[("NATS_TOKEN", "wrong-token")],
        ));
        assert!(
            matches!(wrong, Outcome::Retry(ref why) if why == "the NATS server answered: Authorization Violation"),
            "{wrong:?}"
        );
        let right = WebhookNats::deliver(delivery(
            &server.target("postern.hooks"),
            &[("NATS_TOKEN", "right-token")],
        ));
        assert!(matches!(right, Outcome::Delivered), "{right:?}");
        let (_, body) = receive(&mut subscriber);
        assert_eq!(body, BODY.as_bytes());
    }
}
