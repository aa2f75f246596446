//! Differential test of safe-git's own argument checks (`safegit::args`: the allow-list, the
//! per-subcommand forms, parse-options abbreviations, `--opt=value` / `--opt value`, stuck and
//! bundled short options, `--end-of-options`, `--`, `--no-` negations, options after
//! pathspecs) against what git acts on, with both gits.
//!
//! The oracle is git itself run on the same command line in a scratch repository whose every
//! program-running surface is a canary (a script that appends to `fired`): `-O`/
//! `--open-files-in-pager`, `--upload-pack`/`--receive-pack`/`--exec`, `diff.external`
//! (`--ext-diff`), a textconv driver (`--textconv`), `core.pager` (`-p`, `grep -O`),
//! `GIT_EDITOR`, and `man.viewer` (`--help`). Every file of the sandbox is snapshotted before
//! and after, so a deleted untracked file, a changed ref, config or reflog, a new note or a
//! written file count as "git wrote".
//!
//! For each generated line safe-git runs first (the binary, with `--git <git>`). Then:
//! - safe-git refused (exit 120–124 with its one-line reason): the safe answer, counted;
//! - under safe-git a canary fired or the sandbox changed: a **finding** (the allow-list let
//!   through a line that runs a program or writes), whatever plain git does;
//! - plain git fires or writes where safe-git stayed quiet: disarmed by safe-git's
//!   environment (`-c` set), counted per kind;
//! - neither fires nor writes: stdout, stderr and the exit status must be byte-identical
//!   (safe-git's promise on what it lets through).
//!
//! Exceptions, by design and counted: the file named by `--output` (the caller chose it; the
//! diff family writes it, nothing runs) is taken off the snapshot and reported, so `--output`
//! is generated only with that file; and output that differs between two runs of plain git
//! itself (git's own nondeterminism: `--stat-name-width=1` reads uninitialised memory) is
//! counted, not compared, and so is a difference that the next pair of runs does not repeat
//! (output that follows the clock: `rev-parse --after=x` prints `--max-age=<now>`).
//!
//! `GITWARD_DIFF_N` (inputs per git) and `GITWARD_DIFF_SEED` turn the bounded run into a long
//! one (docs/fuzzing.md).

mod common;

use common::{bin, gits, Sandbox};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../lib/tests/differential/mod.rs"]
mod differential;
use differential::{run_size, seed, Rng};
use gitward::safegit::options::{self, Arg, Spec};

/// The scratch repository: history on two branches, tags, a symbolic ref, a note, a stash, a
/// reflog, untracked files for `clean`, patterns `grep` can match (`--`, `-x`,
/// `--end-of-options`), and every program surface armed with the canary.
const SETUP: &str = r#"
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
ROOT=$PWD
cat > can.sh <<'EOF'
#!/bin/sh
printf '%s\n' "$*" >> "$(dirname "$0")/fired"
cat >/dev/null 2>&1 </dev/null
exit 0
EOF
chmod +x can.sh
printf '[man]\n\tviewer = cv\n[man "cv"]\n\tcmd = %s/can.sh man\n[help]\n\tformat = man\n' "$ROOT" >> home/.gitconfig
git init -q repo
cd repo
printf 'a -- b\n--end-of-options\n-x\nx y\nHEAD\nmain\n' > f
mkdir d && printf 'x\n' > d/g
printf '*.tc diff=tc\n' > .gitattributes
git add . && git commit -qm one
printf 'x2\n' >> f && git commit -qam two
git tag v1 && git tag -a -m ann v2
git branch x && git branch feature
git checkout -q -b tc && printf 'tc\n' > a.tc && git add a.tc && git commit -qm tc && git checkout -q main
git symbolic-ref refs/heads/sym refs/heads/main
git notes add -m note HEAD~1
printf 'stash\n' >> f && git stash -q
git config diff.external "$ROOT/can.sh ext"
git config diff.tc.textconv "$ROOT/can.sh textconv"
git config core.pager "$ROOT/can.sh pager"
git config core.editor "$ROOT/can.sh editor"
git config sequence.editor "$ROOT/can.sh seq-editor"
printf 'u\n' > untracked && mkdir ud && printf 'u\n' > ud/u && printf 'i\n' > ignored.log
printf 'ignored.log\n' > .git/info/exclude
"#;

/// The subcommands generated (allow-listed ones weighted by how much of their own form
/// checking they have, plus a few that are refused).
const COMMANDS: &[&str] = &[
    "grep",
    "grep",
    "grep",
    "clean",
    "clean",
    "clean",
    "symbolic-ref",
    "symbolic-ref",
    "notes",
    "notes",
    "submodule",
    "reflog",
    "reflog",
    "branch",
    "branch",
    "tag",
    "tag",
    "config",
    "config",
    "cherry",
    "var",
    "stash",
    "remote",
    "worktree",
    "log",
    "diff",
    "show",
    "status",
    "ls-files",
    "rev-parse",
    "for-each-ref",
    "cat-file",
    "describe",
    "diff-tree",
    "show-branch",
    "check-attr",
    "diff-index",
    "diff-files",
    "shortlog",
    "blame",
    "annotate",
    "rev-list",
    "ls-tree",
    "show-ref",
    "merge-base",
    "name-rev",
    "count-objects",
    "check-ignore",
    "range-diff",
    "version",
    "commit",
    "help",
];

/// Words any command line may carry. `{CAN}` is the canary, `{OUT}` a file outside the repo.
const WORDS: &[&str] = &[
    "--",
    "--",
    "--end-of-options",
    "--end-of-options",
    "-",
    "-e",
    "-f",
    "-n",
    "-q",
    "-d",
    "-D",
    "-m",
    "msg",
    "-l",
    "-v",
    "-i",
    "-x",
    "-a",
    "-r",
    "-p",
    "x",
    "f",
    "d",
    "HEAD",
    "main",
    "feature",
    "v1",
    "v2",
    "refs/heads/sym",
    "refs/heads/x",
    "refs/heads/new",
    "--no-dry-run",
    "--dry-run",
    "--dry",
    "--force",
    "--delete",
    "--del",
    "--d",
    "--no-delete",
    "-qd",
    "-dq",
    "-nf",
    "-fn",
    "-fd",
    "-ne",
    "-ef",
    "-O",
    "-O{CAN}",
    "-iO{CAN}",
    "--open-files-in-pager={CAN}",
    "--open-files-in-p={CAN}",
    "--open-files-in-pager",
    "{CAN}",
    "--ext-diff",
    "--ext",
    "--textconv",
    "--no-textconv",
    "--output={OUT}",
    "--format",
    "--format=%(refname)",
    "--sort",
    "--sort=refname",
    "--contains",
    "--points-at",
    "--merged",
    "--list",
    "--ref",
    "--ref=refs/notes/commits",
    "add",
    "list",
    "show",
    "expire",
    "delete",
    "drop",
    "status",
    "update",
    "init",
    "--all",
    "--get",
    "--edit",
    "--file",
    "--default",
    "--unset",
    "--add",
    "set",
    "get",
    "a.b",
    "user.name",
    "--exec={CAN}",
    "--upload-pack={CAN}",
    "--receive-pack={CAN}",
    "--help",
    "--he",
    "--recurse-submodules",
    "--recurse",
    "--cached",
    "--recursive",
    "--exclude",
    "--quiet",
    "--stat",
    "--submodule=diff",
    "--short",
    "--move",
    "-M",
    "-c",
    "--set-upstream-to=main",
    "--edit-description",
    "--abbrev",
    "--abbrev=4",
    "-n1",
    "--no-verify",
];

/// Words of one subcommand's own options (abbreviations and negations of them too).
fn own_words(sub: &str) -> &'static [&'static str] {
    match sub {
        "grep" => &[
            "-e",
            "-e",
            "--",
            "-f",
            "--and",
            "--or",
            "-O{CAN}",
            "--open-files-in-pager={CAN}",
            "--open={CAN}",
            "--no-open-files-in-pager",
            "-h",
            "-i",
            "-n",
            "x",
            "--max-depth",
            "1",
            "--max-depth=1",
            "-C",
            "-A",
            "2",
            "--untracked",
            "--no-index",
        ],
        "clean" => &[
            "-n",
            "-e",
            "--exclude",
            "--exclude=x",
            "-f",
            "-ff",
            "-d",
            "-x",
            "-X",
            "-nd",
            "-dn",
            "--no-dry-run",
            "--no-d",
            "--dry-run",
            "--dry-r",
            "--force",
            "--interactive",
            "-i",
            "--no-force",
            "--quiet",
            "untracked",
            "ud",
        ],
        "symbolic-ref" => &[
            "-d",
            "--delete",
            "--del",
            "--de",
            "-q",
            "--quiet",
            "--qu",
            "-qd",
            "--short",
            "--no-recurse",
            "-m",
            "msg",
            "-mmsg",
            "refs/heads/sym",
            "refs/heads/x",
            "HEAD",
        ],
        "notes" => &[
            "--ref", "--ref=x", "list", "add", "append", "remove", "prune", "edit", "-m", "msg",
            "-f", "HEAD",
        ],
        "submodule" => &["status", "update", "init", "--cached", "--recursive", "-q"],
        "reflog" => &[
            "show",
            "list",
            "exists",
            "expire",
            "delete",
            "drop",
            "--all",
            "--expire=now",
            "HEAD@{0}",
            "-n1",
            "refs/heads/main",
        ],
        "branch" | "tag" => &[
            "-l",
            "--list",
            "-d",
            "-D",
            "--delete",
            "--del",
            "-m",
            "-M",
            "-c",
            "-f",
            "--force",
            "--format",
            "--sort",
            "--contains",
            "--no-contains",
            "--merged",
            "--points-at",
            "-n",
            "-n1",
            "-nd",
            "-v",
            "-a",
            "x",
            "new",
            "v1",
            "feature",
            "--column",
            "--color",
            "--abbrev",
            "-s",
            "-a",
            "-mmsg",
        ],
        "config" => &[
            "--get",
            "--list",
            "-l",
            "--get-all",
            "--default",
            "--type",
            "bool",
            "-f",
            ".git/config",
            "--file",
            "--add",
            "--unset",
            "--edit",
            "--ed",
            "-e",
            "--replace-all",
            "--rename-section",
            "get",
            "list",
            "set",
            "a.b",
            "c",
            "user.name",
            "--fixed-value",
            "--value",
            "--url",
            "--all",
            "--no-type",
            "--bool",
        ],
        "stash" => &["list", "show", "-p", "drop", "pop", "clear", "--ext-diff"],
        "remote" => &["-v", "get-url", "origin", "add", "remove", "x"],
        "worktree" => &["list", "prune", "--porcelain", "-n", "add", "remove"],
        "cherry" => &["-v", "--abbrev", "--abbrev=5", "main", "feature"],
        "var" => &["-l", "GIT_EDITOR", "GIT_PAGER"],
        _ => &[
            "-p",
            "--ext-diff",
            "--textconv",
            "HEAD~1",
            "tc",
            "--all",
            "-1",
            "--output={OUT}",
            "--no-ext-diff",
            "--dirty",
        ],
    }
}

/// Global options sometimes put before the subcommand.
const GLOBALS: &[&[&str]] = &[
    &["--no-pager"],
    &["-p"],
    &["--paginate"],
    &["-c", "color.ui=never"],
    &["--literal-pathspecs"],
    &["-C", "."],
    &["--no-optional-locks"],
];

/// Per subcommand: options that take a separate value (which git lets swallow the next word,
/// `--` and `--end-of-options` included), and word sequences that run a program or write.
fn gadgets(sub: &str) -> (&'static [&'static str], &'static [&'static [&'static str]]) {
    match sub {
        "grep" => (
            &["-e", "-f", "--max-depth", "-A", "-C", "--and"],
            &[
                &["-O{CAN}"],
                &["--open-files-in-pager={CAN}"],
                &["--open={CAN}"],
                &["-iO{CAN}"],
                &["-O"],
            ],
        ),
        "clean" => (
            &["-e", "--exclude", "-ne", "--exc"],
            &[
                &["--no-dry-run", "-f"],
                &["--no-dry-run", "-fd"],
                &["--no-d", "-f"],
                &["-i"],
            ],
        ),
        "symbolic-ref" => (
            &["-m"],
            &[
                &["-d", "refs/heads/sym"],
                &["--delete", "refs/heads/sym"],
                &["refs/heads/sym", "refs/heads/x"],
                &["--del", "refs/heads/sym"],
                &["-qd", "refs/heads/sym"],
            ],
        ),
        "notes" => (
            &["--ref"],
            &[
                &["add", "-m", "msg", "HEAD"],
                &["remove", "HEAD~1"],
                &["prune"],
                &["edit"],
                &["append", "-m", "m"],
            ],
        ),
        "submodule" => (
            &["-q"],
            &[
                &["update"],
                &["init"],
                &["foreach", "{CAN}"],
                &["add", "../x"],
            ],
        ),
        "reflog" => (
            &["-n", "--format", "--grep"],
            &[
                &["expire", "--expire=now", "--all"],
                &["delete", "HEAD@{0}"],
                &["drop", "main"],
            ],
        ),
        "branch" | "tag" => (
            &[
                "--format",
                "--sort",
                "--contains",
                "--points-at",
                "--merged",
                "--no-contains",
            ],
            &[
                &["-D", "x"],
                &["-d", "v1"],
                &["-m", "x", "y"],
                &["new"],
                &["--delete", "feature"],
                &["--del", "x"],
                &["-f", "new"],
            ],
        ),
        "config" => (
            &["--default", "--type", "-f", "--file", "--blob"],
            &[
                &["a.b", "c"],
                &["--unset", "user.name"],
                &["--add", "a.b", "c"],
                &["--edit"],
                &["set", "a.b", "c"],
                &["--ed"],
            ],
        ),
        "stash" => (&["-n"], &[&["drop"], &["pop"], &["clear"]]),
        "worktree" => (&["--expire"], &[&["add", "../w"], &["remove", "../w"]]),
        _ => (
            &[
                "-n",
                "--grep",
                "--format",
                "--author",
                "-S",
                "-G",
                "--stat-width",
            ],
            &[
                &["--output={OUT}"],
                &["--help"],
                &["--ext-diff", "HEAD~1"],
                &["--textconv", "-p", "tc"],
                &["--exec={CAN}"],
                &["--upload-pack={CAN}"],
            ],
        ),
    }
}

/// Values given to options drawn from git's tables: terminators, names the repository has,
/// words that look like options.
const VALUES: &[&str] = &[
    "--",
    "--end-of-options",
    "x",
    "HEAD",
    "main",
    "new",
    "1",
    "%(refname)",
    "-f",
    "--no-dry-run",
    "a.b",
];

/// One option of `sub` drawn from git's own table for it (`safegit::options`, the tables
/// safe-git checks with, which `safe_git_option_tables.rs` proves equal to git's), in any of
/// the spellings parse-options accepts: the long name, a prefix of it, `--no-` (abbreviated
/// too) where git accepts it, the short letter, a bundle, `=value`, a stuck or a separate
/// value (the next word, a terminator included). For the revision-walking commands, the
/// options of `REVISION_SEPARATE_VALUE` with a value.
fn table_words(rng: &mut Rng, sub: &str) -> Vec<String> {
    let value = |rng: &mut Rng| rng.pick(VALUES).to_string();
    let mut tables = options::specs_of(sub);
    if tables.is_empty() {
        // `worktree list`, `stash show`, `remote get-url`…: the forms' tables.
        let forms: Vec<&str> = options::TABLE_COMMANDS
            .iter()
            .copied()
            .filter(|c| c.split_once(' ').is_some_and(|(s, _)| s == sub))
            .collect();
        if !forms.is_empty() {
            let form: &str = forms[rng.below(forms.len())];
            tables = options::specs_of(form);
        }
    }
    if tables.is_empty()
        || (rng.one_in(3)
            && !matches!(
                sub,
                "branch" | "tag" | "clean" | "config" | "notes" | "grep" | "symbolic-ref"
            ))
    {
        // `--output` writes the file the caller names, by design; it is exercised with the
        // one file outside the repository the harness expects (`{OUT}`), not with any value.
        let name = *rng.pick(options::REVISION_SEPARATE_VALUE);
        if name == "--output" {
            return vec!["--output={OUT}".to_owned()];
        }
        return match rng.below(3) {
            0 => vec![format!("{name}={}", value(rng))],
            1 if !name.starts_with("--") => vec![format!("{name}{}", value(rng))],
            _ => vec![name.to_owned(), value(rng)],
        };
    }
    let specs = *rng.pick(&tables);
    if specs.is_empty() {
        return Vec::new();
    }
    let spec: &Spec = rng.pick(specs);
    let mut out = Vec::new();
    let short_form = spec.short.is_some() && (spec.long.is_none() || rng.one_in(3));
    if spec.arg == Arg::Number {
        return vec![format!("-{}", 1 + rng.below(3))];
    }
    if short_form {
        let c = spec.short.unwrap();
        // Sometimes in a bundle after another short option of the table without a value.
        let mut w = String::from("-");
        if rng.one_in(3) {
            if let Some(o) = specs
                .iter()
                .filter(|o| o.arg == Arg::None && o.short.is_some())
                .nth(rng.below(4))
            {
                w.push(o.short.unwrap());
            }
        }
        w.push(c);
        match spec.arg {
            Arg::Separate if rng.one_in(2) => {
                w.push_str(&value(rng));
                out.push(w);
            }
            Arg::Separate => {
                out.push(w);
                out.push(value(rng));
            }
            Arg::Optional if rng.one_in(2) => {
                w.push_str(&value(rng));
                out.push(w);
            }
            _ => out.push(w),
        }
        return out;
    }
    let long = spec.long.clone().unwrap();
    if long == "output" {
        return vec!["--output={OUT}".to_owned()];
    }
    let negated = spec.negatable && rng.one_in(4);
    let mut name = long.clone();
    if rng.one_in(3) && name.len() > 2 {
        name.truncate(2 + rng.below(name.len() - 2));
    }
    let w = if negated {
        format!("--no-{name}")
    } else {
        format!("--{name}")
    };
    match (spec.arg, negated) {
        (Arg::Separate, false) if rng.one_in(3) => out.push(format!("{w}={}", value(rng))),
        (Arg::Separate, false) => {
            out.push(w);
            out.push(value(rng));
        }
        (Arg::Optional, false) if rng.one_in(3) => out.push(format!("{w}={}", value(rng))),
        _ => out.push(w),
    }
    out
}

fn generate(rng: &mut Rng, can: &str, out: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    if rng.one_in(5) {
        v.extend(rng.pick(GLOBALS).iter().map(|s| s.to_string()));
    }
    let sub = *rng.pick(COMMANDS);
    v.push(sub.to_owned());
    let start = v.len();
    for _ in 0..rng.below(7) {
        if rng.one_in(3) {
            v.extend(table_words(rng, sub));
            continue;
        }
        let w = if rng.one_in(2) {
            *rng.pick(own_words(sub))
        } else {
            *rng.pick(WORDS)
        };
        v.push(w.to_owned());
    }
    if rng.one_in(2) {
        // A value-taking option (or none), a terminator, then what would run or write.
        let (takers, dangers) = gadgets(sub);
        let mut g: Vec<&str> = Vec::new();
        if !rng.one_in(4) {
            g.push(*rng.pick(takers));
        }
        g.push(if rng.one_in(2) {
            "--"
        } else {
            "--end-of-options"
        });
        g.extend(rng.pick(dangers).iter());
        let at = start + rng.below(v.len() - start + 1);
        v.splice(at..at, g.into_iter().map(str::to_owned));
    }
    v.into_iter()
        .map(|w| w.replace("{CAN}", can).replace("{OUT}", out))
        .collect()
}

/// Every file, link and folder under `root` with a digest of its content.
fn snapshot(root: &Path, skip: &[PathBuf]) -> BTreeMap<PathBuf, u64> {
    fn walk(dir: &Path, skip: &[PathBuf], out: &mut BTreeMap<PathBuf, u64>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if skip.contains(&p) {
                continue;
            }
            let ft = e.file_type().unwrap();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            if ft.is_dir() {
                0u8.hash(&mut h);
                out.insert(p.clone(), h.finish());
                walk(&p, skip, out);
            } else if ft.is_symlink() {
                std::fs::read_link(&p).ok().hash(&mut h);
                out.insert(p, h.finish());
            } else {
                std::fs::read(&p).ok().hash(&mut h);
                out.insert(p, h.finish());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, skip, &mut out);
    out
}

fn changes(a: &BTreeMap<PathBuf, u64>, b: &BTreeMap<PathBuf, u64>, root: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for (p, h) in a {
        match b.get(p) {
            None => v.push(format!(
                "removed {}",
                p.strip_prefix(root).unwrap().display()
            )),
            Some(g) if g != h => v.push(format!(
                "changed {}",
                p.strip_prefix(root).unwrap().display()
            )),
            _ => {}
        }
    }
    for p in b.keys().filter(|p| !a.contains_key(*p)) {
        v.push(format!("added {}", p.strip_prefix(root).unwrap().display()));
    }
    v
}

/// Runs with a deadline: a line that waits (an editor, a viewer) is killed and reported.
fn run(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Option<Output> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What one run did: the canary lines it left and the sandbox changes.
struct Effect {
    out: Option<Output>,
    fired: String,
    wrote: Vec<String>,
    output_file: bool,
}

struct World {
    root: PathBuf,
    template: PathBuf,
    repo: PathBuf,
    fired: PathBuf,
    out: PathBuf,
    skip: Vec<PathBuf>,
    before: BTreeMap<PathBuf, u64>,
}

impl World {
    fn effect(
        &mut self,
        program: &Path,
        args: &[String],
        env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Effect {
        let out = run(program, args, &self.repo, env);
        let fired = std::fs::read_to_string(&self.fired).unwrap_or_default();
        let output_file = self.out.exists();
        let after = snapshot(&self.root, &self.skip);
        let wrote = changes(&self.before, &after, &self.root);
        if !fired.is_empty() || output_file || !wrote.is_empty() {
            self.reset();
        }
        Effect {
            out,
            fired,
            wrote,
            output_file,
        }
    }

    /// Puts the repository back as the setup left it.
    fn reset(&mut self) {
        let _ = std::fs::remove_file(&self.fired);
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_dir_all(&self.out);
        let _ = std::fs::remove_dir_all(&self.repo);
        let st = Command::new("cp")
            .arg("-a")
            .arg(&self.template)
            .arg(&self.repo)
            .status()
            .unwrap();
        assert!(st.success());
        self.before = snapshot(&self.root, &self.skip);
    }
}

type Env = Vec<(std::ffi::OsString, std::ffi::OsString)>;

/// The sandbox with the scratch repository, its template copy, and the environment both
/// runs get (`GIT_EDITOR` is a canary too).
fn world(g: &Path) -> (Sandbox, World, Env) {
    let sb = Sandbox::new(g);
    sb.sh(SETUP);
    let root = sb.root().to_path_buf();
    let repo = root.join("repo");
    let template = root.join("template");
    let st = Command::new("cp")
        .arg("-a")
        .arg(&repo)
        .arg(&template)
        .status()
        .unwrap();
    assert!(st.success());
    let mut env = sb.env();
    env.push((
        "GIT_EDITOR".into(),
        format!("{}/can.sh git-editor", root.display()).into(),
    ));
    let mut w = World {
        fired: root.join("fired"),
        out: root.join("out"),
        skip: vec![
            template.clone(),
            repo.join(".git/index"),
            root.join("fired"),
            root.join("out"),
            // safe-git's cache of the probed git version.
            root.join("home/.cache"),
        ],
        root,
        template,
        repo,
        before: BTreeMap::new(),
    };
    w.reset();
    (sb, w, env)
}

/// The lines the first runs of this test found (safe-git let them through before
/// `safegit::args` learnt that git takes `--` / `--end-of-options` as an option's value,
/// reads words after a terminator as modes and names, and expands abbreviations and
/// bundles): each runs the canary, deletes or writes under plain git (positive control) and
/// is refused by safe-git, on both gits.
#[test]
fn lines_that_fire_under_git_are_refused() {
    let safe_git = bin("safe-git");
    for g in gits() {
        let (_sb, mut w, env) = world(&g);
        let can = w.root.join("can.sh").display().to_string();
        let o_can = format!("-O{can}");
        let lines: &[&[&str]] = &[
            &["grep", "-e", "--", &o_can],
            &["clean", "-ne", "--end-of-options", "--no-dry-run", "-f"],
            &["clean", "-n", "-e", "--", "--no-dry-run", "-f"],
            &["notes", "--ref", "--end-of-options", "append", "-m", "m"],
            &["symbolic-ref", "--", "refs/heads/new", "refs/heads/main"],
            &["symbolic-ref", "--del", "refs/heads/sym"],
            &["symbolic-ref", "-qd", "refs/heads/sym"],
            &["branch", "--format", "--", "-D", "x"],
            &["tag", "--format", "--", "-d", "v1"],
            // Found by the long run of 2026-12-02: a terminator as a value, then a driver flag
            // (the repository's diff.external and textconv canaries run), and a name after
            // `--sort` (a branch is created).
            &["diff", "--grep", "--end-of-options", "--ext-diff", "HEAD~1"],
            &[
                "show",
                "-1",
                "-G",
                "--end-of-options",
                "--ext-diff",
                "HEAD~1",
            ],
            &["branch", "--sort", "--end-of-options", "new"],
            &["config", "user.name", "--file"],
            // Read with git's option tables (2026-12-02): the last word wins (the filter is
            // cleared, the name creates a branch), an abbreviated negation turns the dry run
            // off, a value option takes a terminator and the word after it is a name.
            &["branch", "--points-at", "HEAD", "--no-points-at", "new"],
            &["clean", "-n", "--no-d", "-f"],
            &["clean", "--dry", "--no-dry", "-fd"],
            &["branch", "--so", "--", "--", "new"],
            &["tag", "--form", "--end-of-options", "v9"],
            // git < 2.46: `--get` is an action bit and `--no-get` clears it, so `a.b c` sets
            // a value; git ≥ 2.46 makes the actions non-negatable (skipped there).
            &["config", "--get", "--no-get", "a.b", "c"],
        ];
        let version = common::version(&g);
        for line in lines {
            let args: Vec<String> = line.iter().map(|s| s.to_string()).collect();
            let plain = w.effect(&g, &args, &env);
            if line.contains(&"--no-get") && version.as_str() >= "2.46" {
                assert!(plain.wrote.is_empty(), "{line:?} wrote on {version}");
                eprintln!("skipped on git {version}: {line:?} (its actions are not negatable: git errors out)");
                continue;
            }
            assert!(
                !plain.fired.is_empty() || !plain.wrote.is_empty(),
                "{} {line:?}: the positive control did not fire or write under plain git",
                g.display()
            );
            let mut sargs = vec!["--git".to_owned(), g.display().to_string()];
            sargs.extend(args);
            let safe = w.effect(&safe_git, &sargs, &env);
            let so = safe.out.as_ref().expect("safe-git finished");
            assert!(
                refused(so) && safe.fired.is_empty() && safe.wrote.is_empty(),
                "{} {line:?}: safe-git did not refuse ({:?}, ran {:?}, wrote {:?})",
                g.display(),
                so.status.code(),
                safe.fired,
                safe.wrote
            );
        }
    }
}

fn refused(o: &Output) -> bool {
    matches!(o.status.code(), Some(120..=124))
        && String::from_utf8_lossy(&o.stderr).starts_with("safe-git: refused")
}

#[test]
fn safe_git_allows_only_lines_that_run_and_write_nothing() {
    let safe_git = bin("safe-git");
    let n = run_size(500);
    let seed = seed(0x5afe_0a7c);
    for g in gits() {
        let (_sb, mut w, env) = world(&g);
        let root = w.root.clone();
        let can = root.join("can.sh").display().to_string();
        let out = w.out.display().to_string();
        let mut rng = Rng::new(seed);
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        let mut disarmed: BTreeMap<String, usize> = BTreeMap::new();
        let mut failures = Vec::new();
        for i in 0..n {
            let args = generate(&mut rng, &can, &out);
            let mut sargs = vec!["--git".to_owned(), g.display().to_string()];
            sargs.extend(args.iter().cloned());
            let safe = w.effect(&safe_git, &sargs, &env);
            let Some(so) = &safe.out else {
                failures.push(format!("#{i} {args:?}: safe-git did not finish in 30 s"));
                w.reset();
                continue;
            };
            if refused(so) {
                *counts.entry("refused by safe-git").or_default() += 1;
                continue;
            }
            if !safe.fired.is_empty() || !safe.wrote.is_empty() {
                failures.push(format!(
                    "#{i} {args:?}: allowed by safe-git, and under it ran {:?} / wrote {:?}",
                    safe.fired.trim(),
                    safe.wrote
                ));
                continue;
            }
            let plain = w.effect(&g, &args, &env);
            let Some(po) = &plain.out else {
                *counts.entry("plain git did not finish").or_default() += 1;
                continue;
            };
            if safe.output_file || plain.output_file {
                *counts
                    .entry("wrote the --output file (by design)")
                    .or_default() += 1;
            }
            if !plain.fired.is_empty() || !plain.wrote.is_empty() {
                let kind = plain
                    .fired
                    .lines()
                    .next()
                    .map(|l| l.split(' ').next().unwrap_or("").to_owned())
                    .unwrap_or_else(|| "write".to_owned());
                *disarmed.entry(kind).or_default() += 1;
                continue;
            }
            if safe.output_file || plain.output_file {
                continue;
            }
            // Known, by design (plan.rs): where the repository defines a textconv or external
            // diff, safe-git drops the caller's `--textconv` / `--ext-diff` (git would run the
            // driver; here the word may also be the value of another option); `git var` gets
            // `pager.var=false` where the repository sets `core.pager`.
            let rewritten = args.iter().any(|a| {
                (a.len() >= 7 && "--textconv".starts_with(a.as_str()))
                    || (a.len() >= 5 && "--ext-diff".starts_with(a.as_str()))
            }) || args.iter().any(|a| a == "var");
            if rewritten {
                *counts
                    .entry("rewritten by safe-git (drivers emptied, var's pager)")
                    .or_default() += 1;
                continue;
            }
            *counts.entry("compared").or_default() += 1;
            let differ = |a: &Output, b: &Output| {
                a.stdout != b.stdout || a.stderr != b.stderr || a.status.code() != b.status.code()
            };
            if differ(so, po) {
                // git itself is not always deterministic (`--stat-name-width=1` on a path in a
                // folder reads uninitialised memory in diff.c's name truncation: `...U` on one
                // run, `...V` on the next, valgrind confirms on 2.39.5). Plain git run again: a
                // run that differs from the first, or that gives safe-git's output, shows the
                // difference is git's own, not a disagreement. One rerun could repeat the first
                // output by chance (then the clock reruns below could differ by chance too, and
                // fail the test); five make that 1 in 32 or less per such line.
                let mut own = false;
                for _ in 0..5 {
                    if let Some(po2) = w.effect(&g, &args, &env).out {
                        if differ(&po2, po) || !differ(&po2, so) {
                            own = true;
                            break;
                        }
                    }
                }
                if own {
                    *counts.entry("plain git not deterministic").or_default() += 1;
                    continue;
                }
                // Output that follows the clock (`rev-parse --after=<not a date>` prints
                // `--max-age=<now>`): the two runs fell in different seconds. Run both again;
                // a real disagreement differs again.
                let again = w.effect(&safe_git, &sargs, &env).out;
                let plain_again = w.effect(&g, &args, &env).out;
                if let (Some(s2), Some(p2)) = (&again, &plain_again) {
                    if !differ(s2, p2) {
                        *counts
                            .entry("differed only in the first pair of runs (clock)")
                            .or_default() += 1;
                        continue;
                    }
                }
                failures.push(format!(
                    "#{i} {args:?}: outputs differ\n=== git {:?}\n{}{}\n=== safe-git {:?}\n{}{}",
                    po.status.code(),
                    String::from_utf8_lossy(&po.stdout),
                    String::from_utf8_lossy(&po.stderr),
                    so.status.code(),
                    String::from_utf8_lossy(&so.stdout),
                    String::from_utf8_lossy(&so.stderr)
                ));
            }
        }
        eprintln!(
            "{} (seed {seed:#x}): {n} lines; {counts:?}; plain git fired or wrote where safe-git was quiet (disarmed): {disarmed:?}",
            g.display()
        );
        assert!(
            counts.get("compared").copied().unwrap_or(0) > n / 20,
            "too few lines compared: {counts:?}"
        );
        assert!(
            failures.is_empty(),
            "{} disagreements with {}:\n{}",
            failures.len(),
            g.display(),
            failures[..failures.len().min(25)].join("\n")
        );
    }
}
