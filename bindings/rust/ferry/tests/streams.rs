//! Streams: any iterator exported through ferry_stream_init, consumed as an
//! Iterator of Results; errors and panics travel as code + last error; the
//! producer is dropped exactly once at release.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferry::sys;
use ferry::{errno, ArrayProducer, DeviceArray, DeviceArrayStream, DeviceType, Error, Schema};

fn batch(values: Vec<i32>) -> ferry::Result<DeviceArray> {
    ferry::export_primitive(values, None).map(|(_, a)| a)
}

fn int_schema() -> Schema {
    Schema::new("i", Some("n")).unwrap()
}

struct DropCount(Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn iterator_round_trip_through_the_c_struct() {
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let batches = (0..5).map(move |i| {
        let _keep = &guard;
        batch(vec![i; i as usize + 1])
    });
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, int_schema(), batches).unwrap();

    // Through the C struct, as a foreign consumer would receive it.
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw).unwrap() };
    let mut stream = unsafe { DeviceArrayStream::from_raw(&mut raw).unwrap() };
    assert_eq!(stream.device_type(), DeviceType::CPU);
    let schema = stream.schema().unwrap();
    assert_eq!((schema.format(), schema.name()), ("i", Some("n")));
    let again = stream.schema().unwrap(); // get_schema may be called again
    assert_eq!(again.format(), "i");
    let lengths: Vec<i64> = stream.by_ref().map(|b| b.unwrap().length()).collect();
    assert_eq!(lengths, vec![1, 2, 3, 4, 5]);
    assert!(stream.next().is_none(), "end of stream is sticky");
    assert!(stream.next_array().unwrap().is_none());
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(stream);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the producer is dropped exactly once at release"
    );
}

#[test]
fn an_error_batch_travels_as_code_and_last_error() {
    let batches = vec![
        batch(vec![1]),
        Err(Error::new(errno::ENOMEM, "no room for batch 2")),
        batch(vec![3]),
    ];
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, int_schema(), batches).unwrap();
    assert!(stream.next().unwrap().is_ok());
    let err = stream.next().unwrap().unwrap_err();
    assert_eq!(err.code(), errno::ENOMEM);
    assert_eq!(err.message(), "no room for batch 2");
    assert_eq!(stream.last_error().as_deref(), Some("no room for batch 2"));
    assert!(stream.next().is_none(), "iteration stops after an error");
}

struct Panicky {
    calls: u32,
    drops: Arc<AtomicUsize>,
}
impl ArrayProducer for Panicky {
    fn schema(&mut self) -> ferry::Result<Schema> {
        panic!("schema exploded");
    }
    fn next(&mut self) -> ferry::Result<Option<DeviceArray>> {
        self.calls += 1;
        if self.calls == 2 {
            panic!("batch {} exploded", self.calls);
        }
        batch(vec![1]).map(Some)
    }
}
impl Drop for Panicky {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn panics_in_producers_become_eio_and_never_unwind_into_c() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut stream = DeviceArrayStream::from_producer(
        DeviceType::CPU,
        Panicky {
            calls: 0,
            drops: drops.clone(),
        },
    )
    .unwrap();
    let err = stream.schema().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert!(err.message().contains("schema exploded"), "{err}");
    assert!(stream.next_array().unwrap().is_some());
    let err = stream.next_array().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert!(err.message().contains("batch 2 exploded"), "{err}");
    assert!(stream.last_error().unwrap().contains("batch 2 exploded"));
    drop(stream);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn streams_from_existing_arrays() {
    let arrays = vec![batch(vec![1, 2]).unwrap(), batch(vec![3]).unwrap()];
    let stream = DeviceArrayStream::from_arrays(DeviceType::CPU, int_schema(), arrays).unwrap();
    let total: i64 = stream.map(|b| b.unwrap().length()).sum();
    assert_eq!(total, 3);
}

#[test]
fn a_batch_on_the_wrong_device_is_refused_by_the_core() {
    // The stream says sim, the batch is CPU: the core checks every batch.
    let mut stream = DeviceArrayStream::from_iter(DeviceType::SIM, int_schema(), vec![batch(vec![1])]).unwrap();
    let err = stream.next_array().unwrap_err();
    assert_ne!(err.code(), 0);
    assert!(!err.message().is_empty());
}

#[test]
fn a_stream_moves_to_another_thread() {
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, int_schema(), (0..3).map(|i| batch(vec![i]))).unwrap();
    let lengths: Vec<i64> = std::thread::spawn(move || stream.map(|b| b.unwrap().length()).collect())
        .join()
        .unwrap();
    assert_eq!(lengths, vec![1, 1, 1]);
}

#[test]
fn importing_a_released_stream_fails() {
    let mut raw = sys::ArrowDeviceArrayStream::default();
    let err = unsafe { DeviceArrayStream::from_raw(&mut raw) }.unwrap_err();
    assert!(err.is_invalid_argument());
}
