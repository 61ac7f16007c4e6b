//! The reference contenders `ringside run` adds to its network steps (`--contenders`): the
//! programs in `contenders/`, as `contenders/build.sh` leaves them in the build directory
//! (`target/contenders`, beside the binary's `target/release`), each one `--contender` flag.
//! `auto` takes those that are built and can run here and says why it left out the others.

use std::path::{Path, PathBuf};

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
    /// The command; `{dir}` is the contenders directory and `{protocol}` is `echo` or `http`.
    command: &'static str,
}

pub const REFERENCES: [Reference; 4] = [
    Reference {
        name: "node",
        built: "node/echo.js",
        runtime: Some("node"),
        command: "node {dir}/node/{protocol}.js {port}",
    },
    Reference {
        name: "go",
        built: "go/ringside-go",
        runtime: None,
        // One OS thread runs Go code, so it gets one core like the engines.
        command: "GOMAXPROCS=1 {dir}/go/ringside-go {protocol} {port}",
    },
    Reference {
        name: "tokio",
        built: "tokio/ringside-tokio",
        runtime: None,
        command: "{dir}/tokio/ringside-tokio {protocol} {port}",
    },
    Reference {
        name: "monoio",
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
        if !dir.join(self.built).exists() {
            return Some(format!(
                "not built in {} (contenders/build.sh builds it)",
                dir.display()
            ));
        }
        let runtime = self.runtime?;
        (!super::control::on_path(runtime)).then(|| format!("{runtime} is not installed"))
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
        assert!(notes[0].contains("not built"), "{notes:?}");
        let error = choose(&Choice::Named(vec!["go".into()]), empty).unwrap_err();
        assert!(error.to_string().contains("contender go cannot run"));
    }
}
