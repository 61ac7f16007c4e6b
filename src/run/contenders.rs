//! The reference contenders `ringside run` adds to its network steps (`--contenders`): the
//! programs in `contenders/`, whose sources travel inside this binary (`SOURCES`), built by
//! their `build.sh` into the contenders directory (`directory`), each one `--contender` flag.
//! `run` builds the ones it wants that are not built yet and whose toolchain is installed,
//! once, from the embedded sources unpacked under `$TMPDIR` (`build`); `auto` takes those that
//! are built and can run here and notes why it left out the others, and never fails the run.
//! Only a contender named explicitly is an error when it cannot run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context;

/// Which reference contenders join the run (`--contenders auto|none|LIST`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Every reference contender that is built and whose runtime is installed.
    Auto,
    None,
    /// These, each of which must be ready (an error says why one is not).
    Named(Vec<String>),
}

impl Choice {
    pub fn parse(text: &str) -> Result<Choice, String> {
        match text {
            "auto" => Ok(Choice::Auto),
            "none" => Ok(Choice::None),
            list => {
                let names: Vec<String> = list.split(',').map(|n| n.trim().to_string()).collect();
                match names.iter().find(|name| find(name).is_none()) {
                    Some(name) => Err(format!(
                        "no reference contender is called '{name}' (auto, none, or some of {})",
                        REFERENCES.map(|r| r.name).join(", ")
                    )),
                    None => Ok(Choice::Named(names)),
                }
            }
        }
    }
}

/// One reference contender: what `build.sh` leaves for it and how it is started.
#[derive(Debug)]
pub struct Reference {
    pub name: &'static str,
    /// What build.sh leaves under the contenders directory (checked before it is chosen).
    built: &'static str,
    /// A program it needs on PATH at run time (node), if any.
    runtime: Option<&'static str>,
    /// The program build.sh needs to build it.
    toolchain: &'static str,
    /// The command; `{dir}` is the contenders directory and `{protocol}` is `echo` or `http`.
    command: &'static str,
}

pub const REFERENCES: [Reference; 4] = [
    Reference {
        name: "node",
        toolchain: "node",
        built: "node/echo.js",
        runtime: Some("node"),
        command: "node {dir}/node/{protocol}.js {port}",
    },
    Reference {
        name: "go",
        toolchain: "go",
        built: "go/ringside-go",
        runtime: None,
        // One OS thread runs Go code, so it gets one core like the engines.
        command: "GOMAXPROCS=1 {dir}/go/ringside-go {protocol} {port}",
    },
    Reference {
        name: "tokio",
        toolchain: "cargo",
        built: "tokio/ringside-tokio",
        runtime: None,
        command: "{dir}/tokio/ringside-tokio {protocol} {port}",
    },
    Reference {
        name: "monoio",
        toolchain: "cargo",
        built: "monoio/ringside-monoio",
        runtime: None,
        command: "{dir}/monoio/ringside-monoio {protocol} {port}",
    },
];

fn find(name: &str) -> Option<&'static Reference> {
    REFERENCES.iter().find(|reference| reference.name == name)
}

impl Reference {
    /// Why it cannot run from `dir`, if it cannot.
    fn missing(&self, dir: &Path) -> Option<String> {
        if !self.is_built(dir) {
            if !super::control::on_path(self.toolchain) {
                return Some(format!(
                    "{} is not installed (none on PATH that this user may run), so it cannot \
                     be built",
                    self.toolchain
                ));
            }
            return Some(format!("not built in {}", dir.display()));
        }
        let runtime = self.runtime?;
        (!super::control::on_path(runtime)).then(|| format!("{runtime} is not installed"))
    }

    fn is_built(&self, dir: &Path) -> bool {
        dir.join(self.built).exists()
    }

    /// The `--contender` value of this contender for `protocol`.
    pub fn flag(&self, dir: &Path, protocol: &str) -> String {
        let dir = shell_quoted(&dir.display().to_string());
        let command = (self.command)
            .replace("{dir}", &dir)
            .replace("{protocol}", protocol);
        format!("{}={command}", self.name)
    }
}

/// The sources of `contenders/`, as this binary was built with them, by path: an installed
/// ringside builds its contenders without the checkout (a test keeps this list equal to the
/// folder). The Rust contenders' manifests are `Cargo.toml.in`, which build.sh names
/// `Cargo.toml` in a copy: a folder with a `Cargo.toml` is a package of its own, which `cargo
/// package` leaves out of ringside's crate, and an installed ringside would lack them.
pub const SOURCES: [(&str, &str); 13] = [
    ("build.sh", include_str!("../../contenders/build.sh")),
    ("go/go.mod", include_str!("../../contenders/go/go.mod")),
    ("go/main.go", include_str!("../../contenders/go/main.go")),
    (
        "monoio/Cargo.lock",
        include_str!("../../contenders/monoio/Cargo.lock"),
    ),
    (
        "monoio/Cargo.toml.in",
        include_str!("../../contenders/monoio/Cargo.toml.in"),
    ),
    (
        "monoio/src/main.rs",
        include_str!("../../contenders/monoio/src/main.rs"),
    ),
    (
        "node/echo.js",
        include_str!("../../contenders/node/echo.js"),
    ),
    (
        "node/http.js",
        include_str!("../../contenders/node/http.js"),
    ),
    (
        "node/package-lock.json",
        include_str!("../../contenders/node/package-lock.json"),
    ),
    (
        "node/package.json",
        include_str!("../../contenders/node/package.json"),
    ),
    (
        "tokio/Cargo.lock",
        include_str!("../../contenders/tokio/Cargo.lock"),
    ),
    (
        "tokio/Cargo.toml.in",
        include_str!("../../contenders/tokio/Cargo.toml.in"),
    ),
    (
        "tokio/src/main.rs",
        include_str!("../../contenders/tokio/src/main.rs"),
    ),
];

/// Where the contenders are built: `RINGSIDE_CONTENDERS`; else, for a binary in a cargo build
/// directory (`target/release/ringside`, cargo's `.fingerprint` beside it), that checkout's
/// `target/contenders`, where contenders/build.sh puts them by default; else the user's cache,
/// `$XDG_CACHE_HOME/ringside/contenders` or `~/.cache/ringside/contenders`. Never beside an
/// installed binary. Err says why there is none.
pub fn directory(exe: &Path) -> Result<PathBuf, String> {
    directory_in(exe, |name| std::env::var_os(name))
}

/// `directory`, with the environment read through `var`.
fn directory_in(
    exe: &Path,
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, String> {
    if let Some(dir) = var("RINGSIDE_CONTENDERS").filter(|dir| !dir.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(profile) = exe.parent().filter(|dir| dir.join(".fingerprint").is_dir()) {
        if let Some(target) = profile.parent() {
            return Ok(target.join("contenders"));
        }
    }
    // The XDG base directory spec ignores a relative XDG_CACHE_HOME.
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let cache = (absolute("XDG_CACHE_HOME"))
        .or_else(|| absolute("HOME").map(|home| home.join(".cache")))
        .ok_or(
            "there is nowhere to build them: neither XDG_CACHE_HOME nor HOME names a \
             directory (RINGSIDE_CONTENDERS may name one)",
        )?;
    Ok(cache.join("ringside").join("contenders"))
}

/// The contenders `choice` takes from `dir`, and a note for each that `auto` left out; an error
/// when a named one cannot run. `dir` is Err (why there is none) when there is no contenders
/// directory: `auto` then takes none, with that note.
pub fn choose(
    choice: &Choice,
    dir: Result<&Path, &str>,
) -> anyhow::Result<(Vec<&'static Reference>, Vec<String>)> {
    let mut chosen = Vec::new();
    let mut notes = Vec::new();
    let missing = |reference: &Reference| match dir {
        Ok(dir) => reference.missing(dir),
        Err(why) => Some(why.to_string()),
    };
    match choice {
        Choice::None => {}
        Choice::Auto => {
            for reference in &REFERENCES {
                match missing(reference) {
                    Some(why) => {
                        notes.push(format!("contender {}: not run, {why}", reference.name))
                    }
                    None => chosen.push(reference),
                }
            }
        }
        Choice::Named(names) => {
            for reference in names.iter().filter_map(|name| find(name)) {
                if let Some(why) = missing(reference) {
                    anyhow::bail!("contender {} cannot run: {why}", reference.name);
                }
                chosen.push(reference);
            }
        }
    }
    Ok((chosen, notes))
}

/// The references `choice` asks for that are not built in `dir` but could be: their toolchain
/// is installed.
fn buildable(choice: &Choice, dir: &Path) -> Vec<&'static Reference> {
    let wanted: Vec<&'static Reference> = match choice {
        Choice::None => Vec::new(),
        Choice::Auto => REFERENCES.iter().collect(),
        Choice::Named(names) => names.iter().filter_map(|name| find(name)).collect(),
    };
    (wanted.into_iter())
        .filter(|reference| !reference.is_built(dir))
        .filter(|reference| super::control::on_path(reference.toolchain))
        .collect()
}

/// Builds the references `choice` wants that are not built in `dir` and whose toolchain is
/// here, with build.sh from the embedded sources; `say` hears what is built before the wait.
/// Returns the note for the report: what was built in how many seconds, or why nothing could
/// be (an unwritable directory, a failed build); None when nothing needed building. Never an
/// error: a contender that is still not built is left out by `auto` with this note, and
/// refused by name. Runs of ringside started together take turns on a lock in `dir`, so a
/// build is never raced.
pub fn build(choice: &Choice, dir: &Path, say: impl Fn(String)) -> Option<String> {
    if buildable(choice, dir).is_empty() {
        return None;
    }
    let not_built = |why: String| Some(format!("contenders: not built, {why}"));
    if let Err(error) = std::fs::create_dir_all(dir) {
        return not_built(format!("cannot create {}: {error}", dir.display()));
    }
    let lock = match std::fs::File::create(dir.join(".build.lock")) {
        Ok(lock) => lock,
        Err(error) => return not_built(format!("cannot write in {}: {error}", dir.display())),
    };
    if let Err(error) = rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive) {
        return not_built(format!(
            "cannot lock {}/.build.lock: {error}",
            dir.display()
        ));
    }
    // Another run may have built them while this one waited for the lock.
    let names: Vec<&str> = (buildable(choice, dir).iter())
        .map(|reference| reference.name)
        .collect();
    if names.is_empty() {
        return None;
    }
    let sources = match unpack_sources() {
        Ok(sources) => sources,
        Err(error) => return not_built(format!("{error:#}")),
    };
    say(format!(
        "building the reference contenders {} into {} (once; 1 to 1.5 min on a 2-vCPU VM, 5 \
         beside other builds)",
        names.join(", "),
        dir.display()
    ));
    let started = Instant::now();
    let output = Command::new("bash")
        .arg(sources.path().join("build.sh"))
        .arg(dir)
        .args(&names)
        .output();
    let seconds = started.elapsed().as_secs_f64();
    let output = match output {
        Ok(output) => output,
        Err(error) => return not_built(format!("cannot run bash: {error}")),
    };
    if output.status.success() {
        return Some(format!(
            "contenders: built {} into {} in {seconds:.0} s",
            names.join(", "),
            dir.display()
        ));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Some(format!(
        "contenders: build.sh failed after {seconds:.0} s building {} ({}): {}",
        names.join(", "),
        output.status,
        tail.join(" / ")
    ))
}

/// The embedded sources, written into a fresh directory under `$TMPDIR` that is removed when
/// the returned value drops.
fn unpack_sources() -> anyhow::Result<tempfile::TempDir> {
    let root = tempfile::Builder::new()
        .prefix("ringside-contenders-")
        .tempdir()
        .context("cannot create a directory for the contenders' sources under $TMPDIR")?;
    for (path, text) in SOURCES {
        let file = root.path().join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(root)
}

/// `text` in single quotes for `sh -c` (a directory with spaces stays one word).
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_unknown_names_are_refused() {
        assert_eq!(Choice::parse("auto"), Ok(Choice::Auto));
        assert_eq!(Choice::parse("none"), Ok(Choice::None));
        assert_eq!(
            Choice::parse("go,tokio"),
            Ok(Choice::Named(vec!["go".into(), "tokio".into()]))
        );
        assert!(Choice::parse("go,nginx").unwrap_err().contains("'nginx'"));
    }

    #[test]
    fn a_flag_names_its_port_and_quotes_its_directory() {
        let flag = REFERENCES[1].flag(Path::new("/a b/contenders"), "http");
        assert_eq!(
            flag,
            "go=GOMAXPROCS=1 '/a b/contenders'/go/ringside-go http {port}"
        );
        assert!(crate::studies::contender::Contender::parse(&flag).is_ok());
    }

    #[test]
    fn auto_leaves_out_what_is_not_built_and_a_named_one_must_be() {
        let empty = Path::new("/nonexistent/contenders");
        let (chosen, notes) = choose(&Choice::Auto, Ok(empty)).unwrap();
        assert!(chosen.is_empty());
        assert_eq!(notes.len(), REFERENCES.len());
        assert!(
            notes[0].contains("not built") || notes[0].contains("is not installed"),
            "{notes:?}"
        );
        assert_eq!(build(&Choice::None, empty, |_| {}), None);
        let error = choose(&Choice::Named(vec!["go".into()]), Ok(empty)).unwrap_err();
        assert!(error.to_string().contains("contender go cannot run"));
    }

    #[test]
    fn without_a_directory_auto_notes_why_and_a_named_one_is_refused() {
        let (chosen, notes) = choose(&Choice::Auto, Err("no HOME")).unwrap();
        assert!(chosen.is_empty());
        assert_eq!(notes[0], "contender node: not run, no HOME");
        assert!(choose(&Choice::Named(vec!["node".into()]), Err("no HOME")).is_err());
    }

    #[test]
    fn an_unwritable_directory_is_a_note_not_an_error() {
        // A directory under a regular file cannot be created, whoever runs the test.
        let file = tempfile::NamedTempFile::new().unwrap();
        let dir = file.path().join("contenders");
        let wanted = Choice::Named(REFERENCES.iter().map(|r| r.name.to_string()).collect());
        if buildable(&wanted, &dir).is_empty() {
            eprintln!("skipped: no contender's toolchain is installed here");
            return;
        }
        let note = build(&wanted, &dir, |_| {}).unwrap();
        assert!(
            note.starts_with("contenders: not built, cannot create"),
            "{note}"
        );
    }

    #[test]
    fn installed_binaries_build_in_the_users_cache_and_checkouts_in_target() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                (pairs.iter())
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| std::ffi::OsString::from(value))
            }
        };
        let installed = Path::new("/usr/local/bin/ringside");
        let home = env(&[("HOME", "/home/u")]);
        assert_eq!(
            directory_in(installed, home),
            Ok(PathBuf::from("/home/u/.cache/ringside/contenders"))
        );
        let xdg = env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")]);
        assert_eq!(
            directory_in(installed, xdg),
            Ok(PathBuf::from("/c/ringside/contenders"))
        );
        let relative = env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "c")]);
        assert_eq!(
            directory_in(installed, relative),
            Ok(PathBuf::from("/home/u/.cache/ringside/contenders"))
        );
        let chosen = env(&[("HOME", "/home/u"), ("RINGSIDE_CONTENDERS", "/x")]);
        assert_eq!(directory_in(installed, chosen), Ok(PathBuf::from("/x")));
        assert!(directory_in(installed, env(&[])).is_err());
        // A binary in a cargo build directory keeps to its checkout's target/.
        let target = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(target.path().join("release/.fingerprint")).unwrap();
        let built = target.path().join("release/ringside");
        assert_eq!(
            directory_in(&built, env(&[("HOME", "/home/u")])),
            Ok(target.path().join("contenders"))
        );
    }

    /// Every file of contenders/ is embedded, so a contender added there travels too.
    #[test]
    fn every_file_of_the_contenders_folder_is_embedded() {
        fn files(dir: &Path, root: &Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    files(&path, root, found);
                } else {
                    let relative = path.strip_prefix(root).unwrap();
                    found.push(relative.to_string_lossy().into_owned());
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("contenders");
        let mut found = Vec::new();
        files(&root, &root, &mut found);
        found.sort();
        let embedded: Vec<String> = SOURCES.iter().map(|(path, _)| path.to_string()).collect();
        assert_eq!(found, embedded);
        let unpacked = unpack_sources().unwrap();
        for (path, text) in SOURCES {
            assert_eq!(
                std::fs::read_to_string(unpacked.path().join(path)).unwrap(),
                text
            );
        }
    }
}
