//! The shim's allocator: a bump arena in `.bss`, with glibc's `malloc` behind it.
//!
//! Why: a call lives ~0.3 ms and ends in `execve`, which drops the whole address space, so
//! freeing is wasted work. One call makes ~200 allocations (≈ 19 KB, the environment, the
//! policy, the command-scope pairs); through glibc's `malloc`, `free` and `realloc` they cost
//! ≈ 40 k instructions of the shim's ≈ 230 k (callgrind, docs/perf-shim.md). Here an
//! allocation is an aligned bump of one offset.
//!
//! Invariants (each tested below):
//! - every block is inside the arena and aligned as asked; no two live blocks overlap;
//! - `dealloc` of the last block hands its bytes back (temporaries freed in reverse order
//!   are reused); any other arena block is left in place until the process ends or `exec`s;
//! - `realloc` of the last block grows or shrinks it in place while the arena has room;
//!   otherwise a new block is made and the bytes copied;
//! - a request the arena cannot meet (too large, alignment over a page, the arena spent) goes
//!   to glibc's `malloc` (`std::alloc::System`), and a pointer outside the arena goes back to
//!   it: the paths that run git as a child and read its output (`worktree remove`, alias
//!   lookups, `--install`) keep a bounded arena and an ordinary heap beyond it;
//! - the offset moves only by compare-and-swap, so threads (none on the hot path; std may
//!   start some for a child's output) cannot be handed the same bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The arena's alignment: the largest a block can ask for from it.
const PAGE: usize = 4096;

/// The offset of the arena's first free byte, then `N` bytes of arena (zero-initialised, so a
/// `static` one lies in `.bss`: pages no call touches cost nothing). The offset comes first so
/// that it shares the arena's first page, which every call touches anyway.
#[repr(C, align(4096))]
pub struct Bump<const N: usize> {
    next: AtomicUsize,
    buf: UnsafeCell<[u8; N]>,
}

// SAFETY: the bytes are handed out by compare-and-swap on `next` (no two callers get the same
// range), and each block is then owned by its caller alone.
unsafe impl<const N: usize> Sync for Bump<N> {}

impl<const N: usize> Bump<N> {
    pub const fn new() -> Self {
        Bump {
            next: AtomicUsize::new(0),
            buf: UnsafeCell::new([0; N]),
        }
    }

    /// Asks the kernel to map the arena's first `bytes` (whole pages, the offset's included)
    /// now, in one `madvise(MADV_POPULATE_WRITE)` (Linux 5.14), instead of one page fault per
    /// page as the call first writes each: a call allocates ≈ 19 KB, and its first allocation
    /// would take two faults on the offset's page (a read maps the zero page, the
    /// compare-and-swap then copies it). Best effort: an older kernel answers `EINVAL`, and
    /// the pages then fault in as before. Nothing is read or written.
    pub fn prefault(&self, bytes: usize) {
        const MADV_POPULATE_WRITE: std::ffi::c_int = 23;
        extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        let len = bytes
            .min(std::mem::size_of::<Self>())
            .next_multiple_of(PAGE);
        // SAFETY: `self` is page-aligned (`align(4096)`) and at least `len` bytes long;
        // populating changes no byte of it (the pages are the zero-filled `.bss` either way).
        unsafe {
            let _ = madvise(
                (self as *const Self).cast_mut().cast(),
                len,
                MADV_POPULATE_WRITE,
            );
        }
    }

    fn base(&self) -> *mut u8 {
        self.buf.get().cast()
    }

    /// The block's offset when `ptr` is inside the arena.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        let (p, b) = (ptr as usize, self.base() as usize);
        (p >= b && p < b + N).then(|| p - b)
    }

    /// A block of `layout` from the arena, or `None` when it has no room.
    fn bump(&self, layout: Layout) -> Option<*mut u8> {
        if layout.align() > PAGE {
            return None;
        }
        let base = self.base() as usize;
        let mut next = self.next.load(Ordering::Relaxed);
        loop {
            // Aligned as an address (the buffer itself starts after `next`).
            let addr =
                base.checked_add(next)?.checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let start = addr - base;
            let end = start.checked_add(layout.size())?;
            if end > N {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(next, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                // SAFETY: `start < end <= N`: inside the buffer.
                Ok(_) => return Some(unsafe { self.base().add(start) }),
                Err(now) => next = now,
            }
        }
    }
}

impl<const N: usize> Default for Bump<N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: blocks are aligned and disjoint (see `bump`); a pointer is returned to the
// allocator that made it (arena by address, else `System`).
unsafe impl<const N: usize> GlobalAlloc for Bump<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.bump(layout) {
            Some(p) => p,
            None => System.alloc(layout),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset(ptr) {
            // The last block: give its bytes back (fails, harmlessly, if it is not the last).
            Some(off) => {
                let _ = self.next.compare_exchange(
                    off + layout.size(),
                    off,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            None => System.dealloc(ptr, layout),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(off) = self.offset(ptr) else {
            return System.realloc(ptr, layout, new_size);
        };
        // The last block grows or shrinks in place while the arena has room.
        if off.checked_add(new_size).is_some_and(|end| end <= N)
            && self
                .next
                .compare_exchange(
                    off + layout.size(),
                    off + new_size,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return ptr;
        }
        // SAFETY: `new_size` with the old alignment is a valid layout (the caller's contract).
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let new = self.alloc(new_layout);
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    fn arena() -> Box<Bump<8192>> {
        // Built in place on the heap (a `Bump<8192>` on the test thread's stack is fine too).
        Box::new(Bump::new())
    }

    /// `prefault` maps pages and changes nothing in them, however many bytes it is asked
    /// for (clamped to the arena), before and after blocks were handed out; and the page
    /// after the arena is left alone (a write there would be a write past the object).
    #[test]
    fn prefault_changes_no_byte_and_stays_inside() {
        #[repr(C, align(4096))]
        struct WithGuard {
            arena: Bump<8192>,
            guard: [u8; 4096],
        }
        let mut w = Box::new(WithGuard {
            arena: Bump::new(),
            guard: [0xa5; 4096],
        });
        w.arena.prefault(usize::MAX);
        assert!(unsafe { &*w.arena.buf.get() }.iter().all(|&b| b == 0));
        let p = unsafe { w.arena.alloc(layout(100, 8)) };
        unsafe { std::ptr::write_bytes(p, 0x5a, 100) };
        w.arena.prefault(8192 + 4096);
        let bytes = unsafe { std::slice::from_raw_parts(p, 100) };
        assert!(bytes.iter().all(|&b| b == 0x5a), "a block's bytes are kept");
        assert_eq!(
            w.arena.next.load(Ordering::Relaxed),
            100,
            "the offset is kept"
        );
        assert!(
            w.guard.iter().all(|&b| b == 0xa5),
            "nothing past the arena is touched"
        );
        w.guard[0] = 0;
    }

    #[test]
    fn blocks_are_aligned_disjoint_and_inside() {
        let a = arena();
        let mut blocks = Vec::new();
        for (size, align) in [
            (1, 1),
            (3, 8),
            (24, 8),
            (7, 16),
            (100, 64),
            (5, 4096),
            (9, 2),
        ] {
            let l = layout(size, align);
            let p = unsafe { a.alloc(l) };
            assert!(a.offset(p).is_some(), "{size}/{align} inside the arena");
            assert_eq!(p as usize % align, 0, "{size}/{align} aligned");
            unsafe { std::ptr::write_bytes(p, 0xAB, size) };
            blocks.push((p as usize, size));
        }
        blocks.sort();
        for w in blocks.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "{w:?} overlap");
        }
    }

    #[test]
    fn the_last_block_is_given_back_and_grown_in_place() {
        let a = arena();
        let keep = unsafe { a.alloc(layout(10, 1)) };
        let l = layout(32, 8);
        let tmp = unsafe { a.alloc(l) };
        unsafe { a.dealloc(tmp, l) };
        let again = unsafe { a.alloc(l) };
        assert_eq!(again, tmp, "a freed last block is reused");
        // Grown in place, the bytes kept.
        unsafe { std::ptr::write_bytes(again, 7, 32) };
        let grown = unsafe { a.realloc(again, l, 200) };
        assert_eq!(grown, again);
        assert!(unsafe { std::slice::from_raw_parts(grown, 32) }
            .iter()
            .all(|&b| b == 7));
        // A block that is not the last is left in place by dealloc (control: the offset does
        // not move back under a live block).
        let before = a.next.load(Ordering::Relaxed);
        unsafe { a.dealloc(keep, layout(10, 1)) };
        assert_eq!(a.next.load(Ordering::Relaxed), before);
    }

    #[test]
    fn a_block_not_last_is_moved_with_its_bytes() {
        let a = arena();
        let l = layout(16, 8);
        let first = unsafe { a.alloc(l) };
        unsafe { std::ptr::copy_nonoverlapping(b"0123456789abcdef".as_ptr(), first, 16) };
        let second = unsafe { a.alloc(layout(8, 8)) };
        let moved = unsafe { a.realloc(first, l, 64) };
        assert_ne!(moved, first);
        assert!(
            moved as usize >= second as usize + 8,
            "after the live block"
        );
        assert_eq!(
            unsafe { std::slice::from_raw_parts(moved, 16) },
            b"0123456789abcdef"
        );
    }

    #[test]
    fn what_the_arena_cannot_hold_goes_to_malloc_and_back() {
        let a = arena();
        // Larger than the arena, an alignment over a page, and once the arena is spent.
        for l in [layout(10_000, 8), layout(8, 8192)] {
            let p = unsafe { a.alloc(l) };
            assert!(!p.is_null() && a.offset(p).is_none());
            assert_eq!(p as usize % l.align(), 0);
            unsafe { std::ptr::write_bytes(p, 1, l.size()) };
            unsafe { a.dealloc(p, l) };
        }
        let big = layout(8000, 8);
        let inside = unsafe { a.alloc(big) };
        assert!(a.offset(inside).is_some());
        let outside = unsafe { a.alloc(layout(500, 8)) };
        assert!(a.offset(outside).is_none(), "the arena is spent");
        // A block in the arena grown past its end moves out, its bytes with it.
        unsafe { std::ptr::write_bytes(inside, 9, 8000) };
        let out = unsafe { a.realloc(inside, big, 20_000) };
        assert!(a.offset(out).is_none());
        assert!(unsafe { std::slice::from_raw_parts(out, 8000) }
            .iter()
            .all(|&b| b == 9));
        unsafe {
            a.dealloc(out, layout(20_000, 8));
            a.dealloc(outside, layout(500, 8));
        }
    }

    /// Threads allocating, writing their own pattern, freeing and reallocating at once never
    /// see another's bytes.
    #[test]
    fn threads_never_share_a_block() {
        let a: &'static Bump<65536> = Box::leak(Box::new(Bump::new()));
        let handles: Vec<_> = (0..4u8)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..2000usize {
                        let size = 1 + (i * 7 + usize::from(t)) % 48;
                        let l = layout(size, 8);
                        let p = unsafe { a.alloc(l) };
                        unsafe { std::ptr::write_bytes(p, t, size) };
                        let p = unsafe { a.realloc(p, l, size + 8) };
                        unsafe { std::ptr::write_bytes(p.add(size), t, 8) };
                        std::thread::yield_now();
                        let all = unsafe { std::slice::from_raw_parts(p, size + 8) };
                        assert!(all.iter().all(|&b| b == t), "thread {t} block {i}");
                        unsafe { a.dealloc(p, layout(size + 8, 8)) };
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
