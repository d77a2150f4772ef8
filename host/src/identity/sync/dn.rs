//! Groups and `GROUP_TEAM_MAP` keys in the one form they are compared in:
//! a DN as RFC 4514 reads it, a name in lower case.

/// A group, or a `GROUP_TEAM_MAP` key, as the two are compared. A DN (it
/// has an `=`) is compared as RFC 4514 §2 reads it, not as typed: each
/// attribute type and value without the spaces around it and in lower case
/// (attribute types are case-insensitive, §2.3, and so are the values of
/// the naming attributes groups use, `cn`, `ou`, `dc`), escapes undone.
/// `CN=Devs, OU=Groups,dc=example,dc=org` is `cn=devs,ou=groups,dc=example,dc=org`.
/// A name is compared in lower case.
pub(crate) fn group_key(group: &str) -> String {
    let group = group.trim();
    let parts = split_unescaped(group, ',');
    if !parts.iter().all(|rdn| {
        split_unescaped(rdn, '+')
            .iter()
            .all(|ava| split_unescaped(ava, '=').len() >= 2)
    }) {
        return group.to_lowercase();
    }
    parts
        .iter()
        .map(|rdn| {
            split_unescaped(rdn, '+')
                .iter()
                .map(|ava| {
                    let (kind, value) = ava.split_at(
                        first_unescaped(ava, '=').expect("every AVA was checked to have an ="),
                    );
                    format!(
                        "{}={}",
                        kind.trim().to_lowercase(),
                        escape_dn_value(&unescape_dn_value(value[1..].trim()).to_lowercase())
                    )
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The byte offset of the first `sep` that no backslash escapes.
fn first_unescaped(s: &str, sep: char) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == sep => return Some(i),
            _ => {}
        }
    }
    None
}

/// `s` split at every `sep` that no backslash escapes.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = first_unescaped(rest, sep) {
        out.push(&rest[..at]);
        rest = &rest[at + sep.len_utf8()..];
    }
    out.push(rest);
    out
}

/// A DN attribute value with its escapes (RFC 4514 §2.4: `\,` and `\2C`)
/// undone.
fn unescape_dn_value(value: &str) -> String {
    let mut bytes = Vec::with_capacity(value.len());
    let raw = value.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() {
            let hex = raw
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    bytes.push(b);
                    i += 3;
                }
                None => {
                    bytes.push(raw[i + 1]);
                    i += 2;
                }
            }
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A value escaped again where the comparison form needs it: the
/// separators and the backslash, so that two different DNs never read alike.
fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, ',' | '+' | '=' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::group_key;

    #[test]
    fn a_dn_is_compared_without_case_spaces_or_escapes() {
        let directory = group_key("cn=devs,ou=groups,dc=example,dc=org");
        for typed in [
            "CN=Devs,OU=Groups,DC=Example,DC=Org",
            "cn = devs , ou=groups,  dc=example,dc=org",
            " Cn=DEVS,ou=groups,dc=example,dc=org ",
            "cn=\\64evs,ou=groups,dc=example,dc=org",
        ] {
            assert_eq!(group_key(typed), directory, "{typed}");
        }
        assert_ne!(group_key("cn=devs,ou=people,dc=example,dc=org"), directory);
        assert_eq!(directory, "cn=devs,ou=groups,dc=example,dc=org");
    }

    #[test]
    fn an_escaped_separator_stays_part_of_the_value() {
        assert_eq!(
            group_key("CN=Smith\\, John,OU=Groups"),
            group_key("cn=smith\\2c john,ou=groups")
        );
        assert_ne!(
            group_key("cn=smith\\, john,ou=groups"),
            group_key("cn=smith,cn=john,ou=groups")
        );
        assert_eq!(
            group_key("cn=a+uid=b,ou=groups"),
            group_key("CN = A + UID = B, OU = Groups")
        );
    }

    #[test]
    fn a_name_is_compared_in_lower_case() {
        assert_eq!(group_key("Developers"), "developers");
        assert_eq!(group_key(" devs "), "devs");
        // Not a DN: one part has no `=`.
        assert_eq!(group_key("a=b,Team"), "a=b,team");
    }
}
