//! The public API is pinned: `public-api.txt` (repository root) lists every public item path, and
//! this test lists them again from the source and compares.
//!
//! The listing is a text scan (nightly-only tools cannot run here): the top-level `pub mod` and
//! `pub use` lines of `src/lib.rs`, and in each public module the top-level `pub use` and
//! `pub struct|enum|trait|fn|type|const|static` items. Items marked `#[doc(hidden)]` (the
//! `internals` module) or `#[cfg(test)]` are not part of the API. Methods and variants are not
//! listed. A top-level item is one that starts a line (the code is `rustfmt`-formatted).
//! `ICETRIM_BLESS=1` rewrites the file from the source.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const CRATE: &str = "icetrim";
const LIST: &str = "public-api.txt";

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One top-level public declaration: its attribute lines and its text up to the end of its
/// first line (a `pub use` up to its `;`).
struct Declaration {
    attributes: Vec<String>,
    text: String,
}

/// Removes `//` comments (doc comments included) line by line; string literals holding `//` do
/// not occur in declarations.
fn without_comments(source: &str) -> Vec<&str> {
    source
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect()
}

/// The public declarations at the top level of `source`, with the attributes above each.
fn public_declarations(source: &str) -> Vec<Declaration> {
    let lines = without_comments(source);
    let mut declarations = Vec::new();
    let mut attributes = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        if line.starts_with("#[") {
            attributes.push(line.trim().to_string());
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let taken = std::mem::take(&mut attributes);
        if !line.starts_with("pub ") {
            continue;
        }
        let mut text = line.to_string();
        if line.starts_with("pub use ") {
            while !text.contains(';') && index < lines.len() {
                text.push(' ');
                text.push_str(lines[index].trim());
                index += 1;
            }
        }
        declarations.push(Declaration {
            attributes: taken,
            text,
        });
    }
    declarations
}

fn is_public_api(declaration: &Declaration) -> bool {
    !declaration.attributes.iter().any(|attribute| {
        let attribute: String = attribute.split_whitespace().collect();
        attribute.starts_with("#[doc(hidden") || attribute.starts_with("#[cfg(test")
    })
}

/// The names a `use` tree brings in (`a::{B, c::D as E, self}` → `B`, `E`, `a`).
fn use_tree_names(tree: &str, prefix_last: Option<&str>) -> Result<Vec<String>, String> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let close = tree
            .rfind('}')
            .ok_or_else(|| format!("unbalanced braces in `{tree}`"))?;
        let prefix = tree[..open].trim_end_matches("::");
        let last = prefix.rsplit("::").next().filter(|last| !last.is_empty());
        let mut names = Vec::new();
        for part in split_top_level(&tree[open + 1..close]) {
            names.extend(use_tree_names(&part, last)?);
        }
        return Ok(names);
    }
    if tree.ends_with('*') {
        return Err(format!(
            "glob re-export `{tree}`: name the items so that the API can be listed"
        ));
    }
    if let Some((_, alias)) = tree.split_once(" as ") {
        return Ok(vec![alias.trim().to_string()]);
    }
    let last = tree.rsplit("::").next().unwrap_or(tree).trim();
    match last {
        "self" => prefix_last
            .map(|name| vec![name.to_string()])
            .ok_or_else(|| format!("`self` without a module in `{tree}`")),
        "" => Ok(Vec::new()),
        name => Ok(vec![name.to_string()]),
    }
}

/// `text` split at the commas outside braces.
fn split_top_level(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// What a declaration adds to the API: the item names and, for `pub mod`, the module name.
enum Named {
    Items(Vec<String>),
    Module(String),
}

fn named(declaration: &Declaration) -> Result<Named, String> {
    let text = declaration.text.trim();
    if let Some(tree) = text.strip_prefix("pub use ") {
        let tree = tree.split(';').next().unwrap_or_default();
        return use_tree_names(tree, None).map(Named::Items);
    }
    let mut words = text
        .strip_prefix("pub ")
        .unwrap_or(text)
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .peekable();
    let keyword = loop {
        match words.next() {
            Some("async" | "unsafe" | "extern") => continue,
            Some("const") if matches!(words.peek(), Some(&("fn" | "unsafe" | "async"))) => continue,
            Some(keyword) => break keyword,
            None => return Err(format!("no item in `{text}`")),
        }
    };
    let name = words
        .next()
        .ok_or_else(|| format!("no name in `{text}`"))?
        .to_string();
    match keyword {
        "mod" => Ok(Named::Module(name)),
        "struct" | "enum" | "trait" | "fn" | "type" | "const" | "static" | "union" => {
            Ok(Named::Items(vec![name]))
        }
        _ => Err(format!("unknown declaration `{text}`")),
    }
}

/// The file of module `name` declared in `dir` (`name.rs` or `name/mod.rs`).
fn module_file(dir: &Path, name: &str) -> Result<PathBuf, String> {
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|path| path.is_file())
    .ok_or_else(|| format!("module `{name}` has no file under {}", dir.display()))
}

/// Every public item path of the crate whose root module is `lib` (a file in `src`).
fn public_items(lib: &Path) -> Result<BTreeSet<String>, String> {
    let read =
        |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let src = lib.parent().ok_or("lib.rs has no folder")?;
    let mut items = BTreeSet::new();
    for declaration in public_declarations(&read(lib)?) {
        if !is_public_api(&declaration) {
            continue;
        }
        match named(&declaration)? {
            Named::Items(names) => items.extend(names.into_iter().map(|n| format!("{CRATE}::{n}"))),
            Named::Module(module) => {
                items.insert(format!("{CRATE}::{module}"));
                if declaration.text.trim_end().ends_with('{') {
                    return Err(format!(
                        "inline public module `{module}`: give it a file of its own"
                    ));
                }
                let file = module_file(src, &module)?;
                for inner in public_declarations(&read(&file)?) {
                    if !is_public_api(&inner) {
                        continue;
                    }
                    match named(&inner)? {
                        Named::Items(names) => items
                            .extend(names.into_iter().map(|n| format!("{CRATE}::{module}::{n}"))),
                        Named::Module(sub) => {
                            return Err(format!(
                                "public module `{module}::{sub}`: the listing reads one level; \
                                 re-export its items from `{module}` instead"
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(items)
}

/// The listing of `public-api.txt` is the API the source declares.
#[test]
fn public_api_matches_public_api_txt() {
    let root = repository();
    let items = public_items(&root.join("src/lib.rs")).unwrap_or_else(|e| panic!("{e}"));
    let listed: String = items.iter().map(|item| format!("{item}\n")).collect();
    let path = root.join(LIST);
    if std::env::var("ICETRIM_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &listed).expect("write public-api.txt");
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    let pinned: BTreeSet<String> = pinned.lines().map(str::to_string).collect();
    let added: Vec<_> = items.difference(&pinned).collect();
    let removed: Vec<_> = pinned.difference(&items).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "the public API differs from {LIST}:\n{}{}\nIf the change is meant, regenerate the file: \
         ICETRIM_BLESS=1 cargo test --features glue --test sql public_api",
        added.iter().map(|i| format!("+ {i}\n")).collect::<String>(),
        removed
            .iter()
            .map(|i| format!("- {i}\n"))
            .collect::<String>(),
    );
}

/// The scan itself: groups, renames, nested groups, `self`, hidden and test-only items,
/// multi-line `use`, items of a public module, and what it refuses (globs, inline modules).
#[test]
fn the_scan_reads_declarations_as_rustc_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "//! pub struct NotAnItem;\nmod hidden_owner;\npub mod shown;\n\
         pub use hidden_owner::{A, b::{C as D, self}};\npub use hidden_owner::E;\n\
         pub(crate) use hidden_owner::F;\n#[doc(hidden)]\npub mod internals {\n    pub use x::Y;\n}\n\
         #[cfg(test)]\npub fn only_in_tests() {}\n/// Documented.\n#[derive(Debug)]\npub enum G {\n    H,\n}\n",
    )
    .expect("write");
    std::fs::create_dir(src.join("shown")).expect("mkdir");
    std::fs::write(
        src.join("shown/mod.rs"),
        "mod inner;\npub use inner::{\n    I, J,\n    K,\n};\npub async fn run() {}\n\
         pub const fn size() -> usize { 0 }\npub const LIMIT: u8 = 1;\npub type Alias = u8;\n\
         pub trait T {\n    fn not_listed(&self);\n}\nimpl T for u8 {\n    pub fn nested() {}\n}\n",
    )
    .expect("write");
    let items = public_items(&src.join("lib.rs")).expect("scan");
    let expected: BTreeSet<String> = [
        "A",
        "D",
        "b",
        "E",
        "G",
        "shown",
        "shown::I",
        "shown::J",
        "shown::K",
        "shown::run",
        "shown::size",
        "shown::LIMIT",
        "shown::Alias",
        "shown::T",
    ]
    .iter()
    .map(|item| format!("icetrim::{item}"))
    .collect();
    assert_eq!(items, expected);

    std::fs::write(src.join("lib.rs"), "pub use hidden_owner::*;\n").expect("write");
    let refused = public_items(&src.join("lib.rs")).expect_err("a glob cannot be listed");
    assert!(refused.contains("glob"), "{refused}");
    std::fs::write(src.join("lib.rs"), "pub mod inline {\n}\n").expect("write");
    let refused = public_items(&src.join("lib.rs")).expect_err("an inline module");
    assert!(refused.contains("inline"), "{refused}");
}
