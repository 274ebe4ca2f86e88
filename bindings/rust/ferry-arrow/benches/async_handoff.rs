//! Per-batch cost of an async device stream against the synchronous device
//! stream carrying the same batches, Rust producer to Rust consumer in one
//! process (issue 22; core/bench/async_bench.c is the C -> C twin):
//!
//!   sync       DeviceArrayStream::from_iter over builders, read with its
//!              Iterator (each batch validated at DEFAULT against the
//!              prepared schema)
//!   async wN   the same stream pushed by DeviceArrayStream::export_async (a
//!              producer thread of the core's) into an AsyncDeviceStream of
//!              window N (validated at DEFAULT by the core's consumer), read
//!              with its Iterator: a thread handoff per batch
//!
//! Both sides do the same work per batch: an int32 array of 1,024 values over
//! a static buffer (zero-copy), validated, released. Rounds alternate the
//! paths; each ratio is the median over rounds of (async / sync in the same
//! round), so that a load burst hits both sides of one ratio. Prints
//! `RESULT rust async_w<N>_ratio <x>` lines. `FERRY_BENCH_QUICK=1` shortens it.
use std::hint::black_box;
use std::time::Instant;

use ferry_arrow::{ArrayBuilder, AsyncDeviceStream, Buffer, DeviceArrayStream, DeviceType, Schema};

static VALUES: [i32; 1024] = [7; 1024];

fn stream(batches: usize) -> DeviceArrayStream {
    let items = (0..batches).map(|_| {
        Ok(ArrayBuilder::new(VALUES.len() as i64)
            .buffer(Buffer::null())
            .buffer(Buffer::from_static(&VALUES)))
    });
    DeviceArrayStream::from_iter(DeviceType::CPU, items, Schema::new("i", None).unwrap()).unwrap()
}

/// ns per batch of the synchronous path.
fn sync_ns(batches: usize) -> f64 {
    let s = stream(batches);
    let start = Instant::now();
    let mut n = 0;
    for batch in s {
        n += black_box(batch.unwrap()).length();
    }
    assert_eq!(n as usize, batches * VALUES.len());
    start.elapsed().as_nanos() as f64 / batches as f64
}

/// ns per batch of the async path with `window`.
fn async_ns(batches: usize, window: i64) -> f64 {
    let s = stream(batches);
    let mut consumer = AsyncDeviceStream::new(window).unwrap();
    let start = Instant::now();
    unsafe { s.export_async(consumer.handler()) }.unwrap();
    let mut n = 0;
    for batch in consumer.by_ref() {
        n += black_box(batch.unwrap()).length();
    }
    let ns = start.elapsed().as_nanos() as f64 / batches as f64;
    assert_eq!(n as usize, batches * VALUES.len());
    assert!(consumer.wait_released(None));
    ns
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    // cargo bench passes --bench; nothing else is taken.
    let quick = std::env::var_os("FERRY_BENCH_QUICK").is_some();
    let (batches, rounds) = if quick { (2_000, 5) } else { (20_000, 11) };
    let windows = [1i64, 4, 64];
    let mut sync = Vec::new();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); windows.len()];
    let mut asyncs: Vec<Vec<f64>> = vec![Vec::new(); windows.len()];
    sync_ns(batches / 10); // warm-up
    for _ in 0..rounds {
        let s = sync_ns(batches);
        sync.push(s);
        for (i, &w) in windows.iter().enumerate() {
            let a = async_ns(batches, w);
            asyncs[i].push(a);
            ratios[i].push(a / s);
        }
    }
    println!("rust -> rust, {batches} batches of 1,024 int32 per round, {rounds} rounds (medians)");
    println!("{:<12} {:>12} {:>14}", "path", "ns/batch", "x sync (round)");
    println!("{:<12} {:>12.1} {:>14}", "sync", median(sync.clone()), "1.00");
    for (i, w) in windows.iter().enumerate() {
        println!(
            "{:<12} {:>12.1} {:>14.2}",
            format!("async w{w}"),
            median(asyncs[i].clone()),
            median(ratios[i].clone())
        );
    }
    for (i, w) in windows.iter().enumerate() {
        println!("RESULT rust async_w{w}_ratio {:.2}", median(ratios[i].clone()));
    }
}
