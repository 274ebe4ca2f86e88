//! Panic containment at C boundaries (runtimes.md §4): nothing may unwind
//! through a C frame, so every `extern "C"` function ferry's Rust code
//! exposes runs its body inside [`guard`].
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use crate::error::{errno, Error, Result};

/// Runs `f`, turning a panic into `Err(Error)` with code `EIO` and the panic
/// message, so that the caller can hand a code and a message to C instead of
/// unwinding into it.
///
/// ```
/// let ok = ferry_arrow::guard(|| Ok(7));
/// assert_eq!(ok, Ok(7));
/// let caught: ferry_arrow::Result<i32> = ferry_arrow::guard(|| panic!("boom"));
/// let err = caught.unwrap_err();
/// assert_eq!(err.code(), ferry_arrow::errno::EIO);
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

thread_local! {
    /// Set while [`guard_quiet`] runs code on this thread.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once per process, a panic hook that stays silent while
/// [`guard_quiet`] runs on the panicking thread and otherwise calls the hook
/// that was installed before it (the default one prints the message).
#[allow(dead_code)] // used by the arrow-rs conversions (features arrow-*)
fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Like [`guard`], for code whose panics are findings about foreign data
/// (arrow-rs asserting on what a producer sent): the panic becomes `EINVAL`
/// with `what` and the panic's message, and nothing is printed on stderr.
/// A hook installed after ferry's first use (`std::panic::set_hook`)
/// replaces the silencing, never the containment.
#[allow(dead_code)] // used by the arrow-rs conversions (features arrow-*)
pub(crate) fn guard_quiet<R>(what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    install_quiet_hook();
    let was = QUIET.with(|q| q.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.unwrap_or_else(|payload| Err(Error::invalid(format!("{what}: {}", panic_message(&*payload)))))
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
