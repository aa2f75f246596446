//! The audit's rules as data: one row per rule, with a stable id (never reused or renamed),
//! a name, a default level and the text the SARIF `rules` array and `docs/wt-check.md` show.

use crate::catalogue::Severity;

/// One audit rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Rule {
    /// Stable id, `GW` + three digits.
    pub id: &'static str,
    /// kebab-case name.
    pub name: &'static str,
    /// Default level (a finding may raise or lower it, e.g. from the key catalogue's row).
    pub level: Severity,
    /// One sentence: what was found.
    pub short: &'static str,
    /// Why it matters and what to do.
    pub help: &'static str,
    /// Research section (`git-exec-surfaces.md`).
    pub research: &'static str,
}

macro_rules! rule {
    ($c:ident, $id:literal, $name:literal, $lvl:ident, $short:literal, $help:literal, $res:literal) => {
        pub const $c: Rule = Rule {
            id: $id,
            name: $name,
            level: Severity::$lvl,
            short: $short,
            help: $help,
            research: $res,
        };
    };
}

rule!(HOOK_PLANTED, "GW001", "hook-planted", Error,
    "An executable file (or link) in a hooks folder.",
    "git runs <hooks>/<event> on commit, checkout, status and more, outside any sandbox. Remove it unless the owner put it there.",
    "§3.1");
rule!(
    HOOKS_PATH,
    "GW002",
    "hooks-path",
    Warning,
    "core.hooksPath points git at another hooks folder.",
    "Every executable named after a hook event in that folder runs. Check who controls it.",
    "§1a"
);
rule!(HOOKS_PATH_IN_WORK_TREE, "GW003", "hooks-path-in-work-tree", Error,
    "core.hooksPath points into the work tree.",
    "Anything committed or written there (by an agent, by a pulled branch) runs as a hook. Point it outside the work tree or unset it.",
    "§1a");
rule!(ARMED_KEY, "GW004", "armed-config-key", Warning,
    "A program-running, code-loading or redirecting config key is set.",
    "The catalogue row says what runs and when. A value from a repository file runs with the owner's rights when the owner's git touches the folder.",
    "§1");
rule!(
    INCLUDE_IN_WORK_TREE,
    "GW005",
    "include-in-work-tree",
    Error,
    "An include.path / includeIf target lies inside the work tree.",
    "The agent can write it: every key of the catalogue becomes writable through it.",
    "§1e"
);
rule!(
    INCLUDE_OUTSIDE,
    "GW006",
    "include-outside-repository",
    Warning,
    "An include.path / includeIf target lies outside the repository.",
    "The file is read by every git command here; check who can write it.",
    "§1e"
);
rule!(COMMONDIR_IN_MAIN, "GW007", "commondir-in-main-git-dir", Error,
    "A `commondir` file in a main git dir.",
    "git never writes one there; it takes config, hooks, objects and refs from the folder it names.",
    "§3.3");
rule!(
    GITFILE_REDIRECT,
    "GW008",
    "gitfile-redirect",
    Warning,
    "A `.git` file or link that redirects git elsewhere (error when it leaves the workspace).",
    "git uses the config and hooks of whatever git dir it names.",
    "§3.3"
);
rule!(WORKTREE_ENTRY, "GW009", "worktree-entry-inconsistent", Error,
    "A worktrees/<id>/ entry departs from git's layout.",
    "gitdir backlink, commondir = ../.., a valid HEAD and no hooks/ or config are what git writes; anything else redirects or is pruned.",
    "§4");
rule!(
    NESTED_REPOSITORY,
    "GW010",
    "nested-repository",
    Warning,
    "A repository inside another repository's work tree.",
    "git discovers it when run in that folder, with its own config and hooks.",
    "§3.3"
);
rule!(BARE_IN_WORK_TREE, "GW011", "bare-repository-in-work-tree", Error,
    "A folder shaped like a bare git dir inside a work tree.",
    "git uses it (and its config and hooks) when run inside it unless safe.bareRepository=explicit.",
    "§3.3");
rule!(
    PROMISOR_TRANSPORT,
    "GW012",
    "promisor-local-transport",
    Error,
    "A partial-clone promisor remote with a local or custom transport.",
    "A lazy fetch of a missing object runs the transport (ext::, a helper, a local uploadpack).",
    "§1b"
);
rule!(
    REBASE_EXEC,
    "GW013",
    "rebase-todo-exec",
    Error,
    "An `exec` line in a rebase todo list (any form git's todo parser accepts: `exec`, `x`, blanks and tabs, CRLF).",
    "It runs through the shell on the owner's `git rebase --continue`, also from a fabricated rebase-merge/ folder.",
    "§3.3"
);
rule!(
    ALTERNATES,
    "GW014",
    "alternates",
    Warning,
    "objects/info/alternates borrows objects from other folders.",
    "Objects appear that are not stored here; fetch may run core.alternateRefsCommand.",
    "§3.3"
);
rule!(
    ATTRIBUTES_DRIVER,
    "GW015",
    "attributes-select-driver",
    Warning,
    "info/attributes selects a filter, diff or merge driver.",
    "A driver configured anywhere runs on checkout, diff or merge of matching paths.",
    "§3.3"
);
rule!(SEQUENCER_STATE, "GW017", "sequencer-state-names-program", Error,
    "An in-progress rebase, cherry-pick, revert or am keeps a strategy, signing key or options git would not have written.",
    "The owner's `--continue` runs `git merge-<strategy>` (a strategy with `/` as a path), signs with the stored key, or passes the stored options. Abort the operation (`git rebase --abort`, `git cherry-pick --abort`, `git am --abort`) unless the owner started it that way.",
    "§3.3");
rule!(
    INCOMPLETE,
    "GW016",
    "incomplete",
    Error,
    "Part of the repository or workspace could not be read.",
    "Unknown is not clean: fix the permissions or the layout and audit again.",
    ""
);
rule!(
    GIT_DIR_SKIPPED,
    "GW018",
    "git-dir-skipped",
    Note,
    "A `.git` that git skips (a folder that is not a git dir, a link to nothing).",
    "git climbs to the repository above and uses its config and hooks there; that repository is audited.",
    "§3.3"
);
rule!(
    ENCLOSING,
    "GW019",
    "enclosing-repository",
    Note,
    "The audited folder lies in a repository above it.",
    "git run there uses that repository's config and hooks; it is audited with the folder.",
    "§3.3"
);
rule!(
    INDEX_ENTRY_PATH,
    "GW020",
    "index-entry-path",
    Error,
    "An index holds entries whose paths git refuses to add (`..`, an absolute path, a `.git` component).",
    "git checks paths when it adds them to the index, not when it loads it: the owner's `git checkout -- .` writes such an entry into the git dir or outside the work tree, and `git commit -a` hashes the file it names. Move the index aside and rebuild it with `git reset`.",
    "§3.3"
);

rule!(
    SPECIAL_FILE,
    "GW021",
    "special-file-in-git-dir",
    Error,
    "A FIFO, socket or device in a git dir, in a work tree under a name git opens (`.gitignore`, `.gitattributes`, `.mailmap`, `.gitmodules`, `HEAD`), or at a path the config names (`core.excludesFile`, `blame.ignoreRevsFile`, `commit.template`, … `catalogue::PATH_KEYS`; a link to one too).",
    "git opens HEAD, config, refs, index, the worktree entries' files, a work tree's .gitignore, .gitattributes, .mailmap and .gitmodules, and the files its config names by path with a blocking open (following links for the last): a FIFO there hangs the owner's git (status, log, blame, commit, worktree list, gc); a device is read as whatever it yields. git never makes one. Move it aside (`wt-check check --restore` does).",
    "§3.3"
);

rule!(
    REF_LINK,
    "GW022",
    "link-in-ref-namespace",
    Error,
    "A symbolic link at or below a git dir's `refs/` (the common dir's, a worktree entry's, a submodule git dir's, `logs/refs/`), or a folder named `refs` that is a link.",
    "git follows it when it reads or lists refs: a replace ref behind it changes what the owner's checkout writes, a FIFO behind it hangs the owner's git; gix, which the commit scan reads refs with, does not follow it, so what it shows git is never scanned. git never makes one (only HEAD may be a link, with the deprecated core.preferSymlinkRefs). Move it aside (`wt-check check --restore` does).",
    "§3.3"
);

rule!(
    RERERE_STATE,
    "GW023",
    "rerere-state",
    Warning,
    "Recorded conflict resolutions (`rr-cache/<id>/postimage`) or a `MERGE_RR` that names conflicts being recorded, in a git dir; an error when a name there is a link or not what git makes, or a `MERGE_RR` record names a path git never records (one no index entry can have, or reached through a link, or not a regular file); a warning for a record naming an untracked file.",
    "rerere replays a recorded resolution as file content into the owner's next merge, rebase or cherry-pick of the same conflict (\"Resolved 'f' using previous resolution\"), and records a `MERGE_RR`'s files as a preimage and resolution in the owner's next merge; no commit shows it. Honest repositories with `rerere.enabled` hold resolutions the owner made: check that these are the owner's (`git rerere status`, `git rerere diff`), or move `rr-cache/` and `MERGE_RR` aside. git never makes a link there (it reads a resolution wherever one points), and writes a `MERGE_RR` record only for a conflicted index entry: rerere copies whatever file a record names, links followed, as the resolution.",
    "§3.3"
);

/// Every rule, in id order. The SARIF `rules` array and the docs table come from here.
pub static RULES: &[Rule] = &[
    HOOK_PLANTED,
    HOOKS_PATH,
    HOOKS_PATH_IN_WORK_TREE,
    ARMED_KEY,
    INCLUDE_IN_WORK_TREE,
    INCLUDE_OUTSIDE,
    COMMONDIR_IN_MAIN,
    GITFILE_REDIRECT,
    WORKTREE_ENTRY,
    NESTED_REPOSITORY,
    BARE_IN_WORK_TREE,
    PROMISOR_TRANSPORT,
    REBASE_EXEC,
    ALTERNATES,
    ATTRIBUTES_DRIVER,
    INCOMPLETE,
    SEQUENCER_STATE,
    GIT_DIR_SKIPPED,
    ENCLOSING,
    INDEX_ENTRY_PATH,
    SPECIAL_FILE,
    REF_LINK,
    RERERE_STATE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_are_unique_and_well_formed() {
        let mut ids: Vec<_> = RULES.iter().map(|r| r.id).collect();
        let mut names: Vec<_> = RULES.iter().map(|r| r.name).collect();
        ids.sort();
        names.sort();
        ids.dedup();
        names.dedup();
        assert_eq!(ids.len(), RULES.len());
        assert_eq!(names.len(), RULES.len());
        for r in RULES {
            assert!(
                r.id.len() == 5
                    && r.id.starts_with("GW")
                    && r.id[2..].bytes().all(|b| b.is_ascii_digit()),
                "{}",
                r.id
            );
            assert!(
                r.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn docs_list_every_rule() {
        let doc = include_str!("../../../docs/wt-check.md");
        for r in RULES {
            assert!(
                doc.contains(&format!("| {} | {} |", r.id, r.name)),
                "docs/wt-check.md lacks the row for {} {}",
                r.id,
                r.name
            );
        }
    }
}
