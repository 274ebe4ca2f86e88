//! What several test files share (each includes it with `mod common;`; a
//! file that uses only part of it leaves the rest unused).
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferry_arrow::{sys, Schema};

/// The schema of the int32 test streams: format "i", name "n".
pub fn int_schema() -> Schema {
    Schema::new("i", Some("n")).unwrap()
}

/// Counts its own drop: kept alive by a producer, it shows when (and how
/// often) the core released that producer.
pub struct DropCount(pub Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `batches`, with a `DropCount` on `drops` riding along: the count shows
/// when (and how often) whoever owns the iterator dropped it.
pub fn drop_counted<I: Iterator>(drops: &Arc<AtomicUsize>, batches: I) -> impl Iterator<Item = I::Item> {
    let guard = DropCount(drops.clone());
    batches.inspect(move |_| {
        let _keep = &guard;
    })
}

/// Pulls every array of a plain C stream with raw calls, as a C consumer
/// does, and returns what `read` took from each before releasing it.
///
/// # Safety
/// `c` is a live stream of its producer.
pub unsafe fn pull_c_stream<T>(c: &mut sys::ArrowArrayStream, mut read: impl FnMut(&sys::ArrowArray) -> T) -> Vec<T> {
    let mut out = Vec::new();
    loop {
        let mut a = sys::ArrowArray::default();
        assert_eq!((c.get_next.unwrap())(c, &mut a), 0);
        if a.release.is_none() {
            return out;
        }
        out.push(read(&a));
        (a.release.unwrap())(&mut a);
    }
}
