//! This process's own environment, made unambiguous before anything reads it: one entry per
//! name, the first.
//!
//! **Why.** `environ` is an array of `name=value` strings, and nothing stops a caller from
//! `execve`-ing a program with two entries of one name. Readers then disagree about which one
//! is *the* variable: `getenv` — and so git, and every check gitward makes through
//! `std::env::var` — takes the **first**; std's `Command` builds a child's environment from
//! `env::vars_os` into a map, where the **last** wins; `sh`, `dash` and `bash` import the
//! **last** and export only that one to what they start; an entry passed on as it is keeps
//! both, for whoever reads it next. The fourteenth red-team pass turned each disagreement into
//! a way past git-shim's rules (docs/redteam4.md, R14-1 … R14-4): a harmless first
//! `GIT_CONFIG_PARAMETERS` checked and an armed second one handed to git; a second
//! `GIT_CONFIG_KEY_0` seen by the shim's own `git worktree` child; a second key seen by the
//! shells of git's script commands (`request-pull`, `submodule`, …); a second
//! `GIT_CONFIG_GLOBAL` or `HOME` seen by the shim's alias look-up while the git it execs read
//! the first.
//!
//! **The rule** ([`one_copy_per_name`], called first thing by every gitward binary): the
//! environment becomes the one `getenv` already saw — for each name its first entry, later
//! entries of the name dropped, and entries `getenv` can never return (no `=`, or an empty
//! name) dropped. After it every reader (gitward's checks, std's `Command`, git, a shell) sees
//! the same single value, so what was checked is what runs.

use std::ffi::c_char;

/// The indices of `entries` (each a `name=value` string of `environ`) to keep so that each
/// name appears once: the first entry of each name, in order. An entry without `=` or with an
/// empty name (`=x`) is not kept: `getenv` never returns it. `None` when every entry is kept
/// (the common case, which then costs no copy).
///
/// A name is everything before the entry's first `=`, as `getenv` matches it (`getenv("A")`
/// returns `B=C` for `A=B=C`); names containing `=` cannot be asked for.
pub fn first_copies(entries: &[&[u8]]) -> Option<Vec<usize>> {
    first_of_names(
        entries
            .iter()
            .map(|e| match e.iter().position(|&b| b == b'=') {
                Some(0) | None => None,
                Some(at) => Some(&e[..at]),
            }),
    )
}

/// [`first_copies`] over each entry's name (`None`: an entry `getenv` cannot return).
fn first_of_names<'a>(
    names: impl ExactSizeIterator<Item = Option<&'a [u8]>>,
) -> Option<Vec<usize>> {
    let slots = (names.len() * 2).next_power_of_two().max(16);
    // Open addressing over FNV-1a of the name: an environment has tens of entries, and this
    // runs on every git-shim call (std's SipHash set costs several times more).
    let mut table: Vec<Option<&[u8]>> = vec![None; slots];
    let mut keep: Option<Vec<usize>> = None;
    for (i, name) in names.enumerate() {
        let first = name.is_some_and(|n| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for &b in n {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            let mut at = (h as usize) & (slots - 1);
            loop {
                match table[at] {
                    None => {
                        table[at] = Some(n);
                        break true;
                    }
                    Some(seen) if seen == n => break false,
                    Some(_) => at = (at + 1) & (slots - 1),
                }
            }
        });
        match (&mut keep, first) {
            (Some(k), true) => k.push(i),
            (None, false) => keep = Some((0..i).collect()),
            _ => {}
        }
    }
    keep
}

extern "C" {
    static mut environ: *const *const c_char;
}

/// Makes this process's environment one entry per name: the first (see the module comment).
/// Changes nothing, and allocates nothing, when there is no duplicate or unreadable entry.
///
/// # Call it first
/// Before any thread is started and before anything has read the environment: it replaces
/// `environ`, which is only sound while no other thread uses it. Every gitward binary calls
/// it at the top of `main`.
pub fn one_copy_per_name() {
    // Each entry's start and its name, read up to the first `=` only (values can be long).
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings; this process is
    // single-threaded here (the contract above), so nothing changes it while it is read.
    let entries: Vec<(*const c_char, Option<&'static [u8]>)> = unsafe {
        let mut out = Vec::with_capacity(64);
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            let start = *p;
            let mut n = 0usize;
            loop {
                match *start.add(n) as u8 {
                    0 => break out.push((start, None)),
                    b'=' if n == 0 => break out.push((start, None)),
                    b'=' => {
                        let name = std::slice::from_raw_parts(start.cast::<u8>(), n);
                        break out.push((start, Some(name)));
                    }
                    _ => n += 1,
                }
            }
            p = p.add(1);
        }
        out
    };
    let Some(keep) = first_of_names(entries.iter().map(|e| e.1)) else {
        return;
    };
    let mut array: Vec<*const c_char> = keep
        .into_iter()
        .map(|i| entries[i].0)
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    array.shrink_to_fit();
    // The strings stay where they are (they outlive the process's use of them); only the
    // array is new, and it is never freed: glibc's `setenv` copies an `environ` it did not
    // allocate rather than reallocating it.
    let array: &'static mut [*const c_char] = Vec::leak(array);
    // SAFETY: as above; assigning `environ` is how POSIX lets a program replace its
    // environment, and the new array is NULL-terminated.
    unsafe {
        environ = array.as_ptr();
    }
}

#[cfg(test)]
mod tests {
    use super::first_copies;

    fn keep(entries: &[&str]) -> Option<Vec<usize>> {
        let b: Vec<&[u8]> = entries.iter().map(|e| e.as_bytes()).collect();
        first_copies(&b)
    }

    #[test]
    fn an_environment_without_duplicates_is_kept_whole() {
        assert_eq!(keep(&[]), None);
        assert_eq!(keep(&["A=1", "B=2", "AB=3", "A_=4", "a=5"]), None);
        // A value may hold `=`; the name is what comes before the first.
        assert_eq!(keep(&["A=B=C", "A=B2=C"]), Some(vec![0]));
    }

    #[test]
    fn the_first_entry_of_a_name_is_the_one_kept() {
        assert_eq!(
            keep(&[
                "GIT_CONFIG_PARAMETERS='user.email'='y'",
                "PATH=/bin",
                "GIT_CONFIG_PARAMETERS='diff.x.textconv'='touch /tmp/w'",
            ]),
            Some(vec![0, 1])
        );
        assert_eq!(
            keep(&["HOME=/h1", "X=1", "HOME=/h2", "X=2", "Y=3", "HOME="]),
            Some(vec![0, 1, 4])
        );
        // An empty first value is still the first copy (getenv returns "").
        assert_eq!(keep(&["GIT_DIR=", "GIT_DIR=/x"]), Some(vec![0]));
    }

    #[test]
    fn entries_getenv_cannot_return_are_dropped() {
        assert_eq!(keep(&["A=1", "NOEQUALS", "B=2"]), Some(vec![0, 2]));
        assert_eq!(keep(&["=x", "A=1"]), Some(vec![1]));
        assert_eq!(keep(&["=", "A=1"]), Some(vec![1]));
        assert_eq!(keep(&["", "A=1"]), Some(vec![1]));
        // A name that is a prefix of another is another name.
        assert_eq!(keep(&["GIT_DIR=a", "GIT_DIRX=b", "GIT_DI=c"]), None);
    }

    #[test]
    fn a_large_environment_with_colliding_slots_keeps_exactly_the_first_copies() {
        // 5,000 names, each three times, interleaved: every first copy and nothing else.
        let names: Vec<String> = (0..5000).map(|i| format!("N{i}")).collect();
        let mut entries = Vec::new();
        for round in 0..3 {
            for n in &names {
                entries.push(format!("{n}={round}"));
            }
        }
        let b: Vec<&[u8]> = entries.iter().map(|e| e.as_bytes()).collect();
        assert_eq!(first_copies(&b), Some((0..5000).collect()));
    }
}
