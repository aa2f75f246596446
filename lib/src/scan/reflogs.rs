//! The object ids the reflogs name: tips of the commit scan besides the refs.
//!
//! `git stash apply stash@{1}`, `git reset --hard HEAD@{1}`, `<branch>@{1}` and
//! `git checkout -` read commits that only a reflog may name, and the agent can write every
//! reflog. So every id a reflog names is a tip of the scan like a ref's, unless the pin
//! already knew it (see [`RefSnapshot::reflogs`](super::RefSnapshot)).
//!
//! **Which files.** Every file under `logs/` of the common dir and under `logs/` of each
//! `worktrees/<id>/` folder (git keeps `HEAD`'s log and the per-worktree refs' logs there),
//! to the bottom: a superset of the logs git opens for a ref name (`logs/<refname>`).
//!
//! **Which ids.** git (`refs/files-backend.c`, `show_one_reflog_ent`) reads a line as
//! `<old> SP <new> SP <ident> SP <time> SP <tz> [TAB <msg>] LF`, with hex ids of the
//! repository's length in either case (`get_oid_hex`), and skips a line that does not parse
//! ("corrupt?"). Here a line is whatever lies between two LFs (the last one need not end
//! with LF), and its first `hexlen` bytes, and the `hexlen` bytes after the next byte, are
//! each an id if they are hex digits — whatever the rest of the line holds. Every line git
//! uses gives both its ids; lines git skips may give ids too (more scanned, nothing missed).
//! The null id (a ref created or deleted) names nothing. `@{-N}` (`git checkout -`) also uses
//! the text after `checkout: moving from ` in a message as a commit when it is a full hex id
//! (object-name.c, `get_oid_basic`): those `hexlen` bytes, wherever the phrase is in a line,
//! are an id too. (Any other text there is a ref name for git, and the refs are scanned.)
//!
//! **Root refs.** The same holds for the refs git reads from the top of a git dir (the common
//! dir and each `worktrees/<id>/`) by name: `git reset --hard ORIG_HEAD`, `git merge
//! FETCH_HEAD`, `git commit` during a merge (every `MERGE_HEAD` line a parent),
//! `CHERRY_PICK_HEAD`, `AUTO_MERGE`, …. Every file whose name is root-ref syntax
//! (`catalogue::is_root_ref_name`, git's `is_root_ref`), `HEAD` aside (a ref of the snapshot): the id at the
//! start of its first line, of every line for `FETCH_HEAD` and `MERGE_HEAD`.
//!
//! **What fails closed** (the scan is incomplete, never clean): a link or a special file
//! anywhere in those trees (git would follow a link; its target is not read here), a file or
//! folder that cannot be read, a worktree entry that is a link. A file that vanishes between
//! the listing and the open names nothing.

use crate::catalogue;
use gix::ObjectId;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Every id the reflogs name, with where each was first seen (for messages).
#[derive(Default)]
pub(crate) struct Places {
    /// Id → (index into `files`, line number from 1).
    pub ids: gix::hashtable::HashMap<ObjectId, (u32, u64)>,
    /// The files read, relative to the common dir.
    files: Vec<PathBuf>,
}

impl Places {
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The worktree entry (`<id>` of `worktrees/<id>/…`) whose file first named `id`; `None`
    /// for the common dir's own.
    pub fn git_dir_of(&self, id: &ObjectId) -> Option<String> {
        let &(f, _) = self.ids.get(id)?;
        let mut c = self.files[f as usize].components();
        match (c.next(), c.next()) {
            (Some(w), Some(id)) if w.as_os_str() == "worktrees" => {
                Some(id.as_os_str().to_string_lossy().into_owned())
            }
            _ => None,
        }
    }

    /// `logs/refs/stash line 2`.
    pub fn place(&self, id: &ObjectId) -> String {
        match self.ids.get(id) {
            Some(&(f, n)) => format!("{} line {n}", self.files[f as usize].display()),
            None => String::new(),
        }
    }
}

/// Every id the reflogs of the repository whose common dir is `common` name, with the first
/// place each appears. `stop` is asked between files and every 4,096 lines (a time bound).
/// `Err` says why the reflogs could not all be read.
pub(crate) fn read(
    common: &Path,
    hash: gix::hash::Kind,
    stop: &dyn Fn() -> bool,
) -> Result<Places, String> {
    let mut out = Places::default();
    let mut r = Reader {
        hexlen: hash.len_in_hex(),
        out: &mut out,
        stop,
        from: gix::bstr::Finder::new(FROM),
    };
    r.tree(common, Path::new("logs"))?;
    r.root_refs(common, Path::new(""))?;
    let wt = common.join("worktrees");
    match std::fs::read_dir(&wt) {
        Ok(rd) => {
            let mut ids = Vec::new();
            for e in rd {
                let e = e.map_err(|e| format!("worktrees: {e}"))?;
                ids.push(e.file_name());
            }
            ids.sort();
            for id in ids {
                let rel = Path::new("worktrees").join(&id);
                let st = match std::fs::symlink_metadata(common.join(&rel)) {
                    Ok(st) => st,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(format!("{}: {e}", rel.display())),
                };
                if st.file_type().is_symlink() {
                    return Err(format!(
                        "{}: a link where a worktree entry is expected (its reflogs are not read)",
                        rel.display()
                    ));
                }
                // A regular file there is no entry for git either.
                if st.is_dir() {
                    r.tree(common, &rel.join("logs"))?;
                    r.root_refs(common, &rel)?;
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("worktrees: {e}")),
    }
    Ok(out)
}

struct Reader<'a> {
    hexlen: usize,
    out: &'a mut Places,
    stop: &'a dyn Fn() -> bool,
    /// memchr's `memmem`, built once (a naive search, then one built per line, cost 13 M and
    /// 4 M instructions on a 5,000-line reflog).
    from: gix::bstr::Finder<'static>,
}

impl Reader<'_> {
    /// The root refs of the git dir `rel` of `common` other than `HEAD` (a ref the snapshot
    /// reads): `ORIG_HEAD`, `FETCH_HEAD`, `MERGE_HEAD`, `CHERRY_PICK_HEAD`, `AUTO_MERGE`, …,
    /// every file whose name is root-ref syntax. The id at the start of the first line (of
    /// every line for `FETCH_HEAD` and `MERGE_HEAD`). A folder of such a name is no ref; a
    /// link or special file fails closed.
    fn root_refs(&mut self, common: &Path, rel: &Path) -> Result<(), String> {
        let dir = common.join(rel);
        let mut names = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let n = e
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .file_name();
            if n != "HEAD" && catalogue::is_root_ref_name(n.as_encoded_bytes()) {
                names.push(n);
            }
        }
        names.sort();
        for n in names {
            let rel = rel.join(&n);
            let st = match std::fs::symlink_metadata(common.join(&rel)) {
                Ok(st) => st,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("{}: {e}", rel.display())),
            };
            if st.is_dir() {
                continue;
            }
            if !st.is_file() {
                return Err(format!(
                    "{}: a link or special file where git reads a ref (not read)",
                    rel.display()
                ));
            }
            let all = catalogue::PSEUDO_REFS.contains(&n.as_encoded_bytes());
            self.file(common, &rel, !all)?;
        }
        Ok(())
    }

    /// The folder `rel` of `common` (absent: nothing), every file in it to the bottom.
    fn tree(&mut self, common: &Path, rel: &Path) -> Result<(), String> {
        let st = match std::fs::symlink_metadata(common.join(rel)) {
            Ok(st) => st,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", rel.display())),
        };
        self.entry(common, rel, &st)
    }

    fn entry(&mut self, common: &Path, rel: &Path, st: &std::fs::Metadata) -> Result<(), String> {
        if (self.stop)() {
            return Err(String::new());
        }
        let ft = st.file_type();
        if ft.is_dir() {
            let rd = std::fs::read_dir(common.join(rel))
                .map_err(|e| format!("{}: {e}", rel.display()))?;
            let mut names = Vec::new();
            for e in rd {
                names.push(
                    e.map_err(|e| format!("{}: {e}", rel.display()))?
                        .file_name(),
                );
            }
            names.sort();
            for n in names {
                let rel = rel.join(n);
                match std::fs::symlink_metadata(common.join(&rel)) {
                    Ok(st) => self.entry(common, &rel, &st)?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("{}: {e}", rel.display())),
                }
            }
            Ok(())
        } else if ft.is_file() {
            self.file(common, rel, false)
        } else {
            Err(format!(
                "{}: a link or special file among the reflogs (not read)",
                rel.display()
            ))
        }
    }

    /// A reflog (or with `first_line`, a root ref: its first line only, the id at its start).
    fn file(&mut self, common: &Path, rel: &Path, first_line: bool) -> Result<(), String> {
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(common.join(rel))
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", rel.display())),
        };
        // Checked on the descriptor: what was listed as a file may have been swapped.
        let md = f
            .metadata()
            .map_err(|e| format!("{}: {e}", rel.display()))?;
        if !md.is_file() {
            return Err(format!(
                "{}: a link or special file among the reflogs (not read)",
                rel.display()
            ));
        }
        let file = u32::try_from(self.out.files.len()).map_err(|_| "too many reflogs")?;
        self.out.files.push(rel.to_path_buf());
        self.lines(
            BufReader::with_capacity(64 * 1024, f),
            rel,
            file,
            first_line,
        )
    }

    fn lines(
        &mut self,
        mut rd: BufReader<File>,
        rel: &Path,
        file: u32,
        first_line: bool,
    ) -> Result<(), String> {
        let mut line = Vec::with_capacity(256);
        let mut n: u64 = 0;
        loop {
            line.clear();
            let got = rd
                .read_until(b'\n', &mut line)
                .map_err(|e| format!("{}: {e}", rel.display()))?;
            if got == 0 {
                return Ok(());
            }
            n += 1;
            if n.is_multiple_of(4096) && (self.stop)() {
                return Err(String::new());
            }
            // `@{-N}` (`git checkout -`) takes the N-th `checkout: moving from <X> to `
            // message and uses <X> as a commit when it is a full hex id (object-name.c,
            // `get_oid_basic`); otherwise <X> is a ref name, which the refs cover.
            let (second, from) = if first_line {
                (None, None)
            } else {
                (
                    Some(self.hexlen + 1),
                    self.from.find(&line).map(|i| i + FROM.len()),
                )
            };
            for at in [Some(0), second, from].into_iter().flatten() {
                if let Some(id) = line.get(at..at + self.hexlen).and_then(parse_hex) {
                    if !id.is_null() {
                        self.out.ids.entry(id).or_insert((file, n));
                    }
                }
            }
            if first_line {
                return Ok(());
            }
        }
    }
}

/// The reflog message `@{-N}` reads (object-name.c, `grab_nth_branch_switch`).
const FROM: &[u8] = b"checkout: moving from ";

/// Hex digits of either case (git's `hexval`) as an object id of their length (40 or 64).
fn parse_hex(h: &[u8]) -> Option<ObjectId> {
    fn val(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let mut b = [0u8; 32];
    let n = h.len() / 2;
    if !h.len().is_multiple_of(2) || n > b.len() {
        return None;
    }
    for (i, pair) in h.chunks_exact(2).enumerate() {
        b[i] = (val(pair[0])? << 4) | val(pair[1])?;
    }
    ObjectId::try_from(&b[..n]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(common: &Path) -> Result<Places, String> {
        read(common, gix::hash::Kind::Sha1, &|| false)
    }

    #[test]
    fn both_columns_any_case_and_malformed_lines_give_ids() {
        let t = tempfile::tempdir().unwrap();
        let c = t.path();
        std::fs::create_dir_all(c.join("logs/refs")).unwrap();
        std::fs::create_dir_all(c.join("worktrees/w/logs")).unwrap();
        let a = "a".repeat(40);
        let b = "B".repeat(40);
        let z = "0".repeat(40);
        let d = "d".repeat(40);
        let e = "e".repeat(40);
        let f = "f".repeat(40);
        std::fs::write(
            c.join("logs/refs/stash"),
            format!("{z} {a} A <a@b> 1 +0000\tx\n{a} {b} A <a@b> 1 +0000\tx\ngarbage\n{d}Xjunk"),
        )
        .unwrap();
        // `@{-1}` reads the id in a checkout message.
        let g = "9".repeat(40);
        std::fs::write(
            c.join("logs/HEAD"),
            format!("{z} {z} A <a@b> 1 +0000\tcheckout: moving from {g} to main\n"),
        )
        .unwrap();
        // No LF at the end, a timestamp git rejects: taken all the same.
        std::fs::write(c.join("worktrees/w/logs/HEAD"), format!("{e} {f} 0")).unwrap();
        let got = read_all(c).unwrap();
        let mut ids: Vec<String> = got.ids.keys().map(|i| i.to_string()).collect();
        ids.sort();
        assert_eq!(
            ids,
            vec!["9".repeat(40), a.clone(), "b".repeat(40), d, e, f.clone()]
        );
        assert_eq!(
            got.place(&ObjectId::from_hex(a.as_bytes()).unwrap()),
            "logs/refs/stash line 1"
        );
        assert_eq!(
            got.place(&ObjectId::from_hex(f.as_bytes()).unwrap()),
            "worktrees/w/logs/HEAD line 1"
        );
        // Positive control: no logs at all name nothing.
        let t2 = tempfile::tempdir().unwrap();
        assert!(read_all(t2.path()).unwrap().is_empty());
    }

    #[test]
    fn links_and_special_files_fail_closed() {
        let t = tempfile::tempdir().unwrap();
        let c = t.path();
        std::fs::create_dir_all(c.join("logs/refs/heads")).unwrap();
        std::fs::write(c.join("elsewhere"), format!("{} x\n", "a".repeat(40))).unwrap();
        assert!(read_all(c).is_ok());
        std::os::unix::fs::symlink(c.join("elsewhere"), c.join("logs/refs/heads/l")).unwrap();
        assert!(read_all(c).is_err(), "linked reflog");
        std::fs::remove_file(c.join("logs/refs/heads/l")).unwrap();
        assert!(read_all(c).is_ok(), "positive control");
        nix::unistd::mkfifo(
            &c.join("logs/refs/heads/f"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        assert!(read_all(c).is_err(), "fifo");
        std::fs::remove_file(c.join("logs/refs/heads/f")).unwrap();
        std::fs::create_dir_all(c.join("worktrees")).unwrap();
        std::os::unix::fs::symlink(c.join("logs"), c.join("worktrees/w")).unwrap();
        assert!(read_all(c).is_err(), "linked worktree entry");
        std::fs::remove_file(c.join("worktrees/w")).unwrap();
        std::os::unix::fs::symlink(c.join("logs/refs"), c.join("logs/r2")).unwrap();
        assert!(read_all(c).is_err(), "linked folder");
        std::fs::remove_file(c.join("logs/r2")).unwrap();
        assert!(read_all(c).is_ok(), "positive control");
    }
}
