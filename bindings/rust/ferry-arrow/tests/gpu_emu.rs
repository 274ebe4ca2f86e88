//! The GPU API on CUDA and ROCm device memory, through the core's driver
//! emulations (tests/gpu/emu): test.sh builds them and runs this file with
//! FERRY_CUDA_LIBRARY and FERRY_HIP_LIBRARY pointing at them. Without those
//! variables every test here is skipped, loudly. The emulations' device
//! memory is not host-accessible as far as ferry is concerned, so each test
//! goes through the explicit ways to the host (`to_host`, `copy_to`).
use std::sync::{Arc, Mutex, MutexGuard};

use ferry_arrow::{
    ArrayBuilder, Buffer, Device, DeviceArray, DeviceArrayStream, DeviceStream, DeviceType, DlpackTensor, Event,
    ExportPolicy, Schema, StreamHandle,
};

/// The emulated device of `device_type`, or None (skipped, loudly).
fn emulated(device_type: DeviceType) -> Option<Device> {
    let var = if device_type == DeviceType::CUDA {
        "FERRY_CUDA_LIBRARY"
    } else {
        "FERRY_HIP_LIBRARY"
    };
    if std::env::var_os(var).is_none() {
        eprintln!(
            "SKIPPED: {device_type} through the driver emulation: {var} is not set (bindings/rust/test.sh sets it)"
        );
        return None;
    }
    Some(
        Device::resolve(device_type, 0)
            .unwrap_or_else(|e| panic!("{var} is set but {device_type} 0 is unavailable: {e}")),
    )
}

const GPUS: [DeviceType; 2] = [DeviceType::CUDA, DeviceType::ROCM];

/// One test at a time: they compare the devices' allocation counters.
static SERIAL: Mutex<()> = Mutex::new(());

/// Each emulated GPU (type and device) with the lock that keeps the tests
/// serial, held while the caller's loop body runs on it.
fn emulated_gpus() -> impl Iterator<Item = (MutexGuard<'static, ()>, DeviceType, Device)> {
    GPUS.into_iter().filter_map(|t| {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        emulated(t).map(|device| (serial, t, device))
    })
}

/// int32 `values` copied to `device` on `stream` and exported with a
/// recorded event (the stream travels with the array: it must outlive the
/// queued copy).
fn device_int32(device: Device, stream: &Arc<DeviceStream>, values: &[i32]) -> DeviceArray {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut memory = device.allocate(bytes.len()).unwrap();
    // The source must outlive the asynchronous copy: it goes with the array.
    let bytes = Arc::new(bytes);
    unsafe { memory.copy_from_host_async(&bytes, stream).unwrap() };
    ArrayBuilder::new(values.len() as i64)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(memory))
        .keep_alive(stream.clone())
        .keep_alive(bytes)
        .build_async(stream, ExportPolicy::RecordEvent)
        .unwrap()
}

fn int32() -> Schema {
    Schema::new("i", Some("v")).unwrap()
}

/// The int32 values of an array on any device, brought to the host.
fn values_on_host(array: DeviceArray) -> Vec<i32> {
    let schema = int32();
    let host = array.to_host(&schema).unwrap();
    let values = host.host(&schema).unwrap().values::<i32>().unwrap().to_vec();
    values
}

#[test]
fn device_memory_reaches_the_host_only_explicitly() {
    for (_serial, t, device) in emulated_gpus() {
        assert!(
            !device.is_host_accessible(),
            "{t}: the test needs memory the host may not read"
        );
        let stream = Arc::new(device.create_stream().unwrap());
        let array = device_int32(device, &stream, &[1, 2, 3]);
        assert!(!array.sync_event().is_null(), "{t}: an event was recorded");
        let schema = int32();
        let err = array.host(&schema).unwrap_err();
        assert!(err.message().contains("to_host"), "{t}: {err}");
        let before = device.live_allocations();
        let host = array.to_host(&schema).unwrap();
        assert_eq!(
            device.live_allocations(),
            before - 1,
            "{t}: the device copy was released"
        );
        assert_eq!(host.device_type(), DeviceType::CPU);
        assert!(host.sync_event().is_null());
        assert_eq!(host.host(&schema).unwrap().values::<i32>().unwrap(), &[1, 2, 3]);
    }
}

#[test]
fn moves_between_devices_and_copies_leave_the_source() {
    for (_serial, t, device) in emulated_gpus() {
        let schema = int32();
        let stream = Arc::new(device.create_stream().unwrap());
        let array = device_int32(device, &stream, &[7, 8]);
        // A copy leaves the source alone; a move to the same device is free.
        let copy = array.copy_to(&schema, DeviceType::SIM, 0).unwrap();
        assert_eq!(copy.host(&schema).unwrap().values::<i32>().unwrap(), &[7, 8]);
        let address = array.buffer(1);
        let same = array.move_to(&schema, t, 0).unwrap();
        assert_eq!(same.buffer(1), address, "{t}: a move to its own device copies nothing");
        // Across: CPU -> device -> the other GPU -> CPU.
        let (cpu, _) = ferry_arrow::export_primitive(vec![4i32, 5, 6], None).unwrap();
        let on_device = cpu.move_to(&schema, t, 0).unwrap();
        assert_eq!(on_device.device_type(), t);
        let other = if t == DeviceType::CUDA {
            DeviceType::ROCM
        } else {
            DeviceType::CUDA
        };
        let hop = match emulated(other) {
            Some(_) => on_device.move_to(&schema, other, 0).unwrap(),
            None => on_device,
        };
        assert_eq!(values_on_host(hop), [4, 5, 6]);
    }
}

#[test]
fn a_refused_move_hands_the_array_back() {
    for (_serial, t, device) in emulated_gpus() {
        let stream = Arc::new(device.create_stream().unwrap());
        let array = device_int32(device, &stream, &[1]);
        let rejected = array.move_to(&int32(), t, 99).unwrap_err();
        assert!(
            rejected.error().is_unavailable() || rejected.error().is_invalid_argument(),
            "{t}"
        );
        let array = rejected.into_value();
        assert_eq!(array.device_type(), t);
        assert_eq!(values_on_host(array), [1]);
    }
}

#[test]
fn stream_batches_are_handed_to_a_consumer_stream() {
    for (_serial, t, device) in emulated_gpus() {
        let producer = Arc::new(device.create_stream().unwrap());
        let batches = (0..3).map(move |b| Ok(device_int32(device, &producer, &[b, b * 10])));
        let mut stream = DeviceArrayStream::from_iter(t, batches, int32()).unwrap();
        let consumer = device.create_stream().unwrap();
        let schema = int32();
        let mut seen = Vec::new();
        while let Some(batch) = stream.next_on(&consumer).unwrap() {
            assert!(!batch.sync_event().is_null());
            // Ordered on the consumer stream: a copy queued there sees the data.
            let mut back = [0u8; 8];
            let cpu = Device::cpu().unwrap();
            unsafe {
                Device::memcpy(
                    &cpu,
                    back.as_mut_ptr().cast(),
                    &device,
                    batch.buffer(1),
                    8,
                    Some(&consumer),
                )
                .unwrap();
            }
            consumer.synchronize().unwrap();
            seen.push(i32::from_ne_bytes(back[4..8].try_into().unwrap()));
            drop(batch.to_host(&schema).unwrap());
        }
        assert_eq!(seen, vec![0, 10, 20], "{t}");
    }
}

#[test]
fn a_users_own_stream_and_event_work_through_handles() {
    for (_serial, t, device) in emulated_gpus() {
        // Stand-ins for a stream and an event of the user's CUDA library:
        // ferry sees only the native values.
        let theirs = device.create_stream().unwrap();
        let their_stream = unsafe { StreamHandle::from_raw(device, theirs.as_ptr()) };
        let native_event = device.create_event().unwrap().into_raw();

        // Produce on their stream: ferry records its event there.
        let bytes = Arc::new(42i32.to_ne_bytes().to_vec());
        let mut memory = device.allocate(4).unwrap();
        unsafe { memory.copy_from_host_async(&bytes, &their_stream).unwrap() };
        let array = ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_device(memory))
            .keep_alive(bytes)
            .build_async(&their_stream, ExportPolicy::RecordEvent)
            .unwrap();
        // Consume on their stream, and record their own event after it.
        array.wait_on(&their_stream).unwrap();
        let their_event = unsafe { ferry_arrow::EventHandle::from_raw(device, native_event) };
        their_event.record(&their_stream).unwrap();
        their_event.synchronize().unwrap();
        assert_eq!(values_on_host(array), [42]);

        // Their event passed through with an array: destroyed by their
        // destructor after the consumer's release, exactly once.
        let destroyed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = destroyed.clone();
        let event = unsafe {
            Event::from_raw(device, native_event, move |raw| {
                drop(Event::from_raw_ferry(device, raw));
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
        };
        let array = ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_device(device.allocate(4).unwrap()))
            .build_on(t, 0, Some(event))
            .unwrap();
        assert_eq!(array.sync_event(), native_event);
        drop(array);
        assert_eq!(destroyed.load(std::sync::atomic::Ordering::SeqCst), 1, "{t}");
        theirs.synchronize().unwrap();
    }
}

#[test]
fn dlpack_round_trips_on_the_device() {
    for (_serial, t, device) in emulated_gpus() {
        let stream = Arc::new(device.create_stream().unwrap());
        let array = device_int32(device, &stream, &[3, 1, 4, 1, 5]);
        let address = array.buffer(1);
        let consumer = device.create_stream().unwrap();
        let tensor = array.to_dlpack_on(&int32(), &consumer).unwrap();
        assert_eq!(tensor.device(), (t, 0));
        assert_eq!(tensor.shape(), &[5]);
        assert_eq!(tensor.data() as *const _, address, "{t}: the same device memory");
        // Through a raw pointer, as a foreign consumer would hold it.
        let tensor = unsafe { DlpackTensor::from_raw(tensor.into_raw()) }.unwrap();
        let (back, schema) = DeviceArray::from_dlpack(tensor).unwrap();
        // The order lives on the consumer stream (a tensor has no event):
        // the host reads after it.
        consumer.synchronize().unwrap();
        assert_eq!((schema.format(), back.device_type(), back.buffer(1)), ("i", t, address));
        assert_eq!(values_on_host(back), [3, 1, 4, 1, 5]);
    }
}
