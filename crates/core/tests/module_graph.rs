//! No import cycles between the modules of any crate of the workspace — the core, the CLI, the search worker and the
//! page (the root package's `src/`): reads every `crate::…` path in `src/` (outside `#[cfg(test)]` modules and
//! comments), resolves names the crate root re-exports to the module that defines them, and fails on any cycle. A
//! module is a top-level file or directory of `src/` (`rules/world.rs` is part of `rules`); the crate root
//! (`lib.rs` / `main.rs`) is a module too, `crate`, when other modules use what it defines (the CLI's `emit`), so a
//! root that calls a module which calls it back is a cycle. Other crate roots in the same directory (a library's
//! `main.rs`, `src/bin/`) are separate crates and not scanned.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The node of the crate root's own items.
const ROOT: &str = "crate";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A crate of the workspace: its `src/` (relative to the workspace root), its root file, and the files or
/// directories in `src/` that belong to other crates.
struct Crate {
    src: &'static str,
    root: &'static str,
    others: &'static [&'static str],
}

const CORE: Crate = Crate { src: "crates/core/src", root: "lib.rs", others: &[] };
const CLI: Crate = Crate { src: "crates/cli/src", root: "main.rs", others: &[] };
const SEARCH_WORKER: Crate = Crate { src: "crates/search-worker/src", root: "lib.rs", others: &["main.rs"] };
const PAGE: Crate = Crate { src: "src", root: "lib.rs", others: &["main.rs", "bin"] };

/// Every `.rs` file under `dir`, with the module it belongs to.
fn files(dir: &Path, module: Option<&str>, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let owner = module.map_or(stem.clone(), str::to_string);
        if path.is_dir() {
            files(&path, Some(&owner), out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((owner, path));
        }
    }
}

/// The source without `#[cfg(test)]` modules and comment lines.
fn code_of(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or("");
    before_tests.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The first path segment of every item a `crate::` path names: `crate::a::b` gives `a`, `crate::{a, b::c}` gives
/// `a` and `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut item = String::new();
            let mut level = 0;
            for c in group[..end].chars().chain([',']) {
                match c {
                    '{' => level += 1,
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        names.push(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            names.push(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn ident(s: &str) -> String {
    s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// Names the crate root re-exports (`pub use report::{Report, …};`), by the module that defines them.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for stmt in code_of(lib).split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else { continue };
        let Some((module, items)) = path.split_once("::") else { continue };
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = item.split(" as ").last().unwrap_or("").trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

/// Module names the crate root's own code names as `module::…` (not in `mod` declarations).
fn root_uses(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for line in code.lines() {
        let t = line.trim_start();
        if t.starts_with("mod ") || t.starts_with("pub mod ") || t.starts_with("pub(crate) mod ") {
            continue;
        }
        let b = line.as_bytes();
        for (at, _) in line.match_indices("::") {
            let start = line[..at].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            let before = start.checked_sub(1).map(|i| b[i]);
            // `meshplan_core::presets::x` names the core's module, not ours.
            if before != Some(b':') {
                let name = &line[start..at];
                if modules.contains(name) {
                    used.insert(name.to_string());
                }
            }
        }
    }
    used
}

fn graph_of(krate: &Crate) -> Graph {
    let src = workspace().join(krate.src);
    let mut all = Vec::new();
    files(&src, None, &mut all);
    let root_stem = krate.root.trim_end_matches(".rs");
    let other_stems: Vec<&str> = krate.others.iter().map(|o| o.trim_end_matches(".rs")).collect();
    all.retain(|(m, _)| !other_stems.contains(&m.as_str()));
    let root_text = std::fs::read_to_string(src.join(krate.root)).unwrap();
    let reexports = root_reexports(&root_text);
    let modules: BTreeSet<String> = all.iter().map(|(m, _)| m.clone()).filter(|m| m != root_stem).collect();
    let mut g = Graph::new();
    g.entry(ROOT.to_string()).or_default().extend(root_uses(&code_of(&root_text), &modules));
    for (module, path) in &all {
        if module == root_stem {
            continue;
        }
        let deps = g.entry(module.clone()).or_default();
        for name in crate_paths(&code_of(&std::fs::read_to_string(path).unwrap())) {
            // A module, a name the root re-exports (by its module), or an item the root itself defines.
            let target = if modules.contains(&name) {
                name
            } else if let Some(m) = reexports.get(&name) {
                m.clone()
            } else {
                ROOT.to_string()
            };
            if target != *module {
                deps.insert(target);
            }
        }
    }
    g
}

fn graph() -> Graph {
    graph_of(&CORE)
}

/// Strongly connected components with more than one module (Tarjan's algorithm).
fn cycles(g: &Graph) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                s.low.insert(v, s.low[v].min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                s.low.insert(v, s.low[v].min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut s = State { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), found: Vec::new() };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

fn assert_acyclic(g: &Graph) {
    let found = cycles(g);
    assert!(found.is_empty(), "import cycles: {found:?}\ngraph: {g:#?}");
}

#[test]
fn the_core_has_no_import_cycle() {
    let g = graph();
    // The scan works: it sees edges that exist (report assembles rules and derive; diag uses codes).
    assert!(g["report"].contains("rules") && g["report"].contains("derive") && g["diag"].contains("codes"), "{g:#?}");
    assert_acyclic(&g);
}

#[test]
fn the_cli_has_no_import_cycle() {
    let g = graph_of(&CLI);
    // The scan works: the root calls both modules.
    assert!(g[ROOT].contains("table") && g[ROOT].contains("trace"), "{g:#?}");
    assert_acyclic(&g);
}

#[test]
fn the_page_has_no_import_cycle() {
    let g = graph_of(&PAGE);
    // The scan works: the app lays out the panels, which read the state and format numbers.
    assert!(g["app"].contains("panels") && g["panels"].contains("state") && g["panels"].contains("format"), "{g:#?}");
    assert_acyclic(&g);
}

#[test]
fn the_search_worker_has_no_import_cycle() {
    let g = graph_of(&SEARCH_WORKER);
    assert_acyclic(&g);
}

#[test]
fn the_bottom_of_the_graph_imports_nothing_above_it() {
    let g = graph();
    // codes.rs holds the rules table and the Code type: everything may use it, it uses nothing.
    assert!(g["codes"].is_empty(), "codes imports {:?}", g["codes"]);
    // Derived sizes sit below the modules that judge or build on them.
    for above in ["memory", "perf", "rules", "report", "search"] {
        assert!(!g["derive"].contains(above), "derive imports {above}");
    }
    // The field readers sit below the plan, model and preset readers that use them.
    for above in ["plan", "hf", "presets", "model_fields"] {
        assert!(!g["fields"].contains(above), "fields imports {above}");
    }
    for above in ["plan", "hf", "presets"] {
        assert!(!g["model_fields"].contains(above), "model_fields imports {above}");
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    // a → b → c → a is one cycle; d → a is not part of it.
    let edges = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")];
    let mut g = Graph::new();
    for (from, to) in edges {
        g.entry(from.into()).or_default().insert(to.into());
        g.entry(to.into()).or_default();
    }
    let found = cycles(&g);
    assert_eq!(found, vec![BTreeSet::from(["a".to_string(), "b".into(), "c".into()])]);
    assert_eq!(crate_paths("use crate::{Code, rules::{a, b}, plan::Plan};\nlet x = crate::model::f();"), ["Code", "rules", "plan", "model"]);
    // A crate root's calls into its modules count; `mod` lines and another crate's modules do not.
    let modules = BTreeSet::from(["table".to_string(), "trace".into(), "presets".into()]);
    let root = "mod table;\nmod trace;\nfn main() { trace::run(); meshplan_core::presets::all(); }";
    assert_eq!(root_uses(root, &modules), BTreeSet::from(["trace".to_string()]));
}

/// The files of a crate as a graph of their own (issue 20: "no import cycle between any two files"). A node is one
/// file, named by its module path (`layout/mesh`; `layout/mod.rs` and `hf.rs` are `layout` and `hf`; the crate root is
/// `crate`). An edge is a path in a file's code (outside `#[cfg(test)]` and comment lines) that resolves to another
/// file: `crate::a::b`, `super::x`, `self::x`, or a bare `child::x` naming a module the file declares, resolved to the
/// longest module path it names; a name a module re-exports (`pub use mesh::Meshes` in `layout/mod.rs`) resolves to
/// the file that defines it, and a module's re-export of its own submodules' items is no edge (a façade, as the crate
/// root's `pub use` is none above); a re-export of anything else is a use.
mod files {
    use super::{Crate, Graph, ROOT, code_of, workspace};
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    type Module = Vec<String>;

    fn name(m: &[String]) -> String {
        if m.is_empty() { ROOT.to_string() } else { m.join("/") }
    }

    /// Every `.rs` file under `dir` with its module path; `prefix` is the module of `dir`.
    fn collect(dir: &Path, prefix: &[String], skip: &[&str], out: &mut Vec<(Module, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            let file = path.file_name().unwrap().to_string_lossy().to_string();
            if prefix.is_empty() && skip.contains(&file.as_str()) {
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let mut m = prefix.to_vec();
            if path.is_dir() {
                m.push(stem);
                collect(&path, &m, skip, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                if !(stem == "mod" || (prefix.is_empty() && (stem == "lib" || stem == "main"))) {
                    m.push(stem);
                }
                out.push((m, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    fn is_ident(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }

    /// Every path of at least two segments in `code`, use trees expanded (`a::{b, c::d}` gives `a::b` and `a::c::d`;
    /// only the segments up to a brace's items matter for resolving, so each item's leading identifiers are kept).
    pub(super) fn paths(code: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let chars: Vec<char> = code.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let starts = is_ident(chars[i]) && !chars[i].is_ascii_digit() && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':' || chars[i - 1] == '$'));
            if starts {
                let (segments, end) = path_at(&chars, i, Vec::new(), &mut out);
                if segments.len() > 1 {
                    out.push(segments);
                }
                i = end.max(i + 1);
            } else {
                i += 1;
            }
        }
        out
    }

    /// Reads `ident(::ident)*` from `i`, then a `::{…}` group if any (its items pushed to `out` with this prefix).
    fn path_at(chars: &[char], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> (Vec<String>, usize) {
        loop {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            if i == start {
                return (prefix, i);
            }
            prefix.push(chars[start..i].iter().collect());
            if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
                i += 2;
                if chars.get(i) == Some(&'{') {
                    i += 1;
                    loop {
                        while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                            i += 1;
                        }
                        match chars.get(i) {
                            None => return (Vec::new(), i),
                            Some('}') => return (Vec::new(), i + 1),
                            Some(c) if is_ident(*c) => {
                                let (item, end) = path_at(chars, i, prefix.clone(), out);
                                if item.len() > prefix.len() {
                                    out.push(item);
                                }
                                i = end;
                            }
                            Some(_) => i += 1,
                        }
                    }
                }
            } else {
                return (prefix, i);
            }
        }
    }

    /// `path` from `file` as an absolute module path (segments after the modules are kept), or `None` for another
    /// crate's or a local item's path.
    fn absolute(path: &[String], file: &[String], modules: &BTreeSet<Module>) -> Option<Vec<String>> {
        // `super` of `layout/mesh` is `layout`; of `hf` (hf.rs, whose children are in hf/) the root.
        let mut base: Vec<String> = file.to_vec();
        let mut rest = path;
        match rest.first()?.as_str() {
            "crate" => {
                base.clear();
                rest = &rest[1..];
            }
            "self" => rest = &rest[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            first => {
                let mut child = base.clone();
                child.push(first.to_string());
                if !modules.contains(&child) {
                    return None;
                }
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file an absolute path lands in: its longest module prefix, then through that module's re-exports.
    fn target(abs: &[String], modules: &BTreeSet<Module>, reexports: &BTreeMap<(Module, String), Module>) -> Module {
        let mut m: Module = Vec::new();
        let mut at = 0;
        while at < abs.len() {
            let mut next = m.clone();
            next.push(abs[at].clone());
            if !modules.contains(&next) {
                break;
            }
            m = next;
            at += 1;
        }
        if let Some(item) = abs.get(at) {
            let mut seen = 0;
            while let Some(definer) = reexports.get(&(m.clone(), item.clone())) {
                m = definer.clone();
                seen += 1;
                if seen > 8 {
                    break;
                }
            }
        }
        m
    }

    /// The `pub use` / `pub(crate) use` statements of a file's code, and its code without them.
    fn split_reexports(code: &str) -> (Vec<String>, String) {
        let (mut uses, mut rest) = (Vec::new(), String::new());
        for stmt in code.split_inclusive(';') {
            let t = stmt.trim_start();
            if t.starts_with("pub use ") || t.starts_with("pub(crate) use ") || t.starts_with("pub(super) use ") {
                uses.push(t.to_string());
            } else {
                rest.push_str(stmt);
            }
        }
        (uses, rest)
    }

    pub(super) fn graph_of(krate: &Crate) -> Graph {
        let mut all = Vec::new();
        collect(&workspace().join(krate.src), &[], krate.others, &mut all);
        let modules: BTreeSet<Module> = all.iter().map(|(m, _)| m.clone()).collect();
        // A re-export's name, in the module that re-exports it, to the module whose file the path lands in.
        let mut reexports = BTreeMap::new();
        let mut code = Vec::new();
        for (m, text) in &all {
            let (uses, rest) = split_reexports(&code_of(text));
            let mut outside = Vec::new();
            for u in &uses {
                let body = u.split_once("use ").map_or("", |x| x.1);
                for p in paths(body) {
                    let alias = p.last().cloned().unwrap_or_default();
                    if let Some(abs) = absolute(&p, m, &modules) {
                        let definer = target(&abs, &modules, &BTreeMap::new());
                        if definer != *m {
                            reexports.insert((m.clone(), alias), definer.clone());
                        }
                        if !definer.starts_with(m) {
                            outside.push(definer);
                        }
                    }
                }
            }
            code.push((m.clone(), rest, outside));
        }
        let mut g = Graph::new();
        for (m, rest, outside) in &code {
            let deps = g.entry(name(m)).or_default();
            deps.extend(outside.iter().map(|t| name(t)));
            for p in paths(rest) {
                if let Some(abs) = absolute(&p, m, &modules) {
                    let t = target(&abs, &modules, &reexports);
                    if t != *m {
                        deps.insert(name(&t));
                    }
                }
            }
        }
        g
    }
}

#[test]
fn no_two_files_of_any_crate_import_each_other() {
    let mut found = Vec::new();
    for krate in [&CORE, &CLI, &SEARCH_WORKER, &PAGE] {
        let g = files::graph_of(krate);
        // The scan works: it sees edges between files inside folders.
        if krate.src == CORE.src {
            assert!(g["layout/crossing"].contains("layout/mesh") && g["memory/dsa"].contains("memory/shape"), "{g:#?}");
            assert!(g["report"].contains("rules") && g["diag"].contains("codes"), "{g:#?}");
        }
        for c in cycles(&g) {
            found.push(format!("{}: {c:?}", krate.src));
        }
    }
    assert!(found.is_empty(), "import cycles between files:\n{}", found.join("\n"));
}

#[test]
fn the_file_scan_reads_use_trees_and_relative_paths() {
    let p = files::paths("use crate::{Code, rules::{a, b::c}};\nlet x = super::run::Run::new(); y.map(f::g)");
    let want: Vec<Vec<&str>> = vec![vec!["crate", "Code"], vec!["crate", "rules", "a"], vec!["crate", "rules", "b", "c"], vec!["super", "run", "Run", "new"], vec!["f", "g"]];
    assert_eq!(p, want);
}
