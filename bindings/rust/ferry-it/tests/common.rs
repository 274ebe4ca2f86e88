//! Helpers shared by the plugin's integration tests: a plugin is a set of the
//! six entry points of docs/cases.md, in-process (the Rust one) or
//! dlopen'ed (the C one).
#![allow(dead_code)]
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Mutex;

use ferry_arrow::sys;

/// Serialises the plugin tests: a test that compares allocation counters
/// must not see another test's exports in flight.
pub static COUNTERS: Mutex<()> = Mutex::new(());

pub type ExportArray = unsafe extern "C" fn(*const c_char, *mut sys::ArrowSchema, *mut sys::ArrowDeviceArray) -> c_int;
pub type CheckArray = ExportArray;
pub type ExportStream = unsafe extern "C" fn(*const c_char, *mut sys::ArrowDeviceArrayStream) -> c_int;
pub type CheckStream = ExportStream;

#[derive(Clone, Copy)]
pub struct Plugin {
    pub name: &'static str,
    pub export_array: ExportArray,
    pub check_array: CheckArray,
    pub export_stream: ExportStream,
    pub check_stream: CheckStream,
    pub live_allocations: extern "C" fn() -> i64,
    pub last_error: extern "C" fn() -> *const c_char,
}

pub fn rust_plugin() -> Plugin {
    Plugin {
        name: "rust",
        export_array: ferry_it_rust::ferry_it_export_array,
        check_array: ferry_it_rust::ferry_it_check_array,
        export_stream: ferry_it_rust::ferry_it_export_stream,
        check_stream: ferry_it_rust::ferry_it_check_stream,
        live_allocations: ferry_it_rust::ferry_it_live_allocations,
        last_error: ferry_it_rust::ferry_it_last_error,
    }
}

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}
const RTLD_NOW: c_int = 2;

/// dlopens a plugin library; Err with the reason when it cannot.
pub fn load_plugin(name: &'static str, path: &str) -> Result<Plugin, String> {
    if !std::path::Path::new(path).exists() {
        return Err(format!("{path} does not exist"));
    }
    let c_path = CString::new(path).unwrap();
    unsafe {
        let handle = dlopen(c_path.as_ptr(), RTLD_NOW);
        if handle.is_null() {
            return Err(CStr::from_ptr(dlerror()).to_string_lossy().into_owned());
        }
        let sym = |s: &str| -> Result<*mut c_void, String> {
            let c = CString::new(s).unwrap();
            let p = dlsym(handle, c.as_ptr());
            if p.is_null() {
                Err(format!("{path} does not export {s}"))
            } else {
                Ok(p)
            }
        };
        Ok(Plugin {
            name,
            export_array: std::mem::transmute::<*mut c_void, ExportArray>(sym("ferry_it_export_array")?),
            check_array: std::mem::transmute::<*mut c_void, CheckArray>(sym("ferry_it_check_array")?),
            export_stream: std::mem::transmute::<*mut c_void, ExportStream>(sym("ferry_it_export_stream")?),
            check_stream: std::mem::transmute::<*mut c_void, CheckStream>(sym("ferry_it_check_stream")?),
            live_allocations: std::mem::transmute::<*mut c_void, extern "C" fn() -> i64>(sym(
                "ferry_it_live_allocations",
            )?),
            last_error: std::mem::transmute::<*mut c_void, extern "C" fn() -> *const c_char>(sym(
                "ferry_it_last_error",
            )?),
        })
    }
}

/// $FERRY_BUILD_DIR, else the repository's build/ directory.
pub fn build_dir() -> std::path::PathBuf {
    std::env::var_os("FERRY_BUILD_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../build"))
}

impl Plugin {
    pub fn last_error_text(&self) -> String {
        let p = (self.last_error)();
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }

    /// Calls the plugin's export_array on `case`: its code, and the schema
    /// and array it filled (still released where it failed).
    pub fn export_raw(&self, case: &str) -> (c_int, sys::ArrowSchema, sys::ArrowDeviceArray) {
        let spec = CString::new(case).unwrap();
        let mut schema = sys::ArrowSchema::default();
        let mut array = sys::ArrowDeviceArray::default();
        let rc = unsafe { (self.export_array)(spec.as_ptr(), &mut schema, &mut array) };
        (rc, schema, array)
    }

    /// Calls the plugin's check_array on `case`, which takes ownership of
    /// `schema` and `array`; its code.
    pub fn check_raw(&self, case: &str, schema: &mut sys::ArrowSchema, array: &mut sys::ArrowDeviceArray) -> c_int {
        let spec = CString::new(case).unwrap();
        unsafe { (self.check_array)(spec.as_ptr(), schema, array) }
    }

    /// Exports an array with `self` and checks it with `checker`.
    pub fn array_to(&self, checker: &Plugin, case: &str) -> Result<(), String> {
        let (rc, mut schema, mut array) = self.export_raw(case);
        if rc != 0 {
            return Err(format!(
                "{} export of {case} failed ({rc}): {}",
                self.name,
                self.last_error_text()
            ));
        }
        let rc = checker.check_raw(case, &mut schema, &mut array);
        // The checker took ownership: whatever it did, both must be released.
        assert_eq!(
            unsafe { sys::ferry_schema_is_released(&schema) },
            1,
            "{}: schema not taken",
            checker.name
        );
        assert_eq!(
            unsafe { sys::ferry_device_array_is_released(&array) },
            1,
            "{}: array not taken",
            checker.name
        );
        if rc != 0 {
            return Err(format!(
                "{} check of {case} failed ({rc}): {}",
                checker.name,
                checker.last_error_text()
            ));
        }
        Ok(())
    }

    /// Exports a stream with `self` and checks it with `checker`; Err(code,
    /// message) from either side.
    pub fn stream_to(&self, checker: &Plugin, case: &str) -> Result<(), (c_int, String)> {
        self.stream_to_as(checker, case, case)
    }

    /// Exports `made` with `self` and checks it as `checked` with `checker`.
    pub fn stream_to_as(&self, checker: &Plugin, made: &str, checked: &str) -> Result<(), (c_int, String)> {
        let (spec, check_spec) = (CString::new(made).unwrap(), CString::new(checked).unwrap());
        let mut stream = sys::ArrowDeviceArrayStream::default();
        let rc = unsafe { (self.export_stream)(spec.as_ptr(), &mut stream) };
        if rc != 0 {
            return Err((rc, self.last_error_text()));
        }
        let rc = unsafe { (checker.check_stream)(check_spec.as_ptr(), &mut stream) };
        assert_eq!(
            unsafe { sys::ferry_array_stream_is_released(&stream) },
            1,
            "{}: stream not taken",
            checker.name
        );
        if rc != 0 {
            return Err((rc, checker.last_error_text()));
        }
        Ok(())
    }
}

/// Cases covering every type and key of the grammar.
pub fn all_cases() -> Vec<String> {
    let types = [
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "bool",
        "utf8",
        "binary",
        "list_int32",
        "struct_int32_utf8",
        "dict_int32_utf8",
    ];
    let mut cases = Vec::new();
    for t in types {
        cases.push(t.to_string());
        cases.push(format!("{t}:length=37:nulls=3:seed=4294967295"));
        cases.push(format!("{t}:length=0"));
        cases.push(format!("{t}:length=21:nulls=1:offset=5:seed=7"));
        cases.push(format!("{t}:length=9:nulls=2:offset=3:device=sim"));
    }
    cases
}

/// Every case as an array and as a stream from each producer to its
/// consumer; panics listing every failure.
pub fn assert_all_cross(pairs: &[(&Plugin, &Plugin)], cases: &[String]) {
    let mut failures = Vec::new();
    for case in cases {
        for (producer, consumer) in pairs {
            if let Err(e) = producer.array_to(consumer, case) {
                failures.push(format!("array {}->{}: {e}", producer.name, consumer.name));
            }
            if let Err((rc, m)) = producer.stream_to(consumer, case) {
                failures.push(format!("stream {}->{} {case}: {rc} {m}", producer.name, consumer.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
