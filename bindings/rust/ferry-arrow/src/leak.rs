//! The opt-in leak report (`FERRY_LEAK_REPORT=1`): every object this crate
//! imports (arrays, schemas, streams, stream batches) registers itself with
//! the core's `ferry_leak_track` while it is alive, so that the core's report
//! at process exit names the Rust imports nobody dropped (say, leaked with
//! `mem::forget`), one line each: `ferry: leak: rust: <what>`.
use std::ffi::CString;
use std::sync::atomic::{AtomicU8, Ordering};

use ferry_arrow_sys as sys;

/// 0: not read yet, 1: off, 2: on.
static REPORT: AtomicU8 = AtomicU8::new(0);

/// True when the report is on. The variable is read once, with the core's
/// rule (set, non-empty, not "0"), so that imports pay one cached load and
/// no call into the core when it is off (the everyday case, on the hot path).
#[inline(always)]
fn enabled() -> bool {
    match REPORT.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => read_enabled(),
    }
}

#[cold]
#[inline(never)]
fn read_enabled() -> bool {
    let on = std::env::var_os("FERRY_LEAK_REPORT").is_some_and(|v| !v.is_empty() && v != "0");
    REPORT.store(if on { 2 } else { 1 }, Ordering::Relaxed);
    on
}

/// The core's registration of one live import (0 when the report is off).
/// Untracked when dropped or handed on with [`LeakToken::untrack`].
#[derive(Default)]
pub(crate) struct LeakToken(i64);

impl LeakToken {
    /// No registration.
    pub(crate) const NONE: LeakToken = LeakToken(0);

    /// Registers an object described by `describe` (called only when the
    /// report is on).
    #[inline(always)]
    pub(crate) fn track(describe: impl FnOnce() -> String) -> LeakToken {
        if !enabled() {
            return LeakToken::NONE;
        }
        LeakToken::track_cold(describe)
    }

    /// The report is on: describe (formatting stays off the hot path) and
    /// register.
    #[cold]
    #[inline(never)]
    fn track_cold(describe: impl FnOnce() -> String) -> LeakToken {
        LeakToken::track_slow(describe())
    }

    #[cold]
    #[inline(never)]
    fn track_slow(description: String) -> LeakToken {
        // A NUL inside the description would cut it: replace it instead.
        let description = CString::new(description.replace('\0', " ")).unwrap_or_default();
        // SAFETY: both strings are NUL-terminated; the core copies them.
        LeakToken(unsafe { sys::ferry_leak_track(c"rust".as_ptr(), description.as_ptr()) })
    }

    /// Forgets the registration (the object was released, or handed to
    /// another owner, which answers for it from now on).
    #[inline(always)]
    pub(crate) fn untrack(&mut self) {
        if self.0 != 0 {
            self.untrack_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn untrack_slow(&mut self) {
        // SAFETY: the token came from ferry_leak_track and is used once.
        unsafe { sys::ferry_leak_untrack(self.0) };
        self.0 = 0;
    }

    /// Moves the registration out, leaving none here.
    #[inline]
    pub(crate) fn take(&mut self) -> LeakToken {
        std::mem::take(self)
    }
}

impl Drop for LeakToken {
    #[inline(always)]
    fn drop(&mut self) {
        self.untrack();
    }
}
