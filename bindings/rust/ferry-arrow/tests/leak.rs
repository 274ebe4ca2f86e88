//! The leak report (`FERRY_LEAK_REPORT=1`, README "Leak report"): every
//! import still alive at exit (here leaked with `mem::forget`) is named by
//! the core's report on stderr, one line each; a clean process says so.
//! Each check runs this test binary again as a child with the variable set
//! and reads the child's stderr.
use std::process::Command;

use ferry_arrow::{sys, DeviceArray, DeviceArrayStream, DeviceType, Schema};

/// Runs `child` of this binary with the report on; returns its stderr.
fn run_child(child: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child, "--nocapture", "--test-threads=1"])
        .env("FERRY_LEAK_CHILD", "1")
        .env("FERRY_LEAK_REPORT", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "child {child} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "child {child} did not run:\n{stdout}");
    stderr
}

fn in_child() -> bool {
    std::env::var_os("FERRY_LEAK_CHILD").is_some()
}

/// An array, its schema and a stream and one of its batches, imported
/// through the C structs.
fn imports() -> (DeviceArray, Schema, DeviceArrayStream, DeviceArray) {
    let (array, schema) = ferry_arrow::export_primitive(vec![1i32, 2, 3], None).unwrap();
    let (mut raw_array, mut raw_schema) = (sys::ArrowDeviceArray::default(), sys::ArrowSchema::default());
    unsafe {
        array.export_to(&mut raw_array).unwrap();
        schema.export_to(&mut raw_schema).unwrap();
    }
    let schema = unsafe { Schema::from_raw(&mut raw_schema) }.unwrap();
    let array = unsafe { DeviceArray::from_raw(&mut raw_array, &schema) }.unwrap();

    let batches = (0..2).map(|i| ferry_arrow::export_primitive(vec![i; 5], None).map(|(a, _)| a));
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("i", None).unwrap()).unwrap();
    let mut raw_stream = sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw_stream).unwrap() };
    let mut stream = unsafe { DeviceArrayStream::from_raw(&mut raw_stream) }.unwrap();
    let batch = stream.next().unwrap().unwrap();
    (array, schema, stream, batch)
}

#[test]
fn child_leaks_its_imports() {
    if !in_child() {
        return;
    }
    let (array, schema, stream, batch) = imports();
    std::mem::forget(array);
    std::mem::forget(schema);
    std::mem::forget(stream);
    std::mem::forget(batch);
}

#[test]
fn child_drops_its_imports() {
    if !in_child() {
        return;
    }
    let (array, schema, stream, batch) = imports();
    // Handed on to another owner (a C consumer) and released there: not
    // the binding's leak.
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { batch.export_to(&mut raw).unwrap() };
    unsafe { sys::ferry_device_array_release(&mut raw) };
    drop((array, schema, stream));
}

#[test]
fn leaked_imports_are_named_at_exit() {
    if in_child() {
        return;
    }
    let stderr = run_child("child_leaks_its_imports");
    let rust_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("ferry: leak: rust: "))
        .collect();
    for what in [
        "DeviceArray imported by DeviceArray::from_raw never dropped (device cpu:-1, length 3)",
        "Schema imported by from_raw never dropped (format \"i\")",
        "DeviceArrayStream imported by from_raw never dropped (device type cpu)",
        "DeviceArray imported by DeviceArrayStream (a batch) never dropped (device cpu:-1, length 5)",
    ] {
        assert!(
            rust_lines.iter().any(|l| l.ends_with(what)),
            "no report line for {what:?} in:\n{stderr}"
        );
    }
    assert_eq!(rust_lines.len(), 4, "one line per leaked import:\n{stderr}");
}

#[test]
fn a_clean_process_reports_no_rust_import() {
    if in_child() {
        return;
    }
    let stderr = run_child("child_drops_its_imports");
    assert!(!stderr.contains("ferry: leak: rust:"), "{stderr}");
    assert!(stderr.contains("ferry: leak report: nothing live"), "{stderr}");
}
