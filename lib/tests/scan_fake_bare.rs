//! red-team R4-10: a committed fake bare repository. git's discovery (`setup.c`
//! `is_git_directory`) takes a folder for a git dir when its HEAD passes `validate_headref` and
//! `access(X_OK)` passes on `objects` and `refs` — executable files do — and the config's
//! program-running keys can sit in a file `config` includes. Positive control first: on each
//! git, plain git run in that folder runs the agent's program (an alias from the included file,
//! no terminal needed); then the scan must report the folder (GW-SCAN-040, error) and the
//! config's include (GW-SCAN-041).

use gitward::catalogue::Severity;
use gitward::scan::{self, Limits, RefSnapshot};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const GITS: &[&str] = &["/usr/bin/git", "/usr/local/bin/git"];

fn git(git: &str, home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(git)
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_CEILING_DIRECTORIES", "")
        .output()
        .unwrap()
}

fn ok(out: std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn exec(p: &Path, body: &str) {
    std::fs::write(p, body).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn fake_bare_repository_fires_under_git_and_is_flagged() {
    let mut ran = 0;
    for g in GITS {
        if !Path::new(g).exists() {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "{g}: missing under CI=true"
            );
            eprintln!("SKIPPED on {g}: not installed");
            continue;
        }
        ran += 1;
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(
            home.join("gitconfig"),
            "[user]\n\tname = a\n\temail = a@b\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        let canary = tmp.path().join("canary");
        let prog = tmp.path().join("canary.sh");
        exec(
            &prog,
            &format!("#!/bin/sh\necho FIRED >> '{}'\n", canary.display()),
        );
        let proj = tmp.path().join("proj");
        ok(git(g, &home, tmp.path(), &["init", "-q", "proj"]));
        std::fs::write(proj.join("f"), "a\n").unwrap();
        ok(git(g, &home, &proj, &["add", "f"]));
        ok(git(g, &home, &proj, &["commit", "-qm", "i"]));
        let git_dir = proj.join(".git");
        let snap = RefSnapshot::take(&git_dir).unwrap();

        // The agent's turn: a committed "fixture" folder.
        let x = proj.join("tools/x");
        std::fs::create_dir_all(&x).unwrap();
        std::fs::write(x.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        exec(&x.join("objects"), "#!/bin/sh\n");
        exec(&x.join("refs"), "#!/bin/sh\n");
        std::fs::write(x.join("config"), "[include]\n\tpath = settings.ini\n").unwrap();
        std::fs::write(
            x.join("settings.ini"),
            format!("[alias]\n\tst = !'{}'\n", prog.display()),
        )
        .unwrap();
        ok(git(g, &home, &proj, &["add", "tools"]));
        ok(git(g, &home, &proj, &["commit", "-qm", "add tool fixture"]));

        // Positive control: plain git in that folder uses it as its repository.
        let _ = git(g, &home, &x, &["st"]);
        assert!(
            canary.exists(),
            "{g}: positive control did not fire: git in tools/x did not take it for a git dir"
        );

        let rep = scan::scan(&git_dir, &snap, &Limits::default()).unwrap();
        let has = |id: &str, path: &str, sev: Severity| {
            rep.findings
                .iter()
                .any(|f| f.rule_id == id && f.path == path && f.severity == sev)
        };
        assert!(
            has("GW-SCAN-040", "tools/x", Severity::Error),
            "{g}: {rep:#?}"
        );
        assert!(
            has("GW-SCAN-041", "tools/x/config", Severity::Warning),
            "{g}: {rep:#?}"
        );
        assert_eq!(rep.exit_code(), gitward::exit::FOUND, "{g}: {rep:#?}");
    }
    assert!(ran > 0, "no git on this machine");
}
