//! A detector of writes into freed memory that AddressSanitizer cannot see: the kernel's. Built
//! only with the `canary` feature (`.ci/run`'s detector pass), as the process's global
//! allocator.
//!
//! io_uring writes into user memory from the kernel (a receive's bytes, a read's page), where
//! ASan's shadow memory sees nothing; a request whose buffer was freed before its completion was
//! reaped writes into whatever the allocator handed that memory to next. So every block that
//! could be such a buffer (1 KiB and more, or page aligned) is, when freed, filled with a poison
//! byte and kept out of reuse (a quarantine, oldest out first past 256 MiB or 65536 blocks);
//! when it leaves the quarantine, and for every block still in it at exit (after a short pause,
//! for a ring torn down asynchronously), the poison is checked. A changed byte is reported on
//! stderr with the block's size and the first offset written, and the process exits with
//! `EXIT_CODE` instead of its own code. Smaller blocks go straight back to the system allocator.
//!
//! A free that races a kernel write shows only when the write lands after the free: a window of
//! microseconds. `RINGSIDE_CANARY_FREE_DELAY_US` widens it: each kept block, once poisoned, is
//! held that long before the free returns, so a request still armed on memory freed early gets
//! its bytes inside the window (the teardown tests set it; a teardown that waits for the kernel
//! before freeing is unaffected).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The exit code of a process in which freed memory was written (EX_SOFTWARE).
pub const EXIT_CODE: i32 = 70;
/// What freed memory is filled with.
pub const POISON: u8 = 0xa5;
/// The smallest block kept: every buffer ringside hands to the kernel is at least this large
/// (a 1 KiB response, 8 KiB pool buffers, 16 KiB connection buffers) or page aligned (buffer
/// rings, file slots).
const BLOCK_BYTES_MIN: usize = 1024;
const PAGE_ALIGNED: usize = 4096;
const QUARANTINE_BYTES_MAX: usize = 256 << 20;
const QUARANTINE_BLOCKS_MAX: usize = 1 << 16;
/// How long the exit check waits first, for a ring whose teardown the kernel finishes after
/// its fd is closed (an old teardown's, which the check is there to catch).
const EXIT_PAUSE_US: usize = 50_000;

pub struct Canary;

#[global_allocator]
static ALLOCATOR: Canary = Canary;

/// Freed blocks (address, size, alignment), oldest first, in a ring of fixed size: the
/// quarantine must not allocate, since it runs inside the allocator (all zeros, so it costs the
/// binary nothing).
struct Quarantine {
    blocks: [(usize, usize, usize); QUARANTINE_BLOCKS_MAX],
    oldest: usize,
    len: usize,
    bytes: usize,
}

struct Locked(UnsafeCell<Quarantine>);

// SAFETY: the quarantine is only touched with `LOCK` held (`with_quarantine`).
unsafe impl Sync for Locked {}

static QUARANTINE: Locked = Locked(UnsafeCell::new(Quarantine {
    blocks: [(0, 0, 0); QUARANTINE_BLOCKS_MAX],
    oldest: 0,
    len: 0,
    bytes: 0,
}));
static LOCK: AtomicBool = AtomicBool::new(false);
/// `RINGSIDE_CANARY_FREE_DELAY_US`, read at the first kept free (`DELAY_UNREAD` before).
static FREE_DELAY_US: AtomicUsize = AtomicUsize::new(DELAY_UNREAD);
const DELAY_UNREAD: usize = usize::MAX;
static EXIT_CHECK_REGISTERED: AtomicBool = AtomicBool::new(false);
/// Blocks found written after they were freed.
static WRITTEN: AtomicUsize = AtomicUsize::new(0);

fn with_quarantine<T>(work: impl FnOnce(&mut Quarantine) -> T) -> T {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    // SAFETY: the lock is held, so this is the only reference.
    let result = work(unsafe { &mut *QUARANTINE.0.get() });
    LOCK.store(false, Ordering::Release);
    result
}

fn kept(layout: Layout) -> bool {
    layout.size() >= BLOCK_BYTES_MIN || layout.align() >= PAGE_ALIGNED
}

impl Quarantine {
    fn push(&mut self, address: usize, layout: Layout) {
        while self.len == QUARANTINE_BLOCKS_MAX
            || (self.len > 0 && self.bytes + layout.size() > QUARANTINE_BYTES_MAX)
        {
            self.release_oldest();
        }
        let index = (self.oldest + self.len) % QUARANTINE_BLOCKS_MAX;
        self.blocks[index] = (address, layout.size(), layout.align());
        self.len += 1;
        self.bytes += layout.size();
    }

    fn release_oldest(&mut self) {
        let (address, size, align) = self.blocks[self.oldest];
        check(address, size);
        // SAFETY: the block came from `System` with this size and alignment (a valid layout
        // then) and was freed once, into here.
        unsafe {
            let layout = Layout::from_size_align_unchecked(size, align);
            System.dealloc(address as *mut u8, layout);
        }
        self.oldest = (self.oldest + 1) % QUARANTINE_BLOCKS_MAX;
        self.len -= 1;
        self.bytes -= size;
    }

    fn check_all(&self) {
        for index in 0..self.len {
            let (address, size, _) = self.blocks[(self.oldest + index) % QUARANTINE_BLOCKS_MAX];
            check(address, size);
        }
    }
}

/// Checks that a freed block still holds nothing but poison; reports the first byte that
/// changed.
fn check(address: usize, size: usize) {
    // SAFETY: the block is in the quarantine: allocated, freed by its user, never reused.
    let block = unsafe { std::slice::from_raw_parts(address as *const u8, size) };
    let Some((first, changed)) = written(block) else {
        return;
    };
    WRITTEN.fetch_add(1, Ordering::Relaxed);
    let mut line = Line::default();
    line.text("ringside: canary: a freed block of ");
    line.number(size);
    line.text(" bytes was written after it was freed (");
    line.number(changed);
    line.text(" bytes changed, the first at offset ");
    line.number(first);
    line.text("): memory was freed while something, the kernel or ringside, still wrote to it\n");
    line.write();
}

/// Where a poisoned block was written: the first offset that changed and how many bytes did.
fn written(block: &[u8]) -> Option<(usize, usize)> {
    let first = block.iter().position(|&byte| byte != POISON)?;
    let changed = block.iter().filter(|&&byte| byte != POISON).count();
    Some((first, changed))
}

/// One line of a report, put together without allocating (this runs inside the allocator).
struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl Default for Line {
    fn default() -> Line {
        Line {
            bytes: [0; 512],
            len: 0,
        }
    }
}

impl Line {
    fn text(&mut self, text: &str) {
        let room = (self.bytes.len() - self.len).min(text.len());
        self.bytes[self.len..self.len + room].copy_from_slice(&text.as_bytes()[..room]);
        self.len += room;
    }

    fn number(&mut self, mut value: usize) {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        // SAFETY: ASCII digits.
        self.text(unsafe { std::str::from_utf8_unchecked(&digits[start..]) });
    }

    fn write(&self) {
        // SAFETY: writes initialised bytes of a local buffer to stderr.
        unsafe { libc::write(2, self.bytes.as_ptr().cast(), self.len) };
    }
}

/// How long a kept free waits after poisoning its block (`RINGSIDE_CANARY_FREE_DELAY_US`).
fn free_delay_us() -> usize {
    let delay = FREE_DELAY_US.load(Ordering::Relaxed);
    if delay != DELAY_UNREAD {
        return delay;
    }
    // SAFETY: getenv with a NUL-terminated name; the value is read at once, not kept, and
    // reading it allocates nothing (this runs inside the allocator).
    let value = unsafe { libc::getenv(c"RINGSIDE_CANARY_FREE_DELAY_US".as_ptr()) };
    let delay = if value.is_null() {
        0
    } else {
        // SAFETY: getenv returned a NUL-terminated string.
        let digits = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
        digits
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .fold(0usize, |sum, &digit| {
                sum.saturating_mul(10) + usize::from(digit - b'0')
            })
    };
    FREE_DELAY_US.store(delay, Ordering::Relaxed);
    delay
}

fn sleep_us(us: usize) {
    let pause = libc::timespec {
        tv_sec: (us / 1_000_000) as libc::time_t,
        tv_nsec: (us % 1_000_000 * 1000) as libc::c_long,
    };
    // SAFETY: a plain sleep with a valid timespec.
    unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
}

/// At exit: every block still in the quarantine is checked, after a pause for rings the kernel
/// tears down after their fd was closed; any block found written ends the process with
/// `EXIT_CODE`.
extern "C" fn check_at_exit() {
    sleep_us(EXIT_PAUSE_US);
    with_quarantine(|quarantine| quarantine.check_all());
    let written = WRITTEN.load(Ordering::Relaxed);
    if written > 0 {
        let mut line = Line::default();
        line.text("ringside: canary: ");
        line.number(written);
        line.text(" freed blocks were written after they were freed\n");
        line.write();
        // SAFETY: ends the process at once with the canary's code (this is an exit handler).
        unsafe { libc::_exit(EXIT_CODE) };
    }
}

// SAFETY: every block is allocated by `System` and given back to it with its own layout; a
// kept block is only delayed (poisoned and quarantined), never handed out twice.
unsafe impl GlobalAlloc for Canary {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !kept(layout) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.dealloc(ptr, layout) };
        }
        // SAFETY: the block is the caller's to free, `layout.size()` bytes long.
        unsafe { std::ptr::write_bytes(ptr, POISON, layout.size()) };
        if !EXIT_CHECK_REGISTERED.swap(true, Ordering::Relaxed) {
            // SAFETY: registers a handler that only takes the quarantine's lock and writes.
            unsafe { libc::atexit(check_at_exit) };
        }
        with_quarantine(|quarantine| quarantine.push(ptr as usize, layout));
        match free_delay_us() {
            0 => {}
            delay => sleep_us(delay),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block that holds only poison passes; bytes changed anywhere are found, with the
    /// offset of the first.
    #[test]
    fn a_changed_byte_in_a_poisoned_block_is_found() {
        let mut block = vec![POISON; 4096];
        assert_eq!(written(&block), None);
        block[4000] = 7;
        block[4095] = 0;
        assert_eq!(written(&block), Some((4000, 2)));
    }

    #[test]
    fn only_blocks_a_buffer_could_be_are_kept() {
        assert!(kept(Layout::from_size_align(16 * 1024, 1).unwrap()));
        assert!(kept(Layout::from_size_align(256, 4096).unwrap()));
        assert!(!kept(Layout::from_size_align(64, 8).unwrap()));
    }
}
