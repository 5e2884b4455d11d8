//! The README's configuration table is the one list of settings an operator reads: every
//! `TIDINGS_…` variable the product's code names must have a row there, so a new setting
//! cannot ship undocumented.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The `TIDINGS_…` names in `text`, up to its unit tests (`#[cfg(test)]`), whose made-up
/// names (`TIDINGS_X`) are not settings.
fn variables(text: &str) -> BTreeSet<String> {
    let product = text.split("#[cfg(test)]").next().unwrap_or("");
    product
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("TIDINGS_") && word.len() > "TIDINGS_".len())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_setting_the_code_reads_is_in_the_configuration_table() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    let crates = std::fs::read_dir(root().join("crates")).expect("crates/");
    for krate in crates.flatten() {
        sources(&krate.path().join("src"), &mut files);
    }
    assert!(files.len() > 20, "the sources were not found: {files:?}");
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let table_rows: BTreeSet<String> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    let mut missing = BTreeSet::new();
    let mut seen = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for variable in variables(&text) {
            seen += 1;
            if !table_rows.contains(&variable) {
                missing.insert(format!("{variable} ({})", file.display()));
            }
        }
    }
    assert!(
        seen > 20,
        "too few settings found ({seen}): is the scan right?"
    );
    assert!(
        missing.is_empty(),
        "settings named in the code but without a row in the README's configuration table: \
         {missing:#?}"
    );
}

#[test]
fn unit_test_names_are_not_taken_for_settings() {
    let text = "const A: &str = \"TIDINGS_REAL\";\n#[cfg(test)]\nmod tests { \"TIDINGS_X\" }";
    assert_eq!(variables(text), BTreeSet::from(["TIDINGS_REAL".to_owned()]));
}
