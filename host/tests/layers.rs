//! The host's layers (docs/architecture.md), held against every
//! `crate::…`, `super::…` and `self::…` path in `host/src`: a module may
//! name modules of its own layer or of a layer below, never above; among the
//! transports (API, pages, git) none names another; and no group of modules
//! names each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom to top. A module belongs to the entry with the longest prefix of
/// its path; `plugins::builtin` (the built-in plugins' names) and
/// `git::bare`/`git::memo`/`git::objects`/`git::pushes` (bare repositories,
/// what readers keep, reading, pushes in progress) are
/// leaves that sit with the foundation although their parents sit higher.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "config",
            "allocator",
            "db",
            "secrets",
            "credentials",
            "nesting",
            "stored_sources",
            "plugins::builtin",
            "git::bare",
            "git::memo",
            "git::merges",
            "git::objects",
            "git::pushes",
        ],
    ),
    ("host capabilities", &["directory", "saml"]),
    ("plugin runtime", &["plugins"]),
    ("application state", &["state"]),
    // The domain, in four bands: what the records share (the cluster,
    // rate limits, settings, the webhook queue they announce changes on);
    // the records; the rules that decide over them; and sign-in, which
    // applies the rules.
    (
        "domain: shared",
        &[
            "audit",
            "cluster",
            "ratelimit",
            "revocation",
            "settings",
            "webhooks",
        ],
    ),
    (
        "domain: records",
        &[
            "roles", "users", "keys", "tokens", "sessions", "repos", "orgs", "issues", "statuses",
        ],
    ),
    (
        "domain: rules",
        &["access", "protection", "second_factor", "content", "pulls"],
    ),
    (
        "domain: sign-in",
        &["identity", "oauth_provider", "authn", "offboarding", "scim"],
    ),
    ("transports", &["api", "web", "git"]),
    ("top", &["server", "cli"]),
];

/// The layer index and the layer entry (`api`, `plugins::builtin`, …) of a
/// module.
fn layer_of(module: &str) -> Option<(usize, &'static str)> {
    let mut best: Option<(usize, &'static str)> = None;
    for (i, (_, entries)) in LAYERS.iter().enumerate() {
        for entry in entries.iter() {
            let matches = module == *entry || module.starts_with(&format!("{entry}::"));
            if matches && best.is_none_or(|(_, b)| entry.len() > b.len()) {
                best = Some((i, entry));
            }
        }
    }
    best
}

fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("host/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .expect("under src")
                    .with_extension("")
                    .to_string_lossy()
                    .replace('/', "::");
                if rel != "lib" && rel != "main" {
                    let text = std::fs::read_to_string(&path).expect("a source file is readable");
                    out.insert(rel, text);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// Every path `module` names as `crate::a::b…`, `super::a…` or `self::a…`
/// (made absolute), with `use crate::{a, b::{c, d}}` groups expanded.
/// Comments are left out: a doc link is not an import. A file is its own
/// module (`a.rs` beside `a/`), so `self` is the file's module and each
/// `super` one step up; an inline `mod tests` must name what it uses
/// through `crate::` or one `super::`.
fn paths(module: &str, text: &str) -> Vec<String> {
    let text: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let parts: Vec<&str> = module.split("::").collect();
    let mut out = Vec::new();
    for keyword in ["crate::", "super::", "self::"] {
        let mut rest = text.as_str();
        while let Some(i) = rest.find(keyword) {
            // `postern_crate::x`, `a::super::` or `my_self::` are other names.
            let before = rest[..i].chars().last();
            rest = &rest[i + keyword.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let base = match keyword {
                "crate::" => String::new(),
                "self::" => module.to_string(),
                _ => {
                    let mut ups = 1;
                    while let Some(r) = rest.strip_prefix("super::") {
                        ups += 1;
                        rest = r;
                    }
                    parts[..parts.len().saturating_sub(ups)].join("::")
                }
            };
            expand(&base, rest, &mut out);
        }
    }
    out
}

/// Reads one path (or group) at the start of `text`, below `prefix`.
fn expand(prefix: &str, text: &str, out: &mut Vec<String>) {
    let ident: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let ident = ident.trim_end_matches(':');
    let after = &text[ident.len()..];
    let path = match (prefix.is_empty(), ident.is_empty()) {
        (true, _) => ident.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}::{ident}"),
    };
    if let Some(group) = after.trim_start_matches(':').strip_prefix('{') {
        let mut depth = 0;
        let mut item = String::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&path, item.trim(), out);
                    item.clear();
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        if !item.trim().is_empty() {
            expand(&path, item.trim(), out);
        }
    } else if !path.is_empty() {
        out.push(path);
    }
}

/// The module a path names: its longest prefix that is a module.
fn resolve(path: &str, mods: &BTreeMap<String, String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| mods.contains_key(m))
}

fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    mods.iter()
        .map(|(m, text)| {
            let to = paths(m, text)
                .iter()
                .filter_map(|p| resolve(p, mods))
                .filter(|t| t != m)
                .collect();
            (m.clone(), to)
        })
        .collect()
}

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_module_has_a_layer() {
    let missing: Vec<String> = modules(&src())
        .into_keys()
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a layer (add them to LAYERS and docs/architecture.md): {missing:?}"
    );
}

/// The map in docs/architecture.md names every entry of the table above
/// (as `a` or, for a nested entry, `a/b`), so a new layer entry cannot be
/// left out of it.
#[test]
fn every_layer_entry_is_on_the_map() {
    let map = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md"),
    )
    .expect("docs/architecture.md is readable");
    let missing: Vec<String> = LAYERS
        .iter()
        .flat_map(|(_, entries)| entries.iter())
        .map(|entry| entry.replace("::", "/"))
        .filter(|name| !map.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "layer entries docs/architecture.md does not name: {missing:?}"
    );
}

#[test]
fn imports_point_down() {
    let mods = modules(&src());
    let mut wrong = Vec::new();
    for (from, to) in edges(&mods) {
        let Some((lf, ef)) = layer_of(&from) else {
            continue;
        };
        for t in to {
            let Some((lt, et)) = layer_of(&t) else {
                continue;
            };
            // Transports stand side by side: each uses the domain, none
            // another transport.
            let sideways = lf == lt && LAYERS[lf].0 == "transports" && ef != et;
            if lt > lf || sideways {
                wrong.push(format!(
                    "{from} ({}) uses {t} ({})",
                    LAYERS[lf].0, LAYERS[lt].0
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that point up or sideways:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_import_circles() {
    // A module and the modules inside it are one unit here: a child naming
    // its parent's error type is not a circle.
    let graph: BTreeMap<String, BTreeSet<String>> = edges(&modules(&src()))
        .into_iter()
        .map(|(m, to)| {
            let outside = to
                .into_iter()
                .filter(|t| !t.starts_with(&format!("{m}::")) && !m.starts_with(&format!("{t}::")))
                .collect();
            (m, outside)
        })
        .collect();
    // Tarjan's strongly connected components.
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        circles: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.graph.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.circles.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    assert!(
        walk.circles.is_empty(),
        "import circles: {:?}",
        walk.circles
    );
}

#[test]
fn the_reader_sees_groups_and_nesting() {
    let read = paths(
        "m",
        "use crate::{a, b::{c, d::E}};\nlet x = crate::f::g(); let y = my_crate::h; // crate::i",
    );
    assert_eq!(read, ["a", "b::c", "b::d::E", "f::g"]);
    let read = paths(
        "p::q::r",
        "use super::{s, t::U};\nsuper::super::v(); self::w::X; a::super::y",
    );
    assert_eq!(read, ["p::q::s", "p::q::t::U", "p::v", "p::q::r::w::X"]);
    assert_eq!(
        layer_of("plugins::builtin").map(|l| l.1),
        Some("plugins::builtin")
    );
    assert_eq!(layer_of("plugins::calls").map(|l| l.1), Some("plugins"));
    assert_eq!(layer_of("git::ssh").map(|l| l.1), Some("git"));
}
