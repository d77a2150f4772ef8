//! RFC 7644 §3.5.2 PATCH operations applied to a resource's JSON, in the
//! shapes Okta and Entra ID send: `op` in any case (`"Replace"`), with and
//! without `path`, value filters in paths (`emails[type eq "work"].value`)
//! and extension attributes by URN. The caller checks and stores the
//! result as it would a `PUT`, so a PATCH can reach nothing a `PUT` cannot.

use serde_json::{Map, Value};

use super::filter::{self, Filter, Literal, Op, PatchPath, member};
use super::schema::{Mutability, PATCH, Resource};
use super::{Error, Write};

/// The most operations one request may carry.
const MAX_OPERATIONS: usize = 1000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Replace,
    Remove,
}

/// What a `PUT` or `PATCH` asks to store: the body itself, or the
/// resource as it reads (`current`) with the body's operations applied.
pub fn written(
    how: Write,
    current: impl FnOnce() -> Value,
    body: &Value,
    schema: &Resource,
) -> Result<Value, Error> {
    match how {
        Write::Patch => {
            let mut resource = current();
            apply(&mut resource, body, schema)?;
            Ok(resource)
        }
        _ => Ok(body.clone()),
    }
}

/// Applies the `PatchOp` message `body` to `resource`.
pub fn apply(resource: &mut Value, body: &Value, schema: &Resource) -> Result<(), Error> {
    let schemas = member(body, "schemas").and_then(Value::as_array);
    if !schemas.is_some_and(|s| s.iter().any(|u| u.as_str() == Some(PATCH))) {
        return Err(Error::syntax(&format!(
            "a PATCH body names the schema {PATCH}"
        )));
    }
    let ops = member(body, "Operations")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::syntax("a PATCH body has a list of Operations"))?;
    if ops.len() > MAX_OPERATIONS {
        return Err(Error::syntax(&format!(
            "more than {MAX_OPERATIONS} operations"
        )));
    }
    for op in ops {
        let kind = match member(op, "op").and_then(Value::as_str) {
            Some(o) if o.eq_ignore_ascii_case("add") => Kind::Add,
            Some(o) if o.eq_ignore_ascii_case("replace") => Kind::Replace,
            Some(o) if o.eq_ignore_ascii_case("remove") => Kind::Remove,
            _ => return Err(Error::syntax("op is add, replace or remove")),
        };
        let value = member(op, "value").cloned();
        match member(op, "path").and_then(Value::as_str) {
            Some(path) if extension(schema, path).is_some() => {
                let urn = extension(schema, path).unwrap_or_default();
                whole_extension(resource, urn, kind, value)?;
            }
            Some(path) => {
                let path = filter::parse_path(path).map_err(|e| Error::path(&e.0))?;
                at_path(resource, kind, &path, value, schema)?;
            }
            None => {
                if kind == Kind::Remove {
                    return Err(Error::no_target("remove needs a path"));
                }
                let Some(Value::Object(values)) = value else {
                    return Err(Error::syntax(
                        "an operation without a path has an object value",
                    ));
                };
                for (key, v) in values {
                    // A key may itself be a path: "name.givenName" or an
                    // extension attribute by URN, as Entra ID sends.
                    if extension(schema, &key).is_some() {
                        let Value::Object(inner) = v else {
                            return Err(Error::syntax(&format!("{key} is not an object")));
                        };
                        for (k, v) in inner {
                            let p = filter::parse_path(&format!("{key}:{k}"))
                                .map_err(|e| Error::path(&e.0))?;
                            at_path(resource, kind, &p, Some(v), schema)?;
                        }
                    } else {
                        let path = filter::parse_path(&key).map_err(|e| Error::path(&e.0))?;
                        at_path(resource, kind, &path, Some(v), schema)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The extension URN `path` names as a whole, spelled as the schema spells
/// it.
fn extension<'s>(schema: &'s Resource, path: &str) -> Option<&'s str> {
    schema
        .extensions
        .iter()
        .find(|(u, _)| u.eq_ignore_ascii_case(path))
        .map(|(u, _)| *u)
}

/// An operation on an extension's whole object: `add` merges into it,
/// `replace` sets it, `remove` takes it away.
fn whole_extension(
    resource: &mut Value,
    urn: &str,
    kind: Kind,
    value: Option<Value>,
) -> Result<(), Error> {
    let holder = object(resource)?;
    match (kind, value) {
        (Kind::Remove, _) => {
            holder.remove(urn);
        }
        (Kind::Add, Some(Value::Object(new))) => {
            let old = holder
                .entry(urn.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            object(old)?.extend(new);
        }
        (Kind::Replace, Some(Value::Object(new))) => {
            holder.insert(urn.to_string(), Value::Object(new));
        }
        _ => return Err(Error::syntax(&format!("{urn} takes an object"))),
    }
    Ok(())
}

fn at_path(
    resource: &mut Value,
    kind: Kind,
    path: &PatchPath,
    value: Option<Value>,
    schema: &Resource,
) -> Result<(), Error> {
    let attr = &path.attr;
    let sub = path.sub.as_deref().or(attr.sub.as_deref());
    let def = schema
        .lookup(attr.urn.as_deref(), &attr.name, None)
        .ok_or_else(|| Error::path(&format!("no attribute {attr}")))?;
    if let Some(s) = sub
        && schema
            .lookup(attr.urn.as_deref(), &attr.name, Some(s))
            .is_none()
    {
        return Err(Error::path(&format!("no attribute {}.{s}", def.name)));
    }
    if matches!(def.mutability, Mutability::ReadOnly | Mutability::Immutable) {
        return Err(Error::mutability(&format!(
            "{} cannot be changed",
            def.name
        )));
    }
    if kind != Kind::Remove && value.is_none() {
        return Err(Error::syntax("add and replace need a value"));
    }
    let core = attr
        .urn
        .as_deref()
        .is_none_or(|u| u.eq_ignore_ascii_case(schema.core));
    let holder = if core {
        resource
    } else {
        let urn = attr.urn.clone().unwrap_or_default();
        let urn = schema
            .extensions
            .iter()
            .find(|(u, _)| u.eq_ignore_ascii_case(&urn))
            .map(|(u, _)| u.to_string())
            .ok_or_else(|| Error::path(&format!("no schema {urn}")))?;
        object(resource)?
            .entry(urn)
            .or_insert_with(|| Value::Object(Map::new()))
    };
    let holder = object(holder)?;
    let key = def.name.to_string();
    // Attribute names compare case-insensitively; the stored spelling
    // is the schema's.
    if let Some(existing) = holder
        .keys()
        .find(|k| k.eq_ignore_ascii_case(&key) && **k != key)
        .cloned()
        && let Some(v) = holder.remove(&existing)
    {
        holder.insert(key.clone(), v);
    }
    match &path.filter {
        None => plain(holder, &key, sub, kind, value, def.multi),
        Some(f) => filtered(holder, &key, f, sub, kind, value, schema),
    }
}

fn object(v: &mut Value) -> Result<&mut Map<String, Value>, Error> {
    if v.is_null() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut()
        .ok_or_else(|| Error::path("the path crosses a value that is not an object"))
}

fn plain(
    holder: &mut Map<String, Value>,
    key: &str,
    sub: Option<&str>,
    kind: Kind,
    value: Option<Value>,
    multi: bool,
) -> Result<(), Error> {
    match (sub, kind) {
        (Some(s), Kind::Remove) => {
            match holder.get_mut(key) {
                Some(Value::Array(items)) => {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        item.retain(|k, _| !k.eq_ignore_ascii_case(s));
                    }
                }
                Some(Value::Object(o)) => o.retain(|k, _| !k.eq_ignore_ascii_case(s)),
                _ => {}
            }
            Ok(())
        }
        (Some(s), _) => {
            let target = holder
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            match target {
                Value::Array(items) => {
                    for item in items.iter_mut() {
                        object(item)?.insert(s.to_string(), value.clone().unwrap_or_default());
                    }
                    Ok(())
                }
                other => {
                    object(other)?.insert(s.to_string(), value.unwrap_or_default());
                    Ok(())
                }
            }
        }
        (None, Kind::Remove) => {
            holder.remove(key);
            Ok(())
        }
        (None, Kind::Add) if multi => {
            let new = match value.unwrap_or_default() {
                Value::Array(items) => items,
                single => vec![single],
            };
            match holder.get_mut(key) {
                Some(Value::Array(items)) => {
                    for v in new {
                        if !items.contains(&v) {
                            items.push(v);
                        }
                    }
                }
                _ => {
                    holder.insert(key.to_string(), Value::Array(new));
                }
            }
            Ok(())
        }
        (None, Kind::Add) => {
            let value = value.unwrap_or_default();
            // Adding to a complex attribute merges its sub-attributes.
            match (holder.get_mut(key), value) {
                (Some(Value::Object(old)), Value::Object(new)) => old.extend(new),
                (_, value) => {
                    holder.insert(key.to_string(), value);
                }
            }
            Ok(())
        }
        (None, Kind::Replace) => {
            holder.insert(key.to_string(), value.unwrap_or_default());
            Ok(())
        }
    }
}

fn filtered(
    holder: &mut Map<String, Value>,
    key: &str,
    f: &Filter,
    sub: Option<&str>,
    kind: Kind,
    value: Option<Value>,
    schema: &Resource,
) -> Result<(), Error> {
    let relative = filter::Relative(schema, key);
    let items = match holder.get_mut(key) {
        Some(Value::Array(items)) => items,
        _ if kind == Kind::Remove => return Ok(()),
        _ => {
            holder.insert(key.to_string(), Value::Array(Vec::new()));
            match holder.get_mut(key) {
                Some(Value::Array(items)) => items,
                _ => unreachable!("just inserted"),
            }
        }
    };
    let hits: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, v)| filter::matches(f, v, &relative))
        .map(|(i, _)| i)
        .collect();
    if kind == Kind::Remove {
        if let Some(s) = sub {
            for i in hits {
                if let Some(o) = items[i].as_object_mut() {
                    o.retain(|k, _| !k.eq_ignore_ascii_case(s));
                }
            }
        } else {
            let mut i = 0;
            items.retain(|_| {
                let keep = !hits.contains(&i);
                i += 1;
                keep
            });
        }
        return Ok(());
    }
    let value = value.unwrap_or_default();
    if hits.is_empty() {
        // `emails[type eq "work"].value` with no work address yet: Entra
        // ID expects one made, with the type the filter names.
        return match (f, sub) {
            (Filter::Compare(p, Op::Eq, Literal::Str(t)), Some(s))
                if p.urn.is_none() && p.sub.is_none() =>
            {
                let mut new = Map::new();
                new.insert(p.name.clone(), Value::String(t.clone()));
                new.insert(s.to_string(), value);
                items.push(Value::Object(new));
                Ok(())
            }
            _ => Err(Error::no_target(&format!("no value of {key} matches {f}"))),
        };
    }
    for i in hits {
        match sub {
            Some(s) => {
                object(&mut items[i])?.insert(s.to_string(), value.clone());
            }
            None => match (&mut items[i], &value) {
                (Value::Object(old), Value::Object(new)) if kind == Kind::Add => {
                    old.extend(new.clone())
                }
                (slot, _) => *slot = value.clone(),
            },
        }
    }
    Ok(())
}
