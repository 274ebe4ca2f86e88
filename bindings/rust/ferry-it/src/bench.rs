//! The benchmark entry points of core/harness/ferry_it_bench.h, written
//! the way a Rust user of the `ferry-arrow` crate writes them: `Buffer::from_arc`
//! and `ArrayBuilder::build_into` to export shared memory without copying,
//! `DeviceArrayStream::from_iter` over an iterator of builders for a stream,
//! `DeviceArray::from_raw`, `host()` and its checked `value` (the consumer
//! path bindings/rust/README.md shows first) and the stream's `Iterator` to
//! consume.
//!
//! The exported buffer is an `Arc<[i32]>` made once per length and kept in
//! a small append-only table; each export holds one `Arc` reference, which
//! the release hook drops. Every entry point runs inside `crate::entry`
//! (`ferry_arrow::guard`), like the plugin's other entry points.
use std::os::raw::c_int;
use std::sync::{Arc, Mutex, OnceLock};

use ferry_arrow::{
    errno, ArrayBuilder, Buffer, DeviceArray, DeviceArrayStream, DeviceType, Error, Result, Schema, SchemaView,
    Validation,
};
use ferry_arrow_sys as sys;

use crate::entry;

/// The largest length accepted: 1 GiB of int32 (ferry_it_bench.h).
const MAX_LENGTH: i64 = 1 << 28;
const SLOTS: usize = 8;

/// Filled slots never change: lookups need no lock, inserts take `INSERT`.
static CACHE: [OnceLock<(i64, Arc<[i32]>)>; SLOTS] = [const { OnceLock::new() }; SLOTS];
static INSERT: Mutex<()> = Mutex::new(());

fn find(length: i64) -> Option<Arc<[i32]>> {
    for slot in &CACHE {
        match slot.get() {
            Some((l, values)) if *l == length => return Some(values.clone()),
            Some(_) => continue,
            None => return None,
        }
    }
    None
}

/// The shared buffer of `length` values (every one holds `length`), made
/// on first use.
fn cached(length: i64) -> Result<Arc<[i32]>> {
    if let Some(values) = find(length) {
        return Ok(values);
    }
    if !(0..=MAX_LENGTH).contains(&length) {
        return Err(Error::invalid(format!("length {length} is outside 0..{MAX_LENGTH}")));
    }
    let _insert = INSERT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(values) = find(length) {
        return Ok(values);
    }
    let slot = CACHE
        .iter()
        .find(|slot| slot.get().is_none())
        .ok_or_else(|| Error::new(errno::ENOMEM, "the buffer cache is full (8 lengths)"))?;
    // Allocation failure aborts a Rust process; ask first, so that a
    // machine without 1 GiB to spare gets ENOMEM instead.
    let mut probe: Vec<i32> = Vec::new();
    probe
        .try_reserve_exact(length as usize)
        .map_err(|_| Error::new(errno::ENOMEM, format!("cannot allocate {length} int32 values")))?;
    drop(probe);
    let values: Arc<[i32]> = std::iter::repeat_n(length as i32, length as usize).collect();
    let _ = slot.set((length, values.clone()));
    Ok(values)
}

fn int32_schema() -> Result<Schema> {
    Schema::new("i", Some("values"))
}

fn int32_array(length: i64, values: Arc<[i32]>) -> ArrayBuilder {
    ArrayBuilder::new(length)
        .buffer(Buffer::null())
        .buffer(Buffer::from_arc(values))
}

/// Length and element 0 of a consumed array (EINVAL unless they agree),
/// read the everyday way: `host()` (waits on the event, checks the device)
/// and the bounds-checked `value`.
fn read_first(schema: &SchemaView, array: &DeviceArray) -> Result<()> {
    let host = array.host(schema)?;
    let length = host.len();
    if length == 0 {
        return Ok(());
    }
    let first = host.value::<i32>(0)?;
    if first != length as i32 {
        return Err(Error::invalid(format!(
            "element 0 is {first}, expected the length {length}"
        )));
    }
    Ok(())
}

/// Returns x + 1: one crossing into Rust and back.
#[no_mangle]
pub extern "C" fn ferry_it_bench_noop(x: i64) -> i64 {
    ferry_arrow::guard(|| Ok(x.wrapping_add(1))).unwrap_or(i64::MIN)
}

/// Exports the cached array of `length` int32 into the released structs.
///
/// # Safety
/// The pointers must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_bench_export_array(
    length: i64,
    schema_out: *mut sys::ArrowSchema,
    array_out: *mut sys::ArrowDeviceArray,
) -> c_int {
    entry(|| {
        if schema_out.is_null() || array_out.is_null() {
            return Err(Error::invalid("ferry_it_bench_export_array: output pointer is NULL"));
        }
        let values = cached(length)?;
        int32_schema()?.export_to(schema_out)?;
        int32_array(length, values).build_into(array_out).inspect_err(|_| {
            sys::ferry_schema_release(schema_out);
        })
    })
}

/// Takes ownership of both structs, reads length and element 0, releases.
///
/// # Safety
/// The pointers must be NULL or point to valid structs.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_bench_consume_array(
    schema: *mut sys::ArrowSchema,
    array: *mut sys::ArrowDeviceArray,
) -> c_int {
    entry(|| {
        // Takes both (released on any failure) and validates at DEFAULT,
        // the everyday import.
        let (array, schema) = DeviceArray::import(array, schema, Validation::Default)?;
        read_first(&schema, &array)
    })
}

/// Exports a stream of `batches` batches of the cached array.
///
/// # Safety
/// `out` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_bench_export_stream(
    length: i64,
    batches: i64,
    out: *mut sys::ArrowDeviceArrayStream,
) -> c_int {
    entry(|| {
        if out.is_null() {
            return Err(Error::invalid("ferry_it_bench_export_stream: output pointer is NULL"));
        }
        if batches < 0 {
            return Err(Error::invalid(format!("batches {batches} is negative")));
        }
        let values = cached(length)?;
        let iter = (0..batches).map(move |_| Ok(int32_array(length, values.clone())));
        DeviceArrayStream::from_iter(DeviceType::CPU, iter, int32_schema()?)?.export_to(out)
    })
}

/// Takes ownership of the stream and iterates it to the end.
///
/// # Safety
/// `stream` must be NULL or point to a valid stream.
#[no_mangle]
pub unsafe extern "C" fn ferry_it_bench_consume_stream(stream: *mut sys::ArrowDeviceArrayStream) -> c_int {
    entry(|| {
        let mut stream = DeviceArrayStream::from_raw(stream)?;
        let schema = stream.schema()?;
        for batch in stream {
            read_first(&schema, &batch?)?;
        }
        Ok(())
    })
}
