//! Hostile producers through the public import paths (issue 15): the
//! arrays and streams of `tests/hostile` (`libferry_hostile.so`, the one
//! library of hostile producers every binding loads; its catalogue says what
//! each lie must come back as), handed to `DeviceArray::from_raw` /
//! `DeviceArrayStream::from_raw`, then read the ways a user reads them
//! (`validate`, `host()` and its accessors, `to_host`, and with an arrow
//! feature `to_arrow` and the `RecordBatchReader`). Each must come back as a
//! ferry `Error` carrying the validator's finding: no crash, every node
//! released exactly once (counted by the library), and nothing on stderr
//! (the last test re-runs this file in a child process and reads its
//! stderr).
//!
//! build.rs links the library where the build holds it (`cfg(ferry_hostile)`);
//! a core installed without its tests has none, and then this file is empty.
#![cfg(ferry_hostile)]

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::Mutex;

use ferry_arrow::{errno, sys, DeviceArray, DeviceArrayStream, Error, HostArray, Schema, Validation};

#[cfg(feature = "arrow")]
use ferry_arrow::arrow::{ArrowArrayExt, ArrowSchemaViewExt, ArrowStreamExt};

// ---------------------------------------------------------------- the library

#[link(name = "ferry_hostile")]
extern "C" {
    fn ferry_hostile_count() -> i32;
    fn ferry_hostile_name(i: i32) -> *const c_char;
    fn ferry_hostile_kind(i: i32) -> i32;
    fn ferry_hostile_flags(i: i32) -> i32;
    fn ferry_hostile_where(i: i32) -> *const c_char;
    fn ferry_hostile_needle(i: i32) -> *const c_char;
    fn ferry_hostile_make(name: *const c_char, out: *mut sys::ArrowDeviceArray, schema: *mut sys::ArrowSchema)
        -> c_int;
    fn ferry_hostile_stream_count() -> i32;
    fn ferry_hostile_stream_name(i: i32) -> *const c_char;
    fn ferry_hostile_stream_at(i: i32) -> i32;
    fn ferry_hostile_stream_level(i: i32) -> i32;
    fn ferry_hostile_stream_code(i: i32) -> i32;
    fn ferry_hostile_stream_needle(i: i32) -> *const c_char;
    fn ferry_hostile_stream_make(name: *const c_char, out: *mut sys::ArrowDeviceArrayStream) -> c_int;
    fn ferry_hostile_stream(
        schema_case: *const c_char,
        batch_case: *const c_char,
        good: i32,
        out: *mut sys::ArrowDeviceArrayStream,
    ) -> c_int;
    fn ferry_hostile_node(
        length: i64,
        null_count: i64,
        offset: i64,
        n_buffers: i64,
        blob: *const u8,
        sizes: *const i64,
        declared_n_buffers: i64,
    ) -> *mut sys::ArrowArray;
    fn ferry_hostile_device_array(
        node: *mut sys::ArrowArray,
        device_type: i32,
        device_id: i64,
        with_event: i32,
        reserved1: i64,
    ) -> *mut sys::ArrowDeviceArray;
    fn ferry_hostile_schema(out: *mut sys::ArrowSchema, format: *const c_char, name: *const c_char);
    fn ferry_hostile_live() -> i64;
    fn ferry_hostile_released_again() -> i64;
}

const REFUSED: i32 = 0;
const FULL: i32 = 1;
const READABLE: i32 = 1;
const DEVICE: i32 = 2;

fn text(p: *const c_char) -> String {
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// One array case of the catalogue.
struct Case {
    name: String,
    kind: i32,
    flags: i32,
    /// "rule: where" of the finding.
    place: String,
    needle: String,
}

fn cases() -> Vec<Case> {
    (0..unsafe { ferry_hostile_count() })
        .map(|i| unsafe {
            Case {
                name: text(ferry_hostile_name(i)),
                kind: ferry_hostile_kind(i),
                flags: ferry_hostile_flags(i),
                place: text(ferry_hostile_where(i)),
                needle: text(ferry_hostile_needle(i)),
            }
        })
        .collect()
}

/// The case called `name` in fresh structs: the device array, and its schema
/// taken unchecked (some cases lie in the schema).
fn make(name: &str) -> (sys::ArrowDeviceArray, Schema) {
    let mut raw = sys::ArrowDeviceArray::default();
    let mut raw_schema = sys::ArrowSchema::default();
    let n = CString::new(name).unwrap();
    assert_eq!(
        unsafe { ferry_hostile_make(n.as_ptr(), &mut raw, &mut raw_schema) },
        0,
        "{name}"
    );
    (raw, unsafe { Schema::from_raw_unchecked(&mut raw_schema) }.unwrap())
}

/// Case `name` imported without validation, with its schema.
fn unchecked(name: &str) -> (DeviceArray, Schema) {
    let (mut raw, schema) = make(name);
    (unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap(), schema)
}

/// Case `name` through the default import, which must take it, with its schema.
fn imported(name: &str) -> (DeviceArray, Schema) {
    let (mut raw, schema) = make(name);
    let array = unsafe { DeviceArray::from_raw(&mut raw, &schema) }
        .unwrap_or_else(|e| panic!("{name}: the default import: {e}"));
    (array, schema)
}

/// A one-off hand-made node (for lies the catalogue does not hold): int32
/// values at `offset` of `length` (with these validity bytes), moved into a
/// CPU device array.
fn int32_node(length: i64, offset: i64, values: &[i32], validity: Option<&[u8]>) -> sys::ArrowDeviceArray {
    let mut blob: Vec<u8> = validity.unwrap_or(&[]).to_vec();
    blob.extend(values.iter().flat_map(|v| v.to_ne_bytes()));
    let sizes = [validity.map_or(-1, |v| v.len() as i64), (4 * values.len()) as i64];
    unsafe {
        let node = ferry_hostile_node(length, 0, offset, 2, blob.as_ptr(), sizes.as_ptr(), 2);
        let heap = ferry_hostile_device_array(node, sys::ARROW_DEVICE_CPU as i32, -1, 0, 0);
        let raw = std::ptr::read(heap);
        std::ptr::write(heap, sys::ArrowDeviceArray::default()); // moved out
        sys::ferry_device_array_free(heap);
        raw
    }
}

/// A hand-made schema with any format and name bytes, taken unchecked.
fn raw_schema(format: &[u8], name: &[u8]) -> Schema {
    let (f, n) = (CString::new(format).unwrap(), CString::new(name).unwrap());
    let mut raw = sys::ArrowSchema::default();
    unsafe {
        ferry_hostile_schema(&mut raw, f.as_ptr(), n.as_ptr());
        Schema::from_raw_unchecked(&mut raw).unwrap()
    }
}

/// One test at a time: they compare the library's live count.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every node made so far was released, exactly once.
fn nothing_left(what: &str) {
    assert_eq!(unsafe { ferry_hostile_live() }, 0, "{what}: nodes not released");
    assert_eq!(
        unsafe { ferry_hostile_released_again() },
        0,
        "{what}: nodes released twice"
    );
}

fn assert_mentions(result: Result<impl std::fmt::Debug, Error>, needle: &str, what: &str) {
    match result {
        Ok(v) => panic!("{what}: accepted ({v:?}), expected an error about {needle:?}"),
        Err(e) => {
            // EINVAL, or ENODEV for a device ferry does not know.
            assert!(matches!(e.code(), errno::EINVAL | errno::ENODEV), "{what}: {e}");
            assert!(
                e.message().to_lowercase().contains(&needle.to_lowercase()),
                "{what}: {e:?} does not mention {needle:?}"
            );
        }
    }
}

/// The error names the case's finding: its "rule: where" and its needle.
fn assert_finding(result: Result<impl std::fmt::Debug, Error>, c: &Case, what: &str) {
    match result {
        Ok(v) => panic!("{what}: accepted ({v:?}), expected {:?}", c.needle),
        Err(e) => {
            assert_mentions(Err::<(), _>(e.clone()), &c.place, what);
            assert_mentions(Err::<(), _>(e), &c.needle, what);
        }
    }
}

/// Reads element `i` of `h` the way a user would, by its format: values,
/// strings, children (struct fields at i + offset, list items), to a depth
/// of 4 (a shared chain has 2^40 paths).
fn read_at(h: &HostArray<'_>, i: usize, depth: usize) -> ferry_arrow::Result<()> {
    if depth == 0 {
        return Ok(());
    }
    h.is_valid(i)?;
    match h.format() {
        "i" => drop(h.value::<i32>(i)?),
        "l" => drop(h.value::<i64>(i)?),
        "b" => drop(h.bool_value(i)?),
        "u" | "U" => drop(h.str(i)?),
        "+s" => {
            for k in 0..h.schema().n_children() {
                read_at(&h.child(k)?, i + h.offset(), depth - 1)?;
            }
        }
        "+l" => {
            let items = h.child(0)?;
            for j in h.list_range(i)? {
                read_at(&items, j, depth - 1)?;
            }
        }
        // a format the binding cannot parse: its buffers are refused
        other => {
            h.buffer(1)?;
            panic!("read_at does not know format {other:?}")
        }
    }
    if h.schema().dictionary().is_some() {
        read_all(&h.dictionary()?)?;
    }
    Ok(())
}

/// Every element of `h` (see read_at).
fn read_all(h: &HostArray<'_>) -> ferry_arrow::Result<()> {
    (0..h.len()).try_for_each(|i| read_at(h, i, 4))
}

// ---------------------------------------------------------------- arrays

/// A structural lie of the catalogue. The default import (`from_raw`,
/// validated at DEFAULT) takes the struct, releases it once, and names the
/// finding. Imported unchecked (the opt-out), `validate` reports it, reading
/// through `host()` fails (at `host()` or at the accessor that meets the
/// lie) instead of reading anything the array does not declare, unless the
/// lie is about what no reader follows, and `to_arrow` refuses with the
/// finding.
fn refused_everywhere(c: &Case) {
    let name = &c.name;
    let (mut raw, schema) = make(name);
    let err = unsafe { DeviceArray::from_raw(&mut raw, &schema) }.unwrap_err();
    assert!(raw.array.release.is_none(), "{name}: from_raw took the array");
    assert!(
        err.message().starts_with("the array fails validation: "),
        "{name}: from_raw: {err}"
    );
    assert_finding(Err::<(), _>(err), c, &format!("{name}: from_raw"));
    drop(schema);
    nothing_left(&format!("{name}: from_raw"));

    let (array, schema) = unchecked(name);
    assert_finding(array.validate(&schema, false), c, &format!("{name}: validate"));
    if c.flags & DEVICE == 0 {
        let read = array.host(&schema).and_then(|h| read_all(&h));
        if c.flags & READABLE != 0 {
            read.unwrap_or_else(|e| panic!("{name}: host(): {e}"));
        } else {
            assert!(read.is_err(), "{name}: host() read it all without an error");
            assert_mentions(read, "", &format!("{name}: host()"));
        }
    }
    #[cfg(feature = "arrow")]
    {
        let err = array.to_arrow(&schema).unwrap_err();
        if c.flags & DEVICE != 0 {
            assert_mentions(Err::<(), _>(err), "device", &format!("{name}: to_arrow"));
        } else {
            assert!(
                err.message().starts_with("the array fails validation: "),
                "{name}: to_arrow: {err}"
            );
            assert_finding(Err::<(), _>(err), c, &format!("{name}: to_arrow"));
        }
    }
    #[cfg(not(feature = "arrow"))]
    drop(array);
    drop(schema);
}

/// A content lie of the catalogue: the default import takes it (DEFAULT
/// reads no values); a FULL import, `validate(full)` and `to_arrow` at FULL
/// refuse it with the finding.
fn refused_at_full(c: &Case) {
    let name = &c.name;
    let (mut raw, schema) = make(name);
    let err = unsafe { DeviceArray::from_raw_with(&mut raw, &schema, Validation::Full) }.unwrap_err();
    assert_finding(Err::<(), _>(err), c, &format!("{name}: from_raw_with(FULL)"));
    let (array, schema) = imported(name);
    assert_finding(array.validate(&schema, true), c, &format!("{name}: validate(full)"));
    #[cfg(feature = "arrow")]
    assert_finding(
        array.to_arrow_with(&schema, Validation::Full),
        c,
        &format!("{name}: to_arrow_with(FULL)"),
    );
    #[cfg(not(feature = "arrow"))]
    drop(array);
    drop(schema);
}

/// A length no buffer can back, which validation cannot see on the CPU: the
/// accessors refuse its last element instead of reading it.
fn refused_by_the_reader(c: &Case) {
    let name = &c.name;
    let (array, schema) = imported(name);
    let read = array.host(&schema).and_then(|h| read_at(&h, h.len() - 1, 4));
    assert_mentions(read, "", &format!("{name}: its last element"));
    drop((array, schema));
}

#[test]
fn every_case_of_the_catalogue_is_refused_where_it_says() {
    let _s = serial();
    let cases = cases();
    assert!(cases.len() > 30, "the catalogue holds {} cases", cases.len());
    for c in &cases {
        match c.kind {
            REFUSED => refused_everywhere(c),
            FULL => refused_at_full(c),
            _ => refused_by_the_reader(c),
        }
        nothing_left(&c.name);
    }
}

/// int32 of length 2^62: its byte size overflows int64. The buffer size
/// computation says so, and arrow-rs must not get to read it either.
#[test]
fn a_length_whose_byte_size_overflows_is_refused() {
    let _s = serial();
    let (array, int32) = unchecked("int32_huge");
    let host = array.host(&int32).unwrap();
    assert_mentions(host.value::<i32>(0), "overflows", "value(0) of 2^62 int32");
    assert_mentions(host.values::<i32>().map(|_| ()), "overflows", "values() of 2^62 int32");
    assert_mentions(
        host.buffer(1).map(|_| ()),
        "int64",
        "buffer(1) of 2^62 int32 (the core's size)",
    );
    #[cfg(feature = "arrow")]
    {
        let err = array.to_arrow(&int32).unwrap_err();
        assert_eq!(err.code(), errno::EINVAL, "{err}");
    }
    #[cfg(not(feature = "arrow"))]
    drop(array);
    drop(int32);
    nothing_left("2^62");
}

/// Content lies (only FULL validation reads them; the catalogue test checks
/// the FULL refusals): `host()` checks structure only, and its accessors
/// refuse the element the lie is in.
#[test]
fn content_lies_are_caught_before_anything_reads_them() {
    let _s = serial();
    // utf8 offsets 0, 2, 1, 5 over "abcde"
    let (array, s) = unchecked("decreasing_offsets");
    let host = array.host(&s).unwrap();
    assert_eq!(host.str(0).unwrap(), "ab");
    assert_mentions(host.str(1), "decreasing", "decreasing offsets: str(1)");
    assert_mentions(host.str(3), "out of range", "str past the end");
    drop((array, s));

    // utf8 ["\xffb", "", "cde"]
    let (array, s) = unchecked("bad_utf8");
    let host = array.host(&s).unwrap();
    assert_eq!(host.bytes(0).unwrap(), b"\xffb");
    assert_mentions(host.str(0), "not UTF-8", "bad UTF-8: str");
    drop((array, s));

    // Dictionary indices 1, 7 over a dictionary of 3.
    let (array, s) = unchecked("dictionary_index");
    let host = array.host(&s).unwrap();
    assert_eq!(host.value::<i32>(1).unwrap(), 7);
    assert_mentions(
        host.dictionary().unwrap().str(7),
        "out of range",
        "dictionary index: lookup",
    );
    drop((array, s));

    // List offsets 0, 2, 9 over a child of 4.
    let (array, s) = unchecked("list_past_child");
    let host = array.host(&s).unwrap();
    assert_eq!(host.list_range(0).unwrap(), 0..2);
    assert_mentions(host.list_range(1), "past the child", "list offsets: list_range");
    drop((array, s));
    nothing_left("content lies");
}

#[test]
fn accessors_check_types_and_indices() {
    let _s = serial();
    let (array, schema) = ferry_arrow::export_primitive(vec![1i32, 2, 3, 4], Some(&[true, true, false, true])).unwrap();
    let host = array.host(&schema).unwrap();
    assert_mentions(host.values::<i64>(), "cannot read", "wrong type");
    assert_mentions(host.value::<i32>(4), "out of range", "index 4 of 4");
    assert_mentions(host.value::<i32>(usize::MAX), "out of range", "index usize::MAX");
    assert_mentions(host.is_valid(4), "out of range", "validity past the end");
    assert_mentions(host.buffer(2).map(|_| ()), "out of range", "buffer 2 of 2");
    assert_mentions(host.child(0).map(|_| ()), "out of range", "a child of a primitive");
    assert_mentions(host.str(0), "utf8", "str of an int32");
    assert!(!host.is_valid(2).unwrap());
    // A hand-made int32 whose offset puts the values past its buffer:
    // the computed size says so, no read happens.
    let mut raw = int32_node(2, 3, &[1, 2, 3], None);
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    // The buffer is declared by length + offset = 5 values (20 bytes); the
    // real one has 12: what no CPU consumer can see (README).
    let host = array.host(&schema).unwrap();
    assert_eq!(host.buffer(1).unwrap().unwrap().len(), 20);
    drop(array);
    nothing_left("accessors");
}

// ---------------------------------------------------------------- schemas

#[test]
fn hostile_schemas_are_refused() {
    let _s = serial();
    let bad_format = raw_schema(b"zz", b"x");
    assert_mentions(bad_format.validate(), "format", "format zz");
    let mut raw = int32_node(1, 0, &[1], Some(&[1]));
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    let host = array.host(&bad_format).unwrap();
    assert_mentions(host.is_valid(0), "format", "is_valid under format zz");
    assert_mentions(host.value::<i32>(0), "cannot read", "value under format zz");
    assert_mentions(host.buffer(1).map(|_| ()), "format", "buffer under format zz");
    #[cfg(feature = "arrow")]
    {
        assert_mentions(bad_format.to_arrow_field(), "format", "to_arrow_field of zz");
        // A name that is not UTF-8 makes arrow-rs panic: contained,
        // reported, and silent (see the last test).
        let bad_name = raw_schema(b"i", b"\xff\xfe");
        assert_mentions(bad_name.to_arrow_field(), "utf8", "a non-UTF-8 name");
    }
    drop(array);
    drop(bad_format);
    nothing_left("schemas");
}

// ---------------------------------------------------------------- streams

/// A stream of the library: its schema is case `schema` (or
/// "released_schema"), then one batch of `batch` (or what it names: a
/// failure, a batch on another device ...), imported at `validation`.
fn hostile_stream_with(schema: &str, batch: &str, validation: Validation) -> DeviceArrayStream {
    let (s, b) = (CString::new(schema).unwrap(), CString::new(batch).unwrap());
    let mut raw = sys::ArrowDeviceArrayStream::default();
    assert_eq!(unsafe { ferry_hostile_stream(s.as_ptr(), b.as_ptr(), 0, &mut raw) }, 0);
    unsafe { DeviceArrayStream::from_raw_with(&mut raw, validation) }.unwrap()
}

/// The same, not validated: the consumer's own readers meet the lie.
fn hostile_stream(schema: &str, batch: &str) -> DeviceArrayStream {
    hostile_stream_with(schema, batch, Validation::None)
}

/// A record batch's schema, struct<s: utf8>.
const RECORD: &str = "good_struct_utf8";

/// Every stream case of the catalogue: the read where it says fails with its
/// errno and message.
#[test]
fn every_stream_of_the_catalogue_fails_where_it_says() {
    let _s = serial();
    for i in 0..unsafe { ferry_hostile_stream_count() } {
        let (name, at, level, code, needle) = unsafe {
            (
                text(ferry_hostile_stream_name(i)),
                ferry_hostile_stream_at(i),
                ferry_hostile_stream_level(i),
                ferry_hostile_stream_code(i),
                text(ferry_hostile_stream_needle(i)),
            )
        };
        let n = CString::new(name.as_str()).unwrap();
        let mut raw = sys::ArrowDeviceArrayStream::default();
        assert_eq!(unsafe { ferry_hostile_stream_make(n.as_ptr(), &mut raw) }, 0);
        let validation = if level == 1 {
            Validation::Full
        } else {
            Validation::Default
        };
        let mut s = unsafe { DeviceArrayStream::from_raw_with(&mut raw, validation) }.unwrap();
        for k in 1..at {
            s.next_array()
                .unwrap_or_else(|e| panic!("{name}: batch {k}: {e}"))
                .unwrap_or_else(|| panic!("{name}: ended at batch {k}"));
        }
        // A lie in the schema: met by schema(), or by the first batch (the
        // schema is validated with it).
        let schema_err = if at == 0 { s.schema().err() } else { None };
        let err = schema_err.unwrap_or_else(|| s.next_array().unwrap_err());
        assert_eq!(err.code(), code, "{name}: {err}");
        assert!(
            err.message().contains(&needle),
            "{name}: {err} does not mention {needle:?}"
        );
        drop(s);
        nothing_left(&name);
    }
}

#[test]
fn hostile_streams_come_back_as_errors() {
    let _s = serial();
    let mut s = hostile_stream("released_schema", "");
    let err = s.schema().unwrap_err();
    assert_eq!(err.code(), errno::EIO, "{err}");
    assert!(err.message().contains("released schema"), "{err}");
    drop(s);

    let mut s = hostile_stream("bad_format", "good_int32");
    let schema = s.schema().unwrap();
    assert_mentions(schema.validate(), "format", "a stream's bad schema");
    drop((schema, s));

    let mut s = hostile_stream(RECORD, "other_device");
    let err = s.next_array().unwrap_err();
    assert!(
        err.message()
            .contains("device type ext_dev from a stream of device type cpu"),
        "{err}"
    );
    let err = s.next_ref().unwrap_err();
    assert!(err.message().contains("device type"), "next_ref: {err}");
    drop(s);

    for code in [errno::EIO, -1, 100_000] {
        let mut s = hostile_stream(RECORD, &format!("fails_silently:{code}"));
        let err = s.next_array().unwrap_err();
        assert_eq!(err.code(), code);
        assert!(!err.message().is_empty());
        drop(s);
    }

    let mut s = hostile_stream(RECORD, "fills_and_fails");
    assert_eq!(s.next_array().unwrap_err().code(), errno::EIO);
    drop(s);

    let mut s = hostile_stream(RECORD, "struct_decreasing_offsets");
    let schema = s.schema().unwrap();
    let batch = s.next_array().unwrap().unwrap();
    assert_mentions(batch.validate(&schema, true), "offset", "a stream's bad batch");
    drop((batch, schema, s));

    // Validated imports (the default; FULL here): the bad schema or batch
    // fails the stream with the validator's finding, the refused batch is
    // released, and every later read gives the same error.
    let mut s = hostile_stream_with("bad_format", "good_int32", Validation::Default);
    let err = s.next_array().unwrap_err();
    assert!(
        err.message().starts_with("the stream's schema fails validation: "),
        "{err}"
    );
    assert_mentions(Err::<(), _>(err.clone()), "format", "a stream's bad schema, validated");
    assert_eq!(s.next_array().unwrap_err(), err);
    drop(s);
    let mut s = hostile_stream_with(RECORD, "struct_decreasing_offsets", Validation::Full);
    let err = s.next_array().unwrap_err();
    assert!(err.message().starts_with("the array fails validation: "), "{err}");
    assert_mentions(Err::<(), _>(err.clone()), "offset", "a stream's bad batch, validated");
    assert_eq!(s.next_ref().unwrap_err(), err);
    drop(s);
    nothing_left("streams");
}

#[cfg(feature = "arrow")]
#[test]
fn hostile_streams_through_the_arrow_reader() {
    let _s = serial();
    let err = hostile_stream("bad_format", "good_int32")
        .into_arrow_reader()
        .unwrap_err();
    assert!(err.message().contains("format"), "{err}");
    let err = hostile_stream("released_schema", "").into_arrow_reader().unwrap_err();
    assert!(err.message().contains("released schema"), "{err}");

    let mut reader = hostile_stream(RECORD, "struct_decreasing_offsets")
        .into_arrow_reader()
        .unwrap();
    let err = reader.next().unwrap().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the array fails validation") && text.contains("offset"),
        "{text}"
    );
    let again = reader.next().unwrap().unwrap_err().to_string();
    assert_eq!(again, text, "the same error on every later call");
    drop(reader);

    let mut reader = hostile_stream(RECORD, &format!("fails_silently:{}", errno::EIO))
        .into_arrow_reader()
        .unwrap();
    assert!(reader.next().unwrap().is_err());
    drop(reader);
    nothing_left("the arrow reader");
}

// ---------------------------------------------------------------- stderr

/// Every test above again, in a child process whose stderr is read: a
/// panic message (arrow-rs's included) or any other text there fails.
#[test]
fn nothing_reaches_stderr() {
    if std::env::var_os("FERRY_HOSTILE_CHILD").is_some() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--test-threads=1", "--nocapture", "--skip", "nothing_reaches_stderr"])
        .env("FERRY_HOSTILE_CHILD", "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "the hostile tests failed in the child:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("test result: ok"), "{stdout}");
    assert!(stderr.trim().is_empty(), "stderr of the hostile tests:\n{stderr}");
}
