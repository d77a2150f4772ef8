//! The released WIT files are frozen: plugins built against a version keep
//! working only while its file is the one they were built against. A change
//! goes into a new version (`plugin-api/wit/PENDING_CHANGES.md`).

use std::path::Path;

use sha2::{Digest, Sha256};

/// Each released file and the sha256 it was released with.
const RELEASED: &[(&str, &str)] = &[
    (
        "v0.1.0/plugin.wit",
        "e397eb02f90a69116a2925dffa792e00ca506d0ddfc4e2b44baffa10375a96e3",
    ),
    (
        "v0.2.0/plugin.wit",
        "3240ff1c6462aaec4eb0ee56e445e8358356fdea0ad269aadb4b982541fb1ce1",
    ),
    (
        "v0.3.0/plugin.wit",
        "15ce268aff4e7f91bb849381ac243b5aa3ad3cb6ec002e86725659bbfaa119fd",
    ),
    (
        "saml/saml.wit",
        "08a17fb0f70bc8f08f82ec647b1b6388fabe38725162b2dc0f7afa9c55aa6546",
    ),
];

#[test]
fn the_released_wit_files_are_frozen() {
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-api/wit");
    let changed: Vec<String> = RELEASED
        .iter()
        .filter_map(|(file, expected)| {
            let bytes = std::fs::read(wit.join(file)).unwrap_or_default();
            let actual = hex::encode(Sha256::digest(&bytes));
            (actual != *expected).then(|| format!("{file} (sha256 {actual})"))
        })
        .collect();
    assert!(
        changed.is_empty(),
        "released WIT files changed: {changed:?}; a released version is frozen, \
         so put the change in a new version (plugin-api/wit/PENDING_CHANGES.md)"
    );
}
