//! Embeds the claims ledger (`claims/*.toml`) in the binary, so an installed ringside has every
//! claim: adding a claim is adding a file there. Writes `$OUT_DIR/claims.rs`, an array of
//! (file name, text) that `model::claim::EMBEDDED` includes.

use std::fmt::Write;
use std::path::Path;

fn main() {
    // Read when the script runs, not when it was compiled: a target directory copied from
    // another checkout keeps its compiled build script, which would embed that checkout's claims.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("claims");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut code = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        writeln!(code, "    ({name:?}, include_str!({:?})),", path.display()).unwrap();
    }
    code.push(']');
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("claims.rs");
    std::fs::write(out, code).expect("cannot write the embedded claims");
}
