//! ferry's cross-language test plugin in Rust, `libferry_it_rust.so`.
//!
//! It exports the entry points of docs/cases.md, producing and checking
//! any case string from the grammar and the value formula alone:
//!
//! ```text
//! int ferry_it_export_array(const char*, struct ArrowSchema*, struct ArrowDeviceArray*);
//! int ferry_it_check_array(const char*, struct ArrowSchema*, struct ArrowDeviceArray*);
//! int ferry_it_export_stream(const char*, struct ArrowDeviceArrayStream*);
//! int ferry_it_check_stream(const char*, struct ArrowDeviceArrayStream*);
//! int64_t ferry_it_live_allocations(void);
//! const char* ferry_it_last_error(void);
//! int ferry_it_export_async(const char*, struct ArrowAsyncDeviceStreamHandler*);
//! int ferry_it_check_async(const char*, struct ArrowAsyncDeviceStreamHandler*, void**);
//! int ferry_it_async_result(void*, int64_t);
//! ```
//!
//! The async three (src/async_entry.rs) run over the harness's generic C
//! layer, linked by build.rs, with this plugin's stream entry points.
//!
//! Every entry point runs inside `ferry_arrow::guard`, so a panic becomes `EIO`
//! plus a message; the message of the last failure on the calling thread is
//! kept in a thread-local for `ferry_it_last_error`. The checkers take
//! ownership first, so whatever they are handed is released on every path.
use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};

use ferry_arrow::{errno, ArrayProducer, DeviceArray, DeviceArrayStream, Error, Result, Schema, Validation};
use ferry_arrow_sys as sys;

#[cfg(ferry_it_async)]
mod async_entry;
#[cfg(ferry_it_async)]
pub use async_entry::{ferry_it_async_result, ferry_it_check_async, ferry_it_export_async};
pub mod bench;
pub mod case;
pub mod check;
pub mod formula;
pub mod produce;

use case::{Case, Fail};
use produce::Counted;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Runs an entry point: 0 on success, else the errno code with the message
/// kept for ferry_it_last_error; panics are contained.
fn entry(f: impl FnOnce() -> Result<()>) -> c_int {
    match ferry_arrow::guard(f) {
        Ok(()) => 0,
        Err(e) => {
            set_last_error(e.message());
            e.code()
        }
    }
}

unsafe fn case_str<'a>(spec: *const c_char) -> Result<&'a str> {
    if spec.is_null() {
        return Err(Error::invalid("case string is NULL"));
    }
    CStr::from_ptr(spec)
        .to_str()
        .map_err(|_| Error::invalid("case string is not UTF-8"))
}

fn injected(what: &str) -> Error {
    Error::new(errno::EIO, format!("injected failure at {what}"))
}

/// Produces the case into `schema_out` and `array_out` (both released or
/// zeroed beforehand); the caller owns and releases them on success, and
/// both are left untouched on failure.
///
/// # Safety
/// The pointers must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_export_array(
    case_spec: *const c_char,
    schema_out: *mut sys::ArrowSchema,
    array_out: *mut sys::ArrowDeviceArray,
) -> c_int {
    entry(|| {
        let case = Case::parse(case_str(case_spec)?)?;
        if schema_out.is_null() || array_out.is_null() {
            return Err(Error::invalid("ferry_it_export_array: output pointer is NULL"));
        }
        if case.fail == Fail::Export {
            return Err(injected("export"));
        }
        if (*schema_out).release.is_some() || (*array_out).array.release.is_some() {
            return Err(Error::invalid(
                "ferry_it_export_array: output structs must be released beforehand",
            ));
        }
        let schema = produce::schema(case.ty)?;
        let array = produce::array(&case)?;
        schema.export_to(schema_out)?;
        array.export_to(array_out)
    })
}

/// Checks `schema` and `array` against the case; takes ownership of both
/// and releases them on success and on failure.
///
/// # Safety
/// The pointers must be NULL or point to valid structs.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_check_array(
    case_spec: *const c_char,
    schema: *mut sys::ArrowSchema,
    array: *mut sys::ArrowDeviceArray,
) -> c_int {
    entry(|| {
        // Take ownership of both before anything can fail. No validation
        // on import (the explicit opt-out): the checker runs the core's
        // FULL validation itself, after checking the device and waiting on
        // the sync event, and names its findings as a checker does.
        let imported = DeviceArray::import(array, schema, Validation::None);
        let case = Case::parse(case_str(case_spec)?)?;
        case.require_device()?;
        let (array, schema) = imported?;
        check::check_schema(case.ty, &schema)?;
        check::check_device_array(&case, &array, &schema)
    })
}

/// The stream producer of a case: `batches` arrays, batch b with seed + b,
/// with the injected failures of the grammar.
struct CaseStream {
    case: Case,
    next_batch: i64,
    get_next_calls: u64,
    _alive: Counted<()>,
}

impl ArrayProducer for CaseStream {
    fn schema(&mut self) -> Result<Schema> {
        if self.case.fail == Fail::GetSchema {
            return Err(injected("get_schema"));
        }
        produce::schema(self.case.ty)
    }

    fn next(&mut self) -> Result<Option<DeviceArray>> {
        self.get_next_calls += 1;
        if self.case.fail == Fail::GetNext(self.get_next_calls) {
            return Err(injected(&format!("get_next {}", self.get_next_calls)));
        }
        if self.next_batch >= self.case.batches {
            return Ok(None);
        }
        let batch = self.case.batch(self.next_batch);
        self.next_batch += 1;
        produce::array(&batch).map(Some)
    }
}

/// Produces the case as a stream into `out` (released or zeroed); the
/// caller owns and releases it on success; untouched on failure.
///
/// # Safety
/// `out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_export_stream(
    case_spec: *const c_char,
    out: *mut sys::ArrowDeviceArrayStream,
) -> c_int {
    entry(|| {
        let case = Case::parse(case_str(case_spec)?)?;
        if out.is_null() {
            return Err(Error::invalid("ferry_it_export_stream: output pointer is NULL"));
        }
        if case.fail == Fail::Export {
            return Err(injected("export"));
        }
        if (*out).release.is_some() {
            return Err(Error::invalid(
                "ferry_it_export_stream: output stream must be released beforehand",
            ));
        }
        case.require_device()?;
        let device_type = case.device_type;
        let producer = CaseStream {
            case,
            next_batch: 0,
            get_next_calls: 0,
            _alive: Counted::new(()),
        };
        DeviceArrayStream::from_producer(device_type, producer)?.export_to(out)
    })
}

/// Checks a stream against the case: its device type, schema, `batches`
/// arrays (seed + b) and the end. Takes ownership of the stream and releases
/// it on every path.
///
/// Failure injection, as the C checker decides it too: with
/// `fail=get_schema` the check expects get_schema to fail with EIO and the
/// exact message and then succeeds; with `fail=get_next@N` (N <= batches + 1)
/// it expects N - 1 good batches, then EIO and the exact message from call
/// N, and succeeds; a larger N is never reached by a correct producer. Any
/// other producer failure is passed on as its code and message.
///
/// # Safety
/// `stream` must be NULL or point to a valid stream.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_check_stream(
    case_spec: *const c_char,
    stream: *mut sys::ArrowDeviceArrayStream,
) -> c_int {
    entry(|| {
        // Unchecked import (the explicit opt-out), as in
        // ferry_it_check_array: the checker validates each batch (FULL)
        // itself, after the device check and the wait.
        let stream = DeviceArrayStream::from_raw_unchecked(stream);
        let case = Case::parse(case_str(case_spec)?)?;
        case.require_device()?;
        let mut stream = stream?;
        if stream.device_type() != case.device_type {
            return Err(Error::invalid(format!(
                "stream: device type is {}, expected {}",
                stream.device_type(),
                case.device_type
            )));
        }
        let schema = stream.schema();
        if case.fail == Fail::GetSchema {
            return expect_injected(schema.map(drop), &mut stream, "get_schema".into());
        }
        let schema = schema?;
        check::check_schema(case.ty, &schema)?;
        let fail_at = match case.fail {
            Fail::GetNext(n) if n as i64 <= case.batches + 1 => Some(n as i64),
            _ => None,
        };
        for call in 1..=case.batches + 1 {
            let next = stream.next_array();
            if fail_at == Some(call) {
                return expect_injected(next.map(drop), &mut stream, format!("get_next {call}"));
            }
            let b = call - 1;
            match next? {
                Some(array) if b < case.batches => check::check_device_array(&case.batch(b), &array, &schema)
                    .map_err(|e| Error::new(e.code(), format!("batch {b}: {}", e.message())))?,
                Some(_) => {
                    return Err(Error::invalid(format!(
                        "stream yielded more than {} batches",
                        case.batches
                    )))
                }
                None if b < case.batches => {
                    return Err(Error::invalid(format!(
                        "stream ended after {b} batches, expected {}",
                        case.batches
                    )))
                }
                None => {}
            }
        }
        Ok(())
    })
}

/// Succeeds when `result` is the injected failure at `what`: EIO and the
/// exact message, both from the call and from get_last_error.
fn expect_injected(result: Result<()>, stream: &mut DeviceArrayStream, what: String) -> Result<()> {
    let expected = format!("injected failure at {what}");
    match result {
        Ok(()) => Err(Error::invalid(format!("{what} succeeded, expected EIO \"{expected}\""))),
        Err(e) if e.code() != errno::EIO => Err(Error::invalid(format!(
            "{what} failed with {} ({}), expected EIO \"{expected}\"",
            e.name(),
            e.message()
        ))),
        Err(e) => {
            let last = stream.last_error().unwrap_or_default();
            if e.message() != expected || last != expected {
                return Err(Error::invalid(format!(
                    "{what}: message {:?} and get_last_error {last:?}, expected {expected:?}",
                    e.message()
                )));
            }
            Ok(())
        }
    }
}

/// Allocations owned by this plugin's exports that are still alive.
#[no_mangle]
pub extern "C" fn ferry_it_live_allocations() -> i64 {
    produce::LIVE.load(std::sync::atomic::Ordering::SeqCst)
}

/// The message of the last failure on this thread ("" when none); valid
/// until the next failure on this thread.
#[no_mangle]
pub extern "C" fn ferry_it_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
