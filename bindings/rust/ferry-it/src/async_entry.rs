//! The three async entry points of docs/cases.md ("Plugin entry points"),
//! over the harness's generic C layer (core/harness/async/ferry_it_async.h,
//! linked as a static archive by build.rs): the producer pushes this
//! plugin's own synchronous stream (`ferry_it_export_stream`) through the
//! core's async sender, and the checking consumer hands the batches it
//! receives to this plugin's `ferry_it_check_stream`. No async state machine
//! is written here; each entry point only merges the layer's failure message
//! into this plugin's per-thread last error, so that `ferry_it_last_error`
//! answers for every entry point.
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

use ferry_arrow_sys as sys;

use crate::{ferry_it_check_stream, ferry_it_export_stream, ferry_it_last_error, set_last_error};

type ExportStreamFn = unsafe extern "C" fn(*const c_char, *mut sys::ArrowDeviceArrayStream) -> c_int;
type CheckStreamFn = unsafe extern "C" fn(*const c_char, *mut sys::ArrowDeviceArrayStream) -> c_int;
type LastErrorFn = extern "C" fn() -> *const c_char;

extern "C" {
    fn ferry_it_async_export_generic(
        case_spec: *const c_char,
        handler: *mut sys::ArrowAsyncDeviceStreamHandler,
        export_stream: ExportStreamFn,
        last_error: LastErrorFn,
        eager: c_int,
    ) -> c_int;
    fn ferry_it_async_check_generic(
        case_spec: *const c_char,
        handler_out: *mut sys::ArrowAsyncDeviceStreamHandler,
        ticket_out: *mut *mut c_void,
        check_stream: CheckStreamFn,
        last_error: LastErrorFn,
    ) -> c_int;
    fn ferry_it_async_result_generic(ticket: *mut c_void, timeout_ms: i64) -> c_int;
    fn ferry_it_async_last_error() -> *const c_char;
}

/// Copies the layer's message of a failed call into this plugin's last
/// error (the layer keeps it per thread, as this plugin does).
fn merged(rc: c_int) -> c_int {
    if rc != 0 {
        // SAFETY: the layer returns a NUL-terminated thread-local buffer
        // (or NULL), valid until its next call on this thread.
        let message = unsafe {
            let p = ferry_it_async_last_error();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        set_last_error(&message);
    }
    rc
}

/// Starts producing the case into `handler` on a thread the core starts
/// (Rust streams may be read from any thread, so not eagerly). 0 when
/// production started; the handler is released by the producer in every
/// outcome, a failure included (the layer fails it first).
///
/// # Safety
/// `case_spec` must be NULL or a NUL-terminated string; `handler` NULL or a
/// handler that stays valid until it is released.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_export_async(
    case_spec: *const c_char,
    handler: *mut sys::ArrowAsyncDeviceStreamHandler,
) -> c_int {
    merged(ferry_it_async_export_generic(
        case_spec,
        handler,
        ferry_it_export_stream,
        ferry_it_last_error,
        0,
    ))
}

/// Fills `*handler_out` with a checking consumer of the case and returns
/// its ticket in `*ticket_out` (owned by the layer until
/// [`ferry_it_async_result`] collects it).
///
/// # Safety
/// The pointers must be NULL or valid; `handler_out` must stay valid until
/// the ticket's result is in.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_check_async(
    case_spec: *const c_char,
    handler_out: *mut sys::ArrowAsyncDeviceStreamHandler,
    ticket_out: *mut *mut c_void,
) -> c_int {
    merged(ferry_it_async_check_generic(
        case_spec,
        handler_out,
        ticket_out,
        ferry_it_check_stream,
        ferry_it_last_error,
    ))
}

/// Waits at most `timeout_ms` for the verdict of a ticket of
/// [`ferry_it_check_async`] and frees the ticket; `ETIMEDOUT` keeps it.
///
/// # Safety
/// `ticket` must come from `ferry_it_check_async` and not be collected yet.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_async_result(ticket: *mut c_void, timeout_ms: i64) -> c_int {
    merged(ferry_it_async_result_generic(ticket, timeout_ms))
}
