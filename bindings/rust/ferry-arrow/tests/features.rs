//! The Rust column of docs/features.md: one test per capability, named
//! `feature_<id>`, calling the API the table names for real (on the CPU and
//! on the simulated device, whose strict mode makes a missed wait visible).
//! scripts/check_features.sh checks that every "yes" cell of the Rust column
//! has its test here and that no "no" cell has one. The two arrow-rs
//! capabilities need the `arrow` feature (bindings/rust/test.sh enables it).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferry_arrow::{
    sys, ArrayBuilder, Buffer, Device, DeviceArray, DeviceArrayStream, DeviceType, Event, ExportPolicy, Schema,
    StreamHandle,
};

/// Counts drops: the release of what a producer exported.
mod common;
use common::{drop_counted, pull_c_stream, DropCount};

fn int32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// `values` on sim device 0, copied there on a producer stream that the
/// array keeps alive, exported with the event recorded on that stream (still
/// pending in strict mode).
fn sim_int32(values: &[i32]) -> DeviceArray {
    ferry_arrow::sim_set_strict(true);
    let sim = Device::sim(0).unwrap();
    let stream = Arc::new(sim.create_stream().unwrap());
    let mut buffer = sim.allocate(values.len() * 4).unwrap();
    unsafe { buffer.copy_from_host_async(&int32_bytes(values), &stream).unwrap() };
    ArrayBuilder::new(values.len() as i64)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .keep_alive(stream.clone())
        .build_async(&stream, ExportPolicy::RecordEvent)
        .unwrap()
}

fn first_byte(array: &DeviceArray) -> u8 {
    unsafe { array.buffer_slice::<u8>(1, 1) }.unwrap()[0]
}

fn poison() -> u8 {
    sys::FERRY_SIM_POISON_BYTE as u8
}

fn int32_schema() -> Schema {
    Schema::new("i", Some("v")).unwrap()
}

#[test]
fn feature_export_array() {
    let drops = Arc::new(AtomicUsize::new(0));
    let values = vec![1i32, 2, 3];
    let address = values.as_ptr() as *const std::os::raw::c_void;
    let array = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(values))
        .keep_alive(DropCount(drops.clone()))
        .build()
        .unwrap();
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { array.export_to(&mut raw).unwrap() };
    assert_eq!(unsafe { *raw.array.buffers.add(1) }, address, "zero-copy");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    unsafe { (raw.array.release.unwrap())(&mut raw.array) }; // a foreign consumer's release
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the release reached Rust once");
}

#[test]
fn feature_import_array() {
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { sim_int32(&[7, 8, 9]).export_to(&mut raw).unwrap() };
    let schema = int32_schema();
    // Validated on import (DEFAULT: structure only, so nothing is read and
    // nothing waits yet).
    let array = unsafe { DeviceArray::from_raw(&mut raw, &schema) }.unwrap();
    assert!(raw.array.release.is_none(), "moved in");
    assert_eq!(first_byte(&array), poison(), "not waited on yet");
    array.validate(&schema, false).unwrap();
    array.wait().unwrap();
    assert_eq!(array.host(&schema).unwrap().values::<i32>().unwrap(), &[7, 8, 9]);
}

fn three_batches() -> DeviceArrayStream {
    let batches = (1..=3).map(|n: i32| {
        Ok(ArrayBuilder::new(n as i64)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec((1..=n).collect::<Vec<i32>>())))
    });
    DeviceArrayStream::from_iter(DeviceType::CPU, batches, int32_schema()).unwrap()
}

/// The sum of each batch of a CPU int32 stream, read on the host.
fn batch_sums(mut stream: DeviceArrayStream) -> Vec<i32> {
    let schema = stream.schema().unwrap();
    let mut sums = Vec::new();
    for batch in stream {
        let batch = batch.unwrap();
        assert_eq!(batch.device_type(), DeviceType::CPU);
        sums.push(
            batch
                .host(&schema)
                .unwrap()
                .values::<i32>()
                .unwrap()
                .iter()
                .sum::<i32>(),
        );
    }
    sums
}

#[test]
fn feature_export_stream() {
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { three_batches().export_to(&mut raw).unwrap() };
    assert!(raw.release.is_some());
    assert_eq!(raw.device_type, DeviceType::CPU.raw());
    let mut out = sys::ArrowDeviceArray::default();
    let rc = unsafe { (raw.get_next.unwrap())(&mut raw, &mut out) };
    assert_eq!(rc, 0);
    assert_eq!(out.array.length, 1);
    unsafe { (out.array.release.unwrap())(&mut out.array) };
    unsafe { (raw.release.unwrap())(&mut raw) };
    assert!(raw.release.is_none());
}

#[test]
fn feature_import_stream() {
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { three_batches().export_to(&mut raw).unwrap() };
    let mut stream = unsafe { DeviceArrayStream::from_raw(&mut raw) }.unwrap();
    assert_eq!(stream.schema().unwrap().format(), "i");
    assert_eq!(batch_sums(stream), [1, 3, 6]);
}

#[test]
fn feature_import_c_stream() {
    // A plain ArrowArrayStream (CPU batches, as DuckDB or arrow-rs hand
    // out), read with raw C calls below to show it is one.
    let mut raw = sys::ArrowArrayStream::default();
    unsafe { three_batches().export_to_c_stream(&mut raw).unwrap() };
    let stream = unsafe { DeviceArrayStream::from_c_stream(&mut raw) }.unwrap();
    assert!(raw.release.is_none(), "moved in");
    assert_eq!(batch_sums(stream), [1, 3, 6]);
}

#[test]
fn feature_export_c_stream() {
    let mut raw = sys::ArrowArrayStream::default();
    unsafe {
        three_batches().export_to_c_stream(&mut raw).unwrap();
        assert_eq!(pull_c_stream(&mut raw, |a| a.length), [1, 2, 3]);
        (raw.release.unwrap())(&mut raw);
    }
}

#[test]
fn feature_to_host() {
    let array = sim_int32(&[4, 5]);
    let host = array.to_host(&int32_schema()).unwrap();
    assert_eq!(host.device_type(), DeviceType::CPU);
    assert!(host.sync_event().is_null());
    assert_eq!(host.host(&int32_schema()).unwrap().values::<i32>().unwrap(), &[4, 5]);
}

#[test]
fn feature_copy_to_device() {
    let (array, schema) = ferry_arrow::export_primitive(vec![1i32, 2, 3], None).unwrap();
    let on_sim = array.copy_to(&schema, DeviceType::SIM, 2).unwrap();
    assert_eq!((on_sim.device_type(), on_sim.device_id()), (DeviceType::SIM, 2));
    assert_ne!(on_sim.buffer(1), array.buffer(1), "a copy");
    let back = on_sim.copy_to(&schema, DeviceType::CPU, -1).unwrap();
    assert_eq!(back.host(&schema).unwrap().values::<i32>().unwrap(), &[1, 2, 3]);
    assert_eq!(
        array.host(&schema).unwrap().values::<i32>().unwrap(),
        &[1, 2, 3],
        "the source stays"
    );
}

#[test]
fn feature_move_to_device() {
    let (array, schema) = ferry_arrow::export_primitive(vec![9i64, 8], None).unwrap();
    let address = array.buffer(1);
    let same = array.move_to(&schema, DeviceType::CPU, -1).unwrap();
    assert_eq!(same.buffer(1), address, "the same device: no copy");
    let on_sim = same.move_to(&schema, DeviceType::SIM, 1).unwrap();
    assert_eq!(on_sim.device_type(), DeviceType::SIM);
    let back = on_sim.move_to(&schema, DeviceType::CPU, -1).unwrap();
    assert_eq!(back.host(&schema).unwrap().values::<i64>().unwrap(), &[9, 8]);
}

#[test]
fn feature_consumer_stream_array() {
    let array = sim_int32(&[3, 2, 1]);
    let consumer = Device::sim(0).unwrap().create_stream().unwrap();
    assert_eq!(first_byte(&array), poison());
    array.wait_on(&consumer).unwrap(); // the host does not block
    consumer.synchronize().unwrap();
    assert_eq!(first_byte(&array), 3);
}

#[test]
fn feature_consumer_stream_batch() {
    let stream = DeviceArrayStream::from_arrays(DeviceType::SIM, vec![sim_int32(&[6, 7])], int32_schema()).unwrap();
    let mut stream = stream;
    let consumer = Device::sim(0).unwrap().create_stream().unwrap();
    let batch = stream.next_on(&consumer).unwrap().expect("one batch");
    consumer.synchronize().unwrap();
    assert_eq!(first_byte(&batch), 6);
    assert!(stream.next_on(&consumer).unwrap().is_none());
}

#[test]
fn feature_wrap_native_stream() {
    ferry_arrow::sim_set_strict(true);
    let sim = Device::sim(0).unwrap();
    // The user's own stream, made outside ferry-arrow (here: the raw C API).
    let mut raw_stream: *mut std::os::raw::c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { sys::ferry_device_stream_create(sim.as_ptr(), &mut raw_stream, std::ptr::null_mut()) },
        0
    );
    let users_stream = unsafe { StreamHandle::from_raw(sim, raw_stream) };
    let mut buffer = sim.allocate(4).unwrap();
    unsafe { buffer.copy_from_host_async(&int32_bytes(&[42]), &users_stream).unwrap() };
    let array = ArrayBuilder::new(1)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .build_async(&users_stream, ExportPolicy::RecordEvent)
        .unwrap();
    assert!(!array.sync_event().is_null(), "an event recorded on the user's stream");
    assert_eq!(first_byte(&array), poison());
    array.wait().unwrap();
    assert_eq!(first_byte(&array), 42);
    drop(array);
    assert_eq!(
        unsafe { sys::ferry_device_stream_destroy(sim.as_ptr(), raw_stream, std::ptr::null_mut()) },
        0
    );
}

#[test]
fn feature_wrap_native_event() {
    let sim = Device::sim(0).unwrap();
    let stream = sim.create_stream().unwrap();
    let mut buffer = sim.allocate(4).unwrap();
    unsafe { buffer.copy_from_host_async(&int32_bytes(&[5]), &stream).unwrap() };
    let native = sim.create_event().unwrap();
    native.record(&stream).unwrap();
    let raw = native.into_raw(); // the user's own event, as another library would hand it over
    let destroyed = Arc::new(AtomicUsize::new(0));
    let counter = destroyed.clone();
    let event = unsafe {
        Event::from_raw(sim, raw, move |raw| {
            drop(Event::from_raw_ferry(sim, raw));
            counter.fetch_add(1, Ordering::SeqCst);
        })
    };
    let array = ArrayBuilder::new(1)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .build_on(DeviceType::SIM, 0, Some(event))
        .unwrap();
    assert_eq!(array.sync_event(), raw, "the user's event is the sync event");
    array.wait().unwrap();
    assert_eq!(first_byte(&array), 5);
    drop(array);
    assert_eq!(destroyed.load(Ordering::SeqCst), 1, "destroyed once, at release");
}

#[test]
fn feature_dlpack_export() {
    let (array, schema) = ferry_arrow::export_primitive(vec![1.5f64, 2.5], None).unwrap();
    let address = array.buffer(1);
    let tensor = array.to_dlpack(&schema).unwrap();
    assert_eq!(tensor.data() as *const std::os::raw::c_void, address, "zero-copy");
    assert_eq!(tensor.shape(), &[2]);
    assert!(tensor.is_read_only());
    assert_eq!(tensor.device(), (DeviceType::CPU, 0));
}

#[test]
fn feature_dlpack_import() {
    let (array, schema) = ferry_arrow::export_primitive(vec![3i32, 4, 5], None).unwrap();
    let tensor = array.to_dlpack(&schema).unwrap(); // any DLPack 1.x producer's tensor
    let data = tensor.data();
    let (back, schema) = DeviceArray::from_dlpack(tensor).unwrap();
    assert_eq!(schema.format(), "i");
    assert_eq!(back.buffer(1), data as *const std::os::raw::c_void);
    assert_eq!(back.host(&schema).unwrap().values::<i32>().unwrap(), &[3, 4, 5]);
}

#[cfg(feature = "arrow")]
#[test]
fn feature_arrow_array_interop() {
    use ferry_arrow::arrow::arrow_array::{Array, Int32Array};
    #[allow(unused_imports)]
    use ferry_arrow::arrow::{ArrowArrayExt, ArrowSchemaExt};
    let input = Int32Array::from(vec![Some(1), None, Some(3)]);
    let (array, schema) = DeviceArray::from_arrow(&input).unwrap();
    assert_eq!(
        array.buffer(1),
        input.values().as_ptr() as *const std::os::raw::c_void,
        "zero-copy"
    );
    let output = array.to_arrow(&schema).unwrap();
    assert_eq!(output.as_any().downcast_ref::<Int32Array>().unwrap(), &input);
}

#[cfg(feature = "arrow")]
#[test]
fn feature_arrow_stream_bridge() {
    use ferry_arrow::arrow::arrow_array::{Int32Array, RecordBatch, RecordBatchIterator, RecordBatchReader};
    use ferry_arrow::arrow::arrow_schema::{ArrowError, DataType, Field, Schema as ArrowSchema};
    #[allow(unused_imports)]
    use ferry_arrow::arrow::{ArrowReader, ArrowStreamExt};
    let schema = Arc::new(ArrowSchema::new(vec![Field::new("a", DataType::Int32, true)]));
    let batches: Vec<RecordBatch> = (0..2)
        .map(|b| RecordBatch::try_new(schema.clone(), vec![Arc::new(Int32Array::from(vec![b, b + 1]))]).unwrap())
        .collect();
    let reader = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone());
    let stream = DeviceArrayStream::from_arrow_reader(reader).unwrap();
    let reader: ArrowReader = stream.into_arrow_reader().unwrap();
    assert_eq!(reader.schema(), schema);
    let output: Vec<RecordBatch> = reader.collect::<Result<_, ArrowError>>().unwrap();
    assert_eq!(output, batches);
}

#[test]
fn feature_validate() {
    // utf8 offsets that run backwards: the default level reads no buffer
    // contents, the full one does and reports it.
    let array = ArrayBuilder::new(2)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(vec![0i32, 3, 1]))
        .buffer(Buffer::from_vec(b"abc".to_vec()))
        .build()
        .unwrap();
    let schema = Schema::new("u", Some("s")).unwrap();
    array.validate(&schema, false).unwrap();
    let err = array.validate(&schema, true).unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert!(err.message().contains("offset"), "{err}");
}

#[test]
fn feature_devices() {
    let sim = Device::resolve(DeviceType::SIM, 3).unwrap();
    assert_eq!(sim.id(), 3);
    match Device::resolve(DeviceType::CUDA, 0) {
        Ok(cuda) => assert_eq!(cuda.device_type(), DeviceType::CUDA),
        Err(e) => assert!(e.is_unavailable() && !e.message().is_empty(), "{e}"), // the reason
    }
    let before = sim.live_allocations();
    let memory = sim.allocate(256).unwrap();
    assert_eq!(memory.len(), 256);
    assert_eq!(sim.live_allocations(), before + 1);
    drop(memory);
    assert_eq!(sim.live_allocations(), before);
}

#[test]
fn feature_export_async() {
    // Sim batches with pending events, pushed from a ferry thread into an
    // async consumer; the stream's producer is released once at the end.
    let released = Arc::new(AtomicUsize::new(0));
    let batches = drop_counted(&released, (0..3).map(|i| Ok(sim_int32(&[i, i + 1]))));
    let stream = DeviceArrayStream::from_iter(DeviceType::SIM, batches, int32_schema()).unwrap();
    let mut consumer = ferry_arrow::AsyncDeviceStream::new(2).unwrap();
    unsafe { stream.export_async(consumer.handler()) }.unwrap();
    let schema = consumer.schema().unwrap();
    let mut firsts = Vec::new();
    for batch in consumer.by_ref() {
        let batch = batch.unwrap();
        assert_eq!(batch.device_type(), DeviceType::SIM);
        firsts.push(batch.host(&schema).unwrap().value::<i32>(0).unwrap()); // host() waits
    }
    assert_eq!(firsts, vec![0, 1, 2]);
    assert!(consumer.wait_released(Some(std::time::Duration::from_secs(10))));
    assert_eq!(released.load(Ordering::SeqCst), 1);

    // The same on the calling thread, with the consumer read on another.
    let mut consumer = ferry_arrow::AsyncDeviceStream::new(1).unwrap();
    let handler = consumer.handler() as usize;
    let reader = std::thread::spawn(move || consumer.map(|b| b.unwrap().length()).sum::<i64>());
    let stream =
        DeviceArrayStream::from_iter(DeviceType::SIM, (0..4).map(|i| Ok(sim_int32(&[i]))), int32_schema()).unwrap();
    unsafe { stream.export_async_run(handler as *mut sys::ArrowAsyncDeviceStreamHandler) }.unwrap();
    assert_eq!(reader.join().unwrap(), 4);
}

#[test]
fn feature_import_async() {
    // A producer in C terms (any runtime's `int f(handler*)`): here the
    // core's pull-to-push driver over a stream that went through the C
    // struct.
    let stream = DeviceArrayStream::from_iter(
        DeviceType::CPU,
        (0..5).map(|i| ferry_arrow::export_primitive(vec![i; 2], None).map(|(a, _)| a)),
        int32_schema(),
    )
    .unwrap();
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw).unwrap() };
    let mut consumer = ferry_arrow::AsyncDeviceStream::new(3).unwrap();
    let rc = unsafe {
        sys::ferry_async_export_stream(
            &mut raw,
            consumer.handler(),
            sys::FERRY_ASYNC_EXPORT_DEFAULT,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let schema = consumer
        .schema_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    assert_eq!(schema.format(), "i");
    let first = consumer
        .next_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap()
        .unwrap();
    assert_eq!(first.host(&schema).unwrap().values::<i32>().unwrap(), &[0, 0]);
    let rest: Vec<i32> = consumer
        .by_ref()
        .map(|b| b.unwrap().host(&schema).unwrap().value::<i32>(1).unwrap())
        .collect();
    assert_eq!(rest, vec![1, 2, 3, 4]);
    assert!(consumer.next().is_none(), "the end stays the end");
    assert_eq!(consumer.violations(), 0);
    assert!(consumer.readiness_fd().is_some());
}
