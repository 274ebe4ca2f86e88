//! Thread-safety (the binding contract, README "Threads"): arrays and
//! schemas are `Send + Sync` and read from many threads at once; release
//! needs ownership, so it happens exactly once, after the last reader; a
//! stream is `Send` (moves between threads) but not `Sync`, so concurrent
//! calls are impossible without a lock the user writes, which serializes
//! them. What must not compile is shown by the compile_fail examples in the
//! crate's documentation (`DeviceArrayStream`).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use ferry_arrow::{
    ArrayBuilder, Buffer, DeviceArray, DeviceArrayStream, DeviceType, HostArray, Schema, SchemaView, Validation,
};

const THREADS: usize = 8;

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn the_types_are_send_and_sync_as_documented() {
    assert_send_sync::<DeviceArray>();
    assert_send_sync::<Schema>();
    assert_send::<DeviceArrayStream>();
    // Not Sync: the compile_fail example on DeviceArrayStream.
}

mod common;
use common::DropCount;

fn read_all(host: &HostArray<'_>) -> i64 {
    (0..host.len())
        .map(|i| {
            if host.is_valid(i).unwrap() {
                host.value::<i32>(i).unwrap() as i64
            } else {
                0
            }
        })
        .sum()
}

#[test]
fn eight_threads_read_one_array_and_the_last_one_releases_it_once() {
    const N: i32 = 10_000;
    let releases = Arc::new(AtomicUsize::new(0));
    let values: Vec<i32> = (0..N).collect();
    let (validity, nulls) = ferry_arrow::validity_bitmap(&(0..N).map(|i| i % 7 != 0).collect::<Vec<_>>());
    let expected: i64 = (0..N).filter(|i| i % 7 != 0).map(|i| i as i64).sum();
    let array = ArrayBuilder::new(N as i64)
        .null_count(nulls)
        .buffer(Buffer::from_vec(validity))
        .buffer(Buffer::from_vec(values))
        .keep_alive(DropCount(releases.clone()))
        .build()
        .unwrap();
    // Imported through the C struct, validated, as any consumer's array.
    let schema = Arc::new(Schema::new("i", Some("n")).unwrap());
    let mut raw = ferry_arrow::sys::ArrowDeviceArray::default();
    unsafe { array.export_to(&mut raw).unwrap() };
    let array = Arc::new(unsafe { DeviceArray::from_raw(&mut raw, &schema) }.unwrap());

    let start = Arc::new(Barrier::new(THREADS));
    let readers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (array, schema, start) = (array.clone(), schema.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for round in 0..20 {
                    let view: &SchemaView = &schema;
                    array.validate(view, round % 2 == 0).unwrap();
                    array.wait().unwrap();
                    assert_eq!(read_all(&array.host(view).unwrap()), expected);
                    if round == t {
                        let copy = array.copy_to(view, DeviceType::SIM, 0).unwrap();
                        assert_eq!(copy.length(), N as i64);
                    }
                }
                // Each reader lets go of its handle when done, in whatever
                // order the threads finish; the last one releases.
                drop(array);
            })
        })
        .collect();
    drop(array);
    for reader in readers {
        reader.join().unwrap();
    }
    assert_eq!(
        releases.load(Ordering::SeqCst),
        1,
        "released exactly once, after the last reader"
    );
}

fn counted_stream(batches: i32, produced: Arc<AtomicUsize>) -> DeviceArrayStream {
    let items = (0..batches).map(move |b| {
        produced.fetch_add(1, Ordering::SeqCst);
        Ok(ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec(vec![b])))
    });
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, items, Schema::new("i", None).unwrap()).unwrap();
    // Through the C struct, as an imported stream.
    let mut raw = ferry_arrow::sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw).unwrap() };
    unsafe { DeviceArrayStream::from_raw_with(&mut raw, Validation::Default) }.unwrap()
}

#[test]
fn a_stream_moves_between_threads_batch_by_batch() {
    let produced = Arc::new(AtomicUsize::new(0));
    let mut stream = counted_stream(16, produced.clone());
    let mut seen = Vec::new();
    // Each batch is read on a new thread, the stream moved there and back.
    loop {
        let handle = thread::spawn(move || {
            let batch = stream.next().map(|b| b.unwrap());
            (stream, batch)
        });
        let (back, batch) = handle.join().unwrap();
        stream = back;
        match batch {
            Some(batch) => {
                // The batch itself moves on to yet another thread.
                let schema = Schema::new("i", None).unwrap();
                seen.push(
                    thread::spawn(move || batch.host(&schema).unwrap().value::<i32>(0).unwrap())
                        .join()
                        .unwrap(),
                );
            }
            None => break,
        }
    }
    assert_eq!(seen, (0..16).collect::<Vec<_>>());
    assert_eq!(produced.load(Ordering::SeqCst), 16);
    // Released on a thread that never read it.
    thread::spawn(move || drop(stream)).join().unwrap();
}

#[test]
fn eight_threads_share_one_stream_through_a_mutex_one_call_at_a_time() {
    const BATCHES: i32 = 400;
    let produced = Arc::new(AtomicUsize::new(0));
    let stream = Arc::new(Mutex::new(counted_stream(BATCHES, produced.clone())));
    let start = Arc::new(Barrier::new(THREADS));
    let readers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (stream, start) = (stream.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let schema = Schema::new("i", None).unwrap();
                let mut mine = Vec::new();
                loop {
                    // The lock serializes the calls, as the stream requires.
                    let next = stream.lock().unwrap().next();
                    match next {
                        Some(batch) => mine.push(batch.unwrap().host(&schema).unwrap().value::<i32>(0).unwrap()),
                        None => return mine,
                    }
                }
            })
        })
        .collect();
    let mut all: Vec<i32> = readers.into_iter().flat_map(|r| r.join().unwrap()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..BATCHES).collect::<Vec<_>>(), "every batch once, none twice");
    assert_eq!(produced.load(Ordering::SeqCst), BATCHES as usize);
    // The end stays the end for everyone.
    assert!(stream.lock().unwrap().next().is_none());
}
