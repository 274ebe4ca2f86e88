//! ferry against arrow-rs's own C Data Interface (`arrow_array::ffi` and
//! `ffi_stream`), in one process (issue 24): for each operation a user of
//! arrow-rs takes, the ferry path and the arrow-rs path run in interleaved
//! rounds (the order alternates per round), and we print the median of the
//! per-round ratios ferry / arrow-rs with their spread (min..max over the
//! rounds), so that a load burst hits both sides of one ratio. Below 1.0x
//! ferry is faster. Every line says whether both sides do the same work.
//!
//! Data: int32 x 1024 with 103 nulls (every tenth value); streams of 1,000
//! record batches of one such column (figures per batch).
//!
//! Run: `bindings/rust/bench.sh` (this table, then callgrind instructions
//! per operation for each side), or `cargo bench -p ferry-arrow --features
//! arrow --bench peers`. Environment: `FERRY_BENCH_QUICK=1` (fewer rounds),
//! `FERRY_BENCH_FILTER=word`, `FERRY_BENCH_LIST=1` (print the case names),
//! `FERRY_PEER_CASE=name FERRY_PEER_SIDE=ferry|arrow FERRY_BENCH_OPS=n` (run
//! one side alone, n operations after a warm-up: what bench.sh runs under
//! callgrind twice with different n).
use std::hint::black_box;
use std::os::raw::c_void;
use std::sync::Arc;
use std::time::Instant;

use ferry_arrow::arrow::arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use ferry_arrow::arrow::arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use ferry_arrow::arrow::arrow_array::{make_array, Array, ArrayRef, Int32Array, RecordBatch, RecordBatchIterator};
use ferry_arrow::arrow::arrow_schema::{DataType, Field};
use ferry_arrow::arrow::{ArrowArrayExt, ArrowStreamExt};
use ferry_arrow::sys;
use ferry_arrow::{DeviceArray, DeviceArrayStream, Schema, Validation};

const LENGTH: usize = 1024;
const BATCHES: usize = 1000;

/// The validity bitmap and values every case hands over, valid for the
/// whole run (the static producer points at them).
struct Data {
    validity: Vec<u8>,
    values: Vec<i32>,
    buffers: [*const c_void; 2],
    array: ArrayRef,
    batch: RecordBatch,
}

fn data() -> Box<Data> {
    let array: Int32Array = (0..LENGTH as i32)
        .map(|i| if i % 10 == 0 { None } else { Some(i) })
        .collect();
    assert_eq!(array.null_count(), 103);
    let array: ArrayRef = Arc::new(array);
    let batch = RecordBatch::try_from_iter([("x", array.clone())]).unwrap();
    let mut validity = vec![0u8; LENGTH / 8];
    let mut values = vec![0i32; LENGTH];
    for i in 0..LENGTH {
        if i % 10 != 0 {
            validity[i / 8] |= 1 << (i % 8);
            values[i] = i as i32;
        }
    }
    let mut d = Box::new(Data {
        validity,
        values,
        buffers: [std::ptr::null(); 2],
        array,
        batch,
    });
    d.buffers = [d.validity.as_ptr() as *const c_void, d.values.as_ptr() as *const c_void];
    d
}

unsafe extern "C" fn release_static(array: *mut sys::ArrowArray) {
    (*array).release = None;
}

/// The producer both sides of an import share: a C producer handing out
/// static buffers (a few stores, no allocation), so that the two sides
/// differ only in the consumer.
#[inline(always)]
fn produce(d: &Data, out: &mut sys::ArrowArray) {
    *out = sys::ArrowArray {
        length: LENGTH as i64,
        null_count: 103,
        offset: 0,
        n_buffers: 2,
        n_children: 0,
        buffers: d.buffers.as_ptr() as *mut *const c_void,
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_static),
        private_data: std::ptr::null_mut(),
    };
}

#[inline(always)]
fn produce_device(d: &Data, out: &mut sys::ArrowDeviceArray) {
    produce(d, &mut out.array);
    out.device_id = -1;
    out.device_type = 1;
    out.sync_event = std::ptr::null_mut();
    out.reserved = [0; 3];
}

fn as_ffi_array(raw: &mut sys::ArrowArray) -> FFI_ArrowArray {
    // SAFETY: identical #[repr(C)] layouts; `raw` is left released.
    unsafe {
        let out = std::ptr::read(raw as *mut sys::ArrowArray as *mut FFI_ArrowArray);
        raw.release = None;
        out
    }
}

fn reader(
    d: &Data,
) -> RecordBatchIterator<std::vec::IntoIter<Result<RecordBatch, ferry_arrow::arrow::arrow_schema::ArrowError>>> {
    let batches: Vec<_> = (0..BATCHES).map(|_| Ok(d.batch.clone())).collect();
    RecordBatchIterator::new(batches.into_iter(), d.batch.schema())
}

/// A raw C consumer of a plain stream: the schema, then every batch
/// released as it comes (what a C engine reading an arrow-rs stream does).
unsafe fn drain_c_stream(s: &mut sys::ArrowArrayStream) -> usize {
    let mut schema = sys::ArrowSchema::default();
    assert_eq!((s.get_schema.unwrap())(s, &mut schema), 0);
    (schema.release.unwrap())(&mut schema);
    let mut n = 0;
    loop {
        let mut a = sys::ArrowArray::default();
        assert_eq!((s.get_next.unwrap())(s, &mut a), 0);
        if a.release.is_none() {
            break;
        }
        n += black_box(a.length) as usize;
        (a.release.unwrap())(&mut a);
    }
    (s.release.unwrap())(s);
    n
}

/// The same consumer over a device stream.
unsafe fn drain_c_device_stream(s: &mut sys::ArrowDeviceArrayStream) -> usize {
    let mut schema = sys::ArrowSchema::default();
    assert_eq!((s.get_schema.unwrap())(s, &mut schema), 0);
    (schema.release.unwrap())(&mut schema);
    let mut n = 0;
    loop {
        let mut a = sys::ArrowDeviceArray::default();
        assert_eq!((s.get_next.unwrap())(s, &mut a), 0);
        if a.array.release.is_none() {
            break;
        }
        n += black_box(a.array.length) as usize;
        (a.array.release.unwrap())(&mut a.array);
    }
    (s.release.unwrap())(s);
    n
}

fn read_all(reader: impl Iterator<Item = Result<RecordBatch, ferry_arrow::arrow::arrow_schema::ArrowError>>) -> usize {
    let mut n = 0;
    for b in reader {
        n += black_box(b.unwrap().num_rows());
    }
    assert_eq!(n, BATCHES * LENGTH);
    n
}

type Op = Box<dyn FnMut()>;

struct Case {
    name: &'static str,
    /// Operations per call of `ferry`/`arrow` (1, or the batches of a stream).
    units: usize,
    /// Whether both sides do the same work, and what differs.
    work: &'static str,
    ferry: Op,
    arrow: Op,
}

/// arrow-rs's import (from_ffi + make_array) of the static producer's array.
fn arrow_import(d: &'static Data, ffi_schema: &'static FFI_ArrowSchema) -> Op {
    Box::new(move || {
        let mut raw = sys::ArrowArray::default();
        produce(d, &mut raw);
        let a = make_array(unsafe { from_ffi(as_ffi_array(&mut raw), ffi_schema) }.unwrap());
        black_box(a.len());
    })
}

/// arrow-rs's export of a reader as a C stream (FFI_ArrowArrayStream::new),
/// drained by the raw C consumer.
fn arrow_stream_export(d: &'static Data) -> Op {
    Box::new(move || {
        let mut s = FFI_ArrowArrayStream::new(Box::new(reader(d)));
        unsafe {
            black_box(drain_c_stream(
                &mut *(&mut s as *mut FFI_ArrowArrayStream as *mut sys::ArrowArrayStream),
            ));
        }
    })
}

/// arrow-rs's round trip of a reader through a C stream
/// (RecordBatchStreamReader over FFI_ArrowArrayStream::new).
fn arrow_stream_read(d: &'static Data) -> Op {
    Box::new(move || {
        let s = FFI_ArrowArrayStream::new(Box::new(reader(d)));
        black_box(read_all(RecordBatchStreamReader::try_new(s).unwrap()));
    })
}

fn cases(d: &'static Data) -> Vec<Case> {
    let schema: &'static Schema = Box::leak(Box::new(Schema::builder("i").name("x").nullable(true).build().unwrap()));
    let ffi_schema: &'static FFI_ArrowSchema = Box::leak(Box::new(
        FFI_ArrowSchema::try_from(Field::new("x", DataType::Int32, true)).unwrap(),
    ));
    let mut v = vec![
        Case {
            name: "import",
            units: 1,
            work: "NOT the same: ferry from_raw validates DEFAULT (structure) and builds no heap object; \
                   arrow from_ffi validates nothing and builds ArrayData + make_array (Arc, allocations)",
            ferry: Box::new(move || {
                let mut raw = sys::ArrowDeviceArray::default();
                produce_device(d, &mut raw);
                let a = unsafe { DeviceArray::from_raw(&mut raw, schema) }.unwrap();
                black_box(a.length());
            }),
            arrow: arrow_import(d, ffi_schema),
        },
        Case {
            name: "to_arrow",
            units: 1,
            work: "same result (an ArrayRef); ferry also validates at DEFAULT (arrow-rs validates nothing)",
            ferry: Box::new(move || {
                let mut raw = sys::ArrowDeviceArray::default();
                produce_device(d, &mut raw);
                let a = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
                let a = a.to_arrow(schema).unwrap();
                black_box(a.len());
            }),
            arrow: arrow_import(d, ffi_schema),
        },
        Case {
            name: "to_arrow_full",
            units: 1,
            work: "same work: an ArrayRef, contents validated (ferry FULL vs from_ffi + validate_full)",
            ferry: Box::new(move || {
                let mut raw = sys::ArrowDeviceArray::default();
                produce_device(d, &mut raw);
                let a = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
                let a = a.to_arrow_with(schema, Validation::Full).unwrap();
                black_box(a.len());
            }),
            arrow: Box::new(move || {
                let mut raw = sys::ArrowArray::default();
                produce(d, &mut raw);
                let data = unsafe { from_ffi(as_ffi_array(&mut raw), ffi_schema) }.unwrap();
                data.validate_full().unwrap();
                black_box(make_array(data).len());
            }),
        },
        Case {
            name: "export",
            units: 1,
            work: "same work: an arrow array out as C structs (array + schema), released by a C consumer; \
                   ferry fills an ArrowDeviceArray (arrow-rs a plain ArrowArray), no validation either side",
            ferry: Box::new(move || {
                let (a, s) = DeviceArray::from_arrow(d.array.as_ref()).unwrap();
                let mut ca = sys::ArrowDeviceArray::default();
                let mut cs = sys::ArrowSchema::default();
                unsafe {
                    a.export_to(&mut ca).unwrap();
                    s.export_to(&mut cs).unwrap();
                    black_box(ca.array.length);
                    (ca.array.release.unwrap())(&mut ca.array);
                    (cs.release.unwrap())(&mut cs);
                }
            }),
            arrow: Box::new(move || {
                let (a, s) = to_ffi(&d.array.to_data()).unwrap();
                black_box(a.len());
                drop(a);
                drop(s);
            }),
        },
        Case {
            name: "stream_export",
            units: BATCHES,
            work: "same work: a RecordBatchReader out as a C stream, drained by a raw C consumer \
                   (from_arrow_reader + export_to vs FFI_ArrowArrayStream::new); no validation either side",
            ferry: Box::new(move || {
                let s = DeviceArrayStream::from_arrow_reader(reader(d)).unwrap();
                let mut c = sys::ArrowDeviceArrayStream::default();
                unsafe {
                    s.export_to(&mut c).unwrap();
                    black_box(drain_c_device_stream(&mut c));
                }
            }),
            arrow: arrow_stream_export(d),
        },
        Case {
            name: "stream_bridge",
            units: BATCHES,
            work: "same result: reader -> C stream -> RecordBatchReader; ferry also validates each batch \
                   at DEFAULT against the schema prepared once (arrow-rs validates nothing)",
            ferry: Box::new(move || {
                let s = DeviceArrayStream::from_arrow_reader(reader(d)).unwrap();
                let mut c = sys::ArrowDeviceArrayStream::default();
                unsafe { s.export_to(&mut c).unwrap() };
                let s = unsafe { DeviceArrayStream::from_raw(&mut c) }.unwrap();
                black_box(read_all(s.into_arrow_reader().unwrap()));
            }),
            arrow: arrow_stream_read(d),
        },
    ];
    v.extend(c_stream_cases(d));
    v
}

/// The plain C stream (`ArrowArrayStream`) paths: the producer (or the
/// consumer) is arrow-rs's on both sides, so the rows time ferry's side.
fn c_stream_cases(d: &'static Data) -> Vec<Case> {
    vec![
        Case {
            name: "c_stream_import",
            units: BATCHES,
            work: "same result: arrow-rs's C stream (FFI_ArrowArrayStream::new) read as a RecordBatchReader; \
                   ferry: from_c_stream + into_arrow_reader, validating DEFAULT per batch (prepared schema); \
                   arrow-rs: RecordBatchStreamReader, no validation",
            ferry: Box::new(move || {
                let mut s = FFI_ArrowArrayStream::new(Box::new(reader(d)));
                let s = unsafe {
                    DeviceArrayStream::from_c_stream(&mut s as *mut FFI_ArrowArrayStream as *mut sys::ArrowArrayStream)
                }
                .unwrap();
                black_box(read_all(s.into_arrow_reader().unwrap()));
            }),
            arrow: arrow_stream_read(d),
        },
        Case {
            name: "c_stream_export",
            units: BATCHES,
            work: "same work: a RecordBatchReader out as a plain C stream, drained by a raw C consumer; \
                   ferry: from_arrow_reader + export_to_c_stream (no validation: ferry's own batches); \
                   arrow-rs: FFI_ArrowArrayStream::new",
            ferry: Box::new(move || {
                let s = DeviceArrayStream::from_arrow_reader(reader(d)).unwrap();
                let mut c = sys::ArrowArrayStream::default();
                unsafe {
                    s.export_to_c_stream(&mut c).unwrap();
                    black_box(drain_c_stream(&mut c));
                }
            }),
            arrow: arrow_stream_export(d),
        },
    ]
}

fn time(op: &mut Op, calls: usize, units: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..calls {
        op();
    }
    t.elapsed().as_nanos() as f64 / (calls * units) as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let d: &'static Data = Box::leak(data());
    let filter = std::env::var("FERRY_BENCH_FILTER").unwrap_or_default();
    let mut all: Vec<Case> = cases(d).into_iter().filter(|c| c.name.contains(&filter)).collect();
    if std::env::var("FERRY_BENCH_LIST").is_ok() {
        for c in &all {
            println!("{} {}", c.name, c.units);
        }
        return;
    }
    if let Ok(name) = std::env::var("FERRY_PEER_CASE") {
        // One side alone, for callgrind.
        let side = std::env::var("FERRY_PEER_SIDE").unwrap_or_else(|_| "ferry".into());
        let ops: usize = std::env::var("FERRY_BENCH_OPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        let c = all
            .iter_mut()
            .find(|c| c.name == name)
            .expect("FERRY_PEER_CASE: no such case");
        let op = if side == "arrow" { &mut c.arrow } else { &mut c.ferry };
        for _ in 0..ops {
            op();
        }
        return;
    }
    let quick = std::env::var("FERRY_BENCH_QUICK").is_ok();
    let rounds = if quick { 5 } else { 41 };
    println!("ferry vs arrow-rs's C Data Interface (arrow-rs 60), int32 x {LENGTH} with 103 nulls, streams of {BATCHES} batches");
    println!("{rounds} interleaved rounds; ratio = median over rounds of (ferry / arrow-rs in the same round), spread = min..max");
    println!(
        "{:<16} {:>10} {:>10} {:>7} {:>13}  work",
        "operation", "ferry ns", "arrow ns", "ratio", "spread"
    );
    let mut worst: f64 = 0.0;
    for c in &mut all {
        // ~20 ms per side per round.
        let calls = if c.units == 1 {
            if quick {
                5000
            } else {
                20000
            }
        } else if quick {
            2
        } else {
            10
        };
        time(&mut c.ferry, calls.max(2) / 2, c.units);
        time(&mut c.arrow, calls.max(2) / 2, c.units);
        let (mut f, mut a, mut r) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (tf, ta) = if round % 2 == 0 {
                let tf = time(&mut c.ferry, calls, c.units);
                (tf, time(&mut c.arrow, calls, c.units))
            } else {
                let ta = time(&mut c.arrow, calls, c.units);
                (time(&mut c.ferry, calls, c.units), ta)
            };
            f.push(tf);
            a.push(ta);
            r.push(tf / ta);
        }
        let ratio = median(&mut r);
        worst = worst.max(ratio);
        println!(
            "{:<16} {:>10.1} {:>10.1} {:>6.2}x {:>5.2}..{:<5.2}  {}",
            c.name,
            median(&mut f),
            median(&mut a),
            ratio,
            r[0],
            r[r.len() - 1],
            c.work
        );
        println!("RESULT_PEER rust {} {:.3}", c.name, ratio);
    }
    println!("worst ratio: {worst:.2}x (target <= 1.0x)");
}
