//! Ref snapshot and history-rewrite tests for `gitward::scan`, run against every git that
//! builds the test repositories (`/usr/bin/git`, `/usr/local/bin/git`).

mod scan_support;
use gitward::scan::{self, Limits, RefSnapshot, RewriteKind};
use scan_support::{gits, Repo};

#[test]
fn snapshot_lists_every_kind_of_ref() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        r.sh("$GIT tag v1 && $GIT tag -a -m ann v2 && $GIT branch side");
        r.sh("echo b > b && $GIT add b && $GIT stash -q");
        r.sh("$GIT notes add -m note HEAD");
        r.sh("$GIT replace -f HEAD $($GIT commit-tree HEAD^{tree} -m other)");
        r.sh("$GIT update-ref refs/bisect/bad HEAD");
        r.sh("$GIT worktree add -q ../wt side && $GIT -C ../wt update-ref refs/worktree/mine HEAD");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        let names: Vec<&str> = s.refs.keys().map(String::as_str).collect();
        for want in [
            "refs/heads/main",
            "refs/heads/side",
            "refs/tags/v1",
            "refs/tags/v2",
            "refs/stash",
            "refs/notes/commits",
            "refs/replace/",
            "main-worktree/HEAD",
            "main-worktree/refs/bisect/bad",
            "worktrees/wt/HEAD",
            "worktrees/wt/refs/worktree/mine",
        ] {
            assert!(
                names
                    .iter()
                    .any(|n| *n == want || (want.ends_with('/') && n.starts_with(want))),
                "{} missing {want} in {names:?}",
                git.display()
            );
        }
        assert_eq!(
            s.refs["main-worktree/HEAD"].symbolic.as_deref(),
            Some("refs/heads/main")
        );
        // Round trip through JSON.
        let back = RefSnapshot::from_json(&s.to_json()).unwrap();
        assert_eq!(back, s);
        // Taken from the linked worktree's git dir, the snapshot is the same.
        let from_wt = RefSnapshot::take(&r.git_dir().join("worktrees/wt")).unwrap();
        assert_eq!(from_wt, s);
    }
}

#[test]
fn unchanged_repository_is_clean() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        let rep = scan::scan(&r.git_dir(), &s, &Limits::default()).unwrap();
        assert!(rep.is_clean(), "{rep:?}");
        assert_eq!(rep.stats.commits, 0);
    }
}

#[test]
fn rewritten_history_is_reported() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a && echo b > a && $GIT commit -qam b");
        r.sh("$GIT branch gone && $GIT branch forward && $GIT tag t");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        let old = r.rev("main");
        r.sh("$GIT reset -q --hard HEAD~1 && echo c > a && $GIT commit -qam c");
        r.sh("$GIT branch -D -q gone");
        r.sh("$GIT checkout -q forward && echo d > d && $GIT add d && $GIT commit -qm d && $GIT checkout -q main");
        let rep = scan::scan(&r.git_dir(), &s, &Limits::default()).unwrap();
        assert!(rep.incomplete.is_none(), "{rep:?}");
        let mut got: Vec<(String, RewriteKind)> = rep
            .rewritten
            .iter()
            .map(|w| (w.ref_name.clone(), w.kind))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            vec![
                ("refs/heads/gone".to_string(), RewriteKind::Deleted),
                ("refs/heads/main".to_string(), RewriteKind::NotFastForward),
            ],
            "{}",
            git.display()
        );
        let main = rep
            .rewritten
            .iter()
            .find(|w| w.ref_name == "refs/heads/main")
            .unwrap();
        assert_eq!(main.old, old);
        assert_eq!(main.new.as_deref(), Some(r.rev("main").as_str()));
        // New commits on both branches were walked: c and d.
        assert_eq!(rep.stats.commits, 2, "{rep:?}");
        assert_eq!(rep.exit_code(), gitward::exit::FOUND);
        let ev = rep.events(&r.work);
        assert!(ev
            .iter()
            .any(|e| e.event == gitward::events::EventKind::HistoryRewritten));
    }
}

/// A ref may move forward over commits another ref already had (no new commit on the way),
/// or over new commits that sit on top of such ones: neither is a rewrite, whichever way the
/// scan proves the old tip an ancestor. A move to unrelated new history is one.
#[test]
fn forward_moves_through_old_commits_are_not_rewrites() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        r.sh("$GIT branch lag1 && $GIT branch lag2 && $GIT branch jumped");
        r.sh("echo b > a && $GIT commit -qam b && echo c > a && $GIT commit -qam c");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        // lag1: fast-forward to main (commits the snapshot already reached).
        r.sh("$GIT branch -f lag1 main");
        // lag2: a new commit on top of main, then lag2 moved to it.
        r.sh("$GIT checkout -q -b top main && echo d > a && $GIT commit -qam d");
        r.sh("$GIT branch -f lag2 top");
        // jumped: moved to a new root commit (history dropped).
        r.sh("$GIT branch -f jumped $(echo root | $GIT commit-tree $($GIT mktree </dev/null))");
        let rep = scan::scan(&r.git_dir(), &s, &Limits::default()).unwrap();
        assert!(rep.incomplete.is_none(), "{rep:?}");
        let got: Vec<(&str, RewriteKind)> = rep
            .rewritten
            .iter()
            .map(|w| (w.ref_name.as_str(), w.kind))
            .collect();
        assert_eq!(
            got,
            vec![("refs/heads/jumped", RewriteKind::NotFastForward)],
            "{}",
            git.display()
        );
        assert_eq!(rep.stats.commits, 2, "d and the new root: {rep:?}");
    }
}

#[test]
fn new_replace_ref_is_flagged() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a && echo b > a && $GIT commit -qam b");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("$GIT replace HEAD HEAD~1");
        let head = r.rev("HEAD");
        let rep = scan::scan(&r.git_dir(), &s, &Limits::default()).unwrap();
        let f = rep
            .findings
            .iter()
            .find(|f| f.rule_id == "GW-SCAN-080")
            .expect("flagged");
        assert_eq!(f.path, format!("refs/replace/{head}"));
        // The walk ignored the replacement: HEAD is still its real commit.
        assert!(rep.incomplete.is_none());
    }
}

#[test]
fn bounds_make_the_report_incomplete() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        r.sh("for i in 1 2 3 4 5; do echo $i > f$i && $GIT add f$i && $GIT commit -qm $i; done");
        let lim = Limits {
            max_commits: 3,
            ..Limits::default()
        };
        let rep = scan::scan(&r.git_dir(), &s, &lim).unwrap();
        assert!(
            rep.incomplete.as_deref().unwrap().contains("commit limit"),
            "{rep:?}"
        );
        assert_eq!(rep.exit_code(), gitward::exit::INCOMPLETE);
        assert!(!rep.is_clean());
        let lim = Limits {
            max_paths: 2,
            ..Limits::default()
        };
        let rep = scan::scan(&r.git_dir(), &s, &lim).unwrap();
        assert!(
            rep.incomplete.as_deref().unwrap().contains("path limit"),
            "{rep:?}"
        );
        let lim = Limits {
            max_seconds: 0,
            ..Limits::default()
        };
        let rep = scan::scan(&r.git_dir(), &s, &lim).unwrap();
        assert!(
            rep.incomplete.as_deref().unwrap().contains("time limit"),
            "{rep:?}"
        );
        // A .gitattributes bigger than the per-blob bound is not read: incomplete, not clean.
        r.sh("head -c 5000 /dev/zero | tr '\\0' '#' > .gitattributes && $GIT add .gitattributes && $GIT commit -qm big");
        let lim = Limits {
            max_blob_bytes: 1000,
            ..Limits::default()
        };
        let rep = scan::scan(&r.git_dir(), &s, &lim).unwrap();
        assert!(
            rep.incomplete.as_deref().unwrap().contains("content rule"),
            "{rep:?}"
        );
        // A missing object (corrupt push) stops the scan rather than passing it.
        r.sh("echo x > m && $GIT add m && $GIT commit -qm m && rm -f .git/objects/$(git_obj HEAD^{tree})");
        let rep = scan::scan(&r.git_dir(), &s, &Limits::default()).unwrap();
        assert!(rep.incomplete.is_some(), "{rep:?}");
    }
}

#[test]
fn snapshot_of_another_format_or_hash_is_refused() {
    let git = &gits()[0];
    let r = Repo::new(git);
    let mut s = RefSnapshot::take(&r.git_dir()).unwrap();
    s.format += 1;
    assert!(scan::scan(&r.git_dir(), &s, &Limits::default()).is_err());
    assert!(RefSnapshot::from_json(&s.to_json()).is_err());
    s.format -= 1;
    s.object_hash = "sha256".into();
    assert!(scan::scan(&r.git_dir(), &s, &Limits::default()).is_err());
}

#[test]
fn commits_only_a_worktree_head_or_the_stash_reach_are_scanned() {
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("$GIT worktree add -q --detach ../wt");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        // A detached commit in the linked worktree: only worktrees/wt/HEAD reaches it.
        let wt = r.work.parent().unwrap().join("wt");
        r.sh(&format!(
            "cd {} && printf '* filter=evil\\n' > .gitattributes && $GIT add .gitattributes && $GIT commit -qm x",
            wt.display()
        ));
        let c = r.sh(&format!("$GIT -C {} rev-parse HEAD", wt.display()));
        // A stash holding a symlink into .git.
        r.sh("ln -s .git/hooks l && $GIT add l && $GIT stash -q");
        let rep = scan::scan(&r.git_dir(), &s, &Limits::default()).unwrap();
        assert!(rep.incomplete.is_none(), "{rep:?}");
        assert!(
            rep.findings.iter().any(|f| f.rule_id == "GW-SCAN-001"
                && f.commit == c.trim()
                && f.path == ".gitattributes"),
            "{} {rep:#?}",
            git.display()
        );
        assert!(
            rep.findings
                .iter()
                .any(|f| f.rule_id == "GW-SCAN-022" && f.path == "l"),
            "{} {rep:#?}",
            git.display()
        );
    }
}

#[test]
fn worktree_entries_without_a_head_file_are_skipped_whole() {
    // git skips an entry without a readable HEAD: no HEAD and none of its per-worktree refs
    // in the snapshot, whether HEAD is missing or a folder; the other entries are read.
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        r.sh("$GIT worktree add -q ../w1 -b b1 && $GIT -C ../w1 update-ref refs/worktree/x HEAD");
        r.sh("$GIT worktree add -q ../w2 -b b2 && $GIT -C ../w2 update-ref refs/worktree/y HEAD");
        r.sh("$GIT worktree add -q ../w3 -b b3");
        let wts = r.git_dir().join("worktrees");
        std::fs::remove_file(wts.join("w1/HEAD")).unwrap();
        std::fs::remove_file(wts.join("w2/HEAD")).unwrap();
        std::fs::create_dir(wts.join("w2/HEAD")).unwrap();
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        let names: Vec<&str> = s.refs.keys().map(String::as_str).collect();
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with("worktrees/w1/") || n.starts_with("worktrees/w2/")),
            "{} {names:?}",
            git.display()
        );
        assert!(names.contains(&"worktrees/w3/HEAD"), "{names:?}");
    }
}

#[test]
fn a_linked_worktrees_private_refs_are_its_own_plus_packed_ones() {
    // Per-worktree refs of a linked worktree: those in its own folder, and packed ones under
    // the same prefixes; never the main worktree's loose ones in the common dir.
    for git in gits() {
        let r = Repo::new(&git);
        r.sh("echo a > a && $GIT add a && $GIT commit -qm a");
        r.sh("$GIT update-ref refs/bisect/main-bad HEAD && $GIT update-ref refs/worktree/main-own HEAD");
        r.sh("$GIT worktree add -q ../wt -b side");
        r.sh("$GIT -C ../wt update-ref refs/worktree/mine HEAD && $GIT -C ../wt update-ref refs/bisect/wt-bad HEAD");
        r.sh("$GIT -C ../wt update-ref refs/rewritten/x HEAD");
        // A packed ref under a per-worktree prefix (git itself does not pack these).
        r.sh("echo \"$($GIT rev-parse HEAD) refs/bisect/packed\" >> \"$($GIT rev-parse --git-common-dir)/packed-refs\"");
        let s = RefSnapshot::take(&r.git_dir()).unwrap();
        let wt: Vec<&str> = s
            .refs
            .keys()
            .filter_map(|k| k.strip_prefix("worktrees/wt/"))
            .collect();
        assert_eq!(
            wt,
            [
                "HEAD",
                "refs/bisect/packed",
                "refs/bisect/wt-bad",
                "refs/rewritten/x",
                "refs/worktree/mine"
            ],
            "{}",
            git.display()
        );
        assert!(s.refs.contains_key("main-worktree/refs/bisect/main-bad"));
        assert!(s.refs.contains_key("main-worktree/refs/worktree/main-own"));
    }
}
