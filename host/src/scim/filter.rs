//! SCIM filters and attribute paths (RFC 7644 §3.4.2.2 and §3.5.2): the
//! whole grammar in this one module, parsed by recursive descent that is
//! bounded before it recurses, and evaluated against a rendered resource.
//!
//! Rust's one SCIM filter crate evaluates filters over in-memory
//! collections only and has not been released since early 2024, so the
//! grammar is kept here, with property tests that print and re-parse
//! generated filters and feed the parser arbitrary text.

use std::cmp::Ordering;

use serde_json::Value;

/// The longest filter or path accepted, in bytes.
pub const MAX_LEN: usize = 4096;
/// How deeply parentheses, `not` and `[…]` may nest.
pub const MAX_DEPTH: usize = 16;

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    Present(AttrPath),
    Compare(AttrPath, Op, Literal),
    /// `emails[type eq "work"]`: some value of the multi-valued attribute
    /// matches the inner filter, whose paths are relative to that value.
    Values(AttrPath, Box<Filter>),
}

/// `[urn ":"] name ["." sub]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttrPath {
    /// The schema URN, when the path names one.
    pub urn: Option<String>,
    pub name: String,
    pub sub: Option<String>,
}

/// A PATCH operation's target: an attribute path, or a multi-valued
/// attribute narrowed by a value filter and optionally one sub-attribute
/// of the values it selects (`emails[type eq "work"].value`).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchPath {
    pub attr: AttrPath,
    pub filter: Option<Filter>,
    pub sub: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Ew,
    Gt,
    Ge,
    Lt,
    Le,
}

const OPS: [(&str, Op); 9] = [
    ("eq", Op::Eq),
    ("ne", Op::Ne),
    ("co", Op::Co),
    ("sw", Op::Sw),
    ("ew", Op::Ew),
    ("gt", Op::Gt),
    ("ge", Op::Ge),
    ("lt", Op::Lt),
    ("le", Op::Le),
];

/// A comparison's right-hand side.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
}

/// Why a filter or path was refused; the text is shown to the client.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Parses a `filter` query parameter.
pub fn parse(text: &str) -> Result<Filter, Invalid> {
    let mut p = Parser::new(text)?;
    let f = p.or(0)?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.error("unexpected text"));
    }
    Ok(f)
}

/// Parses a PATCH operation's `path`.
pub fn parse_path(text: &str) -> Result<PatchPath, Invalid> {
    let mut p = Parser::new(text)?;
    p.skip_ws();
    let attr = p.attr_path()?;
    let mut path = PatchPath {
        attr,
        filter: None,
        sub: None,
    };
    if p.eat("[") {
        if path.attr.sub.is_some() {
            return Err(p.error("a value filter follows a sub-attribute"));
        }
        path.filter = Some(p.or(1)?);
        p.skip_ws();
        if !p.eat("]") {
            return Err(p.error("expected ]"));
        }
        if p.eat(".") {
            path.sub = Some(p.name()?);
        }
    }
    p.skip_ws();
    if !p.at_end() {
        return Err(p.error("unexpected text"));
    }
    Ok(path)
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Result<Self, Invalid> {
        if text.len() > MAX_LEN {
            return Err(Invalid(format!("longer than {MAX_LEN} bytes")));
        }
        Ok(Parser { text, at: 0 })
    }

    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn at_end(&self) -> bool {
        self.at >= self.text.len()
    }

    fn error(&self, what: &str) -> Invalid {
        Invalid(format!("{what} at position {}", self.at + 1))
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start_matches(' ').len();
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    /// A keyword (`and`, `not`, an operator) followed by a space, `(` or
    /// the end, compared case-insensitively as RFC 7644 asks.
    fn keyword(&mut self, word: &str) -> bool {
        let rest = self.rest();
        let Some(head) = rest.get(..word.len()) else {
            return false;
        };
        let after = rest[word.len()..].chars().next();
        if head.eq_ignore_ascii_case(word) && matches!(after, None | Some(' ' | '(' | ')' | ']')) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self, depth: usize) -> Result<Filter, Invalid> {
        self.joined(depth, "or")
    }

    /// Terms joined by `word`: `and` binds tighter than `or`, so the terms
    /// of an `or` are `and`s, and those of an `and` are single filters.
    fn joined(&mut self, depth: usize, word: &str) -> Result<Filter, Invalid> {
        let term = |p: &mut Self| {
            if word == "or" {
                p.joined(depth, "and")
            } else {
                p.unary(depth)
            }
        };
        let mut terms = vec![term(self)?];
        loop {
            let save = self.at;
            self.skip_ws();
            if self.at > save && self.keyword(word) {
                self.skip_ws();
                terms.push(term(self)?);
            } else {
                self.at = save;
                break;
            }
        }
        Ok(match (terms.len(), word) {
            (1, _) => terms.remove(0),
            (_, "or") => Filter::Or(terms),
            _ => Filter::And(terms),
        })
    }

    fn unary(&mut self, depth: usize) -> Result<Filter, Invalid> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&format!("nested deeper than {MAX_DEPTH}")));
        }
        self.skip_ws();
        if self.keyword("not") {
            self.skip_ws();
            if !self.eat("(") {
                return Err(self.error("expected ( after not"));
            }
            let inner = self.or(depth + 1)?;
            self.skip_ws();
            if !self.eat(")") {
                return Err(self.error("expected )"));
            }
            return Ok(Filter::Not(Box::new(inner)));
        }
        if self.eat("(") {
            let inner = self.or(depth + 1)?;
            self.skip_ws();
            if !self.eat(")") {
                return Err(self.error("expected )"));
            }
            return Ok(inner);
        }
        let path = self.attr_path()?;
        if self.eat("[") {
            if path.sub.is_some() {
                return Err(self.error("a value filter follows a sub-attribute"));
            }
            let inner = self.or(depth + 1)?;
            self.skip_ws();
            if !self.eat("]") {
                return Err(self.error("expected ]"));
            }
            return Ok(Filter::Values(path, Box::new(inner)));
        }
        if !self.eat(" ") {
            return Err(self.error("expected an operator after the attribute"));
        }
        self.skip_ws();
        if self.keyword("pr") {
            return Ok(Filter::Present(path));
        }
        let Some(op) = OPS
            .iter()
            .find_map(|(word, op)| self.keyword(word).then_some(*op))
        else {
            return Err(self.error("unknown operator"));
        };
        self.skip_ws();
        let value = self.literal()?;
        Ok(Filter::Compare(path, op, value))
    }

    fn name(&mut self) -> Result<String, Invalid> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$'))
            .unwrap_or(rest.len());
        if len == 0 || !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '$') {
            return Err(self.error("expected an attribute name"));
        }
        self.at += len;
        Ok(rest[..len].to_string())
    }

    fn attr_path(&mut self) -> Result<AttrPath, Invalid> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$' | ':' | '.'))
            })
            .unwrap_or(rest.len());
        let word = &rest[..len];
        let (urn, local) = match word.rfind(':') {
            Some(i) => (Some(word[..i].to_string()), &word[i + 1..]),
            None => (None, word),
        };
        let (name, sub) = match local.split_once('.') {
            Some((n, s)) => (n, Some(s)),
            None => (local, None),
        };
        let valid = |s: &str| {
            s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '$')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$'))
        };
        if !valid(name) || sub.is_some_and(|s| !valid(s)) {
            return Err(self.error("expected an attribute path"));
        }
        self.at += len;
        Ok(AttrPath {
            urn,
            name: name.to_string(),
            sub: sub.map(str::to_string),
        })
    }

    fn literal(&mut self) -> Result<Literal, Invalid> {
        let rest = self.rest();
        if rest.starts_with('"') {
            // A JSON string, escapes and all.
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<String>();
            return match stream.next() {
                Some(Ok(s)) => {
                    self.at += stream.byte_offset();
                    Ok(Literal::Str(s))
                }
                _ => Err(self.error("unterminated or invalid string")),
            };
        }
        for (word, value) in [
            ("true", Literal::Bool(true)),
            ("false", Literal::Bool(false)),
            ("null", Literal::Null),
        ] {
            if self.keyword(word) {
                return Ok(value);
            }
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(rest.len());
        match rest[..len].parse::<f64>() {
            Ok(n) if len > 0 && n.is_finite() => {
                self.at += len;
                Ok(Literal::Num(n))
            }
            _ => Err(self.error("expected a value")),
        }
    }
}

impl std::fmt::Display for AttrPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(urn) = &self.urn {
            write!(f, "{urn}:")?;
        }
        write!(f, "{}", self.name)?;
        if let Some(sub) = &self.sub {
            write!(f, ".{sub}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |f: &mut std::fmt::Formatter<'_>, terms: &[Filter], word: &str| {
            for (i, t) in terms.iter().enumerate() {
                if i > 0 {
                    write!(f, " {word} ")?;
                }
                write!(f, "({t})")?;
            }
            Ok(())
        };
        match self {
            Filter::And(terms) => join(f, terms, "and"),
            Filter::Or(terms) => join(f, terms, "or"),
            Filter::Not(inner) => write!(f, "not ({inner})"),
            Filter::Present(p) => write!(f, "{p} pr"),
            Filter::Compare(p, op, v) => {
                let word = OPS.iter().find(|(_, o)| o == op).map_or("eq", |(w, _)| w);
                let v = match v {
                    Literal::Str(s) => Value::String(s.clone()).to_string(),
                    Literal::Num(n) => n.to_string(),
                    Literal::Bool(b) => b.to_string(),
                    Literal::Null => "null".into(),
                };
                write!(f, "{p} {word} {v}")
            }
            Filter::Values(p, inner) => write!(f, "{p}[{inner}]"),
        }
    }
}

/// How the evaluator sees a resource's attributes: which compare exactly
/// (RFC 7643 `caseExact`), and where an extension schema's attributes sit.
pub trait Schema {
    /// Whether string values of the attribute (by its local name, and
    /// sub-attribute) compare case-sensitively.
    fn case_exact(&self, name: &str, sub: Option<&str>) -> bool;
    /// Whether `urn` names the resource's core schema (its attributes sit
    /// at the top level) rather than an extension (an object keyed by it).
    fn is_core(&self, urn: &str) -> bool;
}

/// The member of `object` called `key`, compared case-insensitively as
/// SCIM attribute names are.
pub fn member<'v>(object: &'v Value, key: &str) -> Option<&'v Value> {
    object
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

/// The values `path` selects in `resource`: several for a multi-valued
/// attribute (each value's sub-attribute, or each value itself).
pub fn select<'v>(resource: &'v Value, path: &AttrPath, schema: &dyn Schema) -> Vec<&'v Value> {
    let holder = match &path.urn {
        Some(urn) if !schema.is_core(urn) => match member(resource, urn) {
            Some(ext) => ext,
            None => return Vec::new(),
        },
        _ => resource,
    };
    let Some(top) = member(holder, &path.name) else {
        return Vec::new();
    };
    let values: Vec<&Value> = match top {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        other => vec![other],
    };
    match &path.sub {
        None => values,
        Some(sub) => values
            .into_iter()
            .filter_map(|v| member(v, sub))
            .flat_map(|v| match v {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            })
            .collect(),
    }
}

/// Whether `resource` matches `filter`.
pub fn matches(filter: &Filter, resource: &Value, schema: &dyn Schema) -> bool {
    match filter {
        Filter::And(terms) => terms.iter().all(|t| matches(t, resource, schema)),
        Filter::Or(terms) => terms.iter().any(|t| matches(t, resource, schema)),
        Filter::Not(inner) => !matches(inner, resource, schema),
        Filter::Present(path) => select(resource, path, schema).into_iter().any(|v| match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => true,
        }),
        Filter::Compare(path, op, literal) => {
            let exact = schema.case_exact(&path.name, path.sub.as_deref());
            let values = select(resource, path, schema);
            if values.is_empty() {
                // An absent attribute equals null and nothing else.
                return match (op, literal) {
                    (Op::Eq, Literal::Null) => true,
                    (Op::Ne, Literal::Null) => false,
                    (Op::Ne, _) => true,
                    _ => false,
                };
            }
            values.into_iter().any(|v| {
                // A complex value compared as a whole compares its `value`.
                let v = match v {
                    Value::Object(_) => member(v, "value").unwrap_or(&Value::Null),
                    other => other,
                };
                compare(v, *op, literal, exact)
            })
        }
        Filter::Values(path, inner) => {
            let whole = AttrPath {
                sub: None,
                ..path.clone()
            };
            select(resource, &whole, schema)
                .into_iter()
                .any(|v| matches(inner, v, &Relative(schema, &path.name)))
        }
    }
}

/// Paths inside `emails[…]` name sub-attributes of `emails`.
pub struct Relative<'s>(pub &'s dyn Schema, pub &'s str);

impl Schema for Relative<'_> {
    fn case_exact(&self, name: &str, _sub: Option<&str>) -> bool {
        self.0.case_exact(self.1, Some(name))
    }
    fn is_core(&self, urn: &str) -> bool {
        self.0.is_core(urn)
    }
}

fn compare(value: &Value, op: Op, literal: &Literal, exact: bool) -> bool {
    let fold = |s: &str| {
        if exact {
            s.to_string()
        } else {
            s.to_lowercase()
        }
    };
    match (value, literal) {
        (Value::String(v), Literal::Str(l)) => {
            let (v, l) = (fold(v), fold(l));
            match op {
                Op::Eq => v == l,
                Op::Ne => v != l,
                Op::Co => v.contains(&l),
                Op::Sw => v.starts_with(&l),
                Op::Ew => v.ends_with(&l),
                // Dates are written in one ISO 8601 form, so their text
                // orders as their time does.
                Op::Gt => v > l,
                Op::Ge => v >= l,
                Op::Lt => v < l,
                Op::Le => v <= l,
            }
        }
        (Value::Number(v), Literal::Num(l)) => {
            let Some(v) = v.as_f64() else { return false };
            let order = v.partial_cmp(l);
            match op {
                Op::Eq => order == Some(Ordering::Equal),
                Op::Ne => order != Some(Ordering::Equal),
                Op::Gt => order == Some(Ordering::Greater),
                Op::Ge => matches!(order, Some(Ordering::Greater | Ordering::Equal)),
                Op::Lt => order == Some(Ordering::Less),
                Op::Le => matches!(order, Some(Ordering::Less | Ordering::Equal)),
                Op::Co | Op::Sw | Op::Ew => false,
            }
        }
        (Value::Bool(v), Literal::Bool(l)) => match op {
            Op::Eq => v == l,
            Op::Ne => v != l,
            _ => false,
        },
        (Value::Null, Literal::Null) => op == Op::Eq,
        (_, Literal::Null) => op == Op::Ne,
        _ => op == Op::Ne,
    }
}

/// An `eq` the store can answer from an index, when every match of
/// `filter` must satisfy it: the filter itself or a term of a top-level
/// `and`.
pub fn indexed_eq<'f>(filter: &'f Filter, indexed: &[&'f str]) -> Option<(&'f str, &'f str)> {
    let hit = |f: &'f Filter| match f {
        Filter::Compare(path, Op::Eq, Literal::Str(value)) if path.urn.is_none() => {
            let key = match &path.sub {
                Some(sub) => format!("{}.{}", path.name, sub),
                None => path.name.clone(),
            };
            indexed
                .iter()
                .find(|i| i.eq_ignore_ascii_case(&key))
                .map(|i| (*i, value.as_str()))
        }
        _ => None,
    };
    match filter {
        Filter::And(terms) => terms.iter().find_map(hit),
        other => hit(other),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    struct Plain;
    impl Schema for Plain {
        fn case_exact(&self, name: &str, _sub: Option<&str>) -> bool {
            name == "id" || name == "externalId"
        }
        fn is_core(&self, urn: &str) -> bool {
            urn.eq_ignore_ascii_case("urn:ietf:params:scim:schemas:core:2.0:User")
        }
    }

    fn user() -> Value {
        json!({
            "id": "7",
            "userName": "Bjensen",
            "active": true,
            "name": {"givenName": "Barbara", "familyName": "Jensen"},
            "emails": [
                {"value": "bjensen@example.com", "type": "work", "primary": true},
                {"value": "babs@home.example", "type": "home"}
            ],
            "meta": {"lastModified": "2026-01-02T03:04:05Z"},
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {
                "department": "Tour Operations",
                "manager": {"value": "26118915"}
            }
        })
    }

    fn hit(filter: &str) -> bool {
        matches(&parse(filter).unwrap(), &user(), &Plain)
    }

    #[test]
    fn the_rfc_examples_parse_and_match() {
        assert!(hit(r#"userName eq "bjensen""#));
        assert!(hit(r#"USERNAME EQ "BJENSEN""#));
        assert!(hit(r#"name.familyName co "ens""#));
        assert!(hit(r#"userName sw "B""#));
        assert!(hit(r#"userName ew "sen""#));
        assert!(hit("name.givenName pr"));
        assert!(!hit("title pr"));
        assert!(hit(r#"meta.lastModified gt "2026-01-01T00:00:00Z""#));
        assert!(!hit(r#"meta.lastModified lt "2026-01-01T00:00:00Z""#));
        assert!(hit(r#"emails[type eq "work" and value co "@example.com"]"#));
        assert!(!hit(r#"emails[type eq "work" and value co "home"]"#));
        assert!(hit(r#"emails.value eq "babs@home.example""#));
        assert!(hit(
            r#"userName eq "x" or (name.givenName eq "barbara" and not (active eq false))"#
        ));
        assert!(hit(
            r#"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "tour operations""#
        ));
        assert!(hit(
            r#"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value eq "26118915""#
        ));
        assert!(hit(
            r#"urn:ietf:params:scim:schemas:core:2.0:User:userName eq "bjensen""#
        ));
        assert!(hit(r#"title ne "boss""#));
        assert!(!hit(r#"id eq "7 ""#));
        assert!(hit(r#"id eq "7""#));
    }

    #[test]
    fn bad_filters_are_refused_with_a_position() {
        for bad in [
            "",
            "userName",
            r#"userName eq"#,
            r#"userName xx "a""#,
            r#"userName eq "a" and"#,
            r#"(userName eq "a""#,
            r#"emails[type eq "work""#,
            r#"userName eq "unterminated"#,
            r#"not userName eq "a""#,
            r#"userName eq "a" extra"#,
            "1abc pr",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = format!("{}userName pr{}", "(".repeat(40), ")".repeat(40));
        assert!(parse(&deep).unwrap_err().0.contains("nested deeper"));
        assert!(parse(&"a".repeat(MAX_LEN + 1)).is_err());
    }

    #[test]
    fn patch_paths() {
        let p = parse_path(r#"emails[type eq "work"].value"#).unwrap();
        assert_eq!(p.attr.name, "emails");
        assert_eq!(p.sub.as_deref(), Some("value"));
        assert!(p.filter.is_some());
        let p = parse_path("urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department")
            .unwrap();
        assert_eq!(
            p.attr.urn.as_deref(),
            Some("urn:ietf:params:scim:schemas:extension:enterprise:2.0:User")
        );
        assert_eq!(p.attr.name, "department");
        assert_eq!(
            parse_path("name.givenName").unwrap().attr.sub.as_deref(),
            Some("givenName")
        );
        assert!(parse_path("emails[").is_err());
        assert!(parse_path("name.givenName[type eq \"a\"]").is_err());
    }

    #[test]
    fn the_index_is_used_only_where_every_match_needs_it() {
        let indexed = ["userName", "externalId", "emails.value"];
        let f = parse(r#"userName eq "a" and active eq true"#).unwrap();
        assert_eq!(indexed_eq(&f, &indexed), Some(("userName", "a")));
        let f = parse(r#"emails.value eq "a@b""#).unwrap();
        assert_eq!(indexed_eq(&f, &indexed), Some(("emails.value", "a@b")));
        let f = parse(r#"userName eq "a" or active eq true"#).unwrap();
        assert_eq!(indexed_eq(&f, &indexed), None);
        let f = parse(r#"not (userName eq "a")"#).unwrap();
        assert_eq!(indexed_eq(&f, &indexed), None);
    }

    fn name() -> impl Strategy<Value = String> {
        "[a-zA-Z][a-zA-Z0-9_]{0,8}".prop_filter("not a keyword", |s| {
            !["and", "or", "not", "pr", "true", "false", "null"]
                .iter()
                .any(|k| s.eq_ignore_ascii_case(k))
                && !OPS.iter().any(|(w, _)| s.eq_ignore_ascii_case(w))
        })
    }

    fn path() -> impl Strategy<Value = AttrPath> {
        (
            prop::option::of(Just(
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User".to_string(),
            )),
            name(),
            prop::option::of(name()),
        )
            .prop_map(|(urn, name, sub)| AttrPath { urn, name, sub })
    }

    fn literal() -> impl Strategy<Value = Literal> {
        prop_oneof![
            any::<String>().prop_map(Literal::Str),
            (-1_000_000i64..1_000_000).prop_map(|n| Literal::Num(n as f64)),
            any::<bool>().prop_map(Literal::Bool),
            Just(Literal::Null),
        ]
    }

    fn filter() -> impl Strategy<Value = Filter> {
        let leaf = prop_oneof![
            path().prop_map(Filter::Present),
            (path(), prop::sample::select(OPS.to_vec()), literal())
                .prop_map(|(p, (_, op), v)| Filter::Compare(p, op, v)),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..4).prop_map(Filter::And),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Filter::Or),
                inner.clone().prop_map(|f| Filter::Not(Box::new(f))),
                (path(), inner).prop_map(|(mut p, f)| {
                    p.sub = None;
                    Filter::Values(p, Box::new(f))
                }),
            ]
        })
    }

    /// `(a and b) and c` prints as written but parses flat; compare the
    /// meaning, not the shape.
    fn flat(f: Filter) -> Filter {
        match f {
            Filter::And(terms) => Filter::And(
                terms
                    .into_iter()
                    .map(flat)
                    .flat_map(|t| match t {
                        Filter::And(inner) => inner,
                        other => vec![other],
                    })
                    .collect(),
            ),
            Filter::Or(terms) => Filter::Or(
                terms
                    .into_iter()
                    .map(flat)
                    .flat_map(|t| match t {
                        Filter::Or(inner) => inner,
                        other => vec![other],
                    })
                    .collect(),
            ),
            Filter::Not(inner) => Filter::Not(Box::new(flat(*inner))),
            Filter::Values(p, inner) => Filter::Values(p, Box::new(flat(*inner))),
            leaf => leaf,
        }
    }

    proptest! {
        #[test]
        fn printed_filters_parse_back_to_themselves(f in filter()) {
            let text = f.to_string();
            prop_assume!(text.len() <= MAX_LEN);
            prop_assert_eq!(parse(&text).map(flat), Ok(flat(f)));
        }

        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = parse(&text);
            let _ = parse_path(&text);
        }

        #[test]
        fn filter_shaped_text_never_panics(text in r#"[a-z() \[\]".:]{0,64}"#) {
            if let Ok(f) = parse(&text) {
                let _ = matches(&f, &user(), &Plain);
            }
        }
    }
}
