//! Export of Rust memory and import by move: zero-copy, release exactly once,
//! accessors through the core, errors for bad input.
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferry_arrow::sys;
use ferry_arrow::{ArrayBuilder, Buffer, DeviceArray, DeviceType, Schema};

/// An owner that counts how often it is dropped.
struct Tracked {
    values: Vec<i32>,
    drops: Arc<AtomicUsize>,
}
impl AsRef<[i32]> for Tracked {
    fn as_ref(&self) -> &[i32] {
        &self.values
    }
}
impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn vec_is_exported_without_copy_and_freed_once_at_release() {
    let drops = Arc::new(AtomicUsize::new(0));
    let values: Vec<i32> = (0..1000).collect();
    let address = values.as_ptr() as *const c_void;
    let array = ArrayBuilder::new(1000)
        .buffer(Buffer::null())
        .buffer(Buffer::from_owner(Tracked {
            values,
            drops: drops.clone(),
        }))
        .build()
        .unwrap();
    assert_eq!(array.buffer(1), address, "the exported buffer is the Vec's memory");

    // A C consumer takes it by move, then releases it twice (harmless).
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { array.export_to(&mut raw).unwrap() };
    assert_eq!(drops.load(Ordering::SeqCst), 0, "not freed while the consumer holds it");
    assert_eq!(unsafe { sys::ferry_device_array_is_released(&raw) }, 0);
    unsafe { sys::ferry_device_array_release(&mut raw) };
    unsafe { sys::ferry_device_array_release(&mut raw) };
    assert_eq!(drops.load(Ordering::SeqCst), 1, "freed exactly once");
}

#[test]
fn drop_of_an_imported_array_releases_exactly_once() {
    let shared: Arc<[i64]> = (0..10).collect::<Vec<i64>>().into();
    let array = ArrayBuilder::new(10)
        .buffer(Buffer::null())
        .buffer(Buffer::from_arc(shared.clone()))
        .build()
        .unwrap();
    assert_eq!(Arc::strong_count(&shared), 2);
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { array.export_to(&mut raw).unwrap() };
    let schema = Schema::new("l", None).unwrap();
    let imported = unsafe { DeviceArray::from_raw(&mut raw, &schema).unwrap() };
    // The source struct is released by the move: releasing it does nothing.
    unsafe { sys::ferry_device_array_release(&mut raw) };
    assert_eq!(Arc::strong_count(&shared), 2);
    assert_eq!(unsafe { imported.buffer_slice::<i64>(1, 10) }.unwrap()[9], 9);
    drop(imported);
    assert_eq!(Arc::strong_count(&shared), 1);
}

#[test]
fn boxed_slices_and_static_buffers_export() {
    static DATA: [u8; 3] = *b"xyz";
    let array = ArrayBuilder::new(1)
        .buffer(Buffer::null())
        .buffer(Buffer::from_boxed_slice(vec![0i32, 3].into_boxed_slice()))
        .buffer(Buffer::from_static(&DATA))
        .build()
        .unwrap();
    let schema = Schema::new("u", Some("s")).unwrap();
    assert_eq!(array.buffer(2), DATA.as_ptr() as *const c_void);
    assert_eq!(array.host(&schema).unwrap().buffer(2).unwrap(), Some(&b"xyz"[..]));
}

#[test]
fn import_rejects_null_and_released_structs() {
    let schema = Schema::new("i", None).unwrap();
    let err = unsafe { DeviceArray::from_raw(std::ptr::null_mut(), &schema) }.unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(err.message().contains("NULL"), "{err}");
    let mut released = sys::ArrowDeviceArray::default();
    let err = unsafe { DeviceArray::from_raw(&mut released, &schema) }.unwrap_err();
    assert!(err.message().contains("released"), "{err}");
    let err = unsafe { DeviceArray::from_raw_unchecked(&mut released) }.unwrap_err();
    assert!(err.message().contains("released"), "{err}");
}

#[test]
fn export_into_a_live_struct_is_refused_and_nothing_leaks() {
    let drops = Arc::new(AtomicUsize::new(0));
    let make = |drops: &Arc<AtomicUsize>| {
        ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_owner(Tracked {
                values: vec![1],
                drops: drops.clone(),
            }))
            .build()
            .unwrap()
    };
    let mut occupied = sys::ArrowDeviceArray::default();
    unsafe { make(&drops).export_to(&mut occupied).unwrap() };
    let err = unsafe { make(&drops).export_to(&mut occupied) }.unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the refused array was released");
    unsafe { sys::ferry_device_array_release(&mut occupied) };
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn children_and_dictionary_are_reachable_through_accessors() {
    let a = ArrayBuilder::new(2)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(vec![1i32, 2]));
    let b = ArrayBuilder::new(2)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(vec![0i32, 1, 2]))
        .buffer(Buffer::from_vec(b"pq".to_vec()));
    let array = ArrayBuilder::new(2)
        .buffer(Buffer::null())
        .child(a)
        .child(b)
        .build()
        .unwrap();
    assert_eq!(array.n_children(), 2);
    assert_eq!(array.child(0).unwrap().length(), 2);
    assert_eq!(array.child(1).unwrap().n_buffers(), 3);
    assert!(array.child(2).is_none());
    assert!(array.dictionary().is_none());
    let schema = Schema::builder("+s")
        .name("row")
        .child(Schema::new("i", Some("a")).unwrap())
        .child(Schema::new("u", Some("b")).unwrap())
        .build()
        .unwrap();
    array.validate(&schema, true).unwrap();

    let dict_array = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(vec![1i32, 0, 1]))
        .dictionary(
            ArrayBuilder::new(2)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![0i32, 2, 4]))
                .buffer(Buffer::from_vec(b"d0d1".to_vec())),
        )
        .build()
        .unwrap();
    let dict = dict_array.dictionary().unwrap();
    assert_eq!(dict.length(), 2);
    let dict_schema = Schema::builder("i")
        .dictionary(Schema::new("u", None).unwrap())
        .build()
        .unwrap();
    dict_array.validate(&dict_schema, true).unwrap();
}

#[test]
fn bad_input_gets_a_clear_error() {
    let err = ArrayBuilder::new(-1).build().unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(err.message().contains("negative"), "{err}");
    let err = ferry_arrow::export_primitive(vec![1i32, 2], Some(&[true])).unwrap_err();
    assert!(err.message().contains("validity has 1 flags for 2 values"), "{err}");
    let err = Schema::new("i\0x", None).unwrap_err();
    assert!(err.message().contains("NUL"), "{err}");
}

#[test]
fn validation_finds_a_wrong_buffer_count() {
    let (array, _) = ferry_arrow::export_primitive(vec![1i32, 2, 3], None).unwrap();
    let wrong = Schema::new("u", None).unwrap(); // utf8 needs 3 buffers
    let err = array.validate(&wrong, false).unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
}

#[test]
fn device_type_and_event_of_a_cpu_export() {
    let (array, schema) = ferry_arrow::export_primitive(vec![1u16, 2], Some(&[false, true])).unwrap();
    assert_eq!(array.device_type(), DeviceType::CPU);
    assert_eq!(array.device_id(), -1);
    assert!(array.sync_event().is_null());
    assert!(array.reserved_is_zero());
    array.wait().unwrap(); // no event: returns at once
    assert_eq!(array.null_count(), 1);
    assert_eq!(array.host(&schema).unwrap().buffer(0).unwrap(), Some(&[0b10u8][..]));
    let copy = array.copy_to(&schema, DeviceType::CPU, -1).unwrap();
    assert_ne!(copy.buffer(1), array.buffer(1), "copy_to makes a deep copy");
    assert_eq!(unsafe { copy.buffer_slice::<u16>(1, 2) }.unwrap(), &[1, 2]);
}

#[test]
fn arrays_move_to_other_threads() {
    let (array, schema) = ferry_arrow::export_utf8(&[Some("a"), Some("b")]).unwrap();
    let length = std::thread::spawn(move || {
        array.validate(&schema, true).unwrap();
        array.length()
    })
    .join()
    .unwrap();
    assert_eq!(length, 2);
}
