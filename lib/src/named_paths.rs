//! Files the configuration names by path that git opens ([`catalogue::PATH_KEYS`]).
//!
//! `core.excludesFile = .myignore`, `blame.ignoreRevsFile = .git-blame-ignore-revs`,
//! `commit.template = .gitmessage`: git opens each with a blocking `open(2)` that follows
//! links, from the top of the work tree. An agent that can write the work tree can put a FIFO
//! there (the owner's `git status`, `git blame`, `git commit` hang), or a link to a FIFO or a
//! device (seventh red-team pass, R7-4). This module resolves the paths the way git does and
//! tells what stands at one, with `lstat`/`stat` only: nothing is opened, so nothing blocks.
//! `crate::audit` (GW021), safe-git and the sandbox plan share it.

use crate::catalogue::{self, PathKey, PathResolve, PathUse, PathValues};
use std::path::{Path, PathBuf};

/// One path a config value names.
#[derive(Debug, Clone)]
pub struct Named {
    /// The key as the config spells it.
    pub key: String,
    pub row: &'static PathKey,
    /// Resolved (absolute, `.`/`..` folded lexically, links not resolved).
    pub path: PathBuf,
}

/// Every path the `(key, value)` pairs name, resolved as git resolves them: `top` anchors a
/// relative value (the work tree's top, where git opens it), `home` expands `~/`. Every value
/// of a key is taken, effective or not (a superset: a value a later one overrides names a
/// path git would open if that one went away). Values that are not paths are left out: an
/// empty value (a reset), an `af_unix:` trace2 target, a `sha256//` pin, a gpg or literal ssh
/// signing key (`user.signingKey` is a file only with `gpg.format = ssh`).
pub fn named<'a>(
    values: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    top: &Path,
    home: Option<&Path>,
) -> Vec<Named> {
    let values: Vec<(&str, Option<&str>)> = values.into_iter().collect();
    let ssh_format = values
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case("gpg.format"))
        .and_then(|(_, v)| *v)
        .is_some_and(|v| v.eq_ignore_ascii_case("ssh"));
    let mut out: Vec<Named> = Vec::new();
    for (key, value) in values {
        let Some(row) = catalogue::path_key(key) else {
            continue;
        };
        let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
            continue;
        };
        if row.key.display() == "user.signingKey"
            && (!ssh_format || value.starts_with("key::") || value.starts_with("ssh-"))
        {
            continue;
        }
        if row.key.display().ends_with(".pinnedPubkey") && value.starts_with("sha256//") {
            continue;
        }
        for path in resolve(row, value, top, home) {
            if !out.iter().any(|n| n.path == path && n.key == key) {
                out.push(Named {
                    key: key.to_owned(),
                    row,
                    path,
                });
            }
        }
    }
    out
}

/// The paths one value names (two for a `:(optional)` value: git ≥ 2.52 drops the prefix,
/// older git takes it as part of a relative name).
pub fn resolve(row: &PathKey, value: &str, top: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let one = |v: &str| -> Option<PathBuf> {
        let p = if let Some(rest) = v.strip_prefix("~/") {
            home?.join(rest)
        } else if v == "~" {
            home?.to_path_buf()
        } else if let Some(rest) = v.strip_prefix('~') {
            let name = rest.split('/').next()?;
            let user = nix::unistd::User::from_name(name).ok().flatten()?;
            user.dir.join(rest[name.len()..].trim_start_matches('/'))
        } else if v.starts_with("%(prefix)/") {
            // git's install prefix: outside any work tree (`/usr`, `/usr/local`).
            return None;
        } else {
            top.join(v)
        };
        Some(crate::integrity::normalize(&p))
    };
    match row.resolve {
        PathResolve::Absolute => {
            if value.starts_with("af_unix:") || !Path::new(value).is_absolute() {
                Vec::new()
            } else {
                vec![crate::integrity::normalize(Path::new(value))]
            }
        }
        PathResolve::Pathname | PathResolve::Started => {
            let mut out: Vec<PathBuf> = one(value).into_iter().collect();
            if let Some(rest) = value.strip_prefix(":(optional)") {
                out.extend(one(rest).filter(|p| !out.contains(p)));
            }
            out
        }
    }
}

/// System config files git may read, in the order tried (Debian's git, a git built into
/// `/usr/local`): the first that exists is the one read.
pub const SYSTEM_CONFIGS: &[&str] = &["/etc/gitconfig", "/usr/local/etc/gitconfig"];

/// Every config file the owner's git reads in this repository: system (unless
/// `GIT_CONFIG_NOSYSTEM`; `GIT_CONFIG_SYSTEM` when set), global (`GIT_CONFIG_GLOBAL` when set,
/// else `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`), the repository's, every worktree's
/// `config.worktree`, and what they include (`crate::config` resolves includes and
/// conditions). From this process's environment: the owner's.
pub fn owner_options(
    work_tree: Option<&Path>,
    git_dir: &Path,
    common_dir: &Path,
) -> crate::config::Options {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let mut o = crate::config::Options::for_repository(work_tree, git_dir, common_dir).with_owner(
        None,
        home.as_deref(),
        var("XDG_CONFIG_HOME").as_deref(),
    );
    if let Some(g) = var("GIT_CONFIG_GLOBAL") {
        o.global = vec![g];
    }
    let no_system = std::env::var("GIT_CONFIG_NOSYSTEM")
        .ok()
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    o.system = if no_system {
        None
    } else {
        var("GIT_CONFIG_SYSTEM").or_else(|| {
            SYSTEM_CONFIGS
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        })
    };
    o.linked_worktrees = true;
    o
}

/// What stands at a named path when it is not what git can read without blocking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Special {
    /// `fifo`, `socket`, `char device`, `block device`.
    pub kind: &'static str,
    /// The link's target when the path is a link to one (git's open follows it).
    pub link_to: Option<PathBuf>,
}

/// A FIFO, socket or device at `path`, or a link (through any number of links) to one;
/// `None` for a regular file, a folder, nothing, a dangling link, and a link to `/dev/null`
/// (which git reads as empty, the way an owner may switch a file off). Only `lstat` and
/// `stat`: never opens.
pub fn special_at(path: &Path) -> Option<Special> {
    if path == Path::new("/dev/null") {
        return None;
    }
    let m = std::fs::symlink_metadata(path).ok()?;
    if let Some(kind) = crate::audit::special::special_kind(&m.file_type()) {
        return Some(Special {
            kind,
            link_to: None,
        });
    }
    if !m.file_type().is_symlink() {
        return None;
    }
    // A link into `/dev` or `/proc` (`/dev/stdin`: the owner's terminal or pipe) blocks
    // whatever it names for this process (R11-10): [`crate::audit::special::blocking`].
    let kind = crate::audit::special::blocking(path)?;
    Some(Special {
        kind,
        link_to: std::fs::read_link(path).ok(),
    })
}

/// Does a special file at a path of this row hang or mislead git? A folder git lists (a
/// FIFO there fails `opendir`, it does not block) is left out.
pub fn opened_as_file(row: &PathKey) -> bool {
    row.uses != PathUse::Folder
}

/// In words, for messages: "git status, add … opens it".
pub fn how(row: &PathKey) -> String {
    let verb = match row.uses {
        PathUse::Read | PathUse::Folder => "opens it",
        PathUse::Written => "opens it for writing",
    };
    let every = match row.values {
        PathValues::Every => " (every value)",
        PathValues::Last => "",
    };
    format!("git {} {verb}{every}", row.opened_by)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[(&'static str, Option<&'static str>)]) -> Vec<(String, PathBuf)> {
        named(
            v.iter().copied(),
            Path::new("/w"),
            Some(Path::new("/home/o")),
        )
        .into_iter()
        .map(|n| (n.key, n.path))
        .collect()
    }

    #[test]
    fn relative_values_resolve_from_the_top_and_home_from_tilde() {
        let got = names(&[
            ("core.excludesFile", Some(".myignore")),
            ("blame.ignoreRevsFile", Some(".git-blame-ignore-revs")),
            ("blame.ignoreRevsFile", Some("sub/../other")),
            ("commit.template", Some("~/.gitmessage")),
            ("mailmap.file", Some("/abs/mm")),
            ("diff.orderFile", Some("")),
            ("core.editor", Some("vi")),
            ("fetch.fsck.skipList", Some("skip")),
            ("http.https://h/.sslCAInfo", Some("ca.pem")),
            ("gpg.ssh.allowedSignersFile", Some("as")),
            ("http.proxySSLCAInfo", Some("pca.pem")),
            ("http.https://h/.proxySSLKey", Some("pk")),
        ]);
        let want: Vec<(String, PathBuf)> = [
            ("core.excludesFile", "/w/.myignore"),
            ("blame.ignoreRevsFile", "/w/.git-blame-ignore-revs"),
            ("blame.ignoreRevsFile", "/w/other"),
            ("commit.template", "/home/o/.gitmessage"),
            ("mailmap.file", "/abs/mm"),
            ("fetch.fsck.skipList", "/w/skip"),
            ("http.https://h/.sslCAInfo", "/w/ca.pem"),
            ("gpg.ssh.allowedSignersFile", "/w/as"),
            ("http.proxySSLCAInfo", "/w/pca.pem"),
            ("http.https://h/.proxySSLKey", "/w/pk"),
        ]
        .iter()
        .map(|(k, p)| (k.to_string(), PathBuf::from(p)))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn values_that_are_not_paths_are_left_out() {
        assert!(names(&[
            ("user.signingKey", Some("ABCD1234")),
            ("trace2.eventTarget", Some("1")),
            ("trace2.eventTarget", Some("af_unix:/w/s")),
            ("http.pinnedPubkey", Some("sha256//abc")),
            ("core.attributesFile", Some("%(prefix)/etc/a")),
        ])
        .is_empty());
        // With gpg.format=ssh a signing key is a file, unless it is a literal key.
        let got = names(&[
            ("user.signingKey", Some("k.pub")),
            ("user.signingKey", Some("key::ssh-ed25519 AAAA")),
            ("gpg.format", Some("ssh")),
        ]);
        assert_eq!(got, [("user.signingKey".into(), PathBuf::from("/w/k.pub"))]);
        assert_eq!(
            names(&[("trace2.eventTarget", Some("/w/t"))]),
            [("trace2.eventTarget".into(), PathBuf::from("/w/t"))]
        );
    }

    #[test]
    fn an_optional_value_names_both_forms() {
        let got = names(&[("core.excludesFile", Some(":(optional)x"))]);
        let paths: Vec<_> = got.into_iter().map(|(_, p)| p).collect();
        assert_eq!(
            paths,
            [PathBuf::from("/w/:(optional)x"), PathBuf::from("/w/x")]
        );
    }

    #[test]
    fn special_files_and_links_to_them_are_found_but_dev_null_is_not() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("f");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        assert_eq!(special_at(&fifo).unwrap().kind, "fifo");
        let link = d.path().join("l");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let s = special_at(&link).unwrap();
        assert_eq!((s.kind, s.link_to.is_some()), ("fifo", true));
        let zero = d.path().join("z");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(special_at(&zero).unwrap().kind, "char device");
        let null = d.path().join("n");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        assert_eq!(special_at(&null), None);
        let file = d.path().join("r");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(special_at(&file), None);
        assert_eq!(special_at(&d.path().join("missing")), None);
    }

    /// Every row's key is one git spells: parsed, and matched by its own pattern.
    #[test]
    fn every_row_matches_its_own_key() {
        for r in catalogue::PATH_KEYS {
            let shown = r.key.display();
            let concrete = shown.replace("<name>", "fsck").replace("[.<scope>]", "");
            assert_eq!(
                catalogue::path_key(&concrete).map(|x| x.key.display()),
                Some(shown.clone()),
                "{concrete}"
            );
        }
    }
}
