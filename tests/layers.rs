//! The core's vocabulary lies in layers and imports only downward
//! (STYLE.md): text → request and webhook → record → config → output →
//! coordinator → exchange and delivery. A module path that reaches up
//! (`crate::core::output::…` from `request/`) is a rule in the wrong place:
//! this test names each one. Test modules and the model checker's world
//! may reach anywhere.

use std::fs;
use std::path::Path;

/// Each folder of `src/core/` and its layer; a folder imports only its own
/// layer's or lower ones'.
const LAYERS: [(&str, u8); 10] = [
    ("text", 0),
    ("client", 1),
    ("request", 1),
    ("webhook", 1),
    ("record", 2),
    ("config", 3),
    ("output", 4),
    ("coordinator", 5),
    ("exchange", 6),
    ("delivery", 6),
];

fn layer(folder: &str) -> Option<u8> {
    LAYERS.iter().find(|(name, _)| *name == folder).map(|(_, layer)| *layer)
}

/// The code of `file` before its unit tests, without its comments (a doc
/// link may point anywhere).
fn code_of(file: &Path) -> String {
    let text = fs::read_to_string(file).unwrap();
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text,
    };
    code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "tests") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn each_folder_imports_only_its_layer_or_below() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut upward = Vec::new();
    let mut checked = 0;
    for (folder, own) in LAYERS {
        let mut files = Vec::new();
        rust_files(&core.join(folder), &mut files);
        for file in files {
            checked += 1;
            let code = code_of(&file);
            for (at, _) in code.match_indices("crate::core::") {
                let rest = &code[at + "crate::core::".len()..];
                let Some(target) = rest.split("::").next().filter(|_| rest.contains("::")) else { continue };
                let Some(theirs) = layer(target) else { continue };
                if target != folder && theirs > own {
                    upward.push(format!("{} uses crate::core::{target} ({folder} is below {target})", file.display()));
                }
            }
        }
    }
    assert!(checked > 50, "the core's files were found ({checked})");
    assert!(upward.is_empty(), "imports that reach up a layer:\n{}", upward.join("\n"));
}
