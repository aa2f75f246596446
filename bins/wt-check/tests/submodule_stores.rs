//! Object substitution in a submodule's own object store (`<common dir>/modules/<name>/objects`),
//! end to end on every git of the machine: the owner's `git submodule update` (or any checkout
//! in the submodule) reads the submodule's store, which the agent can write as it writes the
//! superproject's. Each store is checked as the repository's own (`integrity::stores`): a
//! loose object rewritten in place is `object_substituted` (exit 1) and `--restore` sets it
//! aside. Positive control: plain git reads the agent's content under the owner's id.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn git(w: &common::World, g: &Path, dir: &Path, args: &[&str]) -> String {
    let mut c = Command::new(g);
    w.env(&mut c);
    let out = c
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        g.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A world with an empty home and a state folder, no repository yet.
fn empty_world() -> common::World {
    let w = common::World {
        tmp: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(w.home()).unwrap();
    std::fs::write(w.home().join(".gitconfig"), "").unwrap();
    std::fs::create_dir_all(w.root().join("state")).unwrap();
    w
}

/// The agent's turn: the loose object file `p` rewritten in place with the bytes of another
/// blob ("evil\n", made by git in a scratch repository), its mode put back.
fn substitute(w: &common::World, g: &Path, p: &Path) {
    let root = w.root();
    git(w, g, &root, &["init", "-q", "scratch"]);
    std::fs::write(root.join("scratch/e"), "evil\n").unwrap();
    let e = git(w, g, &root.join("scratch"), &["hash-object", "-w", "e"]);
    let e = e.trim();
    let evil = std::fs::read(
        root.join("scratch/.git/objects")
            .join(&e[..2])
            .join(&e[2..]),
    )
    .unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(p, &evil).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o444)).unwrap();
}

#[test]
fn a_loose_object_substituted_in_a_submodule_store_is_reported_and_set_aside() {
    for g in common::gits() {
        let w = empty_world();
        let root = w.root();
        // The submodule's source: `side` holds f = "hello\n", main has moved on.
        git(&w, &g, &root, &["init", "-q", "subsrc"]);
        let src = root.join("subsrc");
        std::fs::write(src.join("f"), "hello\n").unwrap();
        git(&w, &g, &src, &["add", "f"]);
        git(&w, &g, &src, &["commit", "-qm", "one"]);
        git(&w, &g, &src, &["branch", "side"]);
        std::fs::write(src.join("f"), "moved on\n").unwrap();
        git(&w, &g, &src, &["commit", "-qam", "two"]);
        git(&w, &g, &root, &["init", "-q", "proj"]);
        let m = w.main();
        git(
            &w,
            &g,
            &m,
            &["submodule", "add", "-q", src.to_str().unwrap(), "sub"],
        );
        git(&w, &g, &m, &["commit", "-qm", "sub"]);
        let sub = m.join("sub");
        git(&w, &g, &sub, &["fetch", "-q", "origin", "side:side"]);
        let id = git(&w, &g, &sub, &["rev-parse", "side:f"])
            .trim()
            .to_owned();
        let store = w.git_dir().join("modules/sub/objects");
        let p = store.join(&id[..2]).join(&id[2..]);
        assert!(
            p.exists(),
            "a loose object in the submodule's store (local clone)"
        );
        w.pin();
        // The agent's turn: the owner's blob rewritten in place with another blob's bytes.
        substitute(&w, &g, &p);
        // Positive control: the owner's git reads the agent's content under its own id.
        assert_eq!(
            git(&w, &g, &sub, &["cat-file", "blob", &id]),
            "evil\n",
            "{}",
            g.display()
        );
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        let s: Vec<_> = ev
            .iter()
            .filter(|e| e["event"] == "object_substituted")
            .collect();
        assert_eq!(s.len(), 1, "{ev:#?}");
        assert_eq!(s[0]["id"], id.as_str());
        assert!(p.exists(), "check without --restore moves nothing");
        let (code, ev) = w.check(true);
        assert_eq!(code, 1, "{ev:#?}");
        assert!(!p.exists(), "set aside: {ev:#?}");
        let (code, ev) = w.check(false);
        assert_eq!(code, 0, "{ev:#?}");
    }
}

/// R23-2: a repository nested in the work tree behind a gitlink, its git dir a folder there
/// (a submodule added from an existing clone): the owner's checkout in it reads its own
/// store. A loose object of its trusted history rewritten in place is reported.
#[test]
fn a_loose_object_substituted_in_a_nested_repository_store_is_reported() {
    for g in common::gits() {
        let w = empty_world();
        let root = w.root();
        git(&w, &g, &root, &["init", "-q", "proj"]);
        let m = w.main();
        std::fs::write(m.join("r"), "r\n").unwrap();
        git(&w, &g, &m, &["add", "r"]);
        git(&w, &g, &m, &["commit", "-qm", "r"]);
        git(&w, &g, &m, &["init", "-q", "vendor"]);
        let v = m.join("vendor");
        std::fs::write(v.join("f"), "hello\n").unwrap();
        git(&w, &g, &v, &["add", "f"]);
        git(&w, &g, &v, &["commit", "-qm", "one"]);
        git(&w, &g, &m, &["add", "vendor"]);
        git(&w, &g, &m, &["commit", "-qm", "gitlink"]);
        let id = git(&w, &g, &v, &["rev-parse", "HEAD:f"]).trim().to_owned();
        let p = v.join(".git/objects").join(&id[..2]).join(&id[2..]);
        assert!(p.exists());
        w.pin();
        substitute(&w, &g, &p);
        // Positive control: the owner's git reads the agent's content under its own id.
        assert_eq!(git(&w, &g, &v, &["cat-file", "blob", &id]), "evil\n");
        let (code, ev) = w.check(false);
        assert_eq!(code, 1, "{}: {ev:#?}", g.display());
        assert!(
            ev.iter()
                .any(|e| e["event"] == "object_substituted" && e["id"] == id.as_str()),
            "{ev:#?}"
        );
    }
}
