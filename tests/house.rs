//! House rules that keep each crate readable as it grows, checked on the source itself:
//!
//! - **No import circle inside a crate.** A module that imports another, directly or through
//!   others, is not imported back: shared pieces live one floor down, so a change to a handler
//!   cannot ripple into the module it stands on.
//! - **Functions one screen long**: at most [`MAX_FUNCTION_LINES`] lines from `fn` to the closing
//!   brace; longer ones are split into named phases. This holds for the integration tests in each
//!   package's `tests/` too, a test written as `on_both_engines!(name, |db| { … })` counting as a
//!   function `name`, since a test that scrolls past a screen hides what it checks.
//!
//! - **Crates follow the data's path, one way**: each package's shipped dependencies
//!   (`[dependencies]`, `[build-dependencies]`) on the workspace's crates are on a lower floor of
//!   [`CRATE_FLOORS`]: pure crates, then fetching, storing, the worker, the server, the binary,
//!   and what measures above all. Tests may reach up (a dev-dependency on `tidings-testkit`
//!   brings a real store to `tidings-fetch`'s tests), since tests never ship.
//!
//! Offenders still to fix are listed in [`CYCLE_ALLOWLIST`] and [`LONG_FUNCTION_ALLOWLIST`], both
//! empty today. Each entry goes when it is fixed, and a listed offender that no longer offends
//! fails the test too, so the lists only shrink.
//!
//! The reader is a small tokenizer (strings, characters and comments skipped), not a Rust parser,
//! so that the check needs no dependency. From each crate root it follows `mod` declarations to
//! the module tree, then counts as imports the `use` trees and the paths in code that start with
//! `crate::`, `super::`, `self::`, a child module's name or a name a `use` brought in. A re-export
//! (`pub use`, `pub(crate) use`) is not an import of the module that makes it: a path through it
//! is followed to the module that defines the item, so `crate::Store` counts as an import of the
//! module where `Store` lives. An inline module is a module of its own, so a `mod tests { … }` that
//! nothing imports closes no circle.
//!
//! `HOUSE_REPORT=1 cargo test --test root house:: -- --nocapture` prints every circle with all the imports
//! inside it, and every long function, for whoever untangles them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The longest function allowed, in lines from its `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 150;

/// Modules in an import circle still to untangle (`crate::module`, the crate root as the crate's
/// name alone). Empty since every circle was untangled: a new circle is untangled, not listed.
const CYCLE_ALLOWLIST: &[&str] = &[];

/// The workspace's packages by floor, lowest first: a package's shipped dependencies on the
/// workspace's packages are on floors below its own. Pure crates (text, parsing, tags, rules,
/// vectors, duplicates) need no network and no database; `tidings-fetch` is the guarded HTTP
/// client; `tidings-store` the database; `tidings-testkit` the tests' real stores and feeds;
/// then the worker, the server, the binary (`tidings`) and the benchmarks. A new package gets
/// its floor here, or the test fails.
const CRATE_FLOORS: &[&[&str]] = &[
    &["tidings-text", "tidings-feed"],
    &[
        "tidings-tags",
        "tidings-rules",
        "tidings-summary",
        "tidings-scrape",
        "tidings-extract",
        "tidings-mail",
    ],
    &["tidings-embed", "tidings-cluster"],
    &["tidings-fetch"],
    &["tidings-notify"],
    &["tidings-store"],
    &["tidings-testkit"],
    &["tidings-worker"],
    &["tidings-server"],
    &["tidings"],
    &["tidings-bench"],
];

/// Functions longer than [`MAX_FUNCTION_LINES`] still to split (`crate::module::Type::function`,
/// an integration test as `package(test)::module::test`). Empty since the last long test was
/// split into named phases: a new long function is split, not listed.
const LONG_FUNCTION_ALLOWLIST: &[&str] = &[];

#[test]
fn no_crate_has_an_import_circle() {
    let crates = workspace_crates();
    let allowed: BTreeSet<&str> = CYCLE_ALLOWLIST.iter().copied().collect();
    let mut offenders = BTreeSet::new();
    let mut report = String::new();
    for krate in &crates {
        for circle in krate.circles() {
            let names: Vec<String> = circle.iter().map(|&m| krate.node_name(m)).collect();
            let new = names.iter().any(|name| !allowed.contains(name.as_str()));
            if new || std::env::var_os("HOUSE_REPORT").is_some() {
                report.push_str(&krate.describe_circle(&circle));
            }
            offenders.extend(names);
        }
    }
    let new: Vec<&String> = offenders
        .iter()
        .filter(|name| !allowed.contains(name.as_str()))
        .collect();
    let fixed: Vec<&&str> = allowed
        .iter()
        .filter(|name| !offenders.contains(**name))
        .collect();
    if std::env::var_os("HOUSE_REPORT").is_some() {
        eprintln!("{report}{} modules in circles", offenders.len());
    }
    assert!(
        new.is_empty() && fixed.is_empty(),
        "{report}\nmodules in an import circle that CYCLE_ALLOWLIST does not list: {new:?}\n\
         listed modules no longer in a circle (remove them from CYCLE_ALLOWLIST): {fixed:?}"
    );
}

#[test]
fn crates_depend_one_way_along_the_datas_path() {
    let floor_of = |name: &str| CRATE_FLOORS.iter().position(|floor| floor.contains(&name));
    let names: BTreeSet<String> = packages()
        .iter()
        .map(|p| package_name(&std::fs::read_to_string(p.join("Cargo.toml")).unwrap()))
        .collect();
    let mut wrong = Vec::new();
    for package in packages() {
        let manifest = std::fs::read_to_string(package.join("Cargo.toml")).unwrap();
        let name = package_name(&manifest);
        let Some(floor) = floor_of(&name) else {
            wrong.push(format!("{name} has no floor in CRATE_FLOORS"));
            continue;
        };
        for dependency in shipped_dependencies(&manifest) {
            if !names.contains(&dependency) {
                continue;
            }
            match floor_of(&dependency) {
                Some(below) if below < floor => {}
                _ => wrong.push(format!(
                    "{name} depends on {dependency}, not on a lower floor"
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn shipped_dependencies_leave_out_the_tests() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\ntidings-text.workspace = true\n\
                    serde = \"1\"\n[dev-dependencies]\ntidings-testkit = { path = \"t\" }\n\
                    [target.'cfg(unix)'.dependencies]\ntidings-feed = \"0.1\"\n";
    assert_eq!(
        shipped_dependencies(manifest),
        ["tidings-text", "serde", "tidings-feed"]
    );
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let allowed: BTreeSet<&str> = LONG_FUNCTION_ALLOWLIST.iter().copied().collect();
    let mut long = BTreeMap::new();
    for krate in workspace_crates().into_iter().chain(test_crates()) {
        for function in krate.functions {
            if function.lines > MAX_FUNCTION_LINES {
                long.insert(function.name, (function.lines, function.place));
            }
        }
    }
    if std::env::var_os("HOUSE_REPORT").is_some() {
        for (name, (lines, place)) in &long {
            eprintln!("{lines:>5} lines  {name}  ({place})");
        }
    }
    let new: Vec<String> = long
        .iter()
        .filter(|(name, _)| !allowed.contains(name.as_str()))
        .map(|(name, (lines, place))| format!("{name} ({lines} lines, {place})"))
        .collect();
    let fixed: Vec<&&str> = allowed
        .iter()
        .filter(|name| !long.contains_key(**name))
        .collect();
    assert!(
        new.is_empty() && fixed.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines that LONG_FUNCTION_ALLOWLIST does not list \
         (split them into named phases): {new:#?}\n\
         listed functions no longer over {MAX_FUNCTION_LINES} lines (remove them from \
         LONG_FUNCTION_ALLOWLIST): {fixed:?}"
    );
}

/// The server's handlers stand on its foundation (`crate::base`) and on libraries, never on each
/// other, so that a change to one handler touches no other. A handler is a child of one of the
/// server's handler floors (`api`, `sync`, `mfa`, `oidc`) that serves routes (it or a module
/// inside it defines `router`), with every module inside it: `sync::greader` and its parts are
/// one handler. The floors' other children (the second factors' algorithms, the OpenID
/// provider's sign-in start, the sync adapters' shared pieces, the OpenAPI document's
/// completion) are libraries handlers may use.
#[test]
fn no_server_handler_imports_another_handler() {
    let krate = workspace_crates()
        .into_iter()
        .find(|krate| krate.name == "tidings_server")
        .expect("the server crate");
    let serves_routes = |unit: &str| {
        krate.functions.iter().any(|f| {
            f.name.strip_prefix(unit).is_some_and(|rest| {
                rest.starts_with("::") && rest.ends_with("::router") && !rest.contains("::tests")
            })
        })
    };
    let handler_of = |module: usize| -> Option<String> {
        let path = &krate.modules[module].path;
        let (floor, name) = (path.first()?, path.get(1)?);
        if !matches!(floor.as_str(), "api" | "sync" | "mfa" | "oidc") {
            return None;
        }
        let unit = format!("{}::{floor}::{name}", krate.name);
        serves_routes(&unit).then_some(unit)
    };
    let handlers: BTreeSet<String> = (0..krate.modules.len()).filter_map(handler_of).collect();
    for expected in [
        "api::items",
        "api::accounts",
        "sync::greader",
        "oidc::routes",
    ] {
        assert!(
            handlers.contains(&format!("tidings_server::{expected}")),
            "{expected} is not seen as a handler: {handlers:?}"
        );
    }
    let crossings: Vec<String> = krate
        .edges
        .iter()
        .filter_map(|(&(from, to), place)| {
            let (own, other) = (handler_of(from)?, handler_of(to)?);
            (own != other).then(|| {
                let (from, to) = (krate.node_name(from), krate.node_name(to));
                format!("  {from} -> {to}  ({place})")
            })
        })
        .collect();
    assert!(
        crossings.is_empty(),
        "server handlers import other handlers; move what they share to crate::base:\n{}",
        crossings.join("\n")
    );
}

/// The reader checks itself on small sources, so that a blind spot shows here and not as a
/// circle nobody sees.
#[test]
fn the_reader_sees_imports_reexports_and_function_lengths() {
    let files = [
        (
            "lib.rs",
            "mod a; mod b; mod c;\npub use a::Thing;\n\
             fn root() { let s = \"crate::c::x } {\"; let c = '}'; let l: &'static str = s; }",
        ),
        // `a` uses `b` through a path in code; `b` names `Thing` through the root's re-export.
        // A test module that nothing imports closes no circle.
        (
            "a.rs",
            "pub struct Thing;\nfn f() { crate::b::g(); }\nmod tests { use crate::c; }\n\
             struct S { c: crate::c::C }",
        ),
        (
            "b.rs",
            "use crate::Thing;\npub fn g() {}\n// use crate::c;\n\
             on_both_engines!(t, |db| {\n fn inner() {}\n});\n",
        ),
        (
            "c.rs",
            "/* use super::a; */ mod inner { use super::super::a::Thing; }\npub struct C;\n",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("tidings-house-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let krate = Crate::read("demo", &dir.join("lib.rs"));
    let circles: Vec<Vec<String>> = krate
        .circles()
        .iter()
        .map(|circle| circle.iter().map(|&m| krate.node_name(m)).collect())
        .collect();
    assert_eq!(circles, [["demo::a", "demo::b"]]);
    let edges: BTreeSet<(String, String)> = krate
        .edges
        .keys()
        .map(|&(from, to)| (krate.node_name(from), krate.node_name(to)))
        .collect();
    let expected = [
        ("demo::a", "demo::b"),
        ("demo::b", "demo::a"),
        ("demo::a", "demo::c"),
        ("demo::a::tests", "demo::c"),
        ("demo::c::inner", "demo::a"),
    ];
    let expected: BTreeSet<(String, String)> = expected
        .iter()
        .map(|(from, to)| (from.to_string(), to.to_string()))
        .collect();
    assert_eq!(edges, expected);
    let functions: Vec<(&str, usize)> = krate
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.lines))
        .collect();
    assert_eq!(
        functions,
        [
            ("demo::root", 1),
            ("demo::a::f", 1),
            ("demo::b::g", 1),
            ("demo::b::t", 3),
            ("demo::b::t::inner", 1)
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- The workspace ----

/// The workspace's package folders: the root package, then `crates/*` in order.
fn packages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut packages = vec![root.to_path_buf()];
    let mut members: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    members.sort();
    packages.extend(members);
    packages
}

/// Every crate of the workspace: each package's library, binary and `src/bin/*` roots.
fn workspace_crates() -> Vec<Crate> {
    let mut crates = Vec::new();
    for package in packages() {
        let manifest = std::fs::read_to_string(package.join("Cargo.toml")).unwrap();
        let name = package_name(&manifest).replace('-', "_");
        let src = package.join("src");
        let lib = src.join("lib.rs");
        if lib.is_file() {
            crates.push(Crate::read(&name, &lib));
        }
        let main = src.join("main.rs");
        if main.is_file() {
            let bin_name = if lib.is_file() {
                format!("{name}(bin)")
            } else {
                name.clone()
            };
            crates.push(Crate::read(&bin_name, &main));
        }
        if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
            let mut bins: Vec<PathBuf> = bins.flatten().map(|entry| entry.path()).collect();
            bins.sort();
            for bin in bins
                .iter()
                .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            {
                let stem = bin.file_stem().unwrap().to_string_lossy().replace('-', "_");
                crates.push(Crate::read(&stem, bin));
            }
        }
    }
    assert!(crates.len() > 10, "found only {} crates", crates.len());
    crates
}

/// Every package's integration tests, for the length rule only (a test's helpers import each
/// other freely): `tests/main.rs` with the modules it declares, named `package(test)`, and each
/// other file directly in `tests/` that none of them is, named `package(test file)`.
fn test_crates() -> Vec<Crate> {
    let mut crates = Vec::new();
    for package in packages() {
        let Ok(files) = std::fs::read_dir(package.join("tests")) else {
            continue;
        };
        let manifest = std::fs::read_to_string(package.join("Cargo.toml")).unwrap();
        let name = package_name(&manifest).replace('-', "_");
        let mut files: Vec<PathBuf> = files
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        let mut seen = BTreeSet::new();
        let main = package.join("tests").join("main.rs");
        if main.is_file() {
            let krate = Crate::read(&format!("{name}(test)"), &main);
            seen.extend(krate.modules.iter().map(|m| m.source.clone()));
            crates.push(krate);
        }
        for file in files.iter().filter(|file| !seen.contains(*file)) {
            let stem = file.file_stem().unwrap().to_string_lossy();
            crates.push(Crate::read(&format!("{name}(test {stem})"), file));
        }
    }
    assert!(crates.len() > 5, "found only {} test crates", crates.len());
    crates
}

/// The `name = "…"` of a manifest's `[package]` table.
fn package_name(manifest: &str) -> String {
    let package = manifest
        .split("[package]")
        .nth(1)
        .expect("a [package] table");
    let line = package
        .lines()
        .find(|line| line.trim_start().starts_with("name"))
        .expect("a package name");
    line.split('"').nth(1).expect("a quoted name").to_string()
}

/// The names of a manifest's shipped dependencies: the keys of its `[dependencies]` and
/// `[build-dependencies]` tables, also per target; not `[dev-dependencies]`.
fn shipped_dependencies(manifest: &str) -> Vec<String> {
    let mut shipped = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if let Some(table) = line.strip_prefix('[') {
            let table = table.trim_end_matches(']');
            shipped = table == "dependencies"
                || table == "build-dependencies"
                || (table.starts_with("target.")
                    && (table.ends_with(".dependencies")
                        || table.ends_with(".build-dependencies")));
            continue;
        }
        if !shipped || line.starts_with('#') {
            continue;
        }
        if let Some((key, _)) = line.split_once('=') {
            let key = key.trim();
            let name = key.split('.').next().unwrap_or(key).trim_matches('"');
            if !name.is_empty() {
                names.push(name.to_string());
            }
        }
    }
    names
}

// ---- Tokens ----

/// What the reader keeps of Rust source: words, punctuation (`::`, `->` and `=>` as one) and
/// string contents; comments, characters, lifetimes and numbers become nothing or `Other`.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(&'static str),
    Str(String),
    Other,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

impl Token {
    fn is(&self, punct: &str) -> bool {
        matches!(&self.tok, Tok::Punct(p) if *p == punct)
    }

    fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(word) => Some(word),
            _ => None,
        }
    }
}

const PUNCTS: &[&str] = &[
    "::", "->", "=>", "{", "}", "(", ")", "[", "]", "<", ">", ";", ",", "*", "#", "=", ":", "&",
    "!", "$", ".", "+", "-", "/", "%", "^", "|", "?", "@", "~",
];

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Rust source as tokens, each with its line.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        at: 0,
        line: 1,
        tokens: Vec::new(),
    };
    while lexer.at < chars.len() {
        lexer.step();
    }
    lexer.tokens
}

struct Lexer<'a> {
    chars: &'a [char],
    at: usize,
    line: usize,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> char {
        self.chars.get(self.at + ahead).copied().unwrap_or('\0')
    }

    fn push(&mut self, tok: Tok, line: usize) {
        self.tokens.push(Token { tok, line });
    }

    /// Moves on by one character, counting lines.
    fn bump(&mut self) {
        if self.peek(0) == '\n' {
            self.line += 1;
        }
        self.at += 1;
    }

    fn step(&mut self) {
        let c = self.peek(0);
        let line = self.line;
        match c {
            c if c.is_whitespace() => self.bump(),
            '/' if self.peek(1) == '/' => {
                while self.at < self.chars.len() && self.peek(0) != '\n' {
                    self.bump();
                }
            }
            '/' if self.peek(1) == '*' => self.block_comment(),
            '"' => {
                let text = self.quoted(0);
                self.push(Tok::Str(text), line);
            }
            '\'' => self.quote_mark(),
            c if c.is_ascii_digit() => {
                while is_ident_char(self.peek(0)) {
                    self.bump();
                }
                self.push(Tok::Other, line);
            }
            c if is_ident_start(c) => self.word(),
            _ => {
                let two: String = [c, self.peek(1)].iter().collect();
                let punct = PUNCTS.iter().find(|p| p.len() == 2 && **p == two);
                let punct =
                    punct.or_else(|| PUNCTS.iter().find(|p| p.len() == 1 && p.starts_with(c)));
                match punct {
                    Some(p) => {
                        for _ in 0..p.len() {
                            self.bump();
                        }
                        self.push(Tok::Punct(p), line);
                    }
                    None => self.bump(),
                }
            }
        }
    }

    /// A block comment, which nests in Rust.
    fn block_comment(&mut self) {
        let mut depth = 0;
        while self.at < self.chars.len() {
            if self.peek(0) == '/' && self.peek(1) == '*' {
                depth += 1;
                self.bump();
            } else if self.peek(0) == '*' && self.peek(1) == '/' {
                depth -= 1;
                self.bump();
                if depth == 0 {
                    self.bump();
                    return;
                }
            }
            self.bump();
        }
    }

    /// A string from its opening quote: with escapes when `hashes` is 0 and not raw, else a raw
    /// string closed by a quote and `hashes` hashes.
    fn quoted(&mut self, hashes: usize) -> String {
        self.raw_or_escaped(hashes, false)
    }

    fn raw_or_escaped(&mut self, hashes: usize, raw: bool) -> String {
        self.bump();
        let mut text = String::new();
        while self.at < self.chars.len() {
            let c = self.peek(0);
            if c == '\\' && !raw {
                text.push(c);
                text.push(self.peek(1));
                self.bump();
                self.bump();
                continue;
            }
            if c == '"' && (0..hashes).all(|i| self.peek(1 + i) == '#') {
                for _ in 0..=hashes {
                    self.bump();
                }
                return text;
            }
            text.push(c);
            self.bump();
        }
        text
    }

    /// A character literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`).
    fn quote_mark(&mut self) {
        let line = self.line;
        if self.peek(1) == '\\' {
            self.bump();
            self.bump();
            self.bump();
            while self.at < self.chars.len() && self.peek(0) != '\'' {
                self.bump();
            }
            self.bump();
            self.push(Tok::Other, line);
        } else if self.peek(2) == '\'' {
            for _ in 0..3 {
                self.bump();
            }
            self.push(Tok::Other, line);
        } else {
            self.bump();
            while is_ident_char(self.peek(0)) {
                self.bump();
            }
            self.push(Tok::Other, line);
        }
    }

    /// A word, or the prefix of a raw string, byte string or raw identifier.
    fn word(&mut self) {
        let line = self.line;
        let start = self.at;
        while is_ident_char(self.peek(0)) {
            self.bump();
        }
        let word: String = self.chars[start..self.at].iter().collect();
        let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
        if raw_prefix && matches!(self.peek(0), '#' | '"') {
            let hashes = (0..).take_while(|&i| self.peek(i) == '#').count();
            if self.peek(hashes) == '"' {
                for _ in 0..hashes {
                    self.bump();
                }
                let text = self.raw_or_escaped(hashes, true);
                self.push(Tok::Str(text), line);
                return;
            }
            if word == "r" && hashes == 1 && is_ident_start(self.peek(1)) {
                self.bump();
                let start = self.at;
                while is_ident_char(self.peek(0)) {
                    self.bump();
                }
                let word: String = self.chars[start..self.at].iter().collect();
                self.push(Tok::Ident(word), line);
                return;
            }
        }
        if matches!(word.as_str(), "b" | "c") && self.peek(0) == '"' {
            let text = self.quoted(0);
            self.push(Tok::Str(text), line);
            return;
        }
        if word == "b" && self.peek(0) == '\'' {
            self.quote_mark();
            return;
        }
        self.push(Tok::Ident(word), line);
    }
}

// ---- Modules ----

/// One module: a file, or an inline `mod name { … }` inside one.
#[derive(Debug, Default)]
struct Module {
    /// The path from the crate root (empty for the root).
    path: Vec<String>,
    parent: Option<usize>,
    /// The module whose file holds this one (itself for a file module).
    file: usize,
    /// The file, for file modules.
    source: PathBuf,
    children: BTreeMap<String, usize>,
    /// Names of the items defined here.
    defs: BTreeSet<String>,
    /// Names a `use` brings in, each with the path it names.
    aliases: BTreeMap<String, Vec<String>>,
    /// Paths of `use …::*`.
    globs: Vec<Vec<String>>,
    /// Names a public `use` brings in (re-exports), with their lines.
    reexports: Vec<(String, usize)>,
    /// Paths this module imports (non-public `use` and paths in code), with their lines.
    imports: Vec<(Vec<String>, usize)>,
    /// The words of its code outside `use` declarations: a re-exported name among them is an
    /// import too.
    words: BTreeSet<String>,
}

/// A function and its length.
#[derive(Debug)]
struct Function {
    /// `crate::module::Type::name`.
    name: String,
    lines: usize,
    /// `file:line`.
    place: String,
}

/// One crate's module tree, its imports between files, and its functions.
#[derive(Debug)]
struct Crate {
    name: String,
    modules: Vec<Module>,
    /// Imports between modules, each with one place that makes it (`file:line path`).
    edges: BTreeMap<(usize, usize), String>,
    functions: Vec<Function>,
}

/// What a scope of the reader is inside, opened by a `{`.
#[derive(Debug, Clone)]
enum Scope {
    Module(usize),
    /// An `impl` or `trait` block, by its type's name.
    Type(String),
    Function(String),
    Block,
}

impl Crate {
    /// Reads the crate whose root file is `root`, following its `mod` declarations.
    fn read(name: &str, root: &Path) -> Crate {
        let mut krate = Crate {
            name: name.to_string(),
            modules: vec![Module {
                source: root.to_path_buf(),
                ..Module::default()
            }],
            edges: BTreeMap::new(),
            functions: Vec::new(),
        };
        let mut queue = VecDeque::from([0]);
        while let Some(module) = queue.pop_front() {
            let text = std::fs::read_to_string(&krate.modules[module].source)
                .unwrap_or_else(|e| panic!("{}: {e}", krate.modules[module].source.display()));
            let tokens = tokenize(&text);
            queue.extend(krate.read_file(module, &tokens));
        }
        krate.link();
        krate
    }

    fn node_name(&self, module: usize) -> String {
        let path = &self.modules[module].path;
        if path.is_empty() {
            self.name.clone()
        } else {
            format!("{}::{}", self.name, path.join("::"))
        }
    }

    /// Adds a child module of `parent` and returns it.
    fn add_module(&mut self, parent: usize, name: &str, source: Option<PathBuf>) -> usize {
        let id = self.modules.len();
        let mut path = self.modules[parent].path.clone();
        path.push(name.to_string());
        let file = if source.is_some() {
            id
        } else {
            self.modules[parent].file
        };
        self.modules.push(Module {
            path,
            parent: Some(parent),
            file,
            source: source.unwrap_or_default(),
            ..Module::default()
        });
        self.modules[parent].children.insert(name.to_string(), id);
        self.modules[parent].defs.insert(name.to_string());
        id
    }

    /// The file of module `name` declared (`mod name;`) in `parent`.
    fn module_file(&self, parent: usize, name: &str) -> PathBuf {
        // Inline modules between the file and `parent` add folders.
        let mut inline = Vec::new();
        let mut at = parent;
        while self.modules[at].file != at {
            inline.push(self.modules[at].path.last().unwrap().clone());
            at = self.modules[at].parent.unwrap();
        }
        let source = &self.modules[at].source;
        let stem = source.file_stem().unwrap().to_string_lossy();
        let mut dir = source.parent().unwrap().to_path_buf();
        if at != 0 && stem != "mod" {
            dir.push(&*stem);
        }
        for folder in inline.iter().rev() {
            dir.push(folder);
        }
        let flat = dir.join(format!("{name}.rs"));
        if flat.is_file() {
            flat
        } else {
            dir.join(name).join("mod.rs")
        }
    }

    /// Reads one file's tokens into `module` and the inline modules inside it; returns the file
    /// modules it declares, to read next.
    fn read_file(&mut self, module: usize, tokens: &[Token]) -> Vec<usize> {
        let mut declared = Vec::new();
        // The scopes the reader is inside, and the scope each opening brace starts.
        let mut scopes: Vec<Scope> = vec![Scope::Module(module)];
        let mut opens: BTreeMap<usize, Scope> = BTreeMap::new();
        let mut at = 0;
        while at < tokens.len() {
            let current = current_module(&scopes);
            let token = &tokens[at];
            if token.is("{") {
                scopes.push(opens.remove(&at).unwrap_or(Scope::Block));
            } else if token.is("}") {
                scopes.pop();
            } else if token.is("#") && tokens.get(at + 2).and_then(Token::ident) == Some("path") {
                panic!(
                    "{}: #[path] is not followed by the house test",
                    self.modules[module].source.display()
                );
            }
            let word = token.ident().unwrap_or("");
            let next = tokens.get(at + 1).and_then(Token::ident);
            self.modules[current].words.insert(word.to_string());
            match word {
                "mod" if next.is_some() => {
                    let name = next.unwrap();
                    if tokens.get(at + 2).is_some_and(|t| t.is(";")) {
                        let file = self.module_file(current, name);
                        declared.push(self.add_module(current, name, Some(file)));
                    } else {
                        let inline = self.add_module(current, name, None);
                        opens.insert(at + 2, Scope::Module(inline));
                    }
                    at += 2;
                    continue;
                }
                "use" if !tokens.get(at + 1).is_some_and(|t| t.is("<")) => {
                    at = self.read_use(current, tokens, at);
                    continue;
                }
                "fn" if next.is_some() => {
                    if let Some(body) = self.read_function(&scopes, tokens, at) {
                        opens.insert(body, Scope::Function(next.unwrap().to_string()));
                    }
                }
                "on_both_engines" if tokens.get(at + 1).is_some_and(|t| t.is("!")) => {
                    if let Some((body, name)) = self.read_engines_test(current, tokens, at) {
                        opens.insert(body, Scope::Function(name));
                    }
                }
                "impl" | "trait" => {
                    if let Some((body, name)) = type_block(tokens, at) {
                        opens.insert(body, Scope::Type(name));
                    }
                }
                _ => {}
            }
            if is_definition(word)
                && let Some(name) = next.filter(|n| *n != "mut" && *n != "fn")
            {
                self.modules[current].defs.insert(name.to_string());
            }
            if token.ident().is_some()
                && tokens.get(at + 1).is_some_and(|t| t.is("::"))
                && !(at > 0 && tokens[at - 1].is("::"))
            {
                let (path, end) = path_at(tokens, at);
                self.modules[current].imports.push((path, token.line));
                at = end;
                continue;
            }
            at += 1;
        }
        declared
    }

    /// Reads the `use` declaration at `at` into `module`; returns the index after its `;`.
    fn read_use(&mut self, module: usize, tokens: &[Token], at: usize) -> usize {
        let public = at > 0 && (tokens[at - 1].ident() == Some("pub") || tokens[at - 1].is(")"));
        let mut leaves = Vec::new();
        let end = use_tree(tokens, at + 1, Vec::new(), &mut leaves);
        let line = tokens[at].line;
        for (path, alias) in leaves {
            let target = &mut self.modules[module];
            match alias {
                Some(name) if public => {
                    target.reexports.push((name.clone(), line));
                    target.aliases.insert(name, path);
                }
                Some(name) => {
                    target.aliases.insert(name, path.clone());
                    target.imports.push((path, line));
                }
                None => {
                    target.globs.push(path.clone());
                    if !public {
                        target.imports.push((path, line));
                    }
                }
            }
        }
        let mut end = end;
        while end < tokens.len() && !tokens[end].is(";") {
            end += 1;
        }
        end + 1
    }

    /// Records the function whose `fn` is at `at`; returns the index of its body's `{`.
    fn read_function(&mut self, scopes: &[Scope], tokens: &[Token], at: usize) -> Option<usize> {
        let mut depth = 0i32;
        let mut body = None;
        for (i, token) in tokens.iter().enumerate().skip(at + 2) {
            if token.is("(") || token.is("[") {
                depth += 1;
            } else if token.is(")") || token.is("]") {
                depth -= 1;
            } else if depth == 0 && token.is(";") {
                return None;
            } else if depth == 0 && token.is("{") {
                body = Some(i);
                break;
            }
        }
        let body = body?;
        let end = matching_brace(tokens, body);
        let mut name = vec![self.node_name(current_module(scopes))];
        for scope in scopes {
            match scope {
                Scope::Type(ty) | Scope::Function(ty) => name.push(ty.clone()),
                Scope::Module(_) | Scope::Block => {}
            }
        }
        name.push(tokens[at + 1].ident().unwrap().to_string());
        let file = &self.modules[self.modules[current_module(scopes)].file].source;
        let file = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(file);
        self.functions.push(Function {
            name: name.join("::"),
            lines: tokens[end].line - tokens[at].line + 1,
            place: format!("{}:{}", file.display(), tokens[at].line),
        });
        Some(body)
    }

    /// Records the test `on_both_engines!(name, |db| { … })` at `at` as a function `name`, so
    /// its body is held to the same length as a function's; returns its body's `{` and name.
    fn read_engines_test(
        &mut self,
        module: usize,
        tokens: &[Token],
        at: usize,
    ) -> Option<(usize, String)> {
        if !tokens.get(at + 2)?.is("(") {
            return None;
        }
        let name = tokens.get(at + 3)?.ident()?.to_string();
        let body = (at + 4..tokens.len()).find(|&i| tokens[i].is("{"))?;
        let end = matching_brace(tokens, body);
        let file = &self.modules[self.modules[module].file].source;
        let file = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(file);
        self.functions.push(Function {
            name: format!("{}::{name}", self.node_name(module)),
            lines: tokens[end].line - tokens[at].line + 1,
            place: format!("{}:{}", file.display(), tokens[at].line),
        });
        Some((body, name))
    }

    /// Resolves every module's imports to the files they name.
    fn link(&mut self) {
        for module in 0..self.modules.len() {
            let here = &self.modules[module];
            let mut imports = here.imports.clone();
            for (name, line) in &here.reexports {
                if here.words.contains(name) {
                    imports.push((here.aliases[name].clone(), *line));
                }
            }
            for (path, line) in imports {
                let Some(target) = self.resolve(module, &path, 0) else {
                    continue;
                };
                let (from, to) = (module, target);
                if from != to {
                    let file = &self.modules[self.modules[from].file].source;
                    let file = file
                        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap_or(file);
                    let place = format!("{}:{line} {}", file.display(), path.join("::"));
                    self.edges.entry((from, to)).or_insert(place);
                }
            }
        }
    }

    /// The module of this crate that `path`, written in `scope`, names (where its item is
    /// defined), or `None` for other crates and local names.
    fn resolve(&self, scope: usize, path: &[String], depth: usize) -> Option<usize> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let first = path[0].as_str();
        let (mut module, mut rest) = match first {
            "crate" => (0, &path[1..]),
            "self" => (scope, &path[1..]),
            "super" => {
                let supers = path.iter().take_while(|s| *s == "super").count();
                let mut module = scope;
                for _ in 0..supers {
                    module = self.modules[module].parent?;
                }
                (module, &path[supers..])
            }
            _ => return self.resolve_name(scope, path, depth),
        };
        while let Some(child) = rest
            .first()
            .and_then(|s| self.modules[module].children.get(s))
        {
            module = *child;
            rest = &rest[1..];
        }
        match rest.first() {
            None => Some(module),
            Some(name) => self.locate(module, name, depth),
        }
    }

    /// Resolves a path whose first segment is a name in `scope`: a child module, a name a `use`
    /// brought in, or one a glob import brings in.
    fn resolve_name(&self, scope: usize, path: &[String], depth: usize) -> Option<usize> {
        let here = &self.modules[scope];
        let first = &path[0];
        if here.children.contains_key(first) {
            let mut full = vec!["self".to_string()];
            full.extend_from_slice(path);
            return self.resolve(scope, &full, depth + 1);
        }
        if let Some(target) = here.aliases.get(first) {
            let mut full = target.clone();
            full.extend_from_slice(&path[1..]);
            return self.resolve(scope, &full, depth + 1);
        }
        for glob in &here.globs {
            let Some(source) = self.resolve(scope, glob, depth + 1) else {
                continue;
            };
            if source != scope && self.names(source, first) {
                let mut full = vec!["self".to_string()];
                full.extend_from_slice(path);
                return self.resolve(source, &full, depth + 1);
            }
        }
        None
    }

    /// Whether `module` defines or brings in `name`.
    fn names(&self, module: usize, name: &str) -> bool {
        let here = &self.modules[module];
        here.defs.contains(name) || here.aliases.contains_key(name)
    }

    /// The module that defines `name` as `module` sees it: `module` itself, or where a `use`
    /// or a glob import there leads.
    fn locate(&self, module: usize, name: &str, depth: usize) -> Option<usize> {
        let here = &self.modules[module];
        if here.defs.contains(name) {
            return Some(module);
        }
        if here.aliases.contains_key(name) || !here.globs.is_empty() {
            if let Some(found) = self.resolve_name(module, &[name.to_string()], depth + 1) {
                return Some(found);
            }
            if here.aliases.contains_key(name) {
                // A name brought in from another crate.
                return None;
            }
        }
        Some(module)
    }

    /// The import circles: the strongly connected sets of two or more modules, each sorted.
    fn circles(&self) -> Vec<Vec<usize>> {
        let mut graph: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &(from, to) in self.edges.keys() {
            graph.entry(from).or_default().push(to);
        }
        let files: Vec<usize> = (0..self.modules.len()).collect();
        let mut tarjan = Tarjan {
            graph: &graph,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        };
        for &file in &files {
            if !tarjan.index.contains_key(&file) {
                tarjan.visit(file);
            }
        }
        let mut circles: Vec<Vec<usize>> = tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        for circle in &mut circles {
            circle.sort_by_key(|&m| self.node_name(m));
        }
        circles.sort_by_key(|circle| self.node_name(circle[0]));
        circles
    }

    /// A circle's members and one shortest way round it, each step with the line that makes it.
    fn describe_circle(&self, circle: &[usize]) -> String {
        let members: BTreeSet<usize> = circle.iter().copied().collect();
        let start = circle[0];
        // Breadth first from `start` inside the circle, back to `start`.
        let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(at) = queue.pop_front() {
            for (&(from, to), _) in self.edges.range((at, 0)..=(at, usize::MAX)) {
                debug_assert_eq!(from, at);
                if !members.contains(&to) {
                    continue;
                }
                if to == start {
                    last = Some(at);
                    break 'search;
                }
                if let std::collections::btree_map::Entry::Vacant(entry) = came_from.entry(to) {
                    entry.insert(at);
                    queue.push_back(to);
                }
            }
        }
        let mut way = vec![start];
        let mut at = last.expect("a circle leads back to its start");
        while at != start {
            way.push(at);
            at = came_from[&at];
        }
        way.push(start);
        way.reverse();
        let names: Vec<String> = circle.iter().map(|&m| self.node_name(m)).collect();
        let mut text = format!(
            "import circle of {} modules: {}\n",
            names.len(),
            names.join(", ")
        );
        if std::env::var_os("HOUSE_REPORT").is_some() {
            text.push_str(" its imports:\n");
            for (&(from, to), place) in &self.edges {
                if members.contains(&from) && members.contains(&to) {
                    let (from, to) = (self.node_name(from), self.node_name(to));
                    text.push_str(&format!("  {from} -> {to}  ({place})\n"));
                }
            }
            text.push_str(" one way round:\n");
        }
        for step in way.windows(2) {
            let place = &self.edges[&(step[0], step[1])];
            text.push_str(&format!(
                "  {} -> {}  ({place})\n",
                self.node_name(step[0]),
                self.node_name(step[1])
            ));
        }
        text
    }
}

/// Tarjan's strongly connected components.
struct Tarjan<'a> {
    graph: &'a BTreeMap<usize, Vec<usize>>,
    index: BTreeMap<usize, usize>,
    low: BTreeMap<usize, usize>,
    stack: Vec<usize>,
    on_stack: BTreeSet<usize>,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, node: usize) {
        let index = self.index.len();
        self.index.insert(node, index);
        self.low.insert(node, index);
        self.stack.push(node);
        self.on_stack.insert(node);
        for &next in self.graph.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
            if !self.index.contains_key(&next) {
                self.visit(next);
                let low = self.low[&node].min(self.low[&next]);
                self.low.insert(node, low);
            } else if self.on_stack.contains(&next) {
                let low = self.low[&node].min(self.index[&next]);
                self.low.insert(node, low);
            }
        }
        if self.low[&node] == self.index[&node] {
            let mut component = Vec::new();
            loop {
                let member = self.stack.pop().unwrap();
                self.on_stack.remove(&member);
                component.push(member);
                if member == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

fn current_module(scopes: &[Scope]) -> usize {
    scopes
        .iter()
        .rev()
        .find_map(|scope| match scope {
            Scope::Module(module) => Some(*module),
            _ => None,
        })
        .unwrap()
}

fn is_definition(word: &str) -> bool {
    matches!(
        word,
        "fn" | "struct" | "enum" | "union" | "trait" | "type" | "const" | "static" | "macro_rules"
    )
}

/// The index of the `}` that closes the `{` at `open`.
fn matching_brace(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if token.is("{") {
            depth += 1;
        } else if token.is("}") {
            depth -= 1;
            if depth == 0 {
                return i;
            }
        }
    }
    tokens.len() - 1
}

/// The path in code that starts at `at` (`a::b::c`, up to generics or a brace), and the index
/// after it.
fn path_at(tokens: &[Token], at: usize) -> (Vec<String>, usize) {
    let mut path = vec![tokens[at].ident().unwrap().to_string()];
    let mut i = at + 1;
    while tokens.get(i).is_some_and(|t| t.is("::")) {
        match tokens.get(i + 1).and_then(Token::ident) {
            Some(word) => path.push(word.to_string()),
            None => break,
        }
        i += 2;
    }
    (path, i)
}

/// Reads a `use` tree from `at` into its leaves: each full path with the name it brings in
/// (`None` for a glob). Returns the index after the tree.
fn use_tree(
    tokens: &[Token],
    mut at: usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    if tokens.get(at).is_some_and(|t| t.is("::")) {
        at += 1;
    }
    loop {
        let Some(token) = tokens.get(at) else {
            return at;
        };
        if token.is("*") {
            leaves.push((prefix, None));
            return at + 1;
        }
        if token.is("{") {
            at += 1;
            while !tokens.get(at).is_none_or(|t| t.is("}")) {
                at = use_tree(tokens, at, prefix.clone(), leaves);
                if tokens.get(at).is_some_and(|t| t.is(",")) {
                    at += 1;
                }
            }
            return at + 1;
        }
        let Some(word) = token.ident() else {
            return at;
        };
        if tokens.get(at + 1).is_some_and(|t| t.is("::")) {
            prefix.push(word.to_string());
            at += 2;
            continue;
        }
        // The last segment, perhaps renamed; `self` names the module the prefix ends with.
        let mut name = if word == "self" {
            prefix.last().cloned().unwrap_or_default()
        } else {
            word.to_string()
        };
        if word != "self" {
            prefix.push(word.to_string());
        }
        at += 1;
        if tokens.get(at).and_then(Token::ident) == Some("as") {
            name = tokens
                .get(at + 1)
                .and_then(Token::ident)
                .unwrap_or("_")
                .to_string();
            at += 2;
        }
        leaves.push((prefix, Some(name)));
        return at;
    }
}

/// For an `impl` or `trait` at `at` that starts a block: the index of its `{` and its type's
/// name (the type after `for` in a trait impl). `None` for `impl Trait` in a type.
fn type_block(tokens: &[Token], at: usize) -> Option<(usize, String)> {
    let item_start = at == 0
        || tokens[at - 1].is("}")
        || tokens[at - 1].is(";")
        || tokens[at - 1].is("{")
        || tokens[at - 1].is("]")
        || matches!(
            tokens[at - 1].ident(),
            Some("unsafe" | "pub" | "default" | "auto")
        )
        || tokens[at - 1].is(")");
    if !item_start {
        return None;
    }
    if tokens[at].ident() == Some("trait") {
        let name = tokens.get(at + 1)?.ident()?.to_string();
        let mut i = at + 2;
        while i < tokens.len() && !tokens[i].is("{") && !tokens[i].is(";") {
            i += 1;
        }
        return tokens.get(i).filter(|t| t.is("{")).map(|_| (i, name));
    }
    let mut i = at + 1;
    let mut angle = 0i32;
    let mut words = Vec::new();
    let mut in_where = false;
    while i < tokens.len() {
        let token = &tokens[i];
        if token.is("{") && angle == 0 {
            break;
        }
        if token.is(";") {
            return None;
        }
        if token.is("<") {
            angle += 1;
        } else if token.is(">") {
            angle -= 1;
        } else if angle == 0 && token.ident() == Some("where") {
            in_where = true;
        } else if angle == 0 && !in_where {
            if token.ident() == Some("for") {
                words.clear();
            } else if let Some(word) = token.ident()
                && !matches!(word, "dyn" | "mut" | "const" | "unsafe")
            {
                words.push(word.to_string());
            }
        }
        i += 1;
    }
    let name = words.last()?.clone();
    (i < tokens.len()).then_some((i, name))
}
