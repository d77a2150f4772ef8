//! The resources Postern serves over SCIM (RFC 7643): their attributes in
//! one table, from which the `/Schemas` documents are written and incoming
//! resources are checked, so what is announced and what is accepted cannot
//! drift apart.

use serde_json::{Map, Value, json};

use super::Error;
use super::filter::{self, member};

pub const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
pub const LIST: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const ERROR: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Boolean,
    Complex,
    Reference,
    DateTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutability {
    ReadWrite,
    ReadOnly,
    Immutable,
    WriteOnly,
}

/// One attribute of a schema.
#[derive(Debug)]
pub struct Attr {
    pub name: &'static str,
    pub kind: Kind,
    pub multi: bool,
    pub required: bool,
    pub case_exact: bool,
    pub mutability: Mutability,
    /// Only `userName` and a group's `displayName` are unique.
    pub unique: bool,
    pub subs: &'static [Attr],
}

const fn attr(name: &'static str, kind: Kind) -> Attr {
    Attr {
        name,
        kind,
        multi: false,
        required: false,
        case_exact: false,
        mutability: Mutability::ReadWrite,
        unique: false,
        subs: &[],
    }
}

const fn complex(name: &'static str, multi: bool, subs: &'static [Attr]) -> Attr {
    Attr {
        multi,
        subs,
        ..attr(name, Kind::Complex)
    }
}

const fn read_only(a: Attr) -> Attr {
    Attr {
        mutability: Mutability::ReadOnly,
        ..a
    }
}

const S: Kind = Kind::String;

/// `value`, `display`, `type`, `primary`: the sub-attributes of e-mail
/// addresses, phone numbers, roles and entitlements.
const TYPED_VALUES: &[Attr] = &[
    attr("value", S),
    attr("display", S),
    attr("type", S),
    attr("primary", Kind::Boolean),
];

pub const USER_ATTRS: &[Attr] = &[
    Attr {
        required: true,
        unique: true,
        ..attr("userName", S)
    },
    complex(
        "name",
        false,
        &[
            attr("formatted", S),
            attr("familyName", S),
            attr("givenName", S),
            attr("middleName", S),
            attr("honorificPrefix", S),
            attr("honorificSuffix", S),
        ],
    ),
    attr("displayName", S),
    attr("nickName", S),
    attr("profileUrl", Kind::Reference),
    attr("title", S),
    attr("userType", S),
    attr("preferredLanguage", S),
    attr("locale", S),
    attr("timezone", S),
    attr("active", Kind::Boolean),
    Attr {
        mutability: Mutability::WriteOnly,
        ..attr("password", S)
    },
    complex("emails", true, TYPED_VALUES),
    complex("phoneNumbers", true, TYPED_VALUES),
    complex(
        "addresses",
        true,
        &[
            attr("formatted", S),
            attr("streetAddress", S),
            attr("locality", S),
            attr("region", S),
            attr("postalCode", S),
            attr("country", S),
            attr("type", S),
            attr("primary", Kind::Boolean),
        ],
    ),
    read_only(complex(
        "groups",
        true,
        &[
            read_only(attr("value", S)),
            read_only(attr("$ref", Kind::Reference)),
            read_only(attr("display", S)),
            read_only(attr("type", S)),
        ],
    )),
    complex("entitlements", true, TYPED_VALUES),
    complex("roles", true, TYPED_VALUES),
];

pub const ENTERPRISE_ATTRS: &[Attr] = &[
    attr("employeeNumber", S),
    attr("costCenter", S),
    attr("organization", S),
    attr("division", S),
    attr("department", S),
    complex(
        "manager",
        false,
        &[
            attr("value", S),
            attr("$ref", Kind::Reference),
            read_only(attr("displayName", S)),
        ],
    ),
];

pub const GROUP_ATTRS: &[Attr] = &[
    Attr {
        required: true,
        unique: true,
        ..attr("displayName", S)
    },
    complex(
        "members",
        true,
        &[
            Attr {
                mutability: Mutability::Immutable,
                ..attr("value", S)
            },
            Attr {
                mutability: Mutability::Immutable,
                ..attr("$ref", Kind::Reference)
            },
            read_only(attr("display", S)),
            Attr {
                mutability: Mutability::Immutable,
                ..attr("type", S)
            },
        ],
    ),
];

/// A resource type: its core schema and the extensions it takes.
pub struct Resource {
    pub name: &'static str,
    pub endpoint: &'static str,
    pub core: &'static str,
    pub attrs: &'static [Attr],
    pub extensions: &'static [(&'static str, &'static [Attr])],
}

pub const USERS: Resource = Resource {
    name: "User",
    endpoint: "/Users",
    core: USER,
    attrs: USER_ATTRS,
    extensions: &[(ENTERPRISE, ENTERPRISE_ATTRS)],
};

pub const GROUPS: Resource = Resource {
    name: "Group",
    endpoint: "/Groups",
    core: GROUP,
    attrs: GROUP_ATTRS,
    extensions: &[],
};

fn find<'a>(attrs: &'a [Attr], name: &str) -> Option<&'a Attr> {
    attrs.iter().find(|a| a.name.eq_ignore_ascii_case(name))
}

impl Resource {
    /// The attribute table `urn` names: the core schema's or an
    /// extension's, or none for an unknown URN.
    pub fn attrs_of(&self, urn: Option<&str>) -> Option<&'static [Attr]> {
        match urn {
            None => Some(self.attrs),
            Some(u) if u.eq_ignore_ascii_case(self.core) => Some(self.attrs),
            Some(u) => self
                .extensions
                .iter()
                .find(|(e, _)| e.eq_ignore_ascii_case(u))
                .map(|(_, a)| *a),
        }
    }

    /// The definition of `name` (`sub`) under `urn`, with the common
    /// attributes `id`, `externalId` and `meta`.
    pub fn lookup(
        &self,
        urn: Option<&str>,
        name: &str,
        sub: Option<&str>,
    ) -> Option<&'static Attr> {
        let top = find(COMMON, name).or_else(|| find(self.attrs_of(urn)?, name))?;
        match sub {
            None => Some(top),
            Some(s) => find(top.subs, s),
        }
    }

    /// Checks an incoming resource against the table and returns it in
    /// canonical form: attribute names spelled as the schema spells them,
    /// boolean strings (`"False"`, as Entra ID sends) made booleans,
    /// read-only attributes dropped. `id` may be present only unchanged.
    pub fn canonical(&self, body: &Value, id: Option<&str>) -> Result<Value, Error> {
        let Value::Object(object) = body else {
            return Err(Error::syntax("the resource is not a JSON object"));
        };
        let mut out = Map::new();
        for (key, value) in object {
            if key.eq_ignore_ascii_case("schemas") || key.eq_ignore_ascii_case("meta") {
                continue;
            }
            if key.eq_ignore_ascii_case("id") {
                if let (Some(id), Some(given)) = (id, value.as_str())
                    && given != id
                {
                    return Err(Error::mutability("id cannot be changed"));
                }
                continue;
            }
            if key.eq_ignore_ascii_case("externalId") {
                match value {
                    Value::String(_) | Value::Null => {
                        out.insert("externalId".into(), value.clone());
                    }
                    _ => return Err(Error::value("externalId is not a string")),
                }
                continue;
            }
            if let Some((urn, attrs)) = self
                .extensions
                .iter()
                .find(|(u, _)| u.eq_ignore_ascii_case(key))
            {
                let Value::Object(inner) = value else {
                    return Err(Error::syntax(&format!("{urn} is not an object")));
                };
                let mut ext = Map::new();
                for (k, v) in inner {
                    // Some clients repeat the schema inside its object.
                    if k.eq_ignore_ascii_case("schemas") {
                        continue;
                    }
                    let a = find(attrs, k)
                        .ok_or_else(|| Error::syntax(&format!("unknown attribute {urn}:{k}")))?;
                    if let Some(v) = canonical_value(a, v)? {
                        ext.insert(a.name.into(), v);
                    }
                }
                out.insert((*urn).into(), Value::Object(ext));
                continue;
            }
            let a = find(self.attrs, key)
                .ok_or_else(|| Error::syntax(&format!("unknown attribute {key}")))?;
            if let Some(v) = canonical_value(a, value)? {
                out.insert(a.name.into(), v);
            }
        }
        for a in self.attrs.iter().filter(|a| a.required) {
            if member(&Value::Object(out.clone()), a.name)
                .is_none_or(|v| v.is_null() || v.as_str().is_some_and(str::is_empty))
            {
                return Err(Error::value(&format!("{} is required", a.name)));
            }
        }
        Ok(Value::Object(out))
    }

    /// `/Schemas` entries for the core schema and each extension.
    pub fn schemas(&self, base: &str) -> Vec<Value> {
        let mut out = vec![schema_doc(self.core, self.name, self.attrs, base)];
        for (urn, attrs) in self.extensions {
            out.push(schema_doc(urn, "EnterpriseUser", attrs, base));
        }
        out
    }

    /// The `/ResourceTypes` entry.
    pub fn resource_type(&self, base: &str) -> Value {
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": self.name,
            "name": self.name,
            "endpoint": self.endpoint,
            "description": self.name,
            "schema": self.core,
            "schemaExtensions": self.extensions.iter()
                .map(|(urn, _)| json!({"schema": urn, "required": false}))
                .collect::<Vec<_>>(),
            "meta": {
                "resourceType": "ResourceType",
                "location": format!("{base}/ResourceTypes/{}", self.name),
            },
        })
    }
}

const COMMON: &[Attr] = &[
    Attr {
        case_exact: true,
        ..read_only(attr("id", S))
    },
    Attr {
        case_exact: true,
        ..attr("externalId", S)
    },
    read_only(complex(
        "meta",
        false,
        &[
            attr("resourceType", S),
            attr("created", Kind::DateTime),
            attr("lastModified", Kind::DateTime),
            attr("location", Kind::Reference),
            attr("version", S),
        ],
    )),
];

/// One attribute's value checked and made canonical; `None` drops it
/// (read-only attributes a client sent back).
fn canonical_value(a: &Attr, value: &Value) -> Result<Option<Value>, Error> {
    if a.mutability == Mutability::ReadOnly {
        return Ok(None);
    }
    if value.is_null() {
        return Ok(Some(Value::Null));
    }
    if a.multi {
        let items = match value {
            Value::Array(items) => items.clone(),
            // A single value where a list belongs, as some clients send.
            single => vec![single.clone()],
        };
        let mut out = Vec::with_capacity(items.len());
        for item in &items {
            out.push(single(a, item)?);
        }
        return Ok(Some(Value::Array(out)));
    }
    single(a, value).map(Some)
}

fn single(a: &Attr, value: &Value) -> Result<Value, Error> {
    match (a.kind, value) {
        (Kind::Complex, Value::Object(inner)) => {
            let mut out = Map::new();
            for (k, v) in inner {
                let sub = find(a.subs, k)
                    .ok_or_else(|| Error::syntax(&format!("unknown attribute {}.{k}", a.name)))?;
                if let Some(v) = canonical_value(sub, v)? {
                    out.insert(sub.name.into(), v);
                }
            }
            Ok(Value::Object(out))
        }
        (Kind::Boolean, Value::Bool(_)) => Ok(value.clone()),
        (Kind::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true.into()),
        (Kind::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false.into()),
        (Kind::String | Kind::Reference | Kind::DateTime, Value::String(_)) => Ok(value.clone()),
        _ => Err(Error::value(&format!("{} has the wrong type", a.name))),
    }
}

/// What the filter evaluator needs to know of a resource type.
impl filter::Schema for Resource {
    fn case_exact(&self, name: &str, sub: Option<&str>) -> bool {
        self.lookup(None, name, sub)
            .or_else(|| {
                self.extensions
                    .iter()
                    .find_map(|(urn, _)| self.lookup(Some(urn), name, sub))
            })
            .is_some_and(|a| a.case_exact)
    }

    fn is_core(&self, urn: &str) -> bool {
        urn.eq_ignore_ascii_case(self.core)
    }
}

fn schema_doc(urn: &str, name: &str, attrs: &[Attr], base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": urn,
        "name": name,
        "description": name,
        "attributes": attrs.iter().map(attr_doc).collect::<Vec<_>>(),
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{urn}")},
    })
}

fn attr_doc(a: &Attr) -> Value {
    let mut doc = json!({
        "name": a.name,
        "type": match a.kind {
            Kind::String => "string",
            Kind::Boolean => "boolean",
            Kind::Complex => "complex",
            Kind::Reference => "reference",
            Kind::DateTime => "dateTime",
        },
        "multiValued": a.multi,
        "description": a.name,
        "required": a.required,
        "caseExact": a.case_exact,
        "mutability": match a.mutability {
            Mutability::ReadWrite => "readWrite",
            Mutability::ReadOnly => "readOnly",
            Mutability::Immutable => "immutable",
            Mutability::WriteOnly => "writeOnly",
        },
        "returned": if a.mutability == Mutability::WriteOnly { "never" } else { "default" },
        "uniqueness": if a.unique { "server" } else { "none" },
    });
    if a.kind == Kind::Complex {
        doc["subAttributes"] = a.subs.iter().map(attr_doc).collect();
    }
    if a.kind == Kind::Reference {
        doc["referenceTypes"] = json!(["external"]);
    }
    doc
}
