//! Hypermedia links (spec: "Hypermedia links").
//!
//! A resource carries `_links`: `self`, and one entry per action the caller
//! may perform. GET relations carry only `href`; other actions add `method`.
//! Handlers add an action only after asking whether the caller may take it,
//! so the links a client sees are the actions it can use.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

/// One link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Link {
    /// A path on this server, e.g. `/api/v1/user`.
    pub href: String,
    /// The method, for actions other than GET.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// Relation name → link.
pub type Links = BTreeMap<String, Link>;

/// Builds `_links`, starting with `self`.
pub struct LinksBuilder(Links);

impl LinksBuilder {
    pub fn new(self_href: impl Into<String>) -> Self {
        let mut links = Links::new();
        links.insert(
            "self".into(),
            Link {
                href: self_href.into(),
                method: None,
            },
        );
        LinksBuilder(links)
    }

    /// A GET relation.
    pub fn get(mut self, rel: &str, href: impl Into<String>) -> Self {
        self.0.insert(
            rel.into(),
            Link {
                href: href.into(),
                method: None,
            },
        );
        self
    }

    /// An action with a method, linked only when `allowed`.
    pub fn action(
        mut self,
        allowed: bool,
        rel: &str,
        method: &str,
        href: impl Into<String>,
    ) -> Self {
        if allowed {
            self.0.insert(
                rel.into(),
                Link {
                    href: href.into(),
                    method: Some(method.into()),
                },
            );
        }
        self
    }

    /// A GET relation, linked only when `allowed`.
    pub fn get_if(self, allowed: bool, rel: &str, href: impl Into<String>) -> Self {
        if allowed { self.get(rel, href) } else { self }
    }

    pub fn build(self) -> Links {
        self.0
    }
}
