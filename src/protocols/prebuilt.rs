//! Bytes built once per server and sent by the kernel straight from where they lie (the HTTP
//! responses), whose `Date:` fields one thread rewrites in place once a second.
//!
//! RFC 9110 (6.6.1) asks an origin server with a clock to send `Date`. Formatting it per
//! response would cost every request a clock read and a copy, and the io_uring engines send
//! (and may register) these very bytes; so the date is written into every prebuilt response
//! once a second instead, 29 bytes at offsets known when the responses were built.
//!
//! Only the kernel reads the bytes while a server runs (its sends copy them, or read them for
//! a zero-copy send); no Rust code reads them then. A send that the kernel copies while the
//! date is being rewritten, or that resumes inside the date field after a short send, can carry
//! a date mixed from two seconds: still 29 bytes of a well-formed response, its framing intact.

use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const DATE_BYTES: usize = 29;

/// Bytes in memory of their own, with the offsets of the `Date:` values inside them.
pub struct Prebuilt {
    start: NonNull<u8>,
    len: usize,
    dates: Box<[usize]>,
}

// SAFETY: the memory is owned by `Prebuilt` and freed only on drop; the one writer
// (`set_date`) writes whole dates in place while readers are the kernel's sends (module doc).
unsafe impl Send for Prebuilt {}
unsafe impl Sync for Prebuilt {}

impl Prebuilt {
    /// Takes `bytes`, whose date values start at `dates` (each `DATE_BYTES` long).
    pub fn new(bytes: Vec<u8>, dates: Vec<usize>) -> Prebuilt {
        assert!(dates.iter().all(|&at| at + DATE_BYTES <= bytes.len()));
        let boxed = bytes.into_boxed_slice();
        let len = boxed.len();
        let start = NonNull::new(Box::into_raw(boxed).cast::<u8>()).expect("a box is not null");
        Prebuilt {
            start,
            len,
            dates: dates.into_boxed_slice(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `start` holds `len` initialised bytes until drop.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }

    /// Writes `date` over every date value.
    fn set_date(&self, date: &[u8; DATE_BYTES]) {
        for &at in self.dates.iter() {
            debug_assert!(at + DATE_BYTES <= self.len);
            // SAFETY: inside the allocation (asserted at construction); a raw write, not
            // through a reference, into memory only the kernel reads meanwhile.
            unsafe {
                let target = self.start.as_ptr().add(at);
                std::ptr::copy_nonoverlapping(date.as_ptr(), target, DATE_BYTES);
            }
        }
    }
}

impl Drop for Prebuilt {
    fn drop(&mut self) {
        let slice = std::ptr::slice_from_raw_parts_mut(self.start.as_ptr(), self.len);
        // SAFETY: made by `Box::into_raw` of a boxed slice of this length.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// `time` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date(time: SystemTime) -> [u8; DATE_BYTES] {
    let text = httpdate::fmt_http_date(time);
    let mut date = [0u8; DATE_BYTES];
    date.copy_from_slice(text.as_bytes());
    date
}

/// Writes the date of `time` into every date value of `prebuilt`.
pub fn set_dates(prebuilt: &[Prebuilt], time: SystemTime) {
    let date = http_date(time);
    for bytes in prebuilt {
        bytes.set_date(&date);
    }
}

/// Keeps the dates of `prebuilt` current, once a second, for as long as the process lives: one
/// thread for every such set in the process, started with the first.
pub fn keep_fresh(prebuilt: &'static [Prebuilt]) {
    static FRESH: OnceLock<Mutex<Vec<&'static [Prebuilt]>>> = OnceLock::new();
    let mut started = false;
    let kept = FRESH.get_or_init(|| {
        started = true;
        Mutex::new(Vec::new())
    });
    set_dates(prebuilt, SystemTime::now());
    kept.lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .push(prebuilt);
    if !started {
        return;
    }
    let refresh = move || loop {
        std::thread::sleep(until_next_second(SystemTime::now()));
        let now = SystemTime::now();
        let kept = kept.lock().unwrap_or_else(|poison| poison.into_inner());
        for prebuilt in kept.iter() {
            set_dates(prebuilt, now);
        }
    };
    // Without the thread the dates stay those of the start: still valid, only old.
    let _ = std::thread::Builder::new()
        .name("ringside-date".into())
        .stack_size(64 * 1024)
        .spawn(refresh);
}

/// How long until just after the next whole second of the wall clock.
fn until_next_second(now: SystemTime) -> Duration {
    let into = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    Duration::from_nanos(u64::from(1_000_000_000 - into)) + Duration::from_millis(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rewritten_in_place_and_parse_back() {
        let mut bytes = b"Date: ".to_vec();
        bytes.extend_from_slice(&[b'?'; DATE_BYTES]);
        bytes.extend_from_slice(b"\r\nbody");
        let prebuilt = Prebuilt::new(bytes, vec![6]);
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        prebuilt.set_date(&http_date(time));
        assert_eq!(
            prebuilt.bytes(),
            b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nbody"
        );
        let date = std::str::from_utf8(&prebuilt.bytes()[6..6 + DATE_BYTES]).unwrap();
        assert_eq!(httpdate::parse_http_date(date).unwrap(), time);
    }

    #[test]
    fn the_next_second_is_at_most_a_second_away() {
        let time = SystemTime::UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!(until_next_second(time), Duration::from_millis(501));
        assert!(until_next_second(SystemTime::now()) <= Duration::from_millis(1001));
    }
}
