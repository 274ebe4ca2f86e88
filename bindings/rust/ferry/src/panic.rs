//! Panic containment at C boundaries (runtimes.md §4): nothing may unwind
//! through a C frame, so every `extern "C"` function ferry's Rust code
//! exposes runs its body inside [`guard`].
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{errno, Error, Result};

/// Runs `f`, turning a panic into `Err(Error)` with code `EIO` and the panic
/// message, so that the caller can hand a code and a message to C instead of
/// unwinding into it.
///
/// ```
/// let ok = ferry::guard(|| Ok(7));
/// assert_eq!(ok, Ok(7));
/// let caught: ferry::Result<i32> = ferry::guard(|| panic!("boom"));
/// let err = caught.unwrap_err();
/// assert_eq!(err.code(), ferry::errno::EIO);
/// assert!(err.message().contains("boom"));
/// ```
#[inline(always)]
pub fn guard<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => Err(panic_error(payload)),
    }
}

/// Runs `f` where no error can be reported (release hooks): a panic is
/// caught and written to stderr, because unwinding further would abort.
#[inline(always)]
pub(crate) fn guard_silent(what: &str, f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        report_panic(what, payload);
    }
}

/// The error for a caught panic (out of line: guard is on hot paths).
#[cold]
#[inline(never)]
fn panic_error(payload: Box<dyn Any + Send>) -> Error {
    Error::new(
        errno::EIO,
        format!("panic in Rust code called from C: {}", panic_message(&*payload)),
    )
}

#[cold]
#[inline(never)]
fn report_panic(what: &str, payload: Box<dyn Any + Send>) {
    eprintln!("ferry: panic in {what} contained: {}", panic_message(&*payload));
}

/// The text of a panic payload (`&str` or `String`), else a placeholder.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
