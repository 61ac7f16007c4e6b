//! docs/ARCHITECTURE.md's import rules hold, so the floors stay true without anyone remembering
//! them: every `crate::` and `super::` path in `src/` (a `use` statement, over as many lines as
//! it takes, or a path in code) is checked against the page's tables, the folders' (`may
//! import`) and each folder's parts (`may import from X/`, for `engines/`, `report/`, `model/`
//! and `analysis/`); the folders' table itself only ever lets a line import lines below it; and
//! the parts of every folder import one another without a circle.
//!
//! Methodology: the tables are read from the page itself, so changing a rule is changing the
//! page. A path's module is resolved from the file it is in (`super::` is the parent module, or
//! the file's own inside its `mod tests`); its first name after `crate` is its folder, and inside
//! `engines/` its second is its part (an item of `engines/mod.rs`, such as `EngineDef`, is the
//! table's). The checker is tested on lines a forbidden import is added to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One row of a table: the names in its first cell, and what they may import.
#[derive(Debug)]
struct Rule {
    names: Vec<String>,
    may_import: BTreeSet<String>,
    /// `from X only Y, Z and W (why)`: folder X, and of it only items Y, Z and W.
    only: Option<(String, Vec<String>)>,
    /// `and one another`: the row's names import each other, so they are one part for circles.
    one_another: bool,
}

/// The names in backticks in `cell`, without a trailing `/` or `.rs`.
fn names_in(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| {
            name.trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect()
}

/// The table that follows the line `header` in `page`, as rules.
fn table(page: &str, header: &str) -> Vec<Rule> {
    let lines: Vec<&str> = page
        .lines()
        .skip_while(|line| line.trim() != header)
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .collect();
    assert!(!lines.is_empty(), "no table under {header:?}");
    let rows: Vec<(Vec<String>, String)> = lines
        .iter()
        .map(|line| {
            // A `\|` inside a cell is a pipe of its text, not a border.
            let line = line.replace("\\|", "/");
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            (names_in(cells[0]), cells[2].trim().to_string())
        })
        .collect();
    let every_name: BTreeSet<String> = rows.iter().flat_map(|(names, _)| names.clone()).collect();
    rows.iter()
        .enumerate()
        .map(|(index, (names, cell))| {
            let allowed = cell.split(" — ").next().unwrap_or_default();
            let mut may_import = BTreeSet::new();
            if allowed.contains("below") {
                for (lower, _) in &rows[index + 1..] {
                    may_import.extend(lower.iter().cloned());
                }
            }
            if !allowed.starts_with("nothing") {
                let words = allowed
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map(str::to_string);
                may_import.extend(words.filter(|word| every_name.contains(word)));
            }
            let only = allowed.split_once("from `").and_then(|(_, rest)| {
                let (folder, rest) = rest.split_once("` only ")?;
                let items = names_in(rest.split('(').next().unwrap_or_default());
                (!items.is_empty()).then(|| (folder.to_string(), items))
            });
            if let Some((folder, _)) = &only {
                may_import.remove(folder);
            }
            Rule {
                names: names.clone(),
                may_import,
                only,
                one_another: allowed.contains("one another"),
            }
        })
        .collect()
}

/// Everyone may import these (the line above the folders' table).
fn anyone_may_import(page: &str) -> Vec<String> {
    let line = page
        .lines()
        .skip_while(|line| !line.starts_with("Lower lines never import higher ones"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    names_in(
        line.split_once(';')
            .expect("the sentence says who may be imported")
            .1,
    )
}

/// The module path of a source file: `src/engines/uring/mod.rs` is `engines::uring`.
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root().join("src")).unwrap();
    let mut path: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    path
}

/// The absolute paths (after `crate::`) that `line` of a file in module `module` names.
fn paths_in(line: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = line.split("//").next().unwrap_or_default();
    let mut paths = Vec::new();
    for (start, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        let before = code[..start].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // `super::` after `super::`, or inside a longer name.
        }
        let rest = &code[start..];
        let mut segments: Vec<String> = Vec::new();
        let mut absolute: Vec<String> = module.to_vec();
        let mut tail = rest;
        loop {
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            let segment = &tail[..end];
            match segment {
                "crate" => absolute.clear(),
                "super" => {
                    absolute.pop();
                }
                "" => break,
                name => segments.push(name.to_string()),
            }
            tail = &tail[end..];
            if let Some(next) = tail.strip_prefix("::") {
                tail = next;
            } else {
                break;
            }
        }
        // `use super::{A, B}`: each name in the braces.
        if let Some(group) = tail.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or_default();
            for item in group.split(',') {
                let first = item.trim().split("::").next().unwrap_or_default().trim();
                if !first.is_empty() && first != "self" {
                    let mut path = absolute.clone();
                    path.extend(segments.iter().cloned());
                    path.push(first.to_string());
                    paths.push(path);
                }
            }
            continue;
        }
        absolute.extend(segments);
        if !absolute.is_empty() {
            paths.push(absolute);
        }
    }
    paths
}

/// Where `text`'s test module starts (`#[cfg(test)]` over a `mod tests`, public or not), or
/// its end.
fn tests_at(text: &str) -> usize {
    (text.match_indices("#[cfg(test)]\n"))
        .map(|(at, marker)| at + marker.len())
        .find(|&next| {
            let line = text[next..].lines().next().unwrap_or_default();
            line.trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .starts_with("mod tests")
        })
        .unwrap_or(text.len())
}

/// The lines of `text` as (line number, byte offset, text), a `use` statement that runs over
/// several lines (`use crate::{\n    a::b,\n    c::d,\n};`) joined into one at its first line.
fn statements(text: &str) -> Vec<(usize, usize, String)> {
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    let mut open = false;
    let mut offset = 0;
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        if open {
            let last = found
                .last_mut()
                .expect("an open statement has its first line");
            last.2.push_str(code.trim());
        } else {
            found.push((number, offset, code.to_string()));
            let trimmed = code.trim_start();
            let starts_use = trimmed.starts_with("use ")
                || (trimmed.starts_with("pub") && trimmed.contains(" use "));
            open = starts_use && !trimmed.contains(';');
        }
        if code.contains(';') {
            open = false;
        }
        offset += line.len() + 1;
    }
    found
}

/// The part of its folder a module path belongs to: a folder (`uring/`), a file (`needs.rs`),
/// or the folder's `mod.rs` (also for its items, such as `engines::EngineDef`).
fn part_of(path: &[String]) -> String {
    let Some(second) = path.get(1) else {
        return "mod".to_string();
    };
    let folder = root().join("src").join(&path[0]);
    if folder.join(second).is_dir() || folder.join(format!("{second}.rs")).is_file() {
        second.clone()
    } else {
        "mod".to_string()
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The rules of the page, and the checker of one file's text against them.
struct Rules {
    folders: Vec<Rule>,
    anyone: Vec<String>,
    /// Each folder's parts table, by folder (`engines`).
    parts: BTreeMap<String, Vec<Rule>>,
}

impl Rules {
    fn read() -> Rules {
        let page = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
        let parts = (page.lines())
            .filter_map(|line| {
                let folder = line.strip_prefix("| part of `")?.split('/').next()?;
                Some((folder.to_string(), table(&page, line.trim())))
            })
            .collect();
        Rules {
            folders: table(&page, "| folder | what it holds | may import |"),
            anyone: anyone_may_import(&page),
            parts,
        }
    }

    fn rule<'a>(rules: &'a [Rule], name: &str) -> Option<&'a Rule> {
        rules
            .iter()
            .find(|rule| rule.names.iter().any(|n| n == name))
    }

    /// The forbidden imports of `text`, the source of the file whose module path is
    /// `module`, each as a sentence; and each import from one part of the file's folder of
    /// another.
    fn check(&self, module: &[String], text: &str) -> (Vec<String>, Vec<(String, String)>) {
        let mut forbidden = Vec::new();
        let mut edges = Vec::new();
        let Some(folder) = module.first() else {
            return (forbidden, edges); // lib.rs, main.rs
        };
        let tests_at = tests_at(text);
        for (number, offset, line) in statements(text) {
            let mut here = module.to_vec();
            if offset > tests_at {
                here.push("tests".to_string()); // `super` is the file's own module there.
            }
            for path in paths_in(&line, &here) {
                let target = &path[0];
                let at = format!("{}:{}", module.join("::"), number + 1);
                if target == folder {
                    let (from, to) = (part_of(module), part_of(&path));
                    // A part's tests may use any part of its folder (to draw the page its
                    // section is on, or a test helper's rows).
                    if from != to && offset <= tests_at {
                        if let Some(error) = self.check_part(folder, &from, &to) {
                            forbidden.push(format!("{at}: {} ({error})", path.join("::")));
                        }
                        edges.push((from, to));
                    }
                    continue;
                }
                if self.anyone.contains(target) {
                    continue;
                }
                let Some(rule) = Rules::rule(&self.folders, folder) else {
                    forbidden.push(format!("{at}: {folder} has no row in the folders' table"));
                    continue;
                };
                let only = rule.only.as_ref().is_some_and(|(only_folder, items)| {
                    only_folder == target && path.get(1).is_some_and(|item| items.contains(item))
                });
                if !rule.may_import.contains(target) && !only {
                    forbidden.push(format!(
                        "{at}: {} ({folder} may import {:?})",
                        path.join("::"),
                        rule.may_import
                    ));
                }
            }
        }
        (forbidden, edges)
    }

    /// The names of the folders' table a row imports that are not on a line below it (nor
    /// imported by anyone), each as a sentence.
    fn upward(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (index, rule) in self.folders.iter().enumerate() {
            let below: BTreeSet<&String> = (self.folders[index + 1..].iter())
                .flat_map(|lower| &lower.names)
                .collect();
            let only = rule.only.iter().map(|(folder, _)| folder);
            for name in rule.may_import.iter().chain(only) {
                if !below.contains(name) && !self.anyone.contains(name) {
                    found.push(format!(
                        "{:?} may import {name}, a line above it",
                        rule.names
                    ));
                }
            }
        }
        found
    }

    /// Whether part `from` of `folder` may import part `to`: always in a folder without a
    /// parts table (its circles are still checked).
    fn check_part(&self, folder: &str, from: &str, to: &str) -> Option<String> {
        let parts = self.parts.get(folder)?;
        let Some(rule) = Rules::rule(parts, from) else {
            return Some(format!(
                "{folder}/{from} has no row in the {folder}' parts table"
            ));
        };
        let same_row = rule.names.iter().any(|name| name == to);
        (!same_row && !rule.may_import.contains(to))
            .then(|| format!("{folder}/{from} may import {:?}", rule.may_import))
    }

    /// The part whose circle is checked for `part` of `folder`: the parts on one row of `mod.rs`
    /// (the folder's table and what it re-exports, such as `lookup.rs`) or of a row that says
    /// they import "one another" are one.
    fn circle_part(&self, folder: &str, part: String) -> String {
        let row = (self.parts.get(folder)).and_then(|parts| Rules::rule(parts, &part));
        match row {
            Some(rule) if rule.one_another || rule.names.iter().any(|name| name == "mod") => {
                rule.names[0].clone()
            }
            _ => part,
        }
    }
}

/// A circle in `edges` (from, to), if there is one.
fn circle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from).or_default().push(to);
    }
    fn visit<'a>(
        node: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|&on| on == node) {
            return Some(path[start..].iter().map(|n| n.to_string()).collect());
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for &to in next.get(node).into_iter().flatten() {
            if let Some(found) = visit(to, next, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    next.keys()
        .find_map(|node| visit(node, &next, &mut Vec::new(), &mut done))
}

#[test]
fn every_import_keeps_to_the_architecture_page() {
    let rules = Rules::read();
    let mut forbidden = rules.upward();
    let mut edges: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for file in sources(&root().join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let module = module_of(&file);
        let (found, parts) = rules.check(&module, &text);
        forbidden.extend(found);
        let Some(folder) = module.first() else {
            continue;
        };
        let part = |part: String| rules.circle_part(folder, part);
        edges.entry(folder.clone()).or_default().extend(
            (parts.into_iter())
                .map(|(from, to)| (part(from), part(to)))
                .filter(|(from, to)| from != to),
        );
    }
    let circles: Vec<String> = (edges.iter())
        .filter_map(|(folder, edges)| Some(format!("{folder}/: {:?}", circle(edges)?)))
        .collect();
    assert!(
        forbidden.is_empty() && circles.is_empty(),
        "imports docs/ARCHITECTURE.md forbids:\n{}\ncircles of imports: {circles:?}",
        forbidden.join("\n")
    );
}

/// The checker itself: each forbidden line below, added to a file where the page forbids it,
/// is found; the same lines where the page allows them are not.
#[test]
fn a_forbidden_import_is_found() {
    let rules = Rules::read();
    let module = |path: &str| path.split("::").map(str::to_string).collect::<Vec<_>>();
    let forbidden = [
        ("engines::file", "use crate::engines::uring::ring::Helpers;"),
        ("engines::server", "use super::uring::ring::SqpollShare;"),
        ("engines::needs", "use super::uring::trial::availability;"),
        ("engines::uring::file", "use crate::engines::EngineDef;"),
        ("engines::epoll", "use crate::cli::common::CommonArgs;"),
        ("protocols::http", "use crate::engines::Workload;"),
        ("report::threads", "use crate::engines::find;"),
        ("model::ladder", "use crate::engines::find;"),
        ("studies::echo", "use crate::report::markdown;"),
        ("model::study", "use crate::report::terminal_text;"),
        (
            "model::study",
            "use crate::{\n    row::Row,\n    report::terminal_text,\n};",
        ),
        ("studies::echo", "use crate::report::terminal_text;"),
        ("report::table", "use crate::report::outline::Block;"),
        ("model::figures", "use crate::model::study::Study;"),
    ];
    for (file, line) in forbidden {
        let (found, _) = rules.check(&module(file), line);
        assert_eq!(found.len(), 1, "{file}: {line} was not found forbidden");
    }
    let allowed = [
        (
            "engines::uring::file",
            "use crate::engines::file::FileEngine;",
        ),
        (
            "engines::threads::file",
            "use crate::engines::blocking::file::io_error;",
        ),
        (
            "engines",
            "use uring::ring::Helpers; let x = crate::engines::uring::trial::x();",
        ),
        ("report::threads", "use crate::engines::parent_name;"),
        ("report::outline", "use crate::report::table::Cells;"),
        ("model::study", "use crate::model::comparison::Comparison;"),
        (
            "model::study",
            "use crate::engines::{engines_of, Workload};",
        ),
        (
            "engines::needs",
            "#[cfg(test)]\nmod tests {\n    use super::*;\n}",
        ),
    ];
    for (file, line) in allowed {
        let (found, _) = rules.check(&module(file), line);
        assert!(found.is_empty(), "{file}: {line}: {found:?}");
    }
    let looped: BTreeSet<(String, String)> = [("file", "slots"), ("slots", "file")]
        .iter()
        .map(|(from, to)| (from.to_string(), to.to_string()))
        .collect();
    assert!(circle(&looped).is_some(), "a circle not found");
}
