//! `ferry_arrow::Error`: an errno code plus a message, as every ferry call reports
//! failure, and the plumbing that turns C return codes into it.
use std::ffi::CStr;
use std::fmt;
use std::mem::MaybeUninit;
use std::os::raw::c_int;

use ferry_arrow_sys as sys;

/// The errno codes ferry uses (Linux values).
pub mod errno {
    /// Device or producer failure (also: a panic caught at a C boundary).
    pub const EIO: i32 = 5;
    /// Out of memory.
    pub const ENOMEM: i32 = 12;
    /// No such device.
    pub const ENODEV: i32 = 19;
    /// Invalid argument: bad input, with the offending part named.
    pub const EINVAL: i32 = 22;
    /// Function not implemented.
    pub const ENOSYS: i32 = 38;
    /// Operation not supported (backend missing).
    pub const ENOTSUP: i32 = 95;
    /// Protocol error: an async producer broke the specification's rules.
    pub const EPROTO: i32 = 71;
    /// A wait ran out of time.
    pub const ETIMEDOUT: i32 = 110;
    /// The async stream was cancelled (by the consumer, or the producer
    /// saw the consumer's cancel or refusal).
    pub const ECANCELED: i32 = 125;
}

/// A failed ferry operation: the errno code and the message naming what went
/// wrong.
///
/// ```
/// let err = ferry_arrow::Error::new(ferry_arrow::errno::EINVAL, "length must not be negative");
/// assert_eq!(err.code(), 22);
/// assert_eq!(err.message(), "length must not be negative");
/// assert!(err.is_invalid_argument());
/// assert_eq!(err.to_string(), "EINVAL: length must not be negative");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    code: i32,
    message: String,
}

/// `Result` with [`Error`] as the default error type.
///
/// ```
/// fn half(n: i64) -> ferry_arrow::Result<i64> {
///     if n % 2 != 0 {
///         return Err(ferry_arrow::Error::invalid(format!("{n} is odd")));
///     }
///     Ok(n / 2)
/// }
/// assert_eq!(half(4), Ok(2));
/// assert_eq!(half(3).unwrap_err().code(), ferry_arrow::errno::EINVAL);
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A struct of the interface, live until its release callback is cleared.
pub(crate) trait Live {
    fn is_live(&self) -> bool;
}

impl Live for sys::ArrowSchema {
    fn is_live(&self) -> bool {
        self.release.is_some()
    }
}

impl Live for sys::ArrowDeviceArray {
    fn is_live(&self) -> bool {
        self.array.release.is_some()
    }
}

impl Live for sys::ArrowDeviceArrayStream {
    fn is_live(&self) -> bool {
        self.release.is_some()
    }
}

impl Live for sys::ArrowArrayStream {
    fn is_live(&self) -> bool {
        self.release.is_some()
    }
}

/// `EINVAL` for a consumer's output struct `what` that is NULL or still live:
/// ferry never overwrites one.
///
/// # Safety
/// `out` must be NULL or point to a readable `T`.
#[inline]
pub(crate) unsafe fn check_output<T: Live>(out: *const T, what: &str) -> Result<()> {
    if out.is_null() {
        return Err(output_error(what, "pointer is NULL"));
    }
    if (*out).is_live() {
        return Err(output_error(what, "is not released; refusing to overwrite it"));
    }
    Ok(())
}

/// Moves an owned struct into a consumer's `out` with `mv` (a `ferry_*_move`):
/// [`check_output`]'s errors, or `EINVAL` when there was nothing to move.
///
/// # Safety
/// As [`check_output`]; `mv` must only move into `out`.
pub(crate) unsafe fn move_out<T: Live>(out: *mut T, what: &str, mv: impl FnOnce(*mut T) -> c_int) -> Result<()> {
    check_output(out, what)?;
    if mv(out) != 0 {
        return Err(Error::invalid(format!("cannot export a released {what}")));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn output_error(what: &str, why: &str) -> Error {
    Error::invalid(format!("output {what} {why}"))
}

impl Error {
    /// An error with an errno `code` (non-zero) and a message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// An `EINVAL` error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(errno::EINVAL, message)
    }

    /// An `EIO` error.
    pub fn io(message: impl Into<String>) -> Self {
        Error::new(errno::EIO, message)
    }

    /// The errno code.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The message (may be empty when the producer gave none).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The symbolic name of the code ("EINVAL"), from the core.
    pub fn name(&self) -> &'static str {
        errno_name(self.code)
    }

    /// True for `EINVAL`.
    pub fn is_invalid_argument(&self) -> bool {
        self.code == errno::EINVAL
    }

    /// True for `EIO`.
    pub fn is_io(&self) -> bool {
        self.code == errno::EIO
    }

    /// True for `ENODEV` or `ENOTSUP`: the device or backend is not available.
    pub fn is_unavailable(&self) -> bool {
        self.code == errno::ENODEV || self.code == errno::ENOTSUP
    }
}

/// The symbolic name of an errno code ("EINVAL"), as the core names it.
///
/// ```
/// assert_eq!(ferry_arrow::errno_name(ferry_arrow::errno::EIO), "EIO");
/// ```
pub fn errno_name(code: i32) -> &'static str {
    // SAFETY: the core returns a static, NUL-terminated string for any code.
    unsafe {
        let name = sys::ferry_errno_name(code);
        if name.is_null() {
            return "unknown";
        }
        CStr::from_ptr(name).to_str().unwrap_or("unknown")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{} ({})", self.name(), self.code)
        } else {
            write!(f, "{}: {}", self.name(), self.message)
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Error {{ code: {} ({}), message: {:?} }}",
            self.code,
            self.name(),
            self.message
        )
    }
}

impl std::error::Error for Error {}

/// A failed operation that hands its input back untouched, as the C call
/// leaves it with the caller (a move to another device, an export to
/// DLPack): the error plus the value. `?` turns it into a plain [`Error`]
/// (dropping, so releasing, the value).
///
/// ```
/// use ferry_arrow::DeviceType;
/// let (array, schema) = ferry_arrow::export_primitive(vec![1i32], None).unwrap();
/// // Device type 999 does not exist: the array comes back.
/// let rejected = array.move_to(&schema, DeviceType(999), 0).unwrap_err();
/// assert!(rejected.error().is_unavailable() || rejected.error().is_invalid_argument());
/// let (_error, array) = rejected.into_parts();
/// assert_eq!(array.length(), 1);
/// ```
pub struct Rejected<T> {
    // Boxed: an error path should not make every Result as large as the
    // 144-byte DeviceArray it might carry.
    inner: Box<(Error, T)>,
}

impl<T> Rejected<T> {
    pub(crate) fn new(error: Error, value: T) -> Self {
        Rejected {
            inner: Box::new((error, value)),
        }
    }
    /// The error.
    pub fn error(&self) -> &Error {
        &self.inner.0
    }
    /// The value handed back.
    pub fn into_value(self) -> T {
        self.inner.1
    }
    /// The error and the value.
    pub fn into_parts(self) -> (Error, T) {
        *self.inner
    }
}

impl<T> From<Rejected<T>> for Error {
    fn from(rejected: Rejected<T>) -> Error {
        rejected.inner.0
    }
}

impl<T> fmt::Display for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.error(), f)
    }
}

impl<T> fmt::Debug for Rejected<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("error", self.error())
            .finish_non_exhaustive()
    }
}

impl<T> std::error::Error for Rejected<T> {}

/// A `struct FerryError` on the stack for one call. Only the first byte is
/// initialised (an empty message, as ferry_error_init leaves it): zeroing all
/// 1024 bytes on every hot-path call would cost more than the call itself.
pub(crate) struct ErrorBuf(MaybeUninit<sys::FerryError>);

impl ErrorBuf {
    #[inline]
    pub(crate) fn new() -> Self {
        let mut buf = MaybeUninit::<sys::FerryError>::uninit();
        // SAFETY: writing one byte of the message field through a raw pointer.
        unsafe { (*buf.as_mut_ptr()).message[0] = 0 };
        ErrorBuf(buf)
    }

    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut sys::FerryError {
        self.0.as_mut_ptr()
    }

    /// The message the core wrote (empty when none). Reads up to the first
    /// NUL inside the buffer, never past it.
    pub(crate) fn message(&self) -> String {
        // SAFETY: byte 0 is initialised, and the core NUL-terminates what it
        // writes within the buffer; the scan stops at the buffer's end anyway.
        unsafe {
            let base = self.0.as_ptr() as *const u8;
            let mut len = 0;
            while len < sys::FERRY_ERROR_MESSAGE_SIZE as usize && *base.add(len) != 0 {
                len += 1;
            }
            String::from_utf8_lossy(std::slice::from_raw_parts(base, len)).into_owned()
        }
    }

    /// Turns a return code into a `Result`, taking the message on failure.
    #[inline(always)]
    pub(crate) fn check(&self, code: c_int) -> Result<()> {
        if code == 0 {
            Ok(())
        } else {
            Err(self.failure(code))
        }
    }

    /// The error for a failed call (out of line: callers are hot paths).
    #[cold]
    #[inline(never)]
    fn failure(&self, code: c_int) -> Error {
        let mut message = self.message();
        if message.is_empty() {
            message = format!("ferry call failed with {}", errno_name(code));
        }
        Error::new(code, message)
    }
}

/// Calls a ferry function that takes a trailing `struct FerryError*`.
#[inline]
pub(crate) fn call(f: impl FnOnce(*mut sys::FerryError) -> c_int) -> Result<()> {
    let mut buf = ErrorBuf::new();
    let code = f(buf.as_mut_ptr());
    buf.check(code)
}

/// Writes `message` into a caller's `struct FerryError` (NULL is accepted),
/// truncated on a character boundary to fit with its terminator.
///
/// # Safety
/// `error` is NULL or points to a writable `struct FerryError`.
pub unsafe fn write_error(error: *mut sys::FerryError, message: &str) {
    if error.is_null() {
        return;
    }
    let capacity = sys::FERRY_ERROR_MESSAGE_SIZE as usize - 1;
    let mut len = message.len().min(capacity);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    let dst = std::ptr::addr_of_mut!((*error).message) as *mut u8;
    std::ptr::copy_nonoverlapping(message.as_ptr(), dst, len);
    *dst.add(len) = 0;
}
