//! Streams: any iterator exported through ferry_stream_init, consumed as an
//! Iterator of Results; errors and panics travel as code + last error; the
//! producer is dropped exactly once at release.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferry::sys;
use ferry::{errno, ArrayBuilder, ArrayProducer, ArraySlot, Buffer, DeviceArray, DeviceArrayStream, DeviceType, Error, Schema};

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

#[test]
fn an_iterator_of_builders_is_built_in_the_consumers_struct() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let batches = (1..=4).map(move |n: i32| {
        Ok(ArrayBuilder::new(n as i64)
            .buffer(Buffer::null())
            .buffer(Buffer::from_owner(Owned((0..n).collect(), d.clone()))))
    });
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, int_schema(), batches).unwrap();
    // Through the C struct, pulled with raw calls as a C consumer would.
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw).unwrap() };
    let mut lengths = Vec::new();
    loop {
        let mut out = sys::ArrowDeviceArray::default();
        let rc = unsafe { sys::ferry_stream_get_next(&mut raw, &mut out, std::ptr::null_mut()) };
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
    assert_eq!(drops.load(Ordering::SeqCst), 4, "each batch's owner dropped once, at its release");
    unsafe { sys::ferry_stream_release(&mut raw) };
}

#[test]
fn an_error_item_among_builders_fails_that_call_only() {
    let batches = vec![
        Ok(ArrayBuilder::new(0).buffer(Buffer::null()).buffer(Buffer::null())),
        Err(Error::new(errno::ENOMEM, "builder 2 failed")),
        Ok(ArrayBuilder::new(-1)),
    ];
    let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, int_schema(), batches).unwrap();
    assert_eq!(stream.next_array().unwrap().unwrap().length(), 0);
    let err = stream.next_array().unwrap_err();
    assert_eq!((err.code(), err.message()), (errno::ENOMEM, "builder 2 failed"));
    // A builder that fails to build travels as its own error.
    let err = stream.next_array().unwrap_err();
    assert!(err.is_invalid_argument() && err.message().contains("negative"), "{err}");
}

/// A producer whose next_into misbehaves in the way `mode` says.
struct Liar {
    mode: u32,
    drops: Arc<AtomicUsize>,
}
impl ArrayProducer for Liar {
    fn schema(&mut self) -> ferry::Result<Schema> {
        Schema::new("i", None)
    }
    fn next(&mut self) -> ferry::Result<Option<DeviceArray>> {
        DeviceArray::produce(|slot| self.next_into(slot))
    }
    fn next_into(&mut self, slot: &mut ArraySlot<'_>) -> ferry::Result<bool> {
        let owner = Owned(vec![1, 2], self.drops.clone());
        let builder = ArrayBuilder::new(2).buffer(Buffer::null()).buffer(Buffer::from_owner(owner));
        match self.mode {
            0 => Ok(true), // claims a batch, writes none
            1 => {
                slot.build(builder)?; // writes a batch, claims the end
                Ok(false)
            }
            2 => {
                slot.build(builder)?;
                panic!("after filling the slot");
            }
            _ => {
                slot.build(builder)?;
                // A second batch into the same slot is refused: it would
                // overwrite (leak) the first.
                let again = ArrayBuilder::new(1).buffer(Buffer::null()).buffer(Buffer::from_static(&[1i32]));
                let err = slot.build(again).unwrap_err();
                assert!(err.is_invalid_argument());
                Ok(true)
            }
        }
    }
}

#[test]
fn next_into_answers_that_disagree_with_the_slot_are_errors_and_nothing_leaks() {
    for (mode, expect) in [(0, "left the slot empty"), (1, "filled the slot"), (2, "after filling the slot")] {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut stream = DeviceArrayStream::from_producer(
            DeviceType::CPU,
            Liar {
                mode,
                drops: drops.clone(),
            },
        )
        .unwrap();
        let err = stream.next_array().unwrap_err();
        assert_eq!(err.code(), errno::EIO, "mode {mode}: {err}");
        assert!(err.message().contains(expect), "mode {mode}: {err}");
        // Built into the slot and released by the trampoline (modes 1, 2),
        // or never exported and dropped with the builder (mode 0): once.
        assert_eq!(drops.load(Ordering::SeqCst), 1, "mode {mode}: the owner is dropped exactly once");
        drop(stream);
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let mut stream = DeviceArrayStream::from_producer(
        DeviceType::CPU,
        Liar {
            mode: 3,
            drops: drops.clone(),
        },
    )
    .unwrap();
    let batch = stream.next().unwrap().unwrap();
    assert_eq!(batch.length(), 2);
    drop(batch);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn produce_lends_a_slot_and_checks_the_answer() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut liar = Liar {
        mode: 1,
        drops: drops.clone(),
    };
    let err = liar.next().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the unclaimed batch is released");
    let array = DeviceArray::produce(|slot| {
        slot.put(batch(vec![4, 5, 6])?)?;
        Ok(true)
    })
    .unwrap()
    .unwrap();
    assert_eq!(array.length(), 3);
}

#[test]
fn a_slot_refuses_null_and_live_structs() {
    assert!(unsafe { ArraySlot::from_raw(std::ptr::null_mut()) }.unwrap_err().is_invalid_argument());
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { batch(vec![1]).unwrap().export_to(&mut raw).unwrap() };
    assert!(unsafe { ArraySlot::from_raw(&mut raw) }.unwrap_err().is_invalid_argument());
    unsafe { sys::ferry_device_array_release(&mut raw) };
    let mut slot = unsafe { ArraySlot::from_raw(&mut raw) }.unwrap();
    slot.build_on(
        ArrayBuilder::new(1).buffer(Buffer::null()).buffer(Buffer::from_vec(vec![3u8])),
        DeviceType::CPU,
        -1,
        None,
    )
    .unwrap();
    assert!(slot.is_filled());
    let array = unsafe { DeviceArray::from_raw(&mut raw) }.unwrap();
    assert_eq!(array.device_type(), DeviceType::CPU);
}
