//! The rule of one integration-test binary per crate: `tests/main.rs` declares every test file
//! as a module, and cargo is told (`autotests = false`) not to make a binary of each file. A
//! file left out would then never be compiled nor run; [`every_test_file_is_a_module`] fails on
//! it instead, and this crate's own test runs it on every crate of the workspace.

use std::collections::BTreeSet;
use std::path::Path;

/// Panics naming each `tests/NAME.rs` file and `tests/NAME/mod.rs` folder of the crate at
/// `manifest_dir` that `tests/main.rs` does not declare with `mod NAME;`.
pub fn every_test_file_is_a_module(manifest_dir: &str) {
    let tests = Path::new(manifest_dir).join("tests");
    let main = std::fs::read_to_string(tests.join("main.rs")).expect("read tests/main.rs");
    let declared: BTreeSet<String> = main.lines().filter_map(declared_module).collect();
    let missing: Vec<String> = test_modules(&tests)
        .into_iter()
        .filter(|name| !declared.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "{manifest_dir}/tests/main.rs must declare every test file as a module (else it never \
         runs); missing: {missing:?}"
    );
}

/// The module a line such as `mod api_accounts;` or `pub mod support;` declares.
fn declared_module(line: &str) -> Option<String> {
    let line = line.trim();
    let line = line.strip_prefix("pub ").unwrap_or(line);
    let name = line.strip_prefix("mod ")?.strip_suffix(';')?.trim();
    Some(name.to_owned())
}

/// The modules under `tests`: `NAME.rs` files (but `main.rs`) and folders with a `mod.rs`.
fn test_modules(tests: &Path) -> BTreeSet<String> {
    let entries = std::fs::read_dir(tests).expect("read tests/");
    entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_stem()?.to_str()?.to_owned();
            let is_file_module = path.extension().is_some_and(|ext| ext == "rs") && name != "main";
            let is_folder_module = path.join("mod.rs").is_file();
            (is_file_module || is_folder_module).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packages of the workspace whose integration tests are one binary (`autotests = false`
    /// in their manifest), as folders.
    fn single_binary_packages(workspace: &Path) -> Vec<std::path::PathBuf> {
        let crates = std::fs::read_dir(workspace.join("crates")).expect("read crates/");
        let mut packages: Vec<_> = crates
            .filter_map(|entry| Some(entry.ok()?.path()))
            .collect();
        packages.push(workspace.to_path_buf());
        packages.retain(|package| {
            std::fs::read_to_string(package.join("Cargo.toml"))
                .is_ok_and(|manifest| manifest.contains("\nautotests = false"))
        });
        packages
    }

    #[test]
    fn every_crate_declares_each_test_file() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let packages = single_binary_packages(&workspace);
        assert!(!packages.is_empty(), "no package has one test binary");
        for package in packages {
            every_test_file_is_a_module(package.to_str().expect("a UTF-8 path"));
        }
    }

    #[test]
    fn modules_are_read_from_declarations() {
        assert_eq!(
            declared_module("mod api_accounts;"),
            Some("api_accounts".into())
        );
        assert_eq!(
            declared_module("  pub mod support;"),
            Some("support".into())
        );
        assert_eq!(declared_module("mod inline {"), None);
        assert_eq!(declared_module("// mod gone;"), None);
    }

    #[test]
    fn a_test_file_left_out_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let tests = dir.path().join("tests");
        std::fs::create_dir_all(tests.join("support")).unwrap();
        std::fs::create_dir_all(tests.join("data")).unwrap();
        std::fs::write(tests.join("support/mod.rs"), "").unwrap();
        std::fs::write(tests.join("kept.rs"), "").unwrap();
        std::fs::write(tests.join("forgotten.rs"), "").unwrap();
        std::fs::write(tests.join("main.rs"), "mod kept;\nmod support;\n").unwrap();
        let manifest = dir.path().to_str().unwrap().to_owned();
        let outcome = std::panic::catch_unwind(|| every_test_file_is_a_module(&manifest));
        let message = *outcome.unwrap_err().downcast::<String>().unwrap();
        assert!(message.contains("\"forgotten\""), "{message}");
        assert!(
            !message.contains("kept") && !message.contains("data"),
            "{message}"
        );
    }
}
