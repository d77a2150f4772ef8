//! The hook's target: `nats://host[:port]/<subject>`.

/// The port of a target that names none: the NATS client port.
pub(crate) const DEFAULT_PORT: u16 = 4222;

/// Where to publish: a server and a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// A name or an IP address; an IPv6 address without its brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) subject: String,
}

const FORM: &str = "nats://host:port/<subject>";

impl Target {
    /// Parses a target. Every error says what is wrong without repeating
    /// the target, as the HTTP transport does with URLs.
    pub(crate) fn parse(target: &str) -> Result<Target, String> {
        let target = target.trim();
        // The host takes `tls://` NATS URLs too (and asks for them to hosts
        // its allow-list does not name); this transport has no TLS yet.
        if target
            .get(.."tls://".len())
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("tls://"))
        {
            return Err(
                "the hook's target is tls://, and this transport does not speak \
                 TLS: use nats:// to a host that [webhook] ALLOWED_HOST_LIST names"
                    .into(),
            );
        }
        let rest = target
            .get(.."nats://".len())
            .filter(|scheme| scheme.eq_ignore_ascii_case("nats://"))
            .map(|_| &target["nats://".len()..])
            .ok_or_else(|| format!("the hook's target must have the form {FORM}"))?;
        let (authority, subject) = rest
            .split_once('/')
            .ok_or_else(|| format!("the hook's target names no subject: it must be {FORM}"))?;
        if authority.contains('@') {
            return Err(
                "the hook's target must not hold credentials: set NATS_TOKEN, or \
                 NATS_USER and NATS_PASSWORD, in the transport's settings"
                    .into(),
            );
        }
        let (host, port) = host_port(authority)?;
        check_subject(subject)?;
        Ok(Target {
            host: host.to_string(),
            port,
            subject: subject.to_string(),
        })
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn host_port(authority: &str) -> Result<(&str, u16), String> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or("the hook's target has an unclosed [ in its host")?;
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or("the hook's target has something other than :port after ]")?,
                ),
            ),
        }
    } else if authority.matches(':').count() > 1 {
        return Err("the hook's target has an IPv6 address without [brackets]".into());
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("the hook's target names no host".into());
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or("the hook's target has a port that is not a number from 1 to 65535")?,
    };
    Ok((host, port))
}

/// A subject a message may be published to: dot-separated tokens, none
/// empty, without white space (which would end the `HPUB` line) or the
/// wildcards `*` and `>` (which only subscriptions may use).
fn check_subject(subject: &str) -> Result<(), String> {
    if subject.is_empty() {
        return Err(format!(
            "the hook's target names no subject: it must be {FORM}"
        ));
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the hook's NATS subject must not contain spaces".into());
    }
    if subject.contains(['*', '>']) {
        return Err(
            "the hook's NATS subject must not contain the wildcards * or >: a message is \
             published to one subject"
                .into(),
        );
    }
    if subject.split('.').any(str::is_empty) {
        return Err(
            "the hook's NATS subject has an empty token (a leading, trailing or double dot)".into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16, subject: &str) -> Target {
        Target {
            host: host.into(),
            port,
            subject: subject.into(),
        }
    }

    #[test]
    fn good_targets() {
        for (text, expected) in [
            (
                "nats://nats.example.com:4223/postern.events",
                target("nats.example.com", 4223, "postern.events"),
            ),
            (
                "nats://nats.example.com/postern.events",
                target("nats.example.com", 4222, "postern.events"),
            ),
            (
                "NATS://127.0.0.1:4222/hooks",
                target("127.0.0.1", 4222, "hooks"),
            ),
            ("nats://[::1]:5222/a.b.c", target("::1", 5222, "a.b.c")),
            ("nats://[::1]/a", target("::1", 4222, "a")),
            (
                "  nats://h/user-events_v2  ",
                target("h", 4222, "user-events_v2"),
            ),
        ] {
            assert_eq!(Target::parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn bad_targets() {
        for (text, why) in [
            ("https://nats.example.com/x", "must have the form"),
            ("tls://nats.example.com/x", "does not speak TLS"),
            ("nats.example.com:4222/x", "must have the form"),
            ("nats://nats.example.com", "names no subject"),
            ("nats://nats.example.com:4222/", "names no subject"),
            ("nats:///x", "names no host"),
            ("nats://:4222/x", "names no host"),
            ("nats://h:0/x", "not a number from 1 to 65535"),
            ("nats://h:70000/x", "not a number from 1 to 65535"),
            ("nats://h:port/x", "not a number from 1 to 65535"),
            ("nats://::1/x", "without [brackets]"),
            ("nats://[::1/x", "unclosed ["),
            ("nats://[::1]x/x", "other than :port"),
            ("nats://alice:pw@h/x", "must not hold credentials"),
            ("nats://h/events.*", "wildcards"),
            ("nats://h/events.>", "wildcards"),
            ("nats://h/a b", "spaces"),
            ("nats://h/a\tb", "spaces"),
            ("nats://h/a..b", "empty token"),
            ("nats://h/.a", "empty token"),
            ("nats://h/a.", "empty token"),
        ] {
            let err = Target::parse(text).expect_err(text);
            assert!(err.contains(why), "{text:?}: {err}");
            assert!(!err.contains("pw@"), "{text:?} repeats the target: {err}");
        }
    }
}
