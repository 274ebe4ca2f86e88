//! The Rust plugin against itself: every type and key of docs/cases.md,
//! checkers that catch wrong data, failure injection, allocation counters.
mod common;

use std::ffi::CString;

use common::{all_cases, rust_plugin, COUNTERS};
use ferry_arrow::{errno, sys};

#[test]
fn every_case_round_trips_and_frees_everything() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    let before = (rust.live_allocations)();
    for case in all_cases() {
        rust.array_to(&rust, &case).unwrap();
        rust.stream_to(&rust, &case)
            .unwrap_or_else(|(rc, m)| panic!("stream {case}: {rc} {m}"));
    }
    rust.stream_to(&rust, "int32:batches=0").unwrap();
    assert_eq!((rust.live_allocations)(), before, "every export freed");
}

#[test]
fn the_checker_catches_wrong_data() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    let cases = [
        ("int32:seed=1", "int32:seed=2", "element 0"),
        ("int32:length=5", "int32:length=6", "length is 5"),
        ("int32:nulls=2", "int32:nulls=3", "null_count"),
        ("int32", "int32:nulls=2", "null_count"),
        ("int32:offset=2", "int32", "offset is 2"),
        ("int64", "uint32", "format"),
        ("utf8:seed=3", "utf8:seed=4", "element 1"),
        ("list_int32:seed=3", "list_int32:seed=9", "list"),
        ("struct_int32_utf8", "struct_int32_utf8:seed=5", "children[0]"),
        ("dict_int32_utf8:seed=1", "dict_int32_utf8:seed=2", "element"),
        ("int32:device=sim", "int32", "device type"),
    ];
    for (made, checked, needle) in cases {
        let (rc, mut schema, mut array) = rust.export_raw(made);
        assert_eq!(rc, 0);
        let rc = rust.check_raw(checked, &mut schema, &mut array);
        assert_eq!(rc, errno::EINVAL, "{made} checked as {checked}");
        let message = rust.last_error_text();
        assert!(message.contains(needle), "{made} as {checked}: {message}");
        assert_eq!(unsafe { sys::ferry_device_array_is_released(&array) }, 1);
    }
}

#[test]
fn bad_case_strings_are_errors_naming_the_part() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    for (case, needle) in [
        ("int128", "int128"),
        ("int32:length=-3", "negative"),
        ("int32:lenght=3", "lenght"),
        ("int32:seed=x", "\"x\""),
        ("int32:device=quantum", "quantum"),
        ("int32:seed=1:seed=1", "duplicate"),
    ] {
        let (rc, _, array) = rust.export_raw(case);
        assert_eq!(rc, errno::EINVAL, "{case}");
        assert!(
            rust.last_error_text().contains(needle),
            "{case}: {}",
            rust.last_error_text()
        );
        assert_eq!(
            unsafe { sys::ferry_device_array_is_released(&array) },
            1,
            "untouched on failure"
        );
        let mut stream = sys::ArrowDeviceArrayStream::default();
        let spec = CString::new(case).unwrap();
        assert_eq!(
            unsafe { (rust.export_stream)(spec.as_ptr(), &mut stream) },
            errno::EINVAL
        );
    }
    // A device that is not available fails with the device's own reason.
    let (rc, mut schema, mut array) = rust.export_raw("int32:device=cuda");
    if rc != 0 {
        assert!(rust.last_error_text().contains("cuda"), "{}", rust.last_error_text());
    } else {
        eprintln!("CUDA is available on this machine: device=cuda exported");
        unsafe { sys::ferry_schema_release(&mut schema) };
        unsafe { sys::ferry_device_array_release(&mut array) };
    }
    // Checkers take ownership even of what they cannot parse a case for.
    let (rc, mut schema, mut array) = rust.export_raw("int32");
    assert_eq!(rc, 0);
    assert_eq!(rust.check_raw("nonsense", &mut schema, &mut array), errno::EINVAL);
    assert_eq!(unsafe { sys::ferry_device_array_is_released(&array) }, 1);
    assert_eq!(unsafe { sys::ferry_schema_is_released(&schema) }, 1);
}

#[test]
fn injected_failures_travel_as_code_and_message() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    // fail=export: the entry points themselves fail.
    assert_eq!(rust.export_raw("utf8:fail=export").0, errno::EIO);
    assert_eq!(rust.last_error_text(), "injected failure at export");
    let spec = CString::new("utf8:fail=export").unwrap();
    let mut stream = sys::ArrowDeviceArrayStream::default();
    assert_eq!(unsafe { (rust.export_stream)(spec.as_ptr(), &mut stream) }, errno::EIO);
    assert_eq!(rust.last_error_text(), "injected failure at export");

    // A checker told about the failure expects exactly it and succeeds.
    rust.stream_to(&rust, "int32:batches=4:fail=get_next@2").unwrap();
    rust.stream_to(&rust, "int32:batches=2:fail=get_next@3").unwrap(); // at the end
    rust.stream_to(&rust, "int32:batches=2:fail=get_next@9").unwrap(); // never reached
    rust.stream_to(&rust, "list_int32:fail=get_schema").unwrap();
    // A checker not told about it gets the producer's code and message
    // through get_last_error.
    let (rc, message) = rust
        .stream_to_as(&rust, "int32:batches=4:fail=get_next@2", "int32:batches=4")
        .unwrap_err();
    assert_eq!((rc, message.as_str()), (errno::EIO, "injected failure at get_next 2"));
    let (rc, message) = rust
        .stream_to_as(&rust, "list_int32:fail=get_schema", "list_int32")
        .unwrap_err();
    assert_eq!((rc, message.as_str()), (errno::EIO, "injected failure at get_schema"));
    // A checker that expects a failure that does not come says so.
    let (rc, message) = rust.stream_to_as(&rust, "int32", "int32:fail=get_next@2").unwrap_err();
    assert_eq!(rc, errno::EINVAL);
    assert!(message.contains("get_next 2 succeeded"), "{message}");
    // Array entry points accept and ignore stream-only keys.
    rust.array_to(&rust, "int32:batches=9:fail=get_next@1").unwrap();
    rust.array_to(&rust, "int32:fail=get_schema").unwrap();
}

#[test]
fn stream_failures_are_exact_at_the_c_level() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    let spec = CString::new("int16:batches=3:fail=get_next@3:device=sim").unwrap();
    let mut raw = sys::ArrowDeviceArrayStream::default();
    assert_eq!(unsafe { (rust.export_stream)(spec.as_ptr(), &mut raw) }, 0);
    let get_next = raw.get_next.unwrap();
    let get_last_error = raw.get_last_error.unwrap();
    let mut arrays = Vec::new();
    for call in 1..=3 {
        let mut out = sys::ArrowDeviceArray::default();
        let rc = unsafe { get_next(&mut raw, &mut out) };
        if call < 3 {
            assert_eq!(rc, 0);
            assert_eq!(out.device_type, sys::ARROW_DEVICE_EXT_DEV);
            arrays.push(out);
        } else {
            assert_eq!(rc, errno::EIO);
            let msg = unsafe { std::ffi::CStr::from_ptr(get_last_error(&mut raw)) };
            assert_eq!(msg.to_str().unwrap(), "injected failure at get_next 3");
            assert!(out.array.release.is_none());
        }
    }
    for mut a in arrays {
        unsafe { sys::ferry_device_array_release(&mut a) };
    }
    unsafe { sys::ferry_array_stream_release(&mut raw) };
    assert!(raw.release.is_none());
}

#[test]
fn a_sim_array_read_before_waiting_shows_poison() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    ferry_arrow::sim_set_strict(true);
    let rust = rust_plugin();
    let spec = CString::new("int32:length=8:device=sim").unwrap();
    let mut schema = sys::ArrowSchema::default();
    let mut raw = sys::ArrowDeviceArray::default();
    assert_eq!(unsafe { (rust.export_array)(spec.as_ptr(), &mut schema, &mut raw) }, 0);
    let schema = unsafe { ferry_arrow::Schema::from_raw(&mut schema) }.unwrap();
    // Validated on import (DEFAULT reads no buffer, so nothing waits yet).
    let array = unsafe { ferry_arrow::DeviceArray::from_raw(&mut raw, &schema) }.unwrap();
    assert!(!array.sync_event().is_null());
    let early = unsafe { array.buffer_slice::<u8>(1, 32) }.unwrap().to_vec();
    assert!(early.iter().all(|b| *b == sys::FERRY_SIM_POISON_BYTE as u8));
    array.wait().unwrap();
    let values = unsafe { array.buffer_slice::<i32>(1, 8) }.unwrap();
    assert_eq!(values[0], ferry_it_rust::formula::int32(1, 0));
}

#[test]
fn threads_keep_their_own_last_error() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    assert_ne!(rust.export_raw("bogus").0, 0);
    let other = std::thread::spawn(move || rust_plugin().last_error_text())
        .join()
        .unwrap();
    assert_eq!(other, "", "another thread has no failure");
    assert!(rust.last_error_text().contains("bogus"));
}

/// int32 values of the formula (seed 1) in physical slots `offset..`, with a
/// validity bitmap of `length + offset` bits all set except `cleared`.
fn int32_with_full_bitmap(length: i64, offset: i64, cleared: Option<i64>) -> (sys::ArrowSchema, sys::ArrowDeviceArray) {
    use ferry_arrow::{ArrayBuilder, Buffer, Schema};
    use ferry_it_rust::formula;
    let slots = length + offset;
    let mut bits = vec![0xffu8; (slots as usize).div_ceil(8)];
    if let Some(i) = cleared {
        let p = (i + offset) as usize;
        bits[p / 8] &= !(1 << (p % 8));
    }
    let values: Vec<i32> = (0..slots).map(|p| formula::int32(1, p - offset)).collect();
    let array = ArrayBuilder::new(length)
        .offset(offset)
        .null_count(0)
        .buffer(Buffer::from_vec(bits))
        .buffer(Buffer::from_vec(values))
        .build()
        .unwrap();
    let schema = Schema::builder("i").name("int32").nullable(true).build().unwrap();
    let (mut raw_schema, mut raw_array) = (sys::ArrowSchema::default(), sys::ArrowDeviceArray::default());
    unsafe {
        schema.export_to(&mut raw_schema).unwrap();
        array.export_to(&mut raw_array).unwrap();
    }
    (raw_schema, raw_array)
}

/// cases.md: with nulls=0 a validity buffer with every bit set is as valid
/// as none (pyarrow keeps one on slices); a clear bit is still caught.
#[test]
fn the_checker_accepts_a_full_validity_bitmap_when_nothing_is_null() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let rust = rust_plugin();
    for (case, length, offset) in [("int32:length=13", 13, 0), ("int32:length=13:offset=5", 13, 5)] {
        let (mut schema, mut array) = int32_with_full_bitmap(length, offset, None);
        let rc = rust.check_raw(case, &mut schema, &mut array);
        assert_eq!(rc, 0, "{case}: {}", rust.last_error_text());

        let (mut schema, mut array) = int32_with_full_bitmap(length, offset, Some(6));
        let rc = rust.check_raw(case, &mut schema, &mut array);
        assert_eq!(rc, errno::EINVAL, "{case}: a clear bit with nulls=0");
        // The validator's null count check or the checker's bit check.
        let message = rust.last_error_text();
        assert!(
            message.contains("zero bits") || message.contains("element 6"),
            "{message}"
        );
    }
}
