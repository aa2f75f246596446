//! The sandbox's Unix-socket filter: a classic BPF program for `seccomp(2)`, handed to
//! bubblewrap (`--seccomp FD`), that makes `socket(AF_UNIX, …)` fail with `EPERM`.
//!
//! # Why
//!
//! Hiding trees (`/tmp`, `/run`, the runtime dir) and listing sockets cannot be complete: a
//! read-only bind does not stop `connect(2)`, and a pathname socket can sit anywhere the
//! sandbox can read — an owner's `tmux -S ~/x/sock`, ssh `ControlMaster` sockets in `~/.ssh`,
//! git's `credential-cache` daemon at `~/.cache/git/credential/socket` (it hands out the
//! owner's token), an ssh-agent on a custom path, Docker Desktop's `~/.docker/run/docker.sock`,
//! `/var/lib/…`, `/srv/…` (sixth red-team pass, R6-1, R6-5). Without a Unix socket of its own
//! the agent can connect to none of them, wherever they are and whenever they appear. This is
//! what Anthropic's sandbox-runtime does on Linux.
//!
//! # Invariants
//!
//! - `socket(2)` succeeds only for the families of `catalogue::SANDBOX_SOCKET_FAMILIES`
//!   (`AF_INET`, `AF_INET6`, `AF_NETLINK`: the network itself is a namespace question) and,
//!   when the policy allows Unix sockets, `AF_UNIX`; every other family fails with `EPERM`.
//!   `AF_UNIX` reaches pathname sockets anywhere; the rest are families a network namespace
//!   does not contain: `AF_VSOCK` talks to the hypervisor and the host's vsock services
//!   (VM-based dev setups expose host daemons there; eighth red-team pass), Bluetooth, CAN,
//!   `AF_ALG`, … — an allow-list, so a family added to the kernel tomorrow is denied too.
//!   With `unix_sockets = "allow"` the filter is installed all the same, without the Unix
//!   rule. `socketpair(2)` stays allowed for
//!   `SOCK_STREAM` (test runners, Python's `socket.socketpair()`, Node's IPC use it): a
//!   connected stream pair reaches nothing outside. A datagram or seqpacket pair fails with
//!   `EPERM`: one end of a datagram pair can `sendto()` any pathname datagram socket
//!   (seventh red-team pass, R7-5).
//! - `io_uring_setup`, `io_uring_enter`, `io_uring_register` fail with `EPERM`: io_uring can
//!   create and connect sockets without passing through the `socket` system call seccomp sees.
//! - The architecture is checked first (`seccomp_data.arch`): any other ABI (i386, whose
//!   `socketcall(2)` multiplexes `socket` behind a pointer the filter cannot read; arm32 on
//!   aarch64) gets `EPERM` for every system call, and on x86_64 so does every x32 call (bit
//!   `__X32_SYSCALL_BIT` in the number): no second door to `socket`. 32-bit programs do not
//!   run inside the sandbox.
//! - `connect(2)` and `bind(2)` are not filtered: they take a descriptor, and without
//!   `socket(AF_UNIX)` the sandbox has no Unix socket to pass except a `socketpair` one (which
//!   cannot connect) or one inherited from outside (agent-shell passes none; bubblewrap's own
//!   descriptors are closed or not sockets).
//!
//! The program is generated here (no libseccomp, no new crate: ten instructions) and tested by
//! running it in a small classic-BPF interpreter over `seccomp_data` (`tests`), every branch on
//! both architectures.

/// One classic-BPF instruction (`struct sock_filter`, 8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// An architecture the filter is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

// linux/audit.h
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
pub const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
pub const AUDIT_ARCH_I386: u32 = 0x4000_0003;
pub const AUDIT_ARCH_ARM: u32 = 0x4000_0028;
/// `__X32_SYSCALL_BIT` (arch/x86/include/uapi/asm/unistd.h).
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
pub const AF_UNIX: u32 = 1;
pub const SOCK_STREAM: u32 = 1;
/// The type's low bits (`SOCK_NONBLOCK`/`SOCK_CLOEXEC` are flags above them).
pub const SOCK_TYPE_MASK: u32 = 0xf;
pub const EPERM: u32 = 1;

// linux/seccomp.h
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
/// What a denied call returns: `-1` with `errno = EPERM`.
pub const DENY: u32 = SECCOMP_RET_ERRNO | EPERM;

// linux/filter.h (classic BPF opcodes used here).
pub const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
pub const BPF_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
pub const BPF_JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
pub const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
pub const BPF_ALU_AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K

/// Offsets in `struct seccomp_data { int nr; __u32 arch; __u64 ip; __u64 args[6]; }`.
pub const OFF_NR: u32 = 0;
pub const OFF_ARCH: u32 = 4;
/// `args[0]`, low 32 bits (both architectures are little-endian; `socket`'s domain is an
/// `int`, the kernel reads only those bits).
pub const OFF_ARG0_LO: u32 = 16;
/// `args[1]`'s low half (the type of `socketpair(2)`).
pub const OFF_ARG1_LO: u32 = 24;

/// System call numbers per architecture.
#[derive(Debug, Clone, Copy)]
pub struct Numbers {
    pub audit_arch: u32,
    pub socket: u32,
    pub socketpair: u32,
    pub io_uring_setup: u32,
    pub io_uring_enter: u32,
    pub io_uring_register: u32,
    /// Numbers at or above this are another ABI on the same `arch` (x32 on x86_64).
    pub foreign_from: Option<u32>,
}

impl Arch {
    /// The architecture this build runs on, if the filter knows it.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }

    /// From arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h.
    pub fn numbers(self) -> Numbers {
        match self {
            Arch::X86_64 => Numbers {
                audit_arch: AUDIT_ARCH_X86_64,
                socket: 41,
                socketpair: 53,
                io_uring_setup: 425,
                io_uring_enter: 426,
                io_uring_register: 427,
                foreign_from: Some(X32_SYSCALL_BIT),
            },
            Arch::Aarch64 => Numbers {
                audit_arch: AUDIT_ARCH_AARCH64,
                socket: 198,
                socketpair: 199,
                io_uring_setup: 425,
                io_uring_enter: 426,
                io_uring_register: 427,
                foreign_from: None,
            },
        }
    }
}

fn ld(off: u32) -> Insn {
    Insn {
        code: BPF_LD_W_ABS,
        jt: 0,
        jf: 0,
        k: off,
    }
}

fn ret(k: u32) -> Insn {
    Insn {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The filter for `arch` with Unix sockets denied (the default rule).
pub fn unix_socket_filter(arch: Arch) -> Vec<Insn> {
    socket_filter(arch, false)
}

/// The filter for `arch`: `socket(2)` only for the families the sandbox may use
/// (`catalogue::SANDBOX_SOCKET_FAMILIES`, and `AF_UNIX` when `allow_unix`), `socketpair(2)`
/// only for streams unless `allow_unix`, no io_uring, no foreign ABI; the rest allowed.
pub fn socket_filter(arch: Arch, allow_unix: bool) -> Vec<Insn> {
    let n = arch.numbers();
    // Jumps are relative to the next instruction; they are filled in once the two return
    // instructions' positions are known.
    enum J {
        Allow,
        Deny,
        Next,
        /// Skip this many instructions after the next.
        Skip(usize),
    }
    let mut prog: Vec<(Insn, J, J)> = Vec::new();
    let jeq = |k| Insn {
        code: BPF_JEQ_K,
        jt: 0,
        jf: 0,
        k,
    };
    prog.push((ld(OFF_ARCH), J::Next, J::Next));
    prog.push((jeq(n.audit_arch), J::Next, J::Deny));
    prog.push((ld(OFF_NR), J::Next, J::Next));
    if let Some(from) = n.foreign_from {
        prog.push((
            Insn {
                code: BPF_JGE_K,
                jt: 0,
                jf: 0,
                k: from,
            },
            J::Deny,
            J::Next,
        ));
    }
    for nr in [n.io_uring_setup, n.io_uring_enter, n.io_uring_register] {
        prog.push((jeq(nr), J::Deny, J::Next));
    }
    // socketpair(2) for streams only: one end of a datagram pair can `sendto()` any pathname
    // datagram socket of the owner's (seventh red-team pass, R7-5); a connected stream pair
    // cannot address anything else.
    if !allow_unix {
        prog.push((jeq(n.socketpair), J::Next, J::Skip(3)));
        prog.push((ld(OFF_ARG1_LO), J::Next, J::Next));
        prog.push((
            Insn {
                code: BPF_ALU_AND_K,
                jt: 0,
                jf: 0,
                k: SOCK_TYPE_MASK,
            },
            J::Next,
            J::Next,
        ));
        prog.push((jeq(SOCK_STREAM), J::Allow, J::Deny));
    }
    prog.push((jeq(n.socket), J::Next, J::Allow));
    prog.push((ld(OFF_ARG0_LO), J::Next, J::Next));
    let families: Vec<u32> = crate::catalogue::SANDBOX_SOCKET_FAMILIES
        .iter()
        .map(|f| f.family)
        .chain(allow_unix.then_some(AF_UNIX))
        .collect();
    for (i, f) in families.iter().enumerate() {
        let last = i + 1 == families.len();
        prog.push((jeq(*f), J::Allow, if last { J::Deny } else { J::Next }));
    }
    let allow_at = prog.len();
    let deny_at = allow_at + 1;
    let mut out: Vec<Insn> = prog
        .into_iter()
        .enumerate()
        .map(|(i, (mut insn, t, f))| {
            let off = |j: J| -> u8 {
                let to = match j {
                    J::Allow => allow_at,
                    J::Deny => deny_at,
                    J::Next => i + 1,
                    J::Skip(k) => i + 1 + k,
                };
                u8::try_from(to - (i + 1)).expect("a short program")
            };
            if insn.code == BPF_JEQ_K || insn.code == BPF_JGE_K {
                insn.jt = off(t);
                insn.jf = off(f);
            }
            insn
        })
        .collect();
    out.push(ret(SECCOMP_RET_ALLOW));
    out.push(ret(DENY));
    out
}

/// The program as bubblewrap reads it from `--seccomp FD`: `struct sock_filter` array in
/// native byte order.
pub fn to_bytes(prog: &[Insn]) -> Vec<u8> {
    let mut b = Vec::with_capacity(prog.len() * 8);
    for i in prog {
        b.extend_from_slice(&i.code.to_ne_bytes());
        b.push(i.jt);
        b.push(i.jf);
        b.extend_from_slice(&i.k.to_ne_bytes());
    }
    b
}

/// The native filter's bytes, or `None` on an architecture the filter is not written for
/// (the caller then refuses to start a sandbox that promises the rule).
pub fn native_filter_bytes(allow_unix: bool) -> Option<Vec<u8>> {
    Arch::native().map(|a| to_bytes(&socket_filter(a, allow_unix)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the instructions a seccomp filter may use here, over a
    /// `seccomp_data`. Fails the test on anything else (an unknown opcode, a jump out of the
    /// program, running off its end), as the kernel's checker would refuse the program.
    fn run(prog: &[Insn], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&nr.to_le_bytes());
        data.extend_from_slice(&arch.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        for a in args {
            data.extend_from_slice(&a.to_le_bytes());
        }
        assert_eq!(data.len(), 64);
        assert!(prog.len() <= 4096);
        let mut acc: u32 = 0;
        let mut pc = 0usize;
        loop {
            let i = prog.get(pc).expect("the program runs off its end");
            pc += 1;
            match i.code {
                BPF_LD_W_ABS => {
                    let o = i.k as usize;
                    assert!(
                        o.is_multiple_of(4) && o + 4 <= data.len(),
                        "load out of seccomp_data"
                    );
                    acc = u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
                }
                BPF_JEQ_K | BPF_JGE_K => {
                    let hit = if i.code == BPF_JEQ_K {
                        acc == i.k
                    } else {
                        acc >= i.k
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                    assert!(pc < prog.len(), "a jump out of the program");
                }
                BPF_ALU_AND_K => acc &= i.k,
                BPF_RET_K => return i.k,
                c => panic!("opcode {c:#x} not expected in the filter"),
            }
        }
    }

    fn sock(arch: Arch, domain: u64) -> u32 {
        let n = arch.numbers();
        run(
            &unix_socket_filter(arch),
            n.socket,
            n.audit_arch,
            [domain, 1, 0, 0, 0, 0],
        )
    }

    #[test]
    fn unix_sockets_are_denied_and_other_domains_allowed() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            assert_eq!(sock(arch, 1), DENY, "{arch:?} AF_UNIX");
            // The high half of the register is not the domain: the kernel reads an int.
            assert_eq!(
                sock(arch, 0xffff_ffff_0000_0001),
                DENY,
                "{arch:?} AF_UNIX, high bits"
            );
            for domain in [
                2u64, /* AF_INET */
                10,   /* AF_INET6 */
                16,   /* AF_NETLINK */
                0xffff_ffff_0000_0002,
            ] {
                assert_eq!(sock(arch, domain), SECCOMP_RET_ALLOW, "{arch:?} {domain}");
            }
            // Families a network namespace does not contain: vsock (the host's services in a
            // VM), packet, Bluetooth, CAN, AF_ALG, and any number not listed.
            for domain in [40u64, 17, 31, 29, 38, 0, 46, 255, 0xffff] {
                assert_eq!(sock(arch, domain), DENY, "{arch:?} family {domain}");
            }
        }
    }

    #[test]
    fn socketpair_and_ordinary_calls_are_allowed() {
        // socketpair: 53 on x86_64, 199 on aarch64; connect 42 / 203; read 0 / 63.
        for (arch, nrs) in [
            (Arch::X86_64, [53u32, 42, 0, 59]),
            (Arch::Aarch64, [199u32, 203, 63, 221]),
        ] {
            let n = arch.numbers();
            for nr in nrs {
                let r = run(
                    &unix_socket_filter(arch),
                    nr,
                    n.audit_arch,
                    [1, 1, 0, 0, 0, 0],
                );
                assert_eq!(r, SECCOMP_RET_ALLOW, "{arch:?} nr {nr}");
            }
        }
    }

    #[test]
    fn socketpair_is_for_streams_only() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let n = arch.numbers();
            let pair = |ty: u64| {
                run(
                    &unix_socket_filter(arch),
                    n.socketpair,
                    n.audit_arch,
                    [1, ty, 0, 0, 0, 0],
                )
            };
            // SOCK_STREAM, with SOCK_NONBLOCK | SOCK_CLOEXEC, and high bits the kernel drops.
            for ty in [1u64, 1 | 0x800 | 0x80000, 0xffff_ffff_0000_0001] {
                assert_eq!(pair(ty), SECCOMP_RET_ALLOW, "{arch:?} {ty:#x}");
            }
            // SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW, with flags.
            for ty in [2u64, 5, 3, 2 | 0x80000] {
                assert_eq!(pair(ty), DENY, "{arch:?} {ty:#x}");
            }
            // The rest of the program is unchanged behind it.
            assert_eq!(sock(arch, 1), DENY);
            assert_eq!(sock(arch, 2), SECCOMP_RET_ALLOW);
        }
    }

    #[test]
    fn io_uring_is_denied() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let n = arch.numbers();
            for nr in [n.io_uring_setup, n.io_uring_enter, n.io_uring_register] {
                let r = run(&unix_socket_filter(arch), nr, n.audit_arch, [0; 6]);
                assert_eq!(r, DENY, "{arch:?} nr {nr}");
            }
        }
    }

    #[test]
    fn a_foreign_abi_is_denied_whatever_the_call() {
        // i386 socketcall(SYS_SOCKET) is 102, socket 359; arm32 socket is 281. Every call of
        // another ABI is denied, on either filter.
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let prog = unix_socket_filter(arch);
            for foreign in [
                AUDIT_ARCH_I386,
                AUDIT_ARCH_ARM,
                AUDIT_ARCH_X86_64,
                AUDIT_ARCH_AARCH64,
            ]
            .into_iter()
            .filter(|a| *a != arch.numbers().audit_arch)
            {
                for nr in [102u32, 359, 281, 0, 3] {
                    assert_eq!(run(&prog, nr, foreign, [2, 0, 0, 0, 0, 0]), DENY);
                }
            }
        }
    }

    #[test]
    fn the_x32_abi_is_denied_on_x86_64() {
        let prog = unix_socket_filter(Arch::X86_64);
        // x32 socket is 41 | bit; x32 read (0 | bit) is denied as well.
        for nr in [41 | X32_SYSCALL_BIT, X32_SYSCALL_BIT, u32::MAX] {
            assert_eq!(run(&prog, nr, AUDIT_ARCH_X86_64, [2, 0, 0, 0, 0, 0]), DENY);
        }
        assert_eq!(
            run(
                &prog,
                X32_SYSCALL_BIT - 1,
                AUDIT_ARCH_X86_64,
                [1, 0, 0, 0, 0, 0]
            ),
            SECCOMP_RET_ALLOW
        );
        // On aarch64 there is no such bit: a large number is just an unknown call.
        let a = unix_socket_filter(Arch::Aarch64);
        assert_eq!(
            run(
                &a,
                X32_SYSCALL_BIT | 198,
                AUDIT_ARCH_AARCH64,
                [1, 0, 0, 0, 0, 0]
            ),
            SECCOMP_RET_ALLOW
        );
    }

    #[test]
    fn the_bytes_are_struct_sock_filter() {
        let prog = unix_socket_filter(Arch::X86_64);
        let b = to_bytes(&prog);
        assert_eq!(b.len(), prog.len() * 8);
        // First instruction: ld [4].
        assert_eq!(&b[..8], &[0x20, 0, 0, 0, 4, 0, 0, 0]);
        // Last: ret ERRNO|EPERM.
        assert_eq!(&b[b.len() - 8..], &[0x06, 0, 0, 0, 1, 0, 5, 0]);
        assert!(native_filter_bytes(false).is_some() || Arch::native().is_none());
    }

    /// `unix_sockets = "allow"`: the filter still stands, without the Unix rule — vsock,
    /// io_uring and foreign ABIs stay denied.
    #[test]
    fn allowing_unix_sockets_keeps_the_rest_of_the_filter() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let n = arch.numbers();
            let prog = socket_filter(arch, true);
            let call = |nr, a0, a1| run(&prog, nr, n.audit_arch, [a0, a1, 0, 0, 0, 0]);
            assert_eq!(call(n.socket, 1, 1), SECCOMP_RET_ALLOW, "{arch:?} AF_UNIX");
            assert_eq!(call(n.socket, 2, 1), SECCOMP_RET_ALLOW, "{arch:?} AF_INET");
            assert_eq!(
                call(n.socketpair, 1, 2),
                SECCOMP_RET_ALLOW,
                "{arch:?} dgram pair"
            );
            assert_eq!(call(n.socket, 40, 1), DENY, "{arch:?} AF_VSOCK");
            assert_eq!(call(n.io_uring_setup, 0, 0), DENY, "{arch:?} io_uring");
        }
    }
}
