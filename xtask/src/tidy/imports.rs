//! What each file of a crate names of the same crate: `use` trees (grouped,
//! renamed, globbed, `pub use` too), `crate::`/`super::`/`self::` paths in
//! code, resolved through the crate's module files and re-exports to the
//! file that defines the name. A token scan of code with comments and
//! strings blanked, not a parser: enough for the layering rule, whose
//! fixtures (tidy/tests.rs) pin each form it must understand.

use std::collections::{BTreeMap, BTreeSet};

/// A token of blanked code.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn tokenize(code: &[String]) -> Vec<Token> {
    let mut out = Vec::new();
    for (i, text) in code.iter().enumerate() {
        let line = i + 1;
        let chars: Vec<char> = text.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            if c.is_alphanumeric() || c == '_' {
                let start = k;
                while k < chars.len() && (chars[k].is_alphanumeric() || chars[k] == '_') {
                    k += 1;
                }
                let word = chars[start..k].iter().collect();
                out.push(Token {
                    tok: Tok::Ident(word),
                    line,
                });
                continue;
            }
            if c == ':' && chars.get(k + 1) == Some(&':') {
                out.push(Token {
                    tok: Tok::PathSep,
                    line,
                });
                k += 2;
                continue;
            }
            if !c.is_whitespace() {
                out.push(Token {
                    tok: Tok::Punct(c),
                    line,
                });
            }
            k += 1;
        }
    }
    out
}

/// A path as written, with the module it was written in (a file's module
/// plus any inline `mod x { … }` around it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Written {
    pub within: Vec<String>,
    pub segments: Vec<String>,
}

/// What one file names.
#[derive(Debug, Default)]
pub(super) struct FileNames {
    /// Items defined anywhere in the file (`fn`, `struct`, inline `mod` …).
    pub defs: BTreeSet<String>,
    /// Names bound by `use`: name → the path it stands for.
    pub bindings: Vec<(String, Written)>,
    /// `use path::*`: the modules whose names it brings in.
    pub globs: Vec<Written>,
    /// Every path into the crate this file names, with its line: each leaf
    /// of its `use` trees and each `crate::`/`super::`/`self::` path in code.
    pub refs: Vec<(usize, Written)>,
    /// Paths from the `hidden` list the file names (e.g. `Owner::global`),
    /// with their line.
    pub hidden: Vec<(usize, String)>,
}

const DEF_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "union", "trait", "type", "const", "static", "mod",
];

/// Scans one file's code lines (comments, strings and inline test modules
/// blanked). `module` is the file's module path; `hidden` lists
/// paths such as `Owner::global` that reach a layer without an import.
pub(super) fn scan(code: &[String], module: &[String], hidden: &[&str]) -> FileNames {
    let toks = tokenize(code);
    let hidden: Vec<Vec<&str>> = hidden.iter().map(|h| h.split("::").collect()).collect();
    let mut out = FileNames::default();
    // Inline modules open around the current token: (name, brace depth
    // outside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let ident = |i: usize| match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Tok| toks.get(i).map(|x| &x.tok) == Some(t);
    let mut i = 0;
    while i < toks.len() {
        let within = || {
            let mut m = module.to_vec();
            m.extend(inline.iter().map(|(n, _)| n.clone()));
            m
        };
        match &toks[i].tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(word) if word == "use" && !(i > 0 && is(i - 1, &Tok::PathSep)) => {
                let test_only = cfg_test_before(&toks, i);
                let mut leaves = Vec::new();
                let mut k = i + 1;
                use_tree(&toks, &mut k, Vec::new(), &mut leaves);
                if !test_only {
                    let within = within();
                    for leaf in leaves {
                        let written = Written {
                            within: within.clone(),
                            segments: leaf.path,
                        };
                        if leaf.glob {
                            out.globs.push(written.clone());
                        } else if let Some(name) = leaf.binds {
                            out.bindings.push((name, written.clone()));
                        }
                        out.refs.push((leaf.line, written));
                    }
                }
                i = k.max(i + 1);
                continue;
            }
            Tok::Ident(word) if DEF_KEYWORDS.contains(&word.as_str()) => {
                if let Some(name) = ident(i + 1) {
                    out.defs.insert(name.to_string());
                    if word == "mod" && is(i + 2, &Tok::Punct('{')) {
                        inline.push((name.to_string(), depth));
                    }
                }
            }
            Tok::Ident(word) if word == "macro_rules" && is(i + 1, &Tok::Punct('!')) => {
                if let Some(name) = ident(i + 2) {
                    out.defs.insert(name.to_string());
                }
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && is(i + 1, &Tok::PathSep)
                    && !(i > 0 && is(i - 1, &Tok::PathSep))
                    // `pub(in crate::x)` names a scope, not an item.
                    && ident(i.wrapping_sub(1)) != Some("in") =>
            {
                let line = toks[i].line;
                let mut segments = vec![word.clone()];
                let mut k = i + 1;
                while is(k, &Tok::PathSep) {
                    match ident(k + 1) {
                        Some(s) => segments.push(s.to_string()),
                        None => break,
                    }
                    k += 2;
                }
                out.refs.push((
                    line,
                    Written {
                        within: within(),
                        segments,
                    },
                ));
            }
            _ => {}
        }
        for h in &hidden {
            let matches = h.iter().enumerate().all(|(n, seg)| {
                ident(i + 2 * n) == Some(*seg) && (n == 0 || is(i + 2 * n - 1, &Tok::PathSep))
            });
            // Also as the tail of a longer path (`crate::Owner::global`).
            if matches {
                out.hidden.push((toks[i].line, h.join("::")));
            }
        }
        i += 1;
    }
    out
}

/// Whether the item starting at token `i` (after its visibility) carries
/// `#[cfg(test)]` or `#[cfg(all(test, …))]` among its attributes.
fn cfg_test_before(toks: &[Token], mut i: usize) -> bool {
    let tok = |i: usize| &toks[i].tok;
    // Back over `pub`, `pub(crate)`, `pub(in a::b)`.
    while i > 0 {
        match tok(i - 1) {
            Tok::Ident(s) if matches!(s.as_str(), "pub" | "crate" | "super" | "self" | "in") => {}
            Tok::Punct('(' | ')') | Tok::PathSep => {}
            _ => break,
        }
        i -= 1;
    }
    // Back over each attribute `#[…]`, looking inside.
    while i > 0 && *tok(i - 1) == Tok::Punct(']') {
        let close = i - 1;
        let mut depth = 0usize;
        let mut open = None;
        for k in (0..close).rev() {
            match tok(k) {
                Tok::Punct(']') => depth += 1,
                Tok::Punct('[') if depth == 0 => {
                    open = Some(k);
                    break;
                }
                Tok::Punct('[') => depth -= 1,
                _ => {}
            }
        }
        let Some(open) = open else { return false };
        let words: Vec<String> = toks[open + 1..close]
            .iter()
            .map(|t| match &t.tok {
                Tok::Ident(s) => s.clone(),
                Tok::Punct(c) => c.to_string(),
                Tok::PathSep => "::".into(),
            })
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        if words == ["cfg", "(", "test", ")"]
            || words.starts_with(&["cfg", "(", "all", "(", "test", ","])
        {
            return true;
        }
        if open == 0 || *tok(open - 1) != Tok::Punct('#') {
            return false;
        }
        i = open - 1;
    }
    false
}

/// The child modules a file declares under `#[cfg(test)]` (`mod x;`).
pub(super) fn test_modules(code: &[String]) -> Vec<String> {
    let toks = tokenize(code);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.tok == Tok::Ident("mod".into())
            && let Some(Token {
                tok: Tok::Ident(name),
                ..
            }) = toks.get(i + 1)
            && toks.get(i + 2).map(|t| &t.tok) == Some(&Tok::Punct(';'))
            && cfg_test_before(&toks, i)
        {
            out.push(name.clone());
        }
    }
    out
}

/// One leaf of a `use` tree.
struct Leaf {
    path: Vec<String>,
    glob: bool,
    binds: Option<String>,
    line: usize,
}

/// Parses the use tree at `*k` (after `use` or inside a group) onto
/// `prefix`; leaves `*k` after it.
fn use_tree(toks: &[Token], k: &mut usize, prefix: Vec<String>, out: &mut Vec<Leaf>) {
    let mut path = prefix;
    let mut line = toks.get(*k).map_or(0, |t| t.line);
    loop {
        match toks.get(*k).map(|t| &t.tok) {
            Some(Tok::PathSep) => *k += 1,
            Some(Tok::Ident(s)) if s != "as" => {
                line = toks[*k].line;
                path.push(s.clone());
                *k += 1;
                if toks.get(*k).map(|t| &t.tok) != Some(&Tok::PathSep) {
                    break;
                }
            }
            Some(Tok::Punct('{')) => {
                *k += 1;
                loop {
                    match toks.get(*k).map(|t| &t.tok) {
                        None => return,
                        Some(Tok::Punct('}')) => {
                            *k += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *k += 1,
                        Some(_) => {
                            let before = *k;
                            use_tree(toks, k, path.clone(), out);
                            if *k == before {
                                *k += 1;
                            }
                        }
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                *k += 1;
                out.push(Leaf {
                    path,
                    glob: true,
                    binds: None,
                    line,
                });
                return;
            }
            _ => break,
        }
    }
    if path.is_empty() {
        return;
    }
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    let mut binds = path.last().cloned();
    if toks.get(*k).map(|t| &t.tok) == Some(&Tok::Ident("as".into())) {
        binds = match toks.get(*k + 1).map(|t| &t.tok) {
            Some(Tok::Ident(s)) if s != "_" => Some(s.clone()),
            _ => None,
        };
        *k += 2;
    }
    out.push(Leaf {
        path,
        glob: false,
        binds,
        line,
    });
}

/// A crate's module files and what each names, for resolving paths.
pub(super) struct Crate<'a> {
    /// Module path → index into `files`.
    modules: BTreeMap<Vec<String>, usize>,
    files: &'a [FileNames],
}

impl<'a> Crate<'a> {
    /// `modules[i]` is the module path of the file whose names are `files[i]`.
    pub fn new(modules: &[Vec<String>], files: &'a [FileNames]) -> Self {
        Crate {
            modules: modules
                .iter()
                .enumerate()
                .map(|(i, m)| (m.clone(), i))
                .collect(),
            files,
        }
    }

    /// The crate-absolute segments of a written path, or `None` for a path
    /// outside the crate (`std::…`, another crate).
    pub fn absolute(&self, written: &Written) -> Option<Vec<String>> {
        let segs = &written.segments;
        let first = segs.first()?;
        let mut out;
        match first.as_str() {
            "crate" => return Some(segs[1..].to_vec()),
            "self" | "super" => {
                out = written.within.clone();
                let mut rest = segs.as_slice();
                if rest[0] == "self" {
                    rest = &rest[1..];
                }
                while rest.first().is_some_and(|s| s == "super") {
                    out.pop()?;
                    rest = &rest[1..];
                }
                out.extend(rest.iter().cloned());
            }
            _ => {
                // Edition 2018: a path may start at a child module (lib.rs's
                // `pub use owner::Owner`).
                out = written.within.clone();
                out.push(first.clone());
                if !self.modules.contains_key(&out) {
                    return None;
                }
                out.extend(segs[1..].iter().cloned());
            }
        }
        Some(out)
    }

    /// The file (index) that defines what a crate-absolute path names: the
    /// module file it walks into, then through `use` re-exports to the
    /// definition. A name not found stays at the last module's file.
    pub fn resolve(&self, path: &[String]) -> Option<usize> {
        self.resolve_at(path, 0).or_else(|| {
            let mut module: &[String] = path;
            loop {
                if let Some(&f) = self.modules.get(module) {
                    return Some(f);
                }
                module = module.split_last()?.1;
            }
        })
    }

    fn resolve_at(&self, path: &[String], hops: usize) -> Option<usize> {
        let mut module: Vec<String> = Vec::new();
        for seg in path {
            let mut deeper = module.clone();
            deeper.push(seg.clone());
            if self.modules.contains_key(&deeper) {
                module = deeper;
                continue;
            }
            return self.item(&module, seg, hops);
        }
        self.modules.get(&module).copied()
    }

    /// The file defining `name` as seen in `module`'s file.
    fn item(&self, module: &[String], name: &str, hops: usize) -> Option<usize> {
        let &file = self.modules.get(module)?;
        let names = &self.files[file];
        if names.defs.contains(name) {
            return Some(file);
        }
        // Re-exports chain a few times at most; a cycle stops here.
        if hops > 8 {
            return None;
        }
        for (bound, written) in &names.bindings {
            if bound == name
                && let Some(abs) = self.absolute(written)
            {
                return self.resolve_at(&abs, hops + 1);
            }
        }
        for glob in &names.globs {
            if let Some(mut abs) = self.absolute(glob) {
                abs.push(name.to_string());
                if let Some(f) = self.resolve_at(&abs, hops + 1) {
                    return Some(f);
                }
            }
        }
        None
    }
}
