//! From the provider's claims (an ID token and userinfo, or a profile
//! endpoint's JSON) to the identity the host links to a local user.

use postern_plugin_api::identity_source::{Identity, SignInError};
use serde_json::{Map, Value};

use crate::config::Attributes;

/// Claims by name, as the provider sent them.
pub(crate) type Claims = Map<String, Value>;

/// The claim `name`: the top-level key, else, for a dotted name such as
/// Keycloak's `realm_access.roles`, the path through nested objects.
pub(crate) fn claim<'a>(claims: &'a Claims, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A claim's value as text: a non-empty string, or a number (GitHub's and
/// GitLab's ids are numbers).
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn text_claim(claims: &Claims, name: &str) -> Option<String> {
    claim(claims, name).and_then(text)
}

/// Whether a claim is true: a JSON `true`, or the text "true" that some
/// providers send.
fn is_true(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// The groups in a group claim: an array of names, or one name.
fn groups(value: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let found: Vec<String> = match value {
        Some(Value::Array(items)) => items.iter().filter_map(text).collect(),
        Some(other) => text(other).into_iter().collect(),
        None => Vec::new(),
    };
    for group in found {
        if !out.contains(&group) {
            out.push(group);
        }
    }
    out
}

/// The identity the claims describe.
///
/// - external id: the first of `attributes.id_claims` present (`sub` for
///   OpenID Connect), a string or a number;
/// - login: `USERNAME_ATTRIBUTE`, else the local part of the e-mail address;
/// - e-mail: `EMAIL_ATTRIBUTE`, possibly empty; it is verified only when
///   the provider says `email_verified: true` of that very address;
/// - display name: `NAME_ATTRIBUTE`; groups: `GROUP_CLAIM_NAME`.
pub(crate) fn identity(claims: &Claims, attributes: &Attributes) -> Result<Identity, SignInError> {
    let external_id = attributes
        .id_claims
        .iter()
        .find_map(|name| text_claim(claims, name))
        .ok_or_else(|| {
            SignInError::InvalidResponse(format!(
                "the provider's answer has no `{}` claim to identify the user by",
                attributes.id_claims.join("` or `")
            ))
        })?;
    let email = text_claim(claims, &attributes.email).unwrap_or_default();
    // `email_verified` speaks of the `email` claim: when EMAIL_ATTRIBUTE
    // names another, the address is vouched for only if it is the same one.
    let email_verified = !email.is_empty()
        && is_true(claim(claims, "email_verified"))
        && (attributes.email == "email"
            || text_claim(claims, "email").is_some_and(|e| e.eq_ignore_ascii_case(&email)));
    let login = text_claim(claims, &attributes.username)
        .or_else(|| {
            email
                .split_once('@')
                .map(|(local, _)| local.to_string())
                .filter(|local| !local.is_empty())
        })
        .ok_or_else(|| {
            SignInError::InvalidResponse(format!(
                "the provider's answer has no `{}` claim (USERNAME_ATTRIBUTE) and no e-mail address to take a login from",
                attributes.username
            ))
        })?;
    Ok(Identity {
        external_id,
        login,
        full_name: text_claim(claims, &attributes.name).unwrap_or_default(),
        email,
        email_verified,
        ssh_keys: Vec::new(),
        groups: attributes
            .groups
            .as_deref()
            .map(|name| groups(claim(claims, name)))
            .unwrap_or_default(),
        organizations: Vec::new(),
    })
}

/// The userinfo endpoint's claims laid over the ID token's: userinfo is
/// the fuller and fresher answer (OpenID Connect Core §5.3). When userinfo
/// gives an e-mail address without saying whether it is verified, the ID
/// token's `email_verified` no longer applies to it.
pub(crate) fn merge(mut id_token: Claims, userinfo: Claims) -> Claims {
    if userinfo.contains_key("email") && !userinfo.contains_key("email_verified") {
        id_token.remove("email_verified");
    }
    id_token.extend(userinfo);
    id_token
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attributes() -> Attributes {
        Attributes {
            username: "preferred_username".into(),
            email: "email".into(),
            name: "name".into(),
            groups: Some("groups".into()),
            id_claims: &["sub"],
        }
    }

    fn claims(value: Value) -> Claims {
        value.as_object().expect("an object").clone()
    }

    #[test]
    fn oidc_claims_make_an_identity() {
        let identity = identity(
            &claims(json!({
                "sub": "248289761001",
                "preferred_username": "jane",
                "name": "Jane Doe",
                "email": "jane@example.org",
                "email_verified": true,
                "groups": ["devs", "ops", "devs", 7, null],
            })),
            &attributes(),
        )
        .expect("an identity");
        assert_eq!(identity.external_id, "248289761001");
        assert_eq!(identity.login, "jane");
        assert_eq!(identity.full_name, "Jane Doe");
        assert_eq!(identity.email, "jane@example.org");
        assert!(identity.email_verified);
        assert_eq!(identity.groups, ["devs", "ops", "7"]);
        assert!(identity.ssh_keys.is_empty());
        assert!(identity.organizations.is_empty());
    }

    #[test]
    fn github_ids_are_numbers_and_logins_are_login() {
        let attributes = Attributes {
            username: "login".into(),
            groups: None,
            id_claims: &["id"],
            ..attributes()
        };
        let identity = identity(
            &claims(json!({
                "id": 583231,
                "login": "octocat",
                "name": null,
                "email": null,
            })),
            &attributes,
        )
        .expect("an identity");
        assert_eq!(identity.external_id, "583231");
        assert_eq!(identity.login, "octocat");
        assert_eq!(identity.full_name, "");
        assert_eq!(identity.email, "");
        assert!(!identity.email_verified);
        assert!(identity.groups.is_empty());
    }

    #[test]
    fn the_login_falls_back_to_the_email_local_part() {
        let identity = identity(
            &claims(json!({ "sub": "1", "email": "sam@example.org" })),
            &attributes(),
        )
        .expect("an identity");
        assert_eq!(identity.login, "sam");
        let err =
            super::identity(&claims(json!({ "sub": "1" })), &attributes()).expect_err("no login");
        assert!(
            matches!(&err, SignInError::InvalidResponse(why) if why.contains("`preferred_username`")),
            "{err:?}"
        );
    }

    #[test]
    fn a_missing_id_is_an_invalid_response() {
        let attributes = Attributes {
            id_claims: &["sub", "id"],
            ..attributes()
        };
        let err = identity(&claims(json!({ "preferred_username": "x" })), &attributes)
            .expect_err("no id");
        assert!(
            matches!(&err, SignInError::InvalidResponse(why) if why.contains("`sub` or `id`")),
            "{err:?}"
        );
    }

    #[test]
    fn email_verified_is_strict() {
        let verified = |value: Value| {
            identity(&claims(value), &attributes())
                .expect("an identity")
                .email_verified
        };
        assert!(verified(
            json!({ "sub": "1", "email": "a@example.org", "email_verified": "True" })
        ));
        assert!(!verified(
            json!({ "sub": "1", "email": "a@example.org", "email_verified": false })
        ));
        assert!(!verified(
            json!({ "sub": "1", "email": "a@example.org", "email_verified": 1 })
        ));
        assert!(!verified(json!({ "sub": "1", "email": "a@example.org" })));
        assert!(!verified(
            json!({ "sub": "1", "email": "", "email_verified": true, "preferred_username": "a" })
        ));
    }

    #[test]
    fn another_email_attribute_is_verified_only_when_it_is_the_email() {
        let attributes = Attributes {
            email: "upn".into(),
            ..attributes()
        };
        let same = identity(
            &claims(json!({
                "sub": "1", "upn": "A@example.org", "email": "a@example.org", "email_verified": true,
            })),
            &attributes,
        )
        .expect("an identity");
        assert_eq!(same.email, "A@example.org");
        assert!(same.email_verified);
        let other = identity(
            &claims(json!({
                "sub": "1", "upn": "b@example.org", "email": "a@example.org", "email_verified": true,
            })),
            &attributes,
        )
        .expect("an identity");
        assert!(!other.email_verified);
    }

    #[test]
    fn a_group_claim_may_be_one_string_or_nested() {
        let one = identity(
            &claims(json!({ "sub": "1", "preferred_username": "a", "groups": "admins" })),
            &attributes(),
        )
        .expect("an identity");
        assert_eq!(one.groups, ["admins"]);
        let nested = Attributes {
            groups: Some("realm_access.roles".into()),
            ..attributes()
        };
        let keycloak = identity(
            &claims(json!({
                "sub": "1", "preferred_username": "a",
                "realm_access": { "roles": ["admin", "user"] },
            })),
            &nested,
        )
        .expect("an identity");
        assert_eq!(keycloak.groups, ["admin", "user"]);
    }

    #[test]
    fn userinfo_overrides_and_unvouches_a_new_email() {
        let id_token = claims(json!({
            "sub": "1", "email": "old@example.org", "email_verified": true, "name": "Old",
        }));
        let merged = merge(
            id_token.clone(),
            claims(json!({ "sub": "1", "email": "new@example.org", "name": "New" })),
        );
        assert_eq!(merged["email"], "new@example.org");
        assert_eq!(merged["name"], "New");
        assert!(!merged.contains_key("email_verified"));
        let merged = merge(id_token, claims(json!({ "sub": "1", "groups": ["g"] })));
        assert_eq!(merged["email_verified"], true);
        assert_eq!(merged["groups"], json!(["g"]));
    }
}
