//! A real NATS server (Debian package `nats-server`) for the webhook tests'
//! NATS transport, and a minimal subscriber that speaks the core NATS text
//! protocol (<https://docs.nats.io/reference/reference-protocols/nats-protocol>)
//! over a `std::net::TcpStream`, headers (`HMSG`) included.
//!
//! The server listens on plain TCP on `127.0.0.1` and a free port, without
//! JetStream or authentication; it logs to `nats.log` in a temp dir.
//!
//! [`shared`] keeps its server in a static, which Rust never drops; the
//! server is started through [`crate::watchdog`] so that it does not
//! outlive the test binary.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::browser::free_port;

/// How long a server has to accept connections, and a subscriber to be
/// answered while it subscribes.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running `nats-server`, killed when dropped.
pub struct Nats {
    /// The client port on `127.0.0.1`.
    pub port: u16,
    child: Child,
    tempdir: tempfile::TempDir,
}

/// The server of this test binary, started on first use. Tests that share
/// it use subjects of their own.
pub fn shared() -> &'static Nats {
    static SHARED: OnceLock<Nats> = OnceLock::new();
    SHARED.get_or_init(Nats::start)
}

/// Debian installs the server in /usr/sbin, which a user's PATH may lack.
fn server_bin() -> PathBuf {
    let path = Path::new("/usr/sbin/nats-server");
    if path.exists() {
        path.to_path_buf()
    } else {
        PathBuf::from("nats-server")
    }
}

impl Nats {
    /// Starts a server of its own (for tests that stop it), and waits until
    /// its port accepts connections.
    pub fn start() -> Nats {
        let tempdir = tempfile::tempdir().expect("temp dir");
        let log_path = tempdir.path().join("nats.log");
        let log = std::fs::File::create(&log_path).expect("nats.log");
        let port = free_port();
        let child = crate::watchdog::command("nats-watchdog", tempdir.path(), &server_bin())
            .args(["-a", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sh runs");
        let mut nats = Nats {
            port,
            child,
            tempdir,
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            let exited = nats.child.try_wait().ok().flatten();
            assert!(
                exited.is_none() && started.elapsed() < START_TIMEOUT,
                "nats-server did not start ({}; is the Debian package nats-server installed?): {}",
                exited.map_or("still running".to_string(), |s| s.to_string()),
                nats.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        nats
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.tempdir.path().join("nats.log")).unwrap_or_default()
    }

    /// A NATS transport's hook target for `subject` on this server.
    pub fn target(&self, subject: &str) -> String {
        format!("nats://127.0.0.1:{}/{subject}", self.port)
    }

    /// Subscribes to `subject` on this server; see [`Subscriber::subscribe`].
    pub fn subscribe(&self, subject: &str) -> Subscriber {
        Subscriber::subscribe(self.port, subject)
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One message a [`Subscriber`] received.
#[derive(Debug, Clone)]
pub struct Message {
    pub subject: String,
    /// The NATS headers in the order sent, names spelled as sent; empty for
    /// a message without headers (`MSG`).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Message {
    /// The first value of header `name`, whatever its case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A core NATS connection subscribed to one subject (sid 1).
pub struct Subscriber {
    stream: TcpStream,
    /// Bytes read and not yet parsed.
    buf: Vec<u8>,
}

/// One complete frame from the server.
enum Frame {
    Message(Message),
    Ping,
    Pong,
    /// `INFO`, `+OK`: nothing to do.
    Other,
}

impl Subscriber {
    /// Connects to the server on `127.0.0.1:port` and subscribes to
    /// `subject`. Returns once the server has answered a `PING` sent after
    /// the `SUB`, so that the subscription is live: a message published
    /// after this returns reaches it.
    pub fn subscribe(port: u16, subject: &str) -> Subscriber {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect to NATS on 127.0.0.1:{port}: {e}"));
        let mut sub = Subscriber {
            stream,
            buf: Vec::new(),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        // The server speaks first, with INFO.
        let info = sub.line(deadline).expect("the NATS server sends INFO");
        assert!(info.starts_with("INFO "), "not a NATS server: {info:?}");
        sub.send(
            "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"lang\":\"rust\",\"version\":\"0\"}\r\n",
        );
        sub.send(&format!("SUB {subject} 1\r\n"));
        sub.send("PING\r\n");
        loop {
            match sub.frame(deadline) {
                Some(Frame::Pong) => return sub,
                Some(Frame::Ping) => sub.send("PONG\r\n"),
                Some(Frame::Message(_) | Frame::Other) => {}
                None => panic!("the NATS server did not answer PING while subscribing"),
            }
        }
    }

    /// The next message, or `None` if none arrives within `timeout`. A frame
    /// that is only partly read when the time is up stays buffered for the
    /// next call.
    pub fn next(&mut self, timeout: Duration) -> Option<Message> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.frame(deadline)? {
                Frame::Message(message) => return Some(message),
                Frame::Ping => self.send("PONG\r\n"),
                Frame::Pong | Frame::Other => {}
            }
        }
    }

    fn send(&mut self, text: &str) {
        self.stream
            .write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("write to the NATS server: {e}"));
    }

    /// Reads more bytes into the buffer; false when `deadline` passed first.
    fn fill(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        self.stream
            .set_read_timeout(Some(left))
            .expect("a non-zero read time-out");
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk) {
            Ok(0) => panic!("the NATS server closed the connection"),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            Err(e) if e.kind() == ErrorKind::Interrupted => true,
            Err(e) => panic!("read from the NATS server: {e}"),
        }
    }

    /// The next line (without its CRLF), for the greeting.
    fn line(&mut self, deadline: Instant) -> Option<String> {
        loop {
            if let Some(end) = find_crlf(&self.buf) {
                let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..end + 2);
                return Some(line);
            }
            if !self.fill(deadline) {
                return None;
            }
        }
    }

    /// The next complete frame, or `None` when `deadline` passed first.
    fn frame(&mut self, deadline: Instant) -> Option<Frame> {
        loop {
            if let Some((frame, used)) = parse(&self.buf) {
                self.buf.drain(..used);
                return Some(frame);
            }
            if !self.fill(deadline) {
                return None;
            }
        }
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// Parses one frame from the start of `buf`: the frame and how many bytes
/// it took, or `None` if it is not all there yet.
fn parse(buf: &[u8]) -> Option<(Frame, usize)> {
    let end = find_crlf(buf)?;
    let line = String::from_utf8_lossy(&buf[..end]);
    let after_line = end + 2;
    let mut words = line.split_ascii_whitespace();
    let op = words.next().unwrap_or_default().to_ascii_uppercase();
    let args: Vec<&str> = words.collect();
    let number = |s: &str| -> usize {
        s.parse()
            .unwrap_or_else(|_| panic!("a bad size in NATS frame {line:?}"))
    };
    // MSG <subject> <sid> [reply-to] <#bytes>
    // HMSG <subject> <sid> [reply-to] <#header bytes> <#total bytes>
    let (subject, header_len, total_len) = match (op.as_str(), args.as_slice()) {
        ("PING", _) => return Some((Frame::Ping, after_line)),
        ("PONG", _) => return Some((Frame::Pong, after_line)),
        ("-ERR", _) => panic!("the NATS server says {line}"),
        ("MSG", [subject, _sid, .., total]) if (3..=4).contains(&args.len()) => {
            (subject.to_string(), 0, number(total))
        }
        ("HMSG", [subject, _sid, .., headers, total]) if (4..=5).contains(&args.len()) => {
            (subject.to_string(), number(headers), number(total))
        }
        ("MSG" | "HMSG", _) => panic!("a malformed NATS frame: {line:?}"),
        _ => return Some((Frame::Other, after_line)),
    };
    assert!(header_len <= total_len, "a malformed NATS frame: {line:?}");
    // The payload, then CRLF.
    let used = after_line + total_len + 2;
    if buf.len() < used {
        return None;
    }
    let payload = &buf[after_line..after_line + total_len];
    let (head, body) = payload.split_at(header_len);
    let message = Message {
        subject,
        headers: parse_headers(head),
        body: body.to_vec(),
    };
    Some((Frame::Message(message), used))
}

/// The header block: `NATS/1.0[ status]\r\n`, then `Name: value\r\n` lines,
/// then an empty line (ADR-4, NATS message headers).
fn parse_headers(head: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    if let Some(version) = lines.next() {
        assert!(
            version.is_empty() || version.starts_with("NATS/1.0"),
            "a malformed NATS header block: {text:?}"
        );
    }
    lines
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (name, value) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("a NATS header without a colon: {line:?}"));
            (name.to_string(), value.trim().to_string())
        })
        .collect()
}
