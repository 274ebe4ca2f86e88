//! Handoff costs of the Rust binding next to the raw C-call floor, measured
//! in the same process and run (perf-floors.md: gate on ratios from one run,
//! never on absolutes).
//!
//! Run: `cargo bench -p ferry --bench handoff` (or bindings/rust/bench.sh).
//! Each case is one handoff of an int32 array (length 1024, two buffers,
//! validity NULL): the producer exports, the consumer takes it by move, reads
//! `length` and buffer 1, and releases. Cases run interleaved, R rounds of N
//! operations each; we print min and median ns/op, the matching floor and
//! the median ratio against the 1.5 target, plus one `RESULT rust <case>
//! <ns/op>` line (median) per case.
//!
//! Floors (raw `ferry_*` C calls only, no Rust wrapper on the way):
//! - `floor_fn_pointer_call`: one call into libferry through a function
//!   pointer (the boundary primitive, for reference).
//! - `floor_c_array_static`: ferry_array_init + ferry_device_array_init over
//!   static memory (C producer helpers), ferry_device_array_move, two
//!   accessors, ferry_device_array_release.
//! - `floor_c_array_owned`: the same, but the producer exports a refcounted
//!   shared buffer: it takes a reference and mallocs an owner record, which
//!   its release hook drops and frees (the C shape of what `Arc` does).
//! - `floor_c_stream_roundtrip`: a stream made with ferry_stream_init whose
//!   get_next does the static C production, consumed with
//!   ferry_stream_get_next + accessors + ferry_device_array_release.
//!
//! Rust cases and their floor:
//! - `rust_to_c_array_static` (floor_c_array_static): the safe
//!   `ArrayBuilder` exports a `'static` slice into a raw struct that the C
//!   side consumes with raw calls.
//! - `rust_to_c_array_into` (floor_c_array_static): the same built straight
//!   into the consumer's struct (`ArrayBuilder::build_into`), no
//!   intermediate `DeviceArray`.
//! - `rust_to_c_array_owned` (floor_c_array_owned): the same with an
//!   `Arc<[i32]>` kept alive until release (one box, one Arc count).
//! - `c_to_rust_array` (floor_c_array_static): raw C production, consumed by
//!   `DeviceArray::from_raw` + accessors + drop.
//! - `rust_to_c_stream` (floor_c_stream_roundtrip): a Rust `ArrayProducer`
//!   stream (safe builder per batch) consumed with raw C calls.
//! - `c_to_rust_stream` (floor_c_stream_roundtrip): the raw C stream consumed
//!   as a Rust `Iterator`.
//! - `rust_to_rust_stream` (floor_c_stream_roundtrip): both sides safe Rust.
use std::hint::black_box;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ferry::sys;
use ferry::{ArrayBuilder, ArrayProducer, Buffer, DeviceArray, DeviceArrayStream, DeviceType, Schema};

const LENGTH: i64 = 1024;
static VALUES: [i32; 1024] = [7; 1024];

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// References to the shared buffer the "owned" producers export: the C
/// floor counts them as a refcounted owner would, like Rust's `Arc`.
static REFS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn free_record(user_data: *mut c_void) {
    REFS.fetch_sub(1, Ordering::AcqRel);
    free(user_data)
}

/// Raw C production of one CPU int32 array over static memory.
#[inline(always)]
unsafe fn c_produce(out: *mut sys::ArrowDeviceArray) -> c_int {
    c_produce_with(out, None, std::ptr::null_mut())
}

/// Raw C production with an owner record freed by the release hook.
#[inline(always)]
unsafe fn c_produce_owned(out: *mut sys::ArrowDeviceArray) -> c_int {
    REFS.fetch_add(1, Ordering::Relaxed);
    c_produce_with(out, Some(free_record), malloc(16))
}

#[inline(always)]
unsafe fn c_produce_with(
    out: *mut sys::ArrowDeviceArray,
    hook: sys::FerryReleaseHook,
    user_data: *mut c_void,
) -> c_int {
    let buffers: [*const c_void; 2] = [std::ptr::null(), VALUES.as_ptr() as *const c_void];
    let mut array = sys::ArrowArray::default();
    let rc = sys::ferry_array_init(
        &mut array,
        LENGTH,
        0,
        0,
        2,
        buffers.as_ptr(),
        0,
        hook,
        user_data,
        std::ptr::null_mut(),
    );
    if rc != 0 {
        return rc;
    }
    sys::ferry_device_array_init(
        out,
        &mut array,
        sys::ARROW_DEVICE_CPU,
        -1,
        std::ptr::null_mut(),
        None,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    )
}

/// Raw C consumption: move, read length and buffer 1, release.
#[inline(always)]
unsafe fn c_consume(src: *mut sys::ArrowDeviceArray) -> i64 {
    let mut mine = sys::ArrowDeviceArray::default();
    sys::ferry_device_array_move(src, &mut mine);
    let inner = sys::ferry_device_array_array(&mut mine);
    let n = sys::ferry_array_length(inner);
    let first = *(sys::ferry_array_buffer(inner, 1) as *const i32);
    sys::ferry_device_array_release(&mut mine);
    n + first as i64
}

unsafe extern "C" fn raw_get_schema(_: *mut c_void, out: *mut sys::ArrowSchema, _: *mut sys::FerryError) -> c_int {
    sys::ferry_schema_init(out, c"i".as_ptr(), std::ptr::null(), 0, 0, std::ptr::null_mut())
}

unsafe extern "C" fn raw_get_next(_: *mut c_void, out: *mut sys::ArrowDeviceArray, _: *mut sys::FerryError) -> c_int {
    c_produce(out)
}

/// A stream with raw C callbacks (they only make raw ferry calls).
fn raw_stream() -> sys::ArrowDeviceArrayStream {
    let mut s = sys::ArrowDeviceArrayStream::default();
    let rc = unsafe {
        sys::ferry_stream_init(
            &mut s,
            sys::ARROW_DEVICE_CPU,
            Some(raw_get_schema),
            Some(raw_get_next),
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "ferry_stream_init failed");
    s
}

unsafe fn c_pull(stream: *mut sys::ArrowDeviceArrayStream) -> i64 {
    let mut out = sys::ArrowDeviceArray::default();
    let rc = sys::ferry_stream_get_next(stream, &mut out, std::ptr::null_mut());
    assert_eq!(rc, 0);
    let inner = sys::ferry_device_array_array(&mut out);
    let n = sys::ferry_array_length(inner);
    let first = *(sys::ferry_array_buffer(inner, 1) as *const i32);
    sys::ferry_device_array_release(&mut out);
    n + first as i64
}

/// The safe Rust producer of one batch, over shared memory kept alive by
/// the array.
#[inline(always)]
fn rust_produce(shared: &Arc<[i32]>) -> DeviceArray {
    ArrayBuilder::new(LENGTH)
        .buffer(Buffer::null())
        .buffer(Buffer::from_arc(shared.clone()))
        .build()
        .unwrap()
}

/// The safe Rust producer of one batch over static memory.
#[inline(always)]
fn rust_produce_static() -> DeviceArray {
    ArrayBuilder::new(LENGTH)
        .buffer(Buffer::null())
        .buffer(Buffer::from_static(&VALUES))
        .build()
        .unwrap()
}

/// The safe Rust consumer of one batch.
#[inline(always)]
fn rust_consume(array: DeviceArray) -> i64 {
    let n = array.length();
    let first = unsafe { *(array.buffer(1) as *const i32) };
    n + first as i64
}

struct Endless;
impl ArrayProducer for Endless {
    fn schema(&mut self) -> ferry::Result<Schema> {
        Schema::new("i", None)
    }
    fn next(&mut self) -> ferry::Result<Option<DeviceArray>> {
        Ok(Some(rust_produce_static()))
    }
}

type Case = (&'static str, Option<&'static str>, Box<dyn FnMut(u64) -> i64>);

fn cases() -> Vec<Case> {
    let shared: Arc<[i32]> = VALUES.to_vec().into();
    let version: unsafe extern "C" fn() -> i32 = black_box(sys::ferry_abi_version);
    let mut cases: Vec<Case> = Vec::new();
    cases.push((
        "floor_fn_pointer_call",
        None,
        Box::new(move |n| {
            let mut acc = 0i64;
            for _ in 0..n {
                acc += unsafe { black_box(version)() } as i64;
            }
            acc
        }),
    ));
    cases.push((
        "floor_c_array_static",
        None,
        Box::new(|n| {
            let mut acc = 0;
            for _ in 0..n {
                let mut out = sys::ArrowDeviceArray::default();
                unsafe {
                    c_produce(&mut out);
                    acc += c_consume(black_box(&mut out));
                }
            }
            acc
        }),
    ));
    cases.push((
        "floor_c_array_owned",
        None,
        Box::new(|n| {
            let mut acc = 0;
            for _ in 0..n {
                let mut out = sys::ArrowDeviceArray::default();
                unsafe {
                    c_produce_owned(&mut out);
                    acc += c_consume(black_box(&mut out));
                }
            }
            acc
        }),
    ));
    let mut floor_stream = raw_stream();
    cases.push((
        "floor_c_stream_roundtrip",
        None,
        Box::new(move |n| {
            let mut acc = 0;
            for _ in 0..n {
                acc += unsafe { c_pull(&mut floor_stream) };
            }
            acc
        }),
    ));
    cases.push((
        "rust_to_c_array_static",
        Some("floor_c_array_static"),
        Box::new(|n| {
            let mut acc = 0;
            for _ in 0..n {
                let mut out = sys::ArrowDeviceArray::default();
                unsafe {
                    rust_produce_static().export_to(&mut out).unwrap();
                    acc += c_consume(black_box(&mut out));
                }
            }
            acc
        }),
    ));
    cases.push((
        "rust_to_c_array_into",
        Some("floor_c_array_static"),
        Box::new(|n| {
            let mut acc = 0;
            for _ in 0..n {
                let mut out = sys::ArrowDeviceArray::default();
                unsafe {
                    ArrayBuilder::new(LENGTH)
                        .buffer(Buffer::null())
                        .buffer(Buffer::from_static(&VALUES))
                        .build_into(&mut out)
                        .unwrap();
                    acc += c_consume(black_box(&mut out));
                }
            }
            acc
        }),
    ));
    let s1 = shared.clone();
    cases.push((
        "rust_to_c_array_owned",
        Some("floor_c_array_owned"),
        Box::new(move |n| {
            let mut acc = 0;
            for _ in 0..n {
                let mut out = sys::ArrowDeviceArray::default();
                unsafe {
                    rust_produce(&s1).export_to(&mut out).unwrap();
                    acc += c_consume(black_box(&mut out));
                }
            }
            acc
        }),
    ));
    cases.push((
        "c_to_rust_array",
        Some("floor_c_array_static"),
        Box::new(|n| {
            let mut acc = 0;
            for _ in 0..n {
                let mut out = sys::ArrowDeviceArray::default();
                unsafe {
                    c_produce(&mut out);
                    acc += rust_consume(DeviceArray::from_raw(black_box(&mut out)).unwrap());
                }
            }
            acc
        }),
    ));
    let mut rust_stream = DeviceArrayStream::from_producer(DeviceType::CPU, Endless).unwrap();
    cases.push((
        "rust_to_c_stream",
        Some("floor_c_stream_roundtrip"),
        Box::new(move |n| {
            let mut acc = 0;
            for _ in 0..n {
                acc += unsafe { c_pull(rust_stream.as_mut_ptr()) };
            }
            acc
        }),
    ));
    let mut raw = raw_stream();
    let mut c_stream = unsafe { DeviceArrayStream::from_raw(&mut raw).unwrap() }; // `raw` is released now
    cases.push((
        "c_to_rust_stream",
        Some("floor_c_stream_roundtrip"),
        Box::new(move |n| {
            let mut acc = 0;
            for _ in 0..n {
                acc += rust_consume(c_stream.next().unwrap().unwrap());
            }
            acc
        }),
    ));
    let mut both = DeviceArrayStream::from_producer(DeviceType::CPU, Endless).unwrap();
    cases.push((
        "rust_to_rust_stream",
        Some("floor_c_stream_roundtrip"),
        Box::new(move |n| {
            let mut acc = 0;
            for _ in 0..n {
                acc += rust_consume(both.next().unwrap().unwrap());
            }
            acc
        }),
    ));
    cases
}

fn main() {
    let quick = std::env::var_os("FERRY_BENCH_QUICK").is_some();
    let (rounds, ops) = if quick { (5, 20_000u64) } else { (15, 100_000u64) };
    let mut cases = cases();
    // FERRY_BENCH_FILTER=word keeps the cases whose name contains it, plus
    // their floors (for profiling one case).
    if let Ok(filter) = std::env::var("FERRY_BENCH_FILTER") {
        let floors: Vec<&str> = cases
            .iter()
            .filter(|c| c.0.contains(&filter))
            .filter_map(|c| c.1)
            .collect();
        cases.retain(|c| c.0.contains(&filter) || floors.contains(&c.0));
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for (_, _, f) in cases.iter_mut() {
        black_box(f(ops / 10)); // warm-up
    }
    for _ in 0..rounds {
        for (i, (_, _, f)) in cases.iter_mut().enumerate() {
            let start = Instant::now();
            black_box(f(ops));
            samples[i].push(start.elapsed().as_nanos() as f64 / ops as f64);
        }
    }
    let stats: Vec<(f64, f64)> = samples
        .iter_mut()
        .map(|s| {
            s.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (s[0], s[s.len() / 2])
        })
        .collect();
    let median_of = |name: &str| cases.iter().position(|c| c.0 == name).map(|i| stats[i].1).unwrap();
    let min_of = |name: &str| cases.iter().position(|c| c.0 == name).map(|i| stats[i].0).unwrap();
    println!("ferry Rust handoff benchmark: int32 x {LENGTH}, {rounds} rounds x {ops} ops, ns/op");
    println!(
        "{:<26} {:>8} {:>8}  {:<26} {:>9} {:>9}  target 1.5",
        "case", "min", "median", "floor", "ratio min", "ratio med"
    );
    let mut worst: f64 = 0.0;
    for (i, (name, floor, _)) in cases.iter().enumerate() {
        let (min, median) = stats[i];
        match floor {
            Some(floor) => {
                let ratio = median / median_of(floor);
                let ratio_min = min / min_of(floor);
                worst = worst.max(ratio);
                let verdict = if ratio <= 1.5 { "ok" } else { "ABOVE TARGET" };
                println!("{name:<26} {min:>8.1} {median:>8.1}  {floor:<26} {ratio_min:>9.2} {ratio:>9.2}  {verdict}");
            }
            None => println!(
                "{name:<26} {min:>8.1} {median:>8.1}  {:<26} {:>9} {:>9}",
                "(floor)", "-", "-"
            ),
        }
    }
    for (i, (name, _, _)) in cases.iter().enumerate() {
        println!("RESULT rust {name} {:.1}", stats[i].1);
    }
    println!("worst median ratio against its floor: {worst:.2} (target <= 1.5)");
}
