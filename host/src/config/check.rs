//! Every section read, walked against the schema before anything is typed:
//! invalid values, unknown keys, and the rules across a section's keys.

use std::collections::BTreeMap;

use super::schema::{self, SectionPattern};

/// Walks every section against the schema, collecting errors and unknown keys.
#[derive(Default)]
pub(super) struct Checker {
    pub(super) errors: Vec<String>,
    pub(super) unknown: Vec<String>,
}

impl Checker {
    pub(super) fn section(&mut self, section: &str, keys: &BTreeMap<String, String>) {
        let Some((pattern, suffix)) = SectionPattern::classify(section) else {
            self.unknown.push(format!("[{section}] (unknown section)"));
            return;
        };
        if pattern == SectionPattern::Directory && suffix.parse::<u32>().map_or(true, |n| n == 0) {
            self.errors.push(format!(
                "[{section}]: expected a section named source.<n> with n a positive number, or source.oauth2_<name>"
            ));
            return;
        }
        let schema_name = pattern.schema_name();
        for (key, value) in keys {
            match schema::key_spec(schema_name, key) {
                Some(spec) => {
                    if let Err(expected) = spec.kind.check(value) {
                        self.errors.push(format!(
                            "[{section}] {key} = {value:?}: expected {expected}"
                        ));
                    }
                }
                // A plugin's own settings are the plugin's to check.
                None if pattern == SectionPattern::Plugin => {}
                None => self.unknown.push(format!("[{section}] {key}")),
            }
        }
        if pattern == SectionPattern::Plugin {
            self.plugin_rules(section, keys);
        }
        if pattern == SectionPattern::OAuth2Source {
            self.redirect_source_rules(section, keys);
        }
    }

    /// Keys that only an OpenID Connect source reads, set on a source of
    /// another kind: ignored, and said so at start (`ISSUER` is a SAML key
    /// too, with another meaning).
    fn redirect_source_rules(&mut self, section: &str, keys: &BTreeMap<String, String>) {
        let provider = keys
            .get("PROVIDER")
            .map(|p| p.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let read_by = |key: &str| match provider.as_str() {
            "openidconnect" | "oidc" => true,
            "saml" => key == "ISSUER",
            _ => false,
        };
        for key in ["ISSUER", "ID_TOKEN_SIGNING_ALGORITHMS"] {
            if keys.get(key).is_some_and(|v| !v.trim().is_empty()) && !read_by(key) {
                self.unknown.push(format!(
                    "[{section}] {key} (read by OpenID Connect sources only, and PROVIDER is {:?})",
                    keys.get("PROVIDER").map_or("", |p| p.trim())
                ));
            }
        }
    }

    /// Rules across keys of a `[plugin.<id>]` section.
    fn plugin_rules(&mut self, section: &str, keys: &BTreeMap<String, String>) {
        let id = section.trim_start_matches("plugin.");
        let builtin = crate::plugins::builtin::ids().contains(&id);
        match (keys.get("PATH"), keys.get("SHA256"), builtin) {
            (Some(_), _, true) => self.errors.push(format!(
                "[{section}] PATH: expected no PATH for the built-in plugin {id:?}; give a third-party plugin another id"
            )),
            (Some(_), None, false) => self.errors.push(format!(
                "[{section}] SHA256: expected the sha256 of the file at PATH (64 hex digits); a third-party plugin must be pinned"
            )),
            (None, _, false) => self
                .errors
                .push(format!("[{section}] PATH: expected the path of a .wasm component (no built-in plugin is named {id:?})")),
            _ => {}
        }
        if !builtin && !keys.contains_key("KIND") {
            self.errors.push(format!(
                "[{section}] KIND: expected one of identity-source, second-factor, webhook-transport"
            ));
        }
    }
}
