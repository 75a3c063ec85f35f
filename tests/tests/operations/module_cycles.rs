//! The modules of each crate under `shared/` form no import cycles.
//!
//! Every `use` and every `crate::`, `super::` or `self::` path of a crate's non-test code is
//! an edge from the module it appears in to the module it names, inside macro calls too
//! (`vec![super::users::op()]`, `json!`, `format!`: read from their tokens). At every level of the module
//! tree, the edges between sibling modules (each sibling standing for itself and everything
//! under it) must form no cycle: `sessions` may use `tracks`, but then nothing under `tracks`
//! may use `sessions`. A cycle fails this test with the paths that close it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

type ModPath = Vec<String>;

/// The module path of a source file under `src`.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Collects the paths a file names, with the module each appears in.
struct Collector {
    module: ModPath,
    /// (module the path appears in, resolved absolute path, source text for messages)
    paths: Vec<(ModPath, ModPath, String)>,
    /// Inline modules found, so paths into them resolve.
    inline_modules: Vec<ModPath>,
}

impl Collector {
    fn resolve(&self, segments: &[String]) -> Option<ModPath> {
        let mut out = self.module.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                out.clear();
                rest = &rest[1..];
            }
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    out.pop()?;
                    rest = &rest[1..];
                }
            }
            Some("self") => rest = &rest[1..],
            _ => return None,
        }
        out.extend(rest.iter().cloned());
        Some(out)
    }

    fn record(&mut self, segments: Vec<String>) {
        if let Some(resolved) = self.resolve(&segments) {
            self.paths
                .push((self.module.clone(), resolved, segments.join("::")));
        }
    }

    /// Records the paths in a macro call's tokens: each `crate`, `super` or `self` followed
    /// by `::` and names, in any group (brackets, braces, parentheses) at any depth.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id)
                    if ["crate", "super", "self"].contains(&id.to_string().as_str()) =>
                {
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    // `::` is two `:` puncts, then a name.
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.record(segments);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.record(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.record(full);
            }
            syn::UseTree::Glob(_) => self.record(prefix.clone()),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            self.inline_modules.push(self.module.clone());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.record(segments);
        syn::visit::visit_path(self, p);
    }
}

/// The longest known module that `path` starts with.
fn target_module(modules: &BTreeSet<ModPath>, path: &ModPath) -> ModPath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
        .unwrap_or_default()
}

/// A cycle among `edges`, if any, as the list of nodes that close it.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|n| n == next).expect("on stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(node, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn sibling_modules_of_each_shared_crate_form_no_cycle() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(&shared).expect("readable shared dir") {
        let src = entry.expect("entry").path().join("src");
        if src.is_dir() {
            failures.extend(cycles_in(&src));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The cycles between sibling modules of the crate whose sources are under `src`.
fn cycles_in(src: &Path) -> Vec<String> {
    let src = src.to_path_buf();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut paths = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable source");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut collector = Collector {
            module: module_of(&src, file),
            paths: Vec::new(),
            inline_modules: Vec::new(),
        };
        collector.visit_file(&ast);
        modules.extend(collector.inline_modules);
        paths.extend(collector.paths);
    }
    // Edges between siblings under every parent: (parent, from child, to child) → examples.
    let mut levels: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut examples: BTreeMap<(ModPath, String, String), String> = BTreeMap::new();
    for (from, path, text) in &paths {
        let to = target_module(&modules, path);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        // Within one module, or to an ancestor: no edge between siblings.
        if common == from.len() || common == to.len() {
            continue;
        }
        let parent = from[..common].to_vec();
        let (a, b) = (from[common].clone(), to[common].clone());
        levels
            .entry(parent.clone())
            .or_default()
            .entry(a.clone())
            .or_default()
            .insert(b.clone());
        examples
            .entry((parent, a, b))
            .or_insert_with(|| format!("{} uses {text}", from.join("::")));
    }
    let mut failures = Vec::new();
    for (parent, edges) in &levels {
        if let Some(cycle) = find_cycle(edges) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| examples[&(parent.clone(), w[0].clone(), w[1].clone())].clone())
                .collect();
            failures.push(format!(
                "cycle in {} under `crate{}{}`: {}\n    {}",
                src.display(),
                if parent.is_empty() { "" } else { "::" },
                parent.join("::"),
                cycle.join(" → "),
                steps.join("\n    ")
            ));
        }
    }
    failures
}
