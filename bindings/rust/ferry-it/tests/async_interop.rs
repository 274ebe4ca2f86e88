//! The binding's async API against another runtime's async plugin entry
//! points, both ways: the C plugin's producer (ferry_it_export_async) into
//! ferry_arrow::AsyncDeviceStream, every batch checked against the case with
//! this plugin's checker; and a ferry_arrow producer
//! (DeviceArrayStream::export_async) judged by the C plugin's strict
//! checking consumer (ferry_it_check_async + ferry_it_async_result). The
//! Rust plugin's own async entry points are exercised the same way. Skips
//! loudly when the C plugin is absent.
#![cfg(ferry_it_async)]
mod common;

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::time::Duration;

use common::build_dir;
use ferry_arrow::{sys, AsyncDeviceStream, DeviceArrayStream};
use ferry_it_rust::case::Case;

type ExportAsync = unsafe extern "C" fn(*const c_char, *mut sys::ArrowAsyncDeviceStreamHandler) -> c_int;
type CheckAsync =
    unsafe extern "C" fn(*const c_char, *mut sys::ArrowAsyncDeviceStreamHandler, *mut *mut c_void) -> c_int;
type AsyncResult = unsafe extern "C" fn(*mut c_void, i64) -> c_int;
type LastError = extern "C" fn() -> *const c_char;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

struct AsyncPlugin {
    export_async: ExportAsync,
    check_async: CheckAsync,
    async_result: AsyncResult,
    last_error: LastError,
}

fn c_async_plugin() -> Option<AsyncPlugin> {
    let path = build_dir().join("plugins/libferry_it_c.so");
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    unsafe {
        let handle = dlopen(c_path.as_ptr(), 2);
        let sym = |s: &str| {
            let name = CString::new(s).unwrap();
            let p = if handle.is_null() {
                std::ptr::null_mut()
            } else {
                dlsym(handle, name.as_ptr())
            };
            (!p.is_null()).then_some(p)
        };
        match (
            sym("ferry_it_export_async"),
            sym("ferry_it_check_async"),
            sym("ferry_it_async_result"),
            sym("ferry_it_last_error"),
        ) {
            (Some(e), Some(c), Some(r), Some(l)) => Some(AsyncPlugin {
                export_async: std::mem::transmute::<*mut c_void, ExportAsync>(e),
                check_async: std::mem::transmute::<*mut c_void, CheckAsync>(c),
                async_result: std::mem::transmute::<*mut c_void, AsyncResult>(r),
                last_error: std::mem::transmute::<*mut c_void, LastError>(l),
            }),
            _ => {
                eprintln!(
                    "SKIPPED: async interop: {} is absent or lacks the async entry points",
                    path.display()
                );
                None
            }
        }
    }
}

fn rust_async_plugin() -> AsyncPlugin {
    AsyncPlugin {
        export_async: ferry_it_rust::ferry_it_export_async,
        check_async: ferry_it_rust::ferry_it_check_async,
        async_result: ferry_it_rust::ferry_it_async_result,
        last_error: ferry_it_rust::ferry_it_last_error,
    }
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

const CASES: &[&str] = &[
    "int32",
    "utf8:nulls=3:offset=2:window=2:batches=4:seed=21",
    "struct_int32_utf8:window=1:batches=2:seed=31",
    "list_int32:device=sim:window=4:batches=6:seed=301",
    "int16:length=0:batches=2:window=3",
    "int8:batches=0",
];

/// `producer`'s async export of `case` read through ferry_arrow's
/// AsyncDeviceStream, each batch checked with this plugin's checker.
fn into_the_binding(producer: &AsyncPlugin, case: &str) -> Result<(), String> {
    let parsed = Case::parse(case).map_err(|e| e.to_string())?;
    let mut consumer = AsyncDeviceStream::new(2).unwrap();
    let spec = CString::new(case).unwrap();
    let rc = unsafe { (producer.export_async)(spec.as_ptr(), consumer.handler()) };
    if rc != 0 {
        return Err(format!("export_async {case}: {rc} {}", text((producer.last_error)())));
    }
    let schema = consumer.schema().map_err(|e| format!("{case}: schema: {e}"))?;
    ferry_it_rust::check::check_schema(parsed.ty, &schema).map_err(|e| format!("{case}: {e}"))?;
    let mut b = 0;
    for batch in consumer.by_ref() {
        let batch = batch.map_err(|e| format!("{case}: batch {b}: {e}"))?;
        ferry_it_rust::check::check_device_array(&parsed.batch(b), &batch, &schema)
            .map_err(|e| format!("{case}: batch {b}: {e}"))?;
        b += 1;
    }
    if b != parsed.batches {
        return Err(format!("{case}: {b} batches, expected {}", parsed.batches));
    }
    if !consumer.wait_released(Some(Duration::from_secs(10))) {
        return Err(format!("{case}: the producer never released the handler"));
    }
    Ok(())
}

/// ferry_arrow's export_async of this plugin's stream of `case`, judged by
/// `checker`'s strict checking consumer.
fn from_the_binding(checker: &AsyncPlugin, case: &str) -> Result<(), String> {
    let spec = CString::new(case).unwrap();
    let mut raw = sys::ArrowDeviceArrayStream::default();
    let rc = unsafe { ferry_it_rust::ferry_it_export_stream(spec.as_ptr(), &mut raw) };
    assert_eq!(rc, 0, "{case}: {}", text(ferry_it_rust::ferry_it_last_error()));
    let stream = unsafe { DeviceArrayStream::from_raw(&mut raw) }.unwrap();
    let handler = Box::into_raw(Box::new(sys::ArrowAsyncDeviceStreamHandler::default()));
    let mut ticket: *mut c_void = std::ptr::null_mut();
    let rc = unsafe { (checker.check_async)(spec.as_ptr(), handler, &mut ticket) };
    if rc != 0 {
        return Err(format!("check_async {case}: {rc} {}", text((checker.last_error)())));
    }
    unsafe { stream.export_async(handler) }.map_err(|e| format!("{case}: export_async: {e}"))?;
    let rc = unsafe { (checker.async_result)(ticket, 20_000) };
    let verdict = text((checker.last_error)());
    // The checker's handler is released by then (the result waits for it).
    drop(unsafe { Box::from_raw(handler) });
    if rc != 0 {
        return Err(format!("{case}: the checking consumer says {rc}: {verdict}"));
    }
    Ok(())
}

/// Every case from `producer` into the binding and from the binding into
/// its checker; panics listing every failure.
fn assert_both_ways(plugin: &AsyncPlugin, name: &str) {
    let mut failures = Vec::new();
    for case in CASES {
        if let Err(e) = into_the_binding(plugin, case) {
            failures.push(format!("{name} -> binding: {e}"));
        }
        if let Err(e) = from_the_binding(plugin, case) {
            failures.push(format!("binding -> {name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn c_async_producer_into_the_rust_binding_and_back() {
    let Some(c) = c_async_plugin() else { return };
    assert_both_ways(&c, "c");
}

#[test]
fn the_rust_plugins_async_entry_points_with_the_binding() {
    assert_both_ways(&rust_async_plugin(), "rust plugin");
}

#[test]
fn an_injected_failure_reaches_the_binding_with_its_message() {
    let rust = rust_async_plugin();
    let mut consumer = AsyncDeviceStream::new(1).unwrap();
    let spec = CString::new("int32:batches=3:fail=get_next@2").unwrap();
    assert_eq!(unsafe { (rust.export_async)(spec.as_ptr(), consumer.handler()) }, 0);
    assert!(consumer.next().unwrap().is_ok());
    let err = consumer.next().unwrap().unwrap_err();
    assert_eq!(err.code(), ferry_arrow::errno::EIO, "{err}");
    assert!(err.message().contains("injected failure at get_next 2"), "{err}");
}

#[test]
fn the_async_layers_failures_reach_ferry_it_last_error() {
    let rust = rust_async_plugin();
    // fail=export: the producer fails the handler (on_error, release) and
    // the entry point returns EIO; its message is this plugin's last error.
    let mut consumer = AsyncDeviceStream::new(1).unwrap();
    let spec = CString::new("int32:fail=export").unwrap();
    let rc = unsafe { (rust.export_async)(spec.as_ptr(), consumer.handler()) };
    assert_eq!(rc, ferry_arrow::errno::EIO);
    assert_eq!(text((rust.last_error)()), "injected failure at export");
    let err = consumer.schema().unwrap_err();
    assert!(err.message().contains("injected failure at export"), "{err}");
    assert!(consumer.wait_released(Some(Duration::from_secs(10))));

    // A bad case for the checker: EINVAL naming the key, and no ticket.
    let mut handler = sys::ArrowAsyncDeviceStreamHandler::default();
    let mut ticket: *mut c_void = std::ptr::null_mut();
    let spec = CString::new("int32:window=0").unwrap();
    let rc = unsafe { (rust.check_async)(spec.as_ptr(), &mut handler, &mut ticket) };
    assert_eq!(rc, ferry_arrow::errno::EINVAL);
    assert!(ticket.is_null());
    assert!(
        text((rust.last_error)()).contains("window"),
        "{}",
        text((rust.last_error)())
    );
}
