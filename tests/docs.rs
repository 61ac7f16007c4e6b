//! The front page and the indexes stay true: every write-up in bench/ is named in its index,
//! every link of the README, docs/ and bench's index leads to a file, and the README's first
//! screen holds the question, the picture, install and the two set-up commands.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The relative targets of a Markdown page's `[text](target)` links, anchors cut off.
fn links(page: &str) -> Vec<String> {
    page.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|target| target.split('#').next().unwrap_or("").to_string())
        .filter(|target| !target.is_empty() && !target.contains("://"))
        .filter(|target| !target.starts_with("mailto:"))
        .collect()
}

/// `path` with its `..` and `.` parts resolved by name (the file need not exist).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages
}

#[test]
fn every_bench_write_up_is_named_in_the_bench_index() {
    let index = std::fs::read_to_string(root().join("bench/README.md")).unwrap();
    let named = links(&index);
    let missing: Vec<String> = markdown_in(&root().join("bench"))
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| name != "README.md" && !named.contains(name))
        .collect();
    assert!(missing.is_empty(), "bench/README.md lacks {missing:?}");
}

/// The write-ups bench/README.md announces before they land: its "(see NAME.md)" lines.
fn announced() -> Vec<PathBuf> {
    let index = std::fs::read_to_string(root().join("bench/README.md")).unwrap();
    index
        .split("(see ")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|name| normalise(&root().join("bench").join(name)))
        .collect()
}

#[test]
fn every_link_of_the_readme_docs_and_bench_index_leads_to_a_file() {
    let mut pages = vec![root().join("README.md"), root().join("bench/README.md")];
    pages.extend(markdown_in(&root().join("docs")));
    let announced = announced();
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let dir = page.parent().unwrap();
        for target in links(&text) {
            let path = dir.join(&target);
            // A write-up the index announces may be linked before it lands.
            let pending = announced.contains(&normalise(&path));
            if !path.exists() && !pending {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}

#[test]
fn the_readme_first_screen_holds_the_question_picture_install_and_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let screen: String = readme.lines().take(40).collect::<Vec<_>>().join("\n");
    for needed in [
        "on *your* machine and kernel",
        "](docs/report.png)",
        "cargo install --path .",
        "cargo run --release -- run ",
        "cargo test --release ",
    ] {
        assert!(
            screen.contains(needed),
            "{needed:?} is not in the first 40 lines"
        );
    }
}
