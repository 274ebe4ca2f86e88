//! # ferry: zero-copy Arrow device arrays and streams across runtimes
//!
//! The safe Rust binding of `libferry`, the C core that hands Arrow C Device
//! Data Interface structs (`ArrowDeviceArray`, `ArrowDeviceArrayStream`)
//! between runtimes in one process without copying.
//!
//! - [`DeviceArray`], [`Schema`] and [`DeviceArrayStream`] own their C
//!   structs and release them exactly once, on drop; none is `Clone`.
//!   `from_raw` imports by move, `export_to` hands over by move.
//! - [`ArrayBuilder`] and [`Buffer`] export Rust memory (`Vec`, boxed
//!   slices, `Arc`s, device buffers) without copying; the owners are dropped
//!   when the consumer releases the array.
//! - [`DeviceArrayStream::from_iter`] / [`from_producer`](DeviceArrayStream::from_producer)
//!   export any iterator as a stream; [`DeviceArrayStream`] is itself an
//!   `Iterator<Item = Result<DeviceArray>>`.
//! - Hot paths fill the consumer's struct in place instead of moving a
//!   128-byte [`DeviceArray`]: [`ArrayBuilder::build_into`], iterators of
//!   [`ArrayBuilder`]s as streams, [`ArrayProducer::next_into`] with an
//!   [`ArraySlot`], and [`DeviceArrayStream::next_ref`] on the consuming
//!   side.
//! - [`Device`] allocates, copies, and creates streams and events through the
//!   core, so Rust code can produce on any device ferry knows (the simulated
//!   one included); [`DeviceArray::wait`] waits on a producer's sync event.
//! - Errors are [`Error`] (errno code + message). No panic crosses a C
//!   boundary: every callback ferry calls into Rust runs inside [`guard`].
//! - With the `arrow` feature: conversions to and from the `arrow` crate.
//!
//! ```
//! use ferry_arrow::{ArrayBuilder, Buffer, DeviceArray, Schema};
//!
//! // Export a Vec without copying it...
//! let values = vec![1i32, 2, 3, 4];
//! let address = values.as_ptr();
//! let array = ArrayBuilder::new(4)
//!     .buffer(Buffer::null())
//!     .buffer(Buffer::from_vec(values))
//!     .build()
//!     .unwrap();
//! let schema = Schema::new("i", Some("x")).unwrap();
//!
//! // ...hand it to a consumer through the C struct (here, ourselves)...
//! let mut c_struct = ferry_arrow::sys::ArrowDeviceArray::default();
//! unsafe { array.export_to(&mut c_struct).unwrap() };
//! let imported = unsafe { DeviceArray::from_raw(&mut c_struct).unwrap() };
//!
//! // ...which reads the very same memory.
//! imported.wait().unwrap();
//! assert_eq!(imported.buffer(1) as *const i32, address);
//! imported.validate(&schema, true).unwrap();
//! drop(imported); // releases once: the Vec is freed here
//! ```
#![warn(missing_docs)]

pub use ferry_arrow_sys as sys;

mod array;
mod builder;
mod device;
mod dlpack;
mod error;
mod host;
mod panic;
mod schema;
mod stream;
mod words;

#[cfg(any(feature = "arrow-57", feature = "arrow-58", feature = "arrow-59", feature = "arrow-60"))]
mod arrow_rs;

#[cfg(feature = "arrow-57")]
pub use arrow_rs::arrow57;
#[cfg(feature = "arrow-58")]
pub use arrow_rs::arrow58;
#[cfg(feature = "arrow-59")]
pub use arrow_rs::arrow59;
#[cfg(feature = "arrow-60")]
pub use arrow_rs::arrow60;
/// Conversions to and from the newest supported arrow-rs release (feature
/// `arrow`; the same module as `arrow60`).
#[cfg(feature = "arrow")]
pub use arrow_rs::arrow60 as arrow;

pub use array::{ArrayView, DeviceArray, SchemaAndArray};
pub use builder::{export_primitive, export_utf8, validity_bitmap, ArrayBuilder, Buffer, ExportPolicy, NativeType};
pub use device::{Device, DeviceBuffer, DeviceStream, DeviceType, Event, EventHandle, StreamHandle};
pub use dlpack::DlpackTensor;
pub use error::{errno, errno_name, write_error, Error, Rejected, Result};
pub use host::HostArray;
pub use panic::guard;
pub use schema::{Schema, SchemaBuilder, SchemaView, FLAG_DICTIONARY_ORDERED, FLAG_MAP_KEYS_SORTED, FLAG_NULLABLE};
pub use stream::{ArrayProducer, ArraySlot, DeviceArrayStream, ExportArray};

/// Number of simulated devices (ids 0 .. `SIM_DEVICE_COUNT - 1`).
pub const SIM_DEVICE_COUNT: i64 = sys::FERRY_SIM_DEVICE_COUNT as i64;

/// The version of the loaded `libferry` ("0.1.0").
///
/// ```
/// assert!(!ferry_arrow::version().is_empty());
/// ```
pub fn version() -> &'static str {
    unsafe { schema::opt_str(sys::ferry_version()) }.unwrap_or("")
}

/// Checks that the loaded library speaks the ABI these bindings were
/// generated for; `EINVAL` naming both versions otherwise.
///
/// ```
/// ferry_arrow::check_abi().unwrap();
/// ```
pub fn check_abi() -> Result<()> {
    error::call(|err| unsafe { sys::ferry_check_abi_version(sys::FERRY_ABI_VERSION, err) })
}

/// Schemas, arrays and streams made by the core's producer helpers and not
/// yet released, process-wide.
///
/// ```
/// let before = ferry_arrow::live_exports();
/// let exported = ferry_arrow::export_primitive(vec![1u8], None).unwrap();
/// assert!(ferry_arrow::live_exports() > before);
/// drop(exported);
/// assert_eq!(ferry_arrow::live_exports(), before);
/// ```
pub fn live_exports() -> i64 {
    unsafe { sys::ferry_live_exports() }
}

/// Turns the simulated device's strict mode on or off (process-wide).
///
/// ```
/// let was = ferry_arrow::sim_is_strict();
/// ferry_arrow::sim_set_strict(true);
/// assert!(ferry_arrow::sim_is_strict());
/// ferry_arrow::sim_set_strict(was);
/// ```
pub fn sim_set_strict(strict: bool) {
    unsafe { sys::ferry_sim_set_strict(strict as i32) }
}

/// True when the simulated device is in strict mode.
///
/// ```
/// let _strict: bool = ferry_arrow::sim_is_strict();
/// ```
pub fn sim_is_strict() -> bool {
    unsafe { sys::ferry_sim_is_strict() != 0 }
}
