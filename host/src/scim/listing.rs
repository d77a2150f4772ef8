//! What lists of every resource type share (RFC 7644 §3.4.2): the
//! `filter` parsed and narrowed to an index, matches decided exactly,
//! `sortBy`, `startIndex` and `count`, and ETags.

use serde_json::{Value, json};

use super::filter::{self, Filter};
use super::schema::{LIST, Resource};
use super::{Error, Result};

/// The largest page a list returns (`ServiceProviderConfig`'s
/// `filter.maxResults`).
pub const MAX_RESULTS: usize = 200;

/// A list request's query.
#[derive(Debug, Default, Clone)]
pub struct ListQuery {
    pub filter: Option<String>,
    pub start_index: Option<i64>,
    pub count: Option<i64>,
    pub sort_by: Option<String>,
    pub descending: bool,
}

/// One page of a list: the resources and the total that matched.
#[derive(Debug)]
pub struct Page {
    pub resources: Vec<Value>,
    pub total: usize,
    pub start_index: usize,
}

impl Page {
    /// The `ListResponse` message.
    pub fn to_json(&self) -> Value {
        json!({
            "schemas": [LIST],
            "totalResults": self.total,
            "startIndex": self.start_index,
            "itemsPerPage": self.resources.len(),
            "Resources": self.resources,
        })
    }
}

/// The query's filter, parsed.
pub fn parse_filter(q: &ListQuery) -> Result<Option<Filter>> {
    q.filter
        .as_deref()
        .filter(|f| !f.trim().is_empty())
        .map(filter::parse)
        .transpose()
        .map_err(|e| Error::filter(&e.0))
}

/// The `eq` of `filter` one of `indexed` (attribute, SQL condition on
/// `$2`) answers, with its value.
pub fn narrowing<'f>(
    filter: Option<&'f Filter>,
    indexed: &[(&'static str, &'static str)],
) -> Option<(&'static str, &'static str, &'f str)> {
    let keys: Vec<&str> = indexed.iter().map(|(k, _)| *k).collect();
    let (key, value) = filter::indexed_eq(filter?, &keys)?;
    let (k, sql) = indexed.iter().find(|(k, _)| *k == key)?;
    Some((k, sql, value))
}

/// The page of `candidates` (rendered resources a store read, a superset
/// of the matches) the query asks for.
pub fn page(
    candidates: Vec<Value>,
    filter: Option<&Filter>,
    q: &ListQuery,
    schema: &Resource,
) -> Result<Page> {
    let mut resources: Vec<Value> = candidates
        .into_iter()
        .filter(|r| filter.is_none_or(|f| filter::matches(f, r, schema)))
        .collect();
    if let Some(by) = &q.sort_by {
        let path = filter::parse_path(by).map_err(|e| Error::value(&e.0))?;
        let key = |r: &Value| {
            filter::select(r, &path.attr, schema)
                .first()
                .map(|v| match v {
                    Value::String(s) => s.to_lowercase(),
                    other => other.to_string(),
                })
        };
        // Resources without the attribute sort last either way.
        resources.sort_by(|a, b| match (key(a), key(b)) {
            (Some(x), Some(y)) if q.descending => y.cmp(&x),
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
    }
    let total = resources.len();
    let start = q.start_index.unwrap_or(1).max(1) as usize;
    let count = q
        .count
        .map_or(MAX_RESULTS, |c| c.max(0) as usize)
        .min(MAX_RESULTS);
    Ok(Page {
        resources: resources.into_iter().skip(start - 1).take(count).collect(),
        total,
        start_index: start,
    })
}

/// Refuses a write whose `If-Match` names another version than `current`.
pub fn check_version(current: &str, if_match: Option<&str>) -> Result<()> {
    match if_match {
        Some(m) if m.trim() != "*" && !m.split(',').any(|t| t.trim() == current) => Err(
            Error::precondition("the resource has changed since the version If-Match names"),
        ),
        _ => Ok(()),
    }
}

/// A resource id from a URL: Postern's ids are numbers.
pub fn parse_id(id: &str, kind: &str) -> Result<i64> {
    id.parse()
        .map_err(|_| Error::not_found(&format!("no {kind} {id}")))
}
