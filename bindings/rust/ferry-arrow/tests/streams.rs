//! Streams: any iterator exported through ferry_array_stream_init, consumed as an
//! Iterator of Results; errors and panics travel as code + last error; the
//! producer is dropped exactly once at release.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferry_arrow::sys;
use ferry_arrow::{
    errno, ArrayBuilder, ArrayProducer, ArraySlot, Buffer, DeviceArray, DeviceArrayStream, DeviceType, Error, Schema,
};

fn batch(values: Vec<i32>) -> ferry_arrow::Result<DeviceArray> {
    ferry_arrow::export_primitive(values, None).map(|(a, _)| a)
}

mod common;
use common::{drop_counted, int_schema, pull_c_stream, DropCount};

#[test]
fn iterator_round_trip_through_the_c_struct() {
    let drops = Arc::new(AtomicUsize::new(0));
    let batches = drop_counted(&drops, (0..5).map(|i| batch(vec![i; i as usize + 1])));
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();

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
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    assert!(stream.next().unwrap().is_ok());
    let err = stream.next().unwrap().unwrap_err();
    assert_eq!(err.code(), errno::ENOMEM);
    assert_eq!(err.message(), "no room for batch 2");
    assert_eq!(stream.last_error().as_deref(), Some("no room for batch 2"));
    // The producer would yield batch 3 if asked again: it is not asked, and
    // every later read reports the same error (the binding contract).
    for _ in 0..3 {
        assert_eq!(stream.next().unwrap().unwrap_err(), err, "the same error again");
    }
    assert_eq!(stream.next_array().unwrap_err(), err);
    assert_eq!(stream.next_ref().unwrap_err(), err);
    assert_eq!(stream.schema().unwrap_err(), err, "get_schema is not called either");
    // `?`-style consumers stop at the first error.
    assert_eq!(stream.collect::<ferry_arrow::Result<Vec<_>>>().unwrap_err(), err);
}

/// A producer that fails at call `fail_at` and would yield batches again
/// afterwards; counts every get_next call.
struct FailsThenRecovers {
    fail_at: usize,
    calls: Arc<AtomicUsize>,
}
impl FailsThenRecovers {
    /// Fails its second call, counting every call in `calls`.
    fn at_call_2(calls: &Arc<AtomicUsize>) -> Self {
        FailsThenRecovers {
            fail_at: 2,
            calls: calls.clone(),
        }
    }
}
impl ArrayProducer for FailsThenRecovers {
    fn schema(&mut self) -> ferry_arrow::Result<Schema> {
        Ok(int_schema())
    }
    fn next(&mut self) -> ferry_arrow::Result<Option<DeviceArray>> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call == self.fail_at {
            return Err(Error::io(format!("call {call} failed")));
        }
        batch(vec![call as i32]).map(Some)
    }
}

#[test]
fn after_a_stream_error_get_next_is_never_called_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let producer = FailsThenRecovers::at_call_2(&calls);
    // Through the C struct, as a stream from any runtime arrives.
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe {
        DeviceArrayStream::from_producer(DeviceType::CPU, producer)
            .unwrap()
            .export_to(&mut raw)
            .unwrap()
    };
    let mut stream = unsafe { DeviceArrayStream::from_raw(&mut raw) }.unwrap();
    assert_eq!(stream.next().unwrap().unwrap().length(), 1);
    let err = stream.next().unwrap().unwrap_err();
    assert_eq!((err.code(), err.message()), (errno::EIO, "call 2 failed"));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let consumer = ferry_arrow::Device::sim(0).unwrap().create_stream().unwrap();
    for _ in 0..4 {
        assert_eq!(stream.next().unwrap().unwrap_err(), err);
        assert_eq!(stream.next_array().unwrap_err(), err);
        assert_eq!(stream.next_ref().unwrap_err(), err);
        assert_eq!(stream.next_on(&consumer).unwrap_err(), err);
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "get_next was not called after the error"
    );
    assert!(format!("{stream:?}").contains("failed"));
}

#[test]
fn a_batch_refused_by_validation_fails_the_stream_the_same_way() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    // Batch 2 is a utf8 array whose offsets decrease: FULL validation
    // refuses it (DEFAULT, which reads no buffer, would not).
    let batches = (0..3).map(move |i| {
        counted.fetch_add(1, Ordering::SeqCst);
        let offsets = if i == 1 { vec![0i32, 2, 1] } else { vec![0i32, 1, 2] };
        Ok(ArrayBuilder::new(2)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec(offsets))
            .buffer(Buffer::from_vec(b"ab".to_vec())))
    });
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("u", None).unwrap()).unwrap();
    assert_eq!(stream.validation(), ferry_arrow::Validation::Default);
    stream.set_validation(ferry_arrow::Validation::Full);
    assert!(stream.next().unwrap().is_ok());
    let err = stream.next().unwrap().unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert!(err.message().starts_with("the array fails validation: "), "{err}");
    assert_eq!(stream.next_array().unwrap_err(), err);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "not asked again after the refusal");
}

#[test]
fn streams_validate_their_batches_by_default_and_can_opt_out() {
    // A batch with one buffer too few for int32: DEFAULT validation
    // refuses it against the prepared schema.
    let make = || {
        let batches = vec![Ok(ArrayBuilder::new(1).buffer(Buffer::from_vec(vec![1i32])))];
        let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
        let mut raw = sys::ArrowDeviceArrayStream::default();
        unsafe { stream.export_to(&mut raw).unwrap() };
        raw
    };
    let mut raw = make();
    let mut checked = unsafe { DeviceArrayStream::from_raw(&mut raw) }.unwrap();
    let err = checked.next_array().unwrap_err();
    assert!(
        err.message().starts_with("the array fails validation: ") && err.message().contains("buffer"),
        "{err}"
    );
    let mut raw = make();
    let mut unchecked = unsafe { DeviceArrayStream::from_raw_unchecked(&mut raw) }.unwrap();
    assert_eq!(unchecked.validation(), ferry_arrow::Validation::None);
    let batch = unchecked.next_array().unwrap().unwrap();
    assert!(
        batch.validate(&int_schema(), false).is_err(),
        "handed out unvalidated, as asked"
    );
}

struct Panicky {
    calls: u32,
    _dropped: DropCount,
}
impl ArrayProducer for Panicky {
    fn schema(&mut self) -> ferry_arrow::Result<Schema> {
        panic!("schema exploded");
    }
    fn next(&mut self) -> ferry_arrow::Result<Option<DeviceArray>> {
        self.calls += 1;
        if self.calls == 2 {
            panic!("batch {} exploded", self.calls);
        }
        batch(vec![1]).map(Some)
    }
}

/// A stream over a new `Panicky`, whose drop `drops` counts.
fn panicky(drops: &Arc<AtomicUsize>) -> DeviceArrayStream {
    let producer = Panicky {
        calls: 0,
        _dropped: DropCount(drops.clone()),
    };
    DeviceArrayStream::from_producer(DeviceType::CPU, producer).unwrap()
}

#[test]
fn panics_in_producers_become_eio_and_never_unwind_into_c() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut stream = panicky(&drops);
    let err = stream.schema().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert!(err.message().contains("schema exploded"), "{err}");
    // The stream has failed: the same error, and no call reaches `next`.
    assert_eq!(stream.next_array().unwrap_err(), err);
    drop(stream);
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    // A panic in `next`, on a stream that does not validate (validation
    // would ask for the schema, which panics).
    let mut stream = panicky(&drops);
    stream.set_validation(ferry_arrow::Validation::None);
    assert!(stream.next_array().unwrap().is_some());
    let err = stream.next_array().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert!(err.message().contains("batch 2 exploded"), "{err}");
    assert!(stream.last_error().unwrap().contains("batch 2 exploded"));
    drop(stream);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn streams_from_existing_arrays() {
    let arrays = vec![batch(vec![1, 2]).unwrap(), batch(vec![3]).unwrap()];
    let stream = DeviceArrayStream::from_arrays(DeviceType::CPU, arrays, int_schema()).unwrap();
    let total: i64 = stream.map(|b| b.unwrap().length()).sum();
    assert_eq!(total, 3);
}

#[test]
fn a_batch_on_the_wrong_device_is_refused_by_the_core() {
    // The stream says sim, the batch is CPU: the core checks every batch.
    let mut stream = DeviceArrayStream::from_iter(DeviceType::SIM, vec![batch(vec![1])], int_schema()).unwrap();
    let err = stream.next_array().unwrap_err();
    assert_ne!(err.code(), 0);
    assert!(!err.message().is_empty());
}

#[test]
fn a_stream_moves_to_another_thread() {
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, (0..3).map(|i| batch(vec![i])), int_schema()).unwrap();
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

/// Counts how often it is dropped (an owner kept alive by a batch).
struct Owned(Vec<i32>, Arc<AtomicUsize>);
impl AsRef<[i32]> for Owned {
    fn as_ref(&self) -> &[i32] {
        &self.0
    }
}
impl Drop for Owned {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// Batches [0, 1, .., n) for n in 1..=count, each over memory of an `Owned`
/// (its drop counted in `drops`), exported into a C stream struct.
fn owned_batches(count: i32, drops: &Arc<AtomicUsize>) -> sys::ArrowDeviceArrayStream {
    let d = drops.clone();
    let batches = (1..=count).map(move |n: i32| {
        Ok(ArrayBuilder::new(n as i64)
            .buffer(Buffer::null())
            .buffer(Buffer::from_owner(Owned((0..n).collect(), d.clone()))))
    });
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw).unwrap() };
    raw
}

#[test]
fn an_iterator_of_builders_is_built_in_the_consumers_struct() {
    let drops = Arc::new(AtomicUsize::new(0));
    // Through the C struct, pulled with raw calls as a C consumer would.
    let mut raw = owned_batches(4, &drops);
    let mut lengths = Vec::new();
    loop {
        let mut out = sys::ArrowDeviceArray::default();
        let rc = unsafe { sys::ferry_array_stream_get_next(&mut raw, &mut out, std::ptr::null_mut()) };
        assert_eq!(rc, 0);
        if out.array.release.is_none() {
            break;
        }
        assert_eq!((out.device_type, out.device_id), (sys::ARROW_DEVICE_CPU, -1));
        assert!(out.sync_event.is_null());
        assert_eq!(out.reserved, [0; 3]);
        let last = unsafe { *(*out.array.buffers.add(1) as *const i32).add(out.array.length as usize - 1) };
        assert_eq!(last as i64, out.array.length - 1, "the owner's memory, not a copy");
        lengths.push(out.array.length);
        unsafe { sys::ferry_device_array_release(&mut out) };
    }
    assert_eq!(lengths, vec![1, 2, 3, 4]);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        4,
        "each batch's owner dropped once, at its release"
    );
    unsafe { sys::ferry_array_stream_release(&mut raw) };
}

#[test]
fn an_error_item_among_builders_fails_the_stream() {
    let batches = vec![
        Ok(ArrayBuilder::new(0).buffer(Buffer::null()).buffer(Buffer::null())),
        Err(Error::new(errno::ENOMEM, "builder 2 failed")),
        Ok(ArrayBuilder::new(-1)),
    ];
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    assert_eq!(stream.next_array().unwrap().unwrap().length(), 0);
    let err = stream.next_array().unwrap_err();
    assert_eq!((err.code(), err.message()), (errno::ENOMEM, "builder 2 failed"));
    assert_eq!(stream.next_array().unwrap_err(), err, "the stream stays failed");
    // A builder that fails to build travels as its own error.
    let batches = vec![Ok(ArrayBuilder::new(-1))];
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    let err = stream.next_array().unwrap_err();
    assert!(err.is_invalid_argument() && err.message().contains("negative"), "{err}");
}

/// A producer written against next_into, behaving as `mode` says.
struct InPlace {
    mode: u32,
    calls: u32,
    drops: Arc<AtomicUsize>,
}
impl ArrayProducer for InPlace {
    fn schema(&mut self) -> ferry_arrow::Result<Schema> {
        Schema::new("i", None)
    }
    fn next(&mut self) -> ferry_arrow::Result<Option<DeviceArray>> {
        DeviceArray::produce(|slot| self.next_into(slot))
    }
    fn next_into(&mut self, slot: &mut ArraySlot<'_>) -> ferry_arrow::Result<()> {
        self.calls += 1;
        let owner = Owned(vec![1, 2], self.drops.clone());
        let builder = ArrayBuilder::new(2)
            .buffer(Buffer::null())
            .buffer(Buffer::from_owner(owner));
        match self.mode {
            // Two batches, then the end (the slot left empty).
            0 if self.calls <= 2 => slot.build(builder),
            0 => Ok(()),
            1 => {
                slot.build(builder)?;
                panic!("after filling the slot");
            }
            2 => {
                slot.build(builder)?;
                Err(Error::new(errno::ENOMEM, "failed after filling the slot"))
            }
            _ => {
                slot.build(builder)?;
                // A second batch into the same slot is refused: it would
                // overwrite (leak) the first.
                let again = ArrayBuilder::new(1)
                    .buffer(Buffer::null())
                    .buffer(Buffer::from_static(&[1i32]));
                let err = slot.build(again).unwrap_err();
                assert!(err.is_invalid_argument());
                assert!(slot.put(batch(vec![1]).unwrap()).unwrap_err().is_invalid_argument());
                Ok(())
            }
        }
    }
}

fn in_place(mode: u32) -> (DeviceArrayStream, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let producer = InPlace {
        mode,
        calls: 0,
        drops: drops.clone(),
    };
    (
        DeviceArrayStream::from_producer(DeviceType::CPU, producer).unwrap(),
        drops,
    )
}

#[test]
fn next_into_fills_the_slot_or_leaves_it_empty_at_the_end() {
    let (stream, drops) = in_place(0);
    let lengths: Vec<i64> = stream.map(|b| b.unwrap().length()).collect();
    assert_eq!(lengths, vec![2, 2]);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "two batches released, one builder never exported"
    );
}

#[test]
fn a_failure_after_filling_the_slot_releases_the_batch_once() {
    for (mode, code, text) in [
        (1, errno::EIO, "after filling the slot"),
        (2, errno::ENOMEM, "failed after filling"),
    ] {
        let (mut stream, drops) = in_place(mode);
        let err = stream.next_array().unwrap_err();
        assert_eq!(err.code(), code, "mode {mode}: {err}");
        assert!(err.message().contains(text), "mode {mode}: {err}");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "mode {mode}: the written batch is released once"
        );
        drop(stream);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn a_filled_slot_refuses_a_second_batch() {
    let (mut stream, drops) = in_place(3);
    let batch = stream.next().unwrap().unwrap();
    assert_eq!(batch.length(), 2);
    drop(batch);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn produce_lends_a_slot() {
    let mut producer = InPlace {
        mode: 2,
        calls: 0,
        drops: Arc::new(AtomicUsize::new(0)),
    };
    let err = producer.next().unwrap_err();
    assert_eq!(err.code(), errno::ENOMEM);
    assert_eq!(
        producer.drops.load(Ordering::SeqCst),
        1,
        "the batch of a failed call is released"
    );
    let array = DeviceArray::produce(|slot| slot.put(batch(vec![4, 5, 6])?))
        .unwrap()
        .unwrap();
    assert_eq!(array.length(), 3);
    assert!(DeviceArray::produce(|_| Ok(())).unwrap().is_none());
}

#[test]
fn a_slot_refuses_null_and_live_structs() {
    assert!(unsafe { ArraySlot::from_raw(std::ptr::null_mut()) }
        .unwrap_err()
        .is_invalid_argument());
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { batch(vec![1]).unwrap().export_to(&mut raw).unwrap() };
    assert!(unsafe { ArraySlot::from_raw(&mut raw) }
        .unwrap_err()
        .is_invalid_argument());
    unsafe { sys::ferry_device_array_release(&mut raw) };
    let mut slot = unsafe { ArraySlot::from_raw(&mut raw) }.unwrap();
    slot.build_on(
        ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec(vec![3u8])),
        DeviceType::CPU,
        -1,
        None,
    )
    .unwrap();
    assert!(slot.is_filled());
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert_eq!(array.device_type(), DeviceType::CPU);
}

#[test]
fn next_ref_lends_each_batch_and_releases_it_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    // Through the C struct, as a foreign producer's stream would arrive.
    let mut raw = owned_batches(3, &drops);
    let mut stream = unsafe { DeviceArrayStream::from_raw(&mut raw).unwrap() };

    let first = stream.next_ref().unwrap().unwrap();
    assert_eq!(first.length(), 1);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "the lent batch is alive");
    let second = stream.next_ref().unwrap().unwrap();
    assert_eq!(second.length(), 2);
    let values = unsafe { second.buffer_slice::<i32>(1, 2) }.unwrap();
    assert_eq!(values, &[0, 1]);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the previous batch is released by the next call"
    );
    // Mixing with the owning forms is fine.
    let third = stream.next_array().unwrap().unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "next_array leaves the lent batch alone"
    );
    assert_eq!(third.length(), 3);
    drop(third);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert!(stream.next_ref().unwrap().is_none(), "end of stream");
    assert_eq!(drops.load(Ordering::SeqCst), 3, "the lent batch is released at the end");
    assert!(stream.next_ref().unwrap().is_none());
}

#[test]
fn dropping_the_stream_releases_the_lent_batch() {
    let (mut stream, drops) = in_place(0);
    assert_eq!(stream.next_ref().unwrap().unwrap().length(), 2);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(stream);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "released once, with the stream");
}

#[test]
fn next_ref_reports_producer_errors() {
    let batches = vec![batch(vec![1]), Err(Error::new(errno::ENOMEM, "no room"))];
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    assert!(stream.next_ref().unwrap().is_some());
    let err = stream.next_ref().unwrap_err();
    assert_eq!((err.code(), err.message()), (errno::ENOMEM, "no room"));
}

// ---- Plain ArrowArrayStream (the C stream interface) in and out ----

/// A plain C stream over `batches` (made by ferry's export, so that the
/// test reads it with raw C calls too).
fn c_stream(batches: Vec<ferry_arrow::Result<DeviceArray>>) -> sys::ArrowArrayStream {
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    let mut c = sys::ArrowArrayStream::default();
    unsafe { stream.export_to_c_stream(&mut c).unwrap() };
    assert!(c.release.is_some());
    c
}

#[test]
fn a_stream_exported_as_a_plain_c_stream_reads_with_raw_c_calls() {
    let drops = Arc::new(AtomicUsize::new(0));
    let batches = drop_counted(&drops, (0..3).map(|i| batch(vec![i; 2])));
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    let mut c = sys::ArrowArrayStream::default();
    unsafe {
        stream.export_to_c_stream(&mut c).unwrap();
        let mut schema = sys::ArrowSchema::default();
        assert_eq!((c.get_schema.unwrap())(&mut c, &mut schema), 0);
        assert_eq!(std::ffi::CStr::from_ptr(schema.format).to_str().unwrap(), "i");
        (schema.release.unwrap())(&mut schema);
        let seen = pull_c_stream(&mut c, |a| *(*a.buffers.add(1) as *const i32));
        assert_eq!(seen, vec![0, 1, 2]);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "the producer lives until the release");
        (c.release.unwrap())(&mut c);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1, "released once");
}

#[test]
fn a_plain_c_stream_imports_and_validates_its_batches() {
    let mut c = c_stream(vec![batch(vec![1, 2]), batch(vec![3])]);
    let mut stream = unsafe { DeviceArrayStream::from_c_stream(&mut c) }.unwrap();
    assert!(c.release.is_none(), "moved in: the caller's struct is left released");
    assert_eq!(stream.device_type(), DeviceType::CPU);
    assert_eq!(stream.validation(), ferry_arrow::Validation::Default);
    let schema = stream.schema().unwrap();
    let values: Vec<i32> = stream
        .map(|b| {
            let b = b.unwrap();
            assert_eq!(b.device_type(), DeviceType::CPU);
            b.host(&schema).unwrap().values::<i32>().unwrap().to_vec()
        })
        .flatten()
        .collect();
    assert_eq!(values, vec![1, 2, 3]);

    // A batch with one buffer too few for int32 is refused at DEFAULT,
    // unless the import opts out by name.
    let bad = || {
        vec![Ok(ArrayBuilder::new(1)
            .buffer(Buffer::from_vec(vec![1i32]))
            .build()
            .unwrap())]
    };
    let mut c = c_stream(bad());
    let mut stream = unsafe { DeviceArrayStream::from_c_stream(&mut c) }.unwrap();
    let err = stream.next_array().unwrap_err();
    assert!(err.message().starts_with("the array fails validation: "), "{err}");
    assert_eq!(stream.next_array().unwrap_err(), err, "the same error again");
    let mut c = c_stream(bad());
    let mut stream = unsafe { DeviceArrayStream::from_c_stream_with(&mut c, ferry_arrow::Validation::None) }.unwrap();
    assert_eq!(stream.next_array().unwrap().unwrap().length(), 1);
}

#[test]
fn a_plain_c_stream_error_travels_and_is_sticky() {
    let calls = Arc::new(AtomicUsize::new(0));
    let producer = FailsThenRecovers::at_call_2(&calls);
    let stream = DeviceArrayStream::from_producer(DeviceType::CPU, producer).unwrap();
    let mut c = sys::ArrowArrayStream::default();
    unsafe { stream.export_to_c_stream(&mut c).unwrap() };
    let mut stream = unsafe { DeviceArrayStream::from_c_stream(&mut c) }.unwrap();
    assert_eq!(stream.next().unwrap().unwrap().length(), 1);
    let err = stream.next().unwrap().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert!(err.message().contains("call 2 failed"), "{err}");
    for _ in 0..3 {
        assert_eq!(stream.next_array().unwrap_err(), err);
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "get_next was not called after the error"
    );
}

#[test]
fn plain_c_stream_import_and_export_refuse_bad_arguments() {
    // NULL and released inputs: EINVAL, nothing taken.
    let err = unsafe { DeviceArrayStream::from_c_stream(std::ptr::null_mut()) }.unwrap_err();
    assert!(err.is_invalid_argument());
    let mut released = sys::ArrowArrayStream::default();
    let err = unsafe { DeviceArrayStream::from_c_stream(&mut released) }.unwrap_err();
    assert!(err.is_invalid_argument());

    // A live output struct is not overwritten; NULL is refused.
    let mut live = c_stream(vec![batch(vec![1])]);
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, vec![batch(vec![2])], int_schema()).unwrap();
    let err = unsafe { stream.export_to_c_stream(&mut live) }.unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    let back = unsafe { DeviceArrayStream::from_c_stream(&mut live) }.unwrap();
    assert_eq!(back.count(), 1, "the live stream is untouched");
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, vec![batch(vec![2])], int_schema()).unwrap();
    assert!(unsafe { stream.export_to_c_stream(std::ptr::null_mut()) }
        .unwrap_err()
        .is_invalid_argument());

    // A stream of another device is refused without TO_HOST; with it the
    // batches arrive on the host.
    let sim = ferry_arrow::Device::sim(0).unwrap();
    let sim_batches = |n: usize| {
        let sim = sim.clone();
        (0..n).map(move |_| {
            let memory = sim.allocate(8)?;
            ArrayBuilder::new(2)
                .buffer(Buffer::null())
                .buffer(Buffer::from_device(memory))
                .build_on(DeviceType::SIM, 0, None)
        })
    };
    let stream = DeviceArrayStream::from_iter(DeviceType::SIM, sim_batches(1), int_schema()).unwrap();
    let mut c = sys::ArrowArrayStream::default();
    let err = unsafe { stream.export_to_c_stream(&mut c) }.unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert!(c.release.is_none());
    let stream = DeviceArrayStream::from_iter(DeviceType::SIM, sim_batches(2), int_schema()).unwrap();
    unsafe {
        stream
            .export_to_c_stream_with(
                &mut c,
                ferry_arrow::Validation::Default,
                ferry_arrow::CStreamFlags::TO_HOST,
            )
            .unwrap()
    };
    let back = unsafe { DeviceArrayStream::from_c_stream(&mut c) }.unwrap();
    let devices: Vec<DeviceType> = back.map(|b| b.unwrap().device_type()).collect();
    assert_eq!(devices, vec![DeviceType::CPU, DeviceType::CPU]);

    // A stream that has already failed is not exported (its producer must
    // not be called again): the same error.
    let mut failed = DeviceArrayStream::from_iter(
        DeviceType::CPU,
        vec![Err(Error::new(errno::ENOMEM, "gone"))] as Vec<ferry_arrow::Result<DeviceArray>>,
        int_schema(),
    )
    .unwrap();
    let err = failed.next_array().unwrap_err();
    assert_eq!(unsafe { failed.export_to_c_stream(&mut c) }.unwrap_err(), err);
}
