//! Producing on the simulated device from Rust: device buffers, streams,
//! events, and the consumer's wait on the sync event (strict mode makes a
//! read before the wait visible as poison).
use std::sync::Arc;

use ferry_arrow::{ArrayBuilder, Buffer, Device, DeviceArray, DeviceType, ExportPolicy, Schema};

/// Exports `values` as an int32 array on sim device `id`, copied there
/// asynchronously on a producer stream that travels with the array (it must
/// outlive the queued copy).
fn sim_int32(values: &[i32], id: i64, policy: ExportPolicy) -> DeviceArray {
    let sim = Device::sim(id).unwrap();
    let stream = Arc::new(sim.create_stream().unwrap());
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut buffer = sim.allocate(bytes.len()).unwrap();
    unsafe { buffer.copy_from_host_async(&bytes, &stream).unwrap() };
    ArrayBuilder::new(values.len() as i64)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .keep_alive(stream.clone())
        .build_async(&stream, policy)
        .unwrap()
}

fn read_i32(array: &DeviceArray, n: usize) -> Vec<i32> {
    unsafe { array.buffer_slice::<i32>(1, n) }.unwrap().to_vec()
}

#[test]
fn consumer_waits_on_the_event_before_reading() {
    ferry_arrow::sim_set_strict(true);
    let values = [7, 8, 9, 10];
    let array = sim_int32(&values, 1, ExportPolicy::RecordEvent);
    assert_eq!(array.device_type(), DeviceType::SIM);
    assert_eq!(array.device_id(), 1);
    assert!(!array.sync_event().is_null(), "an event is exported");

    // Strict mode: the queued copy has not run, the memory reads poison.
    let poison = ferry_arrow::sys::FERRY_SIM_POISON_BYTE as u8;
    let early = unsafe { array.buffer_slice::<u8>(1, 16) }.unwrap().to_vec();
    assert!(
        early.iter().all(|b| *b == poison),
        "read before wait sees poison: {early:?}"
    );

    array.wait().unwrap();
    assert_eq!(read_i32(&array, 4), values);
    array.validate(&Schema::new("i", None).unwrap(), true).unwrap();
}

#[test]
fn a_consumer_stream_can_wait_without_blocking_the_host() {
    let array = sim_int32(&[1, 2, 3], 2, ExportPolicy::RecordEvent);
    let sim = Device::sim(2).unwrap();
    let consumer = sim.create_stream().unwrap();
    array.wait_on(&consumer).unwrap();
    consumer.synchronize().unwrap();
    assert_eq!(read_i32(&array, 3), [1, 2, 3]);
}

#[test]
fn synchronize_policy_exports_no_event() {
    let array = sim_int32(&[4, 5], 0, ExportPolicy::Synchronize);
    assert!(array.sync_event().is_null());
    assert_eq!(read_i32(&array, 2), [4, 5]);
}

#[test]
fn copy_to_cpu_waits_and_deep_copies() {
    let array = sim_int32(&[11, 12, 13], 3, ExportPolicy::RecordEvent);
    let schema = Schema::new("i", None).unwrap();
    let cpu = array.copy_to(&schema, DeviceType::CPU, -1).unwrap();
    assert_eq!(cpu.device_type(), DeviceType::CPU);
    assert!(cpu.sync_event().is_null());
    assert_eq!(read_i32(&cpu, 3), [11, 12, 13]);
}

#[test]
fn an_explicit_event_is_owned_by_the_array() {
    let sim = Device::sim(0).unwrap();
    let stream = Arc::new(sim.create_stream().unwrap());
    let mut buffer = sim.allocate(4).unwrap();
    unsafe { buffer.copy_from_host_async(&42i32.to_ne_bytes(), &stream).unwrap() };
    let event = sim.create_event().unwrap();
    event.record(&stream).unwrap();
    let event_ptr = event.as_ptr();
    let array = ArrayBuilder::new(1)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .keep_alive(stream)
        .build_on(DeviceType::SIM, 0, Some(event))
        .unwrap();
    assert_eq!(array.sync_event(), event_ptr);
    array.wait().unwrap();
    assert_eq!(read_i32(&array, 1), [42]);
}

#[test]
fn host_reads_the_sim_device_in_place() {
    let array = sim_int32(&[1], 0, ExportPolicy::Synchronize);
    let schema = Schema::new("i", None).unwrap();
    // The sim device is host-accessible, so this works without a copy.
    let host = array.host(&schema).unwrap();
    assert_eq!(host.buffer(1).unwrap().unwrap().len(), 4);
    assert_eq!(
        host.values::<i32>().unwrap().as_ptr() as *const std::os::raw::c_void,
        array.buffer(1)
    );
}

#[test]
fn unavailable_devices_say_why() {
    match Device::resolve(DeviceType::CUDA, 0) {
        Ok(dev) => eprintln!("CUDA is available here: {dev:?}"),
        Err(e) => {
            assert!(e.is_unavailable(), "{e}");
            assert!(!e.message().is_empty());
        }
    }
    let err = Device::sim(ferry_arrow::SIM_DEVICE_COUNT).unwrap_err();
    assert_ne!(err.code(), 0);
}

#[test]
fn device_buffer_copies_check_sizes() {
    let sim = Device::sim(0).unwrap();
    let mut buffer = sim.allocate(4).unwrap();
    let err = buffer.copy_from_host(&[0u8; 8]).unwrap_err();
    assert!(err.message().contains("does not fit"), "{err}");
}

#[test]
fn dlpack_refusals_hand_the_input_back() {
    // Nulls have no DLPack form: the array comes back untouched.
    let (array, schema) = ferry_arrow::export_primitive(vec![1i32, 2], Some(&[true, false])).unwrap();
    let rejected = array.to_dlpack(&schema).unwrap_err();
    assert!(rejected.error().is_invalid_argument(), "{}", rejected.error());
    let array = rejected.into_value();
    assert_eq!(array.null_count(), 1);
    assert!(unsafe { ferry_arrow::DlpackTensor::from_raw(std::ptr::null_mut()) }.is_err());
    // A sim tensor round trip keeps the device and the memory.
    let (array, schema) = ferry_arrow::export_primitive(vec![9i64, 8], None).unwrap();
    let on_sim = array.move_to(&schema, DeviceType::SIM, 1).unwrap();
    let address = on_sim.buffer(1);
    let tensor = on_sim.to_dlpack(&schema).unwrap();
    assert_eq!(tensor.device(), (DeviceType::SIM, 1));
    let (back, schema) = DeviceArray::from_dlpack(tensor).unwrap();
    assert_eq!((back.device_type(), back.buffer(1)), (DeviceType::SIM, address));
    assert_eq!(back.host(&schema).unwrap().values::<i64>().unwrap(), &[9, 8]);
}
