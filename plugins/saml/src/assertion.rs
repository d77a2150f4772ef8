//! The checks of a verified response, and the identity it gives.
//!
//! The host has verified the signature and handed over only the signed
//! element (a `Response` with its assertion, or an `Assertion`), so every
//! value read here is one the identity provider signed. What is left is
//! whether it is meant for this sign-in, here, now, and for the first time
//! (SAML profiles §4.1.4.3, §4.1.4.5).

use postern_plugin_api::identity_source::{Identity, SignInError, kv};
use postern_plugin_api::saml::{SignedElement, Verified};
use roxmltree::{Document, Node};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::config::Config;
use crate::{INVALID_SIGNATURE, Pending};

const PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
const ASSERTION: &str = "urn:oasis:names:tc:SAML:2.0:assertion";
const SUCCESS: &str = "urn:oasis:names:tc:SAML:2.0:status:Success";
const BEARER: &str = "urn:oasis:names:tc:SAML:2.0:cm:bearer";
const PERSISTENT: &str = "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent";

/// How far apart the identity provider's clock and ours may be: the spec's
/// five minutes. Beyond, the sign-in fails as `Invalid signature`.
pub(crate) const MAX_SKEW: time::Duration = time::Duration::minutes(5);

/// An assertion that passed, with what the replay cache needs.
pub(crate) struct Checked {
    pub identity: Identity,
    assertion_id: String,
    /// Until when the assertion could be presented (its latest
    /// `NotOnOrAfter`, plus the skew): the replay cache's horizon.
    valid_until: OffsetDateTime,
}

fn refuse(why: impl Into<String>) -> SignInError {
    SignInError::InvalidResponse(why.into())
}

/// A time check failed: the spec's `Invalid signature`.
fn clock(why: impl Into<String>) -> SignInError {
    SignInError::InvalidResponse(format!("{INVALID_SIGNATURE}: {}", why.into()))
}

fn is(node: &Node<'_, '_>, ns: &str, name: &str) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(ns) && node.tag_name().name() == name
}

fn child<'a, 'i>(node: &Node<'a, 'i>, ns: &str, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| is(c, ns, name))
}

fn text(node: &Node<'_, '_>) -> String {
    node.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<String>()
        .trim()
        .to_string()
}

fn instant(value: &str, what: &str) -> Result<OffsetDateTime, SignInError> {
    OffsetDateTime::parse(value.trim(), &Rfc3339)
        .map_err(|e| refuse(format!("{what} {value:?} is not a time: {e}")))
}

/// Checks the verified response against the pending sign-in, the settings
/// and the clock; returns the identity.
pub(crate) fn check(
    config: &Config,
    pending: &Pending,
    verified: &Verified,
    now: OffsetDateTime,
) -> Result<Checked, SignInError> {
    let doc = Document::parse(&verified.xml)
        .map_err(|e| refuse(format!("the verified XML does not parse: {e}")))?;
    let root = doc.root_element();
    let assertion = match verified.signed {
        SignedElement::Response => {
            if !is(&root, PROTOCOL, "Response") {
                return Err(refuse("the signed element is not a Response"));
            }
            check_response(config, pending, &root)?;
            let mut assertions = root.children().filter(|c| is(c, ASSERTION, "Assertion"));
            match (assertions.next(), assertions.next()) {
                (Some(a), None) => a,
                _ => return Err(refuse("the response does not hold exactly one assertion")),
            }
        }
        SignedElement::Assertion => {
            if !is(&root, ASSERTION, "Assertion") {
                return Err(refuse("the signed element is not an Assertion"));
            }
            root
        }
    };
    let assertion_id = assertion
        .attribute("ID")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| refuse("the assertion has no ID"))?
        .to_string();
    // Replay first: a used assertion is refused as such, whatever else is
    // wrong with it now.
    if seen(&assertion_id, now)? {
        return Err(refuse(format!(
            "replayed assertion: {assertion_id} was used before"
        )));
    }
    let issuer = child(&assertion, ASSERTION, "Issuer")
        .map(|i| text(&i))
        .ok_or_else(|| refuse("the assertion names no Issuer"))?;
    if let Some(expected) = &config.idp_entity_id
        && &issuer != expected
    {
        return Err(refuse(format!(
            "wrong issuer: the assertion is from {issuer:?}, not {expected:?}"
        )));
    }
    let valid_until = check_conditions(config, &assertion, now)?;
    let subject = child(&assertion, ASSERTION, "Subject")
        .ok_or_else(|| refuse("the assertion has no Subject"))?;
    let subject_until = check_subject_confirmation(config, pending, &subject, now)?;
    let name_id = child(&subject, ASSERTION, "NameID");
    let identity = identity(config, &assertion, name_id)?;
    Ok(Checked {
        identity,
        assertion_id,
        valid_until: valid_until.max(subject_until) + MAX_SKEW,
    })
}

/// The response's own fields, read only when its signature covers them.
fn check_response(
    config: &Config,
    pending: &Pending,
    response: &Node<'_, '_>,
) -> Result<(), SignInError> {
    let status = child(response, PROTOCOL, "Status")
        .and_then(|s| child(&s, PROTOCOL, "StatusCode"))
        .and_then(|c| c.attribute("Value").map(str::to_string))
        .unwrap_or_default();
    if status != SUCCESS {
        return Err(SignInError::ProviderDenied(format!(
            "the identity provider answered {status:?}"
        )));
    }
    match response.attribute("Destination") {
        Some(d) if d == config.acs => {}
        Some(d) => {
            return Err(refuse(format!(
                "wrong destination: the response is for {d:?}, not {:?}",
                config.acs
            )));
        }
        None => return Err(refuse("wrong destination: the signed response names none")),
    }
    // An unsolicited response (IdP-initiated) has an empty request id: it
    // must then answer no request at all.
    if response.attribute("InResponseTo").unwrap_or("") != pending.request_id {
        return Err(refuse(format!(
            "the response answers another request ({:?}, not {:?})",
            response.attribute("InResponseTo").unwrap_or(""),
            pending.request_id
        )));
    }
    if let (Some(expected), Some(issuer)) = (
        &config.idp_entity_id,
        child(response, ASSERTION, "Issuer").map(|i| text(&i)),
    ) && &issuer != expected
    {
        return Err(refuse(format!(
            "wrong issuer: the response is from {issuer:?}, not {expected:?}"
        )));
    }
    Ok(())
}

/// `Conditions`: the validity window and the audience. Returns the
/// window's end.
fn check_conditions(
    config: &Config,
    assertion: &Node<'_, '_>,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, SignInError> {
    let conditions = child(assertion, ASSERTION, "Conditions")
        .ok_or_else(|| refuse("the assertion has no Conditions"))?;
    if let Some(before) = conditions.attribute("NotBefore") {
        let before = instant(before, "NotBefore")?;
        if now + MAX_SKEW < before {
            return Err(clock(format!(
                "the assertion is not valid before {before} (now {now}; more than five minutes of clock skew)"
            )));
        }
    }
    let until = conditions
        .attribute("NotOnOrAfter")
        .ok_or_else(|| refuse("the assertion's Conditions have no NotOnOrAfter"))?;
    let until = instant(until, "NotOnOrAfter")?;
    if now - MAX_SKEW >= until {
        return Err(clock(format!(
            "the assertion expired at {until} (now {now}; more than five minutes of clock skew)"
        )));
    }
    // Every condition must be understood (SAML core §2.5.1.2): an audience
    // restriction, one-time use (the replay cache holds it), a proxy
    // restriction (Postern passes nothing on). Every audience restriction
    // must name this service provider, and there must be one.
    let mut restrictions = 0;
    for condition in conditions.children().filter(|c| c.is_element()) {
        if is(&condition, ASSERTION, "AudienceRestriction") {
            restrictions += 1;
            let audiences: Vec<String> = condition
                .children()
                .filter(|a| is(a, ASSERTION, "Audience"))
                .map(|a| text(&a))
                .collect();
            if !audiences.contains(&config.entity_id) {
                return Err(refuse(format!(
                    "wrong audience: the assertion is for {audiences:?}, not {:?}",
                    config.entity_id
                )));
            }
        } else if !is(&condition, ASSERTION, "OneTimeUse")
            && !is(&condition, ASSERTION, "ProxyRestriction")
        {
            return Err(refuse(format!(
                "an unknown condition {:?}",
                condition.tag_name().name()
            )));
        }
    }
    if restrictions == 0 {
        return Err(refuse("wrong audience: the assertion names no audience"));
    }
    Ok(until)
}

/// A bearer `SubjectConfirmation` for this sign-in: sent here
/// (`Recipient`), answering this request (`InResponseTo`), still valid.
/// Returns its end.
fn check_subject_confirmation(
    config: &Config,
    pending: &Pending,
    subject: &Node<'_, '_>,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, SignInError> {
    let mut why = String::from("the assertion has no bearer SubjectConfirmation");
    for confirmation in subject
        .children()
        .filter(|c| is(c, ASSERTION, "SubjectConfirmation"))
        .filter(|c| c.attribute("Method") == Some(BEARER))
    {
        let Some(data) = child(&confirmation, ASSERTION, "SubjectConfirmationData") else {
            why = "a SubjectConfirmation has no data".into();
            continue;
        };
        if data.attribute("Recipient") != Some(config.acs.as_str()) {
            why = format!(
                "wrong destination: the assertion's recipient is {:?}, not {:?}",
                data.attribute("Recipient").unwrap_or(""),
                config.acs
            );
            continue;
        }
        if data.attribute("InResponseTo").unwrap_or("") != pending.request_id {
            why = format!(
                "the assertion answers another request ({:?}, not {:?})",
                data.attribute("InResponseTo").unwrap_or(""),
                pending.request_id
            );
            continue;
        }
        let Some(until) = data.attribute("NotOnOrAfter") else {
            why = "a SubjectConfirmationData has no NotOnOrAfter".into();
            continue;
        };
        let until = instant(until, "NotOnOrAfter")?;
        if now - MAX_SKEW >= until {
            return Err(clock(format!(
                "the subject confirmation expired at {until} (now {now}; more than five minutes of clock skew)"
            )));
        }
        if let Some(before) = data.attribute("NotBefore") {
            let before = instant(before, "NotBefore")?;
            if now + MAX_SKEW < before {
                return Err(clock(format!(
                    "the subject confirmation is not valid before {before} (now {now})"
                )));
            }
        }
        return Ok(until);
    }
    Err(refuse(why))
}

/// The values of the attribute `name` (matched on `Name`, then
/// `FriendlyName`).
fn attribute(assertion: &Node<'_, '_>, name: &str) -> Vec<String> {
    let statements: Vec<Node<'_, '_>> = assertion
        .children()
        .filter(|c| is(c, ASSERTION, "AttributeStatement"))
        .collect();
    for key in ["Name", "FriendlyName"] {
        let values: Vec<String> = statements
            .iter()
            .flat_map(|s| s.children())
            .filter(|a| is(a, ASSERTION, "Attribute") && a.attribute(key) == Some(name))
            .flat_map(|a| {
                a.children()
                    .filter(|v| is(v, ASSERTION, "AttributeValue"))
                    .map(|v| text(&v))
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty())
            .collect();
        if !values.is_empty() {
            return values;
        }
    }
    Vec::new()
}

/// The identity the attributes describe.
fn identity(
    config: &Config,
    assertion: &Node<'_, '_>,
    name_id: Option<Node<'_, '_>>,
) -> Result<Identity, SignInError> {
    let name_id_value = name_id.as_ref().map(text).filter(|v| !v.is_empty());
    let login = match attribute(assertion, &config.username_attribute)
        .into_iter()
        .next()
    {
        Some(login) => login,
        None if config.nameid_as_username => name_id_value.clone().ok_or_else(|| {
            refuse(format!(
                "the assertion has no {} attribute and no NameID",
                config.username_attribute
            ))
        })?,
        None => {
            return Err(refuse(format!(
                "the assertion has no {} attribute",
                config.username_attribute
            )));
        }
    };
    // A persistent NameID is the provider's stable handle of the user;
    // otherwise (transient, unspecified, e-mail) the login is.
    let persistent = name_id
        .as_ref()
        .and_then(|n| n.attribute("Format"))
        .is_some_and(|f| f == PERSISTENT);
    let external_id = match (&name_id_value, persistent) {
        (Some(id), true) => id.clone(),
        _ => login.clone(),
    };
    let groups = config
        .groups_attribute
        .as_deref()
        .map(|g| attribute(assertion, g))
        .unwrap_or_default();
    let email = attribute(assertion, &config.email_attribute)
        .into_iter()
        .next()
        .unwrap_or_default();
    Ok(Identity {
        external_id,
        login,
        full_name: attribute(assertion, &config.name_attribute)
            .into_iter()
            .next()
            .unwrap_or_default(),
        // SAML has no flag saying the address was verified; the source's
        // TRUST_EMAIL tells the host whether to take it as verified.
        email_verified: false,
        email,
        ssh_keys: Vec::new(),
        groups,
        organizations: Vec::new(),
    })
}

fn replay_key(assertion_id: &str) -> String {
    format!("assertion/{assertion_id}")
}

/// Whether the assertion was used before and could still be presented.
fn seen(assertion_id: &str, now: OffsetDateTime) -> Result<bool, SignInError> {
    let key = replay_key(assertion_id);
    if key.len() > 256 {
        return Err(refuse("the assertion's ID is over 240 bytes"));
    }
    let stored = kv::get(&key).map_err(|e| SignInError::Unavailable(format!("kv: {e:?}")))?;
    Ok(stored.is_some_and(|v| {
        let until = String::from_utf8_lossy(&v)
            .parse::<i64>()
            .unwrap_or(i64::MAX);
        until > now.unix_timestamp()
    }))
}

/// Records an accepted assertion's ID until it could no longer be
/// presented anyway.
pub(crate) fn remember(checked: &Checked) -> Result<(), SignInError> {
    kv::set(
        &replay_key(&checked.assertion_id),
        checked.valid_until.unix_timestamp().to_string().as_bytes(),
    )
    .map_err(|e| SignInError::Unavailable(format!("kv: {e:?}")))
}
