//! The docs are held to the code. `docs/configuration.md` is the one list of settings an
//! operator reads: every `TIDINGS_…` variable the product's code names must have a row there,
//! so a new setting cannot ship undocumented, and every row must name a variable some code
//! reads, so a removed one does not linger. The README is the front door: short, and linking
//! every page under `docs/`, so no page is orphaned and no link leads nowhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The README's most lines: a front door, with the topics on their own pages under `docs/`.
const README_MAX_LINES: usize = 400;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|error| panic!("{relative}: {error}"))
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

/// The `.rs` files under `folder` of the root crate and of every crate under `crates/`.
fn workspace_sources(folder: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    sources(&root().join(folder), &mut files);
    let crates = std::fs::read_dir(root().join("crates")).expect("crates/");
    for krate in crates.flatten() {
        sources(&krate.path().join(folder), &mut files);
    }
    files
}

/// The `TIDINGS_…` words of `text`.
fn names(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("TIDINGS_") && word.len() > "TIDINGS_".len())
}

/// The `TIDINGS_…` names in `text`, up to its unit tests (`#[cfg(test)]`), whose made-up
/// names (`TIDINGS_X`) are not settings.
fn variables(text: &str) -> BTreeSet<String> {
    let product = text.split("#[cfg(test)]").next().unwrap_or("");
    names(product).map(str::to_owned).collect()
}

/// The variables with a row in the configuration page's tables (`| `TIDINGS_…` | …`).
fn documented_settings() -> BTreeSet<String> {
    read("docs/configuration.md")
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_setting_the_code_reads_is_in_the_configuration_table() {
    let files = workspace_sources("src");
    assert!(files.len() > 20, "the sources were not found: {files:?}");
    let table_rows = documented_settings();
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
        "settings named in the code but without a row in docs/configuration.md: {missing:#?}"
    );
}

#[test]
fn every_setting_in_the_configuration_table_is_read_by_some_code() {
    let table_rows = documented_settings();
    assert!(
        table_rows.len() > 50,
        "too few rows found in docs/configuration.md ({}): is the parse right?",
        table_rows.len()
    );
    // The product's code, and the tests' and benches' own settings (`TIDINGS_TEST_…`).
    let mut named = BTreeSet::new();
    for folder in ["src", "tests", "benches"] {
        for file in workspace_sources(folder) {
            let text = std::fs::read_to_string(&file).unwrap();
            named.extend(names(&text).map(str::to_owned));
        }
    }
    let stale: Vec<_> = table_rows.difference(&named).collect();
    assert!(
        stale.is_empty(),
        "rows of docs/configuration.md that no code reads (remove them, or fix the name): \
         {stale:#?}"
    );
}

#[test]
fn unit_test_names_are_not_taken_for_settings() {
    let text = "const A: &str = \"TIDINGS_REAL\";\n#[cfg(test)]\nmod tests { \"TIDINGS_X\" }";
    assert_eq!(variables(text), BTreeSet::from(["TIDINGS_REAL".to_owned()]));
}

/// The targets of the Markdown links (`[text](target)`) of `text`, outside fenced code.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            targets.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    targets
}

/// The Markdown pages directly under `docs/`, by file name.
fn docs_pages() -> BTreeSet<String> {
    std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .collect()
}

#[test]
fn the_readme_is_a_short_front_door_to_every_docs_page() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines < README_MAX_LINES,
        "README.md has {lines} lines; keep it under {README_MAX_LINES} and move topics to docs/"
    );
    let linked: BTreeSet<String> = link_targets(&readme)
        .iter()
        .filter_map(|target| target.strip_prefix("docs/"))
        .map(|page| page.split('#').next().unwrap_or(page).to_owned())
        .filter(|page| page.ends_with(".md") && !page.contains('/'))
        .collect();
    let pages = docs_pages();
    assert!(pages.len() > 5, "too few pages under docs/: {pages:?}");
    let unlinked: Vec<_> = pages.difference(&linked).collect();
    assert!(
        unlinked.is_empty(),
        "pages under docs/ that README.md does not link: {unlinked:?}"
    );
    let missing: Vec<_> = linked.difference(&pages).collect();
    assert!(
        missing.is_empty(),
        "README.md links pages that docs/ does not have: {missing:?}"
    );
}

#[test]
fn every_relative_link_of_the_readme_and_the_docs_leads_to_a_file() {
    let mut documents = vec!["README.md".to_owned()];
    documents.extend(docs_pages().into_iter().map(|page| format!("docs/{page}")));
    let mut broken = Vec::new();
    for document in &documents {
        let folder = Path::new(document).parent().unwrap_or(Path::new(""));
        for target in link_targets(&read(document)) {
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            if !root().join(folder).join(path).exists() {
                broken.push(format!("{document}: {target}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to files that do not exist: {broken:#?}"
    );
}

#[test]
fn link_targets_are_read_outside_code_only() {
    let text = "See [a](docs/a.md#x) and [b](b.md).\n```\n[c](c.md)\n```\n[d](https://d)";
    assert_eq!(
        link_targets(text),
        ["docs/a.md#x", "b.md", "https://d"].map(str::to_owned)
    );
}
