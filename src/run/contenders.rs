//! The reference contenders `ringside run` adds to its network steps (`--contenders`): the
//! programs in `contenders/`, as `contenders/build.sh` leaves them in the build directory
//! (`target/contenders`, beside the binary's `target/release`), each one `--contender` flag.
//! `auto` takes those that are built and can run here and says why it left out the others.
//! `run` builds the ones it wants that are not built yet and whose toolchain is installed, once,
//! with that same script from the checkout the binary was built from (`build`).

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
                    "{} is not installed, so contenders/build.sh cannot build it",
                    self.toolchain
                ));
            }
            return Some(format!(
                "not built in {} (contenders/build.sh builds it)",
                dir.display()
            ));
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

/// Where build.sh left the contenders: `RINGSIDE_CONTENDERS`, else `contenders` beside the
/// directory of this binary (`target/release/ringside` → `target/contenders`).
pub fn directory(exe: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("RINGSIDE_CONTENDERS") {
        return PathBuf::from(dir);
    }
    let profile = exe.parent().unwrap_or(Path::new("."));
    profile
        .parent()
        .unwrap_or(Path::new("."))
        .join("contenders")
}

/// The contenders `choice` takes from `dir`, and a note for each that `auto` left out; an error
/// when a named one cannot run.
pub fn choose(
    choice: &Choice,
    dir: &Path,
) -> anyhow::Result<(Vec<&'static Reference>, Vec<String>)> {
    let mut chosen = Vec::new();
    let mut notes = Vec::new();
    match choice {
        Choice::None => {}
        Choice::Auto => {
            for reference in &REFERENCES {
                match reference.missing(dir) {
                    Some(why) => {
                        notes.push(format!("contender {}: not run, {why}", reference.name))
                    }
                    None => chosen.push(reference),
                }
            }
        }
        Choice::Named(names) => {
            for reference in names.iter().filter_map(|name| find(name)) {
                if let Some(why) = reference.missing(dir) {
                    anyhow::bail!("contender {} cannot run: {why}", reference.name);
                }
                chosen.push(reference);
            }
        }
    }
    Ok((chosen, notes))
}

/// contenders/build.sh in the checkout this binary was built from (`cargo install --path .`
/// too); None once that checkout is gone.
fn build_script() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("contenders/build.sh");
    script.is_file().then_some(script)
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

/// Builds, with contenders/build.sh, the references `choice` wants that are not built in `dir`
/// and whose toolchain is here; `say` hears what is built before the wait. Returns the note for
/// the report (what was built, in how many seconds), None when nothing needed building. Runs of
/// ringside started together take turns on a lock in `dir`, so a build is never raced.
pub fn build(choice: &Choice, dir: &Path, say: impl Fn(String)) -> anyhow::Result<Option<String>> {
    if buildable(choice, dir).is_empty() {
        return Ok(None);
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the contenders directory {}", dir.display()))?;
    let lock = std::fs::File::create(dir.join(".build.lock"))
        .with_context(|| format!("cannot create a lock file in {}", dir.display()))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .with_context(|| format!("cannot lock {}/.build.lock", dir.display()))?;
    // Another run may have built them while this one waited for the lock.
    let names: Vec<&str> = (buildable(choice, dir).iter())
        .map(|reference| reference.name)
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    let Some(script) = build_script() else {
        return Ok(Some(format!(
            "contenders: {} not built: contenders/build.sh is gone with the checkout ringside \
             was built from",
            names.join(", ")
        )));
    };
    say(format!(
        "building the reference contenders {} with contenders/build.sh into {} (once; 1 to \
         1.5 min on a 2-CPU machine)",
        names.join(", "),
        dir.display()
    ));
    let started = Instant::now();
    let output = Command::new("bash")
        .arg(&script)
        .arg(dir)
        .args(&names)
        .output()
        .with_context(|| format!("cannot run {}", script.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    if output.status.success() {
        return Ok(Some(format!(
            "contenders: built {} with contenders/build.sh in {seconds:.0} s",
            names.join(", ")
        )));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Ok(Some(format!(
        "contenders: contenders/build.sh failed after {seconds:.0} s building {} ({}): {}",
        names.join(", "),
        output.status,
        tail.join(" / ")
    )))
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
        let (chosen, notes) = choose(&Choice::Auto, empty).unwrap();
        assert!(chosen.is_empty());
        assert_eq!(notes.len(), REFERENCES.len());
        assert!(
            notes[0].contains("not built") || notes[0].contains("is not installed"),
            "{notes:?}"
        );
        assert_eq!(build(&Choice::None, empty, |_| {}).unwrap(), None);
        let error = choose(&Choice::Named(vec!["go".into()]), empty).unwrap_err();
        assert!(error.to_string().contains("contender go cannot run"));
    }
}
