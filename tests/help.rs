//! Help in the user's words: every command's `--help` as the real binary prints it, and the
//! sources it is written from. A stranger reads help, the README and docs/ without the
//! project's history: no "seed 003" (the documents the project started from), no "issue 21",
//! no FINDINGS (a file of the developers' machine), no figure measured on the developers' VM
//! said as "here", and sentences that end.

mod common;

use std::path::{Path, PathBuf};

/// Every subcommand path of the command line, each as its words (`["fs", "write"]`).
fn every_command() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, path: Vec<String>, all: &mut Vec<Vec<String>>) {
        all.push(path.clone());
        for sub in command.get_subcommands() {
            let mut next = path.clone();
            next.push(sub.get_name().to_string());
            walk(sub, next, all);
        }
    }
    let mut all = Vec::new();
    walk(&ringside::cli::command(), Vec::new(), &mut all);
    all
}

fn help(path: &[String]) -> String {
    common::help(&path.iter().map(String::as_str).collect::<Vec<_>>())
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where `text` speaks the project's own language: "seed" or "issue" before a number,
/// FINDINGS, or a figure from the developers' VM said as "here" (a sentence with a digit and the
/// word "here" in it: "2.3x slower here").
fn own_language(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    for pair in words.windows(2) {
        let word = pair[0].trim_start_matches(|c: char| !c.is_alphanumeric());
        let number = pair[1].starts_with(|c: char| c.is_ascii_digit());
        if number && ["seed", "seeds", "issue", "issues"].contains(&word.to_lowercase().as_str()) {
            found.push(format!("{} {}", pair[0], pair[1]));
        }
    }
    if text.contains("FINDINGS") {
        found.push("FINDINGS".into());
    }
    for sentence in prose(text)
        .iter()
        .flat_map(|paragraph| paragraph.split(". "))
    {
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let here = words
            .iter()
            .any(|word| word.trim_matches(|c: char| !c.is_alphanumeric()) == "here");
        let figure = (0..words.len()).any(|at| {
            let word = words[at].trim_end_matches([',', ';', ')']);
            let unit = words.get(at + 1).is_some_and(|next| {
                ["msg/s", "MB/s", "times", "ms", "s", "µs"]
                    .contains(&next.trim_end_matches([',', ';', ')']))
            });
            word.starts_with(|c: char| c.is_ascii_digit())
                && (word.ends_with(['x', '×', '%']) || unit)
        });
        if here && figure {
            found.push(sentence.to_string());
        }
    }
    found
}

/// The paragraphs of a help page that are prose: the command's about, each option's and
/// command's description, the text after them; not what clap writes itself (`Usage:`, the
/// section names, `[default: ...]`, possible values, its lines for -h, -V and `help`).
fn prose(page: &str) -> Vec<String> {
    fn flush(current: &mut Vec<String>, paragraphs: &mut Vec<String>) {
        if !current.is_empty() {
            paragraphs.push(current.join(" "));
        }
        current.clear();
    }
    let clap_own = [
        "Print help",
        "Print version",
        "Print this message or the help",
    ];
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let (mut values, mut commands) = (false, false);
    for line in page.lines() {
        let text = line.trim();
        let indent = line.len() - line.trim_start().len();
        let entry = match commands {
            // A command's line: its name, then its description.
            true => indent == 2,
            false => indent < 10 && (text.starts_with('-') || text.starts_with('<')),
        };
        if text.is_empty() {
            flush(&mut current, &mut paragraphs);
            values = false;
        } else if indent == 0 && (text.starts_with("Usage:") || text.ends_with(':')) {
            flush(&mut current, &mut paragraphs);
            commands = text == "Commands:";
        } else if entry {
            // Its description may start on its line, after two spaces.
            flush(&mut current, &mut paragraphs);
            if let Some((_, about)) = text.split_once("  ") {
                current.push(about.trim().to_string());
            }
        } else if text == "Possible values:" {
            flush(&mut current, &mut paragraphs);
            values = true;
        } else if !(values || current.is_empty() && text.starts_with('[')) {
            current.push(text.to_string());
        }
    }
    flush(&mut current, &mut paragraphs);
    paragraphs.retain(|p| !clap_own.iter().any(|own| p.starts_with(own)));
    // What clap appends to a short help: `[default: ...]`, `[possible values: ...]`.
    for paragraph in &mut paragraphs {
        while let Some(at) = paragraph.rfind(" [").filter(|_| paragraph.ends_with(']')) {
            let appended = &paragraph[at + 2..];
            if !(appended.starts_with("default:") || appended.starts_with("possible values:")) {
                break;
            }
            paragraph.truncate(at);
        }
    }
    paragraphs
}

#[test]
fn no_help_speaks_the_projects_own_language_or_leaves_a_sentence_unfinished() {
    let mut faults = Vec::new();
    for path in every_command() {
        let page = help(&path);
        let name = format!("ringside {} --help", path.join(" "));
        for found in own_language(&page) {
            faults.push(format!("{name} says {found:?}"));
        }
        for paragraph in prose(&page) {
            let ends = paragraph.trim_end_matches(['"', ')', '`']);
            if !(ends.ends_with('.') || ends.ends_with('?') || ends.ends_with(':')) {
                faults.push(format!(
                    "{name}: a sentence without its full stop: {paragraph:?}"
                ));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// The doc comments help is made of end in a full stop (clap drops the stop of a
/// one-paragraph comment, and `cli::command` puts it back: so only a sentence written without
/// one would show without one).
#[test]
fn help_is_written_in_sentences_in_the_sources() {
    let mut faults = Vec::new();
    for entry in std::fs::read_dir(root().join("src/cli")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut block: Vec<&str> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if let Some(doc) = trimmed.strip_prefix("///") {
                block.push(doc.trim());
                continue;
            }
            if let Some(last) = block
                .last()
                .filter(|_| !trimmed.starts_with("#[cfg(test)]"))
            {
                let ends = last.trim_end_matches(['"', ')', '`', ']']);
                if !(ends.ends_with('.') || ends.ends_with(':') || ends.ends_with('?')) {
                    faults.push(format!("{}:{number}: {last:?}", path.display()));
                }
            }
            block.clear();
        }
    }
    assert!(
        faults.is_empty(),
        "doc comments without a full stop:\n{}",
        faults.join("\n")
    );
}

/// The README, docs/ and the command line's sources, as the grep reads them:
/// `grep -rE "seed [0-9]|issue [0-9]|FINDINGS" src/cli docs README.md` finds nothing.
#[test]
fn readme_docs_and_the_command_line_speak_the_users_language() {
    fn files(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => files(&path, found),
                false => found.push(path),
            }
        }
    }
    let mut all = vec![root().join("README.md")];
    files(&root().join("docs"), &mut all);
    files(&root().join("src/cli"), &mut all);
    let mut faults = Vec::new();
    for path in all {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // a picture
        };
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let numbered = |word: &str| {
                (lower.match_indices(word)).any(|(at, _)| {
                    lower[at + word.len()..].starts_with(|c: char| c.is_ascii_digit())
                })
            };
            if numbered("seed ") || numbered("issue ") || line.contains("FINDINGS") {
                faults.push(format!("{}:{}: {line}", path.display(), number + 1));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// Every command that writes rows takes hyperfine's and oha's output flags.
#[test]
fn every_study_takes_json_and_the_exports() {
    let studies = [
        "fs write",
        "fs cycle",
        "fs read",
        "echo",
        "http",
        "load echo",
        "load http",
        "run",
    ];
    for study in studies {
        let path: Vec<String> = study.split(' ').map(String::from).collect();
        let page = help(&path);
        for flag in [
            "--json [<FILE>]",
            "--export-json <FILE>",
            "--export-csv <FILE>",
            "--export-markdown <FILE>",
        ] {
            assert!(page.contains(flag), "{study} has no {flag}");
        }
    }
    let fs = help(&["fs".into()]);
    for study in ["write", "cycle", "read"] {
        assert!(fs.contains(&format!("  {study} ")), "{fs}");
    }
}

/// `ringside --help` starts the reader at `run`, the one command that answers the question.
#[test]
fn help_starts_with_run() {
    let page = help(&[]);
    let commands = page.split("Commands:").nth(1).unwrap();
    let first = commands.split_whitespace().next();
    assert_eq!(first, Some("run"), "{page}");
}

#[test]
fn the_detector_of_own_language_finds_what_it_should() {
    assert_eq!(own_language("as in seed 003's demo").len(), 1);
    assert_eq!(own_language("since issue 21").len(), 1);
    assert_eq!(own_language("2 workers made it 2.3x slower here").len(), 1);
    assert!(own_language("whether it can run here. The --seed of the data").is_empty());
    let page =
        "Options:\n  -d, --duration <D>\n          Measured time\n\n          [default: 1s]\n";
    assert_eq!(prose(page), ["Measured time"]);
}
