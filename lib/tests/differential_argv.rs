//! Differential test of the shim's reading of git's command line (`shim::argv::Invocation`)
//! against what git itself acted on: the subcommand it ran (`cmd_name` in `GIT_TRACE2_EVENT`)
//! and the command-scope config it took from the global options (`def_param` events with scope
//! `command`, `GIT_TRACE2_CONFIG_PARAMS=*`), with both gits.
//!
//! Inputs: global-option prefixes from git.c's options in every spelling (`--opt=v`,
//! `--opt v`, abbreviations git.c does not accept, `-c` with and without a value, `-ckey=v`,
//! `--config-env`, `-C`, `--`, `--end-of-options`, `-`, empty words, command flags), then a
//! harmless subcommand and arguments, plus mutations (dropped, duplicated, swapped words).
//!
//! A disagreement: git ran a command, and the shim neither refused the line (`unknown_option`)
//! nor saw that same command with every config pair git took. git printing its usage, failing
//! before it runs a command, or running none (`--exec-path`) is nothing to compare.
mod differential;

use differential::{gits, run_size, seed, Rng};
use gitward::shim::argv::Invocation;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

const WORDS: &[&str] = &[
    "-c",
    "a.b=1",
    "core.hooksPath=/x",
    "A.B=2",
    "-ca.b=1",
    "--config-env=a.b=X",
    "--config-env",
    "a.b=X",
    "--config-env=a.b",
    "-C",
    "d",
    "-Cd",
    "--git-dir=.git",
    "--git-dir",
    ".git",
    "--work-tree=.",
    "--work-tree",
    ".",
    "--namespace=n",
    "--bare",
    "-p",
    "-P",
    "--no-pager",
    "--paginate",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
    "--exec-path",
    "--exec-path=/nonexistent",
    "--list-cmds=builtins",
    "--super-prefix=x/",
    "--attr-source=HEAD",
    "--shallow-file=x",
    "--git-d=.git",
    "--git-dir=",
    "--no-pag",
    "--",
    "--end-of-options",
    "-",
    "",
    "--version",
    "-v",
    "--html-path",
    "-cc",
    "--c",
    "-C.",
    "-c=a.b=1",
    "--config=a.b=1",
    "-c",
    "alias.zz=rev-parse",
    "zz",
];
const COMMANDS: &[&str] = &[
    "rev-parse",
    "version",
    "var",
    "ls-files",
    "status",
    "zz",
    "config",
    "help",
];
const ARGS: &[&str] = &[
    "--git-dir",
    "-l",
    "GIT_EDITOR",
    "--list",
    "-c",
    "x",
    "--",
    "HEAD",
];

struct Seen {
    command: Option<String>,
    /// (key, value) pairs of scope `command`.
    config: Vec<(String, String)>,
}

fn oracle(g: &Path, repo: &Path, trace: &Path, args: &[String]) -> Option<Seen> {
    let _ = std::fs::remove_file(trace);
    let out = Command::new(g)
        .args(args)
        .current_dir(repo)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("X", "from-env")
        .env("GIT_TRACE2_EVENT", trace)
        .env("GIT_TRACE2_CONFIG_PARAMS", "*")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    out.status.code()?; // killed by a signal: no reading to compare
    let text = std::fs::read_to_string(trace).ok()?;
    let mut seen = Seen {
        command: None,
        config: Vec::new(),
    };
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        match v["event"].as_str() {
            Some("cmd_name") if seen.command.is_none() => {
                seen.command = v["name"].as_str().map(str::to_owned)
            }
            Some("def_param") if v["scope"] == "command" => seen.config.push((
                v["param"].as_str()?.to_ascii_lowercase(),
                v["value"].as_str().unwrap_or("").to_owned(),
            )),
            _ => {}
        }
    }
    Some(seen)
}

fn generate(rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<String> = (0..rng.below(5))
        .map(|_| rng.pick(WORDS).to_string())
        .collect();
    v.push(rng.pick(COMMANDS).to_string());
    for _ in 0..rng.below(3) {
        v.push(rng.pick(ARGS).to_string());
    }
    if rng.one_in(3) && v.len() > 1 {
        let (a, b) = (rng.below(v.len()), rng.below(v.len()));
        v.swap(a, b);
    }
    v
}

#[test]
fn shim_reads_the_command_line_git_acts_on() {
    let n = run_size(800);
    let seed = seed(0xa76_0001);
    for g in gits() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir_all(repo.join("d")).unwrap();
        Command::new(&g)
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap();
        let trace = t.path().join("trace.json");
        let mut rng = Rng::new(seed);
        let (mut compared, mut refused, mut none) = (0, 0, 0);
        let mut failures = Vec::new();
        for _ in 0..n {
            let args = generate(&mut rng);
            let os: Vec<OsString> = args.iter().map(OsString::from).collect();
            let inv = Invocation::parse(&os, |k| (k == "X").then(|| OsString::from("from-env")));
            if inv.unknown_option.is_some() {
                refused += 1;
                continue;
            }
            let Some(seen) = oracle(&g, &repo, &trace, &args) else {
                none += 1;
                continue;
            };
            // `_query_` (`--exec-path`, `--list-cmds`: printed and exited) and `_usage_`
            // (a usage error): git ran no command.
            let Some(ran) = seen.command.filter(|c| c != "_query_" && c != "_usage_") else {
                none += 1;
                continue;
            };
            compared += 1;
            let ours = inv.command().map(|c| match c.as_str() {
                "--version" | "-v" => "version".to_owned(),
                "--help" | "-h" => "help".to_owned(),
                _ => c,
            });
            // An alias runs as `_run_dashed_`/`_run_git_alias_`: the shim sees the alias word.
            let alias = ran.starts_with("_run_");
            if ours.as_deref() != Some(ran.as_str()) && !alias {
                failures.push(format!("{args:?}: git ran {ran}, the shim read {ours:?}"));
            }
            let ours_cfg: Vec<(String, String)> = inv
                .config
                .iter()
                .map(|c| {
                    (
                        c.key.to_ascii_lowercase(),
                        c.value.clone().unwrap_or_default(),
                    )
                })
                .collect();
            for pair in &seen.config {
                if !ours_cfg.contains(pair) {
                    failures.push(format!(
                        "{args:?}: git took -c {}={}, the shim read {ours_cfg:?}",
                        pair.0, pair.1
                    ));
                }
            }
        }
        eprintln!("{} (seed {seed:#x}): {n} lines, {compared} compared, {refused} refused by the shim, {none} where git ran no command", g.display());
        assert!(compared > n / 10, "too few lines compared: {compared}");
        assert!(
            failures.is_empty(),
            "{} disagreements with {}:\n{}",
            failures.len(),
            g.display(),
            failures[..failures.len().min(20)].join("\n")
        );
    }
}
