//! The two layers above the defaults, as `config` sources.
//!
//! Both produce the same tree: `section → key → text`, where a section name
//! with a dot (`source.1`, `plugin.corp`) becomes a sub-table (`source → 1`),
//! so that the `config` crate merges the ini file and the environment key by
//! key. Section names are case-insensitive (lower-cased); keys are upper-case.

use std::path::Path;

use config::{Map, Source, Value, ValueKind};

use super::Error;

type Tree = Map<String, Value>;

/// Inserts `key = value` of `section` into the tree.
fn insert(tree: &mut Tree, origin: &str, section: &str, key: &str, value: &str) {
    let origin = origin.to_string();
    let section = section.trim().to_ascii_lowercase();
    let (top, sub) = match section.split_once('.') {
        Some((top, sub)) => (top.to_string(), Some(sub.to_string())),
        None => (section, None),
    };
    let leaf = Value::new(Some(&origin), ValueKind::String(value.to_string()));
    let top_table = tree
        .entry(top)
        .or_insert_with(|| Value::new(Some(&origin), ValueKind::Table(Map::new())));
    let ValueKind::Table(table) = &mut top_table.kind else {
        return;
    };
    let table = match sub {
        Some(sub) => {
            let entry = table
                .entry(sub)
                .or_insert_with(|| Value::new(Some(&origin), ValueKind::Table(Map::new())));
            match &mut entry.kind {
                ValueKind::Table(t) => t,
                _ => return,
            }
        }
        None => table,
    };
    table.insert(key.trim().to_ascii_uppercase(), leaf);
}

/// The ini file, read once with `rust-ini`.
#[derive(Debug, Clone)]
pub struct IniFile {
    tree: Tree,
}

impl IniFile {
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let ini = ini::Ini::load_from_str(&text).map_err(|e| Error::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let origin = path.display().to_string();
        let mut tree = Tree::new();
        for (section, props) in &ini {
            // Keys before the first section header (Gitea's APP_NAME, RUN_USER)
            // land in a section of their own, reported as unknown.
            let section = section.unwrap_or("default");
            for (key, value) in props.iter() {
                insert(&mut tree, &origin, section, key, value);
            }
        }
        Ok(IniFile { tree })
    }
}

impl Source for IniFile {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Tree, config::ConfigError> {
        Ok(self.tree.clone())
    }
}

/// `POSTERN__SECTION__KEY` variables; `_0X2E_` in the section stands for a dot.
#[derive(Debug, Clone)]
pub struct Environment {
    tree: Tree,
}

impl Environment {
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut tree = Tree::new();
        for (name, value) in vars {
            let Some(rest) = name.strip_prefix("POSTERN__") else {
                continue;
            };
            let Some((section, key)) = rest.split_once("__") else {
                continue;
            };
            let section = section.replace("_0X2E_", ".").replace("_0x2e_", ".");
            insert(&mut tree, &format!("env {name}"), &section, key, &value);
        }
        Environment { tree }
    }

    /// The `(section, KEY)` pairs the environment sets.
    pub fn keys(&self) -> std::collections::BTreeSet<(String, String)> {
        let mut keys = std::collections::BTreeSet::new();
        for (top, value) in &self.tree {
            let ValueKind::Table(table) = &value.kind else {
                continue;
            };
            for (name, value) in table {
                match &value.kind {
                    ValueKind::Table(sub) => {
                        for key in sub.keys() {
                            keys.insert((format!("{top}.{name}"), key.clone()));
                        }
                    }
                    _ => {
                        keys.insert((top.clone(), name.clone()));
                    }
                }
            }
        }
        keys
    }
}

impl Source for Environment {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Tree, config::ConfigError> {
        Ok(self.tree.clone())
    }
}
