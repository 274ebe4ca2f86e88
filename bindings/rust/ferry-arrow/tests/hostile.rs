//! Hostile producers through the public import paths (issue 15): arrays
//! and streams built by hand with every kind of lie, handed to
//! `DeviceArray::from_raw` / `DeviceArrayStream::from_raw`, then read the
//! ways a user reads them (`validate`, `host()` and its accessors,
//! `to_host`, and with an arrow feature `to_arrow` and the
//! `RecordBatchReader`). Each must come back as a ferry `Error` carrying
//! the validator's finding: no crash, every node released exactly once
//! (counted), and nothing on stderr (the last test re-runs this file in a
//! child process and reads its stderr).
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use ferry_arrow::{errno, sys, DeviceArray, DeviceArrayStream, DeviceType, Error, HostArray, Schema, Validation};

#[cfg(feature = "arrow")]
use ferry_arrow::arrow::{ArrowArrayExt, ArrowSchemaViewExt, ArrowStreamExt};

/// Nodes made here and not yet released (arrays, schemas, streams).
static LIVE: AtomicI64 = AtomicI64::new(0);
/// One test at a time: they compare LIVE.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------- arrays

/// A buffer of a hand-made array.
enum Buf {
    Null,
    Bytes(Vec<u8>),
}

fn i32s(values: &[i32]) -> Buf {
    Buf::Bytes(values.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

fn bytes(b: &[u8]) -> Buf {
    Buf::Bytes(b.to_vec())
}

/// A child (or dictionary) slot of a hand-made array.
enum Child {
    Node(Node),
    /// A NULL pointer in the children table.
    Null,
    /// A struct whose release is already NULL.
    Released,
    /// A node whose only child is itself (a cycle).
    SelfCycle(Node),
}

/// A hand-made `ArrowArray`: any length, counts and pointers.
struct Node {
    length: i64,
    null_count: i64,
    offset: i64,
    buffers: Vec<Buf>,
    children: Vec<Child>,
    dictionary: Option<Box<Child>>,
    /// Overrides the declared n_buffers (a lie about the table's size).
    n_buffers: Option<i64>,
}

fn node(length: i64, buffers: Vec<Buf>) -> Node {
    Node {
        length,
        null_count: 0,
        offset: 0,
        buffers,
        children: Vec::new(),
        dictionary: None,
        n_buffers: None,
    }
}

/// What a node's release frees.
struct Private {
    _buffers: Vec<Vec<u8>>,
    pointers: Vec<*const c_void>,
    children: Vec<*mut sys::ArrowArray>,
    /// Children this node allocated (a cycle's pointer to itself is not).
    owned: Vec<bool>,
    dictionary: *mut sys::ArrowArray,
}

unsafe extern "C" fn release_node(array: *mut sys::ArrowArray) {
    let a = &mut *array;
    // Released first, so that a cycle back to this node stops here.
    a.release = None;
    let private = Box::from_raw(a.private_data as *mut Private);
    for (child, owned) in private.children.iter().zip(&private.owned) {
        if child.is_null() || !owned {
            continue;
        }
        if let Some(release) = (**child).release {
            release(*child);
        }
        drop(Box::from_raw(*child));
    }
    if !private.dictionary.is_null() {
        if let Some(release) = (*private.dictionary).release {
            release(private.dictionary);
        }
        drop(Box::from_raw(private.dictionary));
    }
    LIVE.fetch_sub(1, Ordering::SeqCst);
}

fn child_ptr(child: Child) -> (*mut sys::ArrowArray, bool) {
    match child {
        Child::Node(n) => (Box::into_raw(Box::new(build(n))), true),
        Child::Null => (ptr::null_mut(), true),
        Child::Released => (Box::into_raw(Box::new(sys::ArrowArray::default())), true),
        Child::SelfCycle(n) => {
            let p = Box::into_raw(Box::new(build(n)));
            unsafe {
                let private = &mut *((*p).private_data as *mut Private);
                private.children = vec![p];
                private.owned = vec![false];
                (*p).n_children = 1;
                (*p).children = private.children.as_mut_ptr();
            }
            (p, true)
        }
    }
}

fn build(n: Node) -> sys::ArrowArray {
    let mut owned_buffers = Vec::new();
    let mut pointers = Vec::new();
    for b in n.buffers {
        match b {
            Buf::Null => pointers.push(ptr::null()),
            Buf::Bytes(v) => {
                pointers.push(v.as_ptr() as *const c_void);
                owned_buffers.push(v);
            }
        }
    }
    let (children, owned): (Vec<_>, Vec<_>) = n.children.into_iter().map(child_ptr).unzip();
    let dictionary = n.dictionary.map_or(ptr::null_mut(), |d| child_ptr(*d).0);
    let mut private = Box::new(Private {
        _buffers: owned_buffers,
        pointers,
        children,
        owned,
        dictionary,
    });
    LIVE.fetch_add(1, Ordering::SeqCst);
    sys::ArrowArray {
        length: n.length,
        null_count: n.null_count,
        offset: n.offset,
        n_buffers: n.n_buffers.unwrap_or(private.pointers.len() as i64),
        n_children: private.children.len() as i64,
        buffers: private.pointers.as_mut_ptr(),
        children: private.children.as_mut_ptr(),
        dictionary: private.dictionary,
        release: Some(release_node),
        private_data: Box::into_raw(private) as *mut c_void,
    }
}

/// The device struct around a hand-made array.
fn device_array(n: Node, device_type: DeviceType) -> sys::ArrowDeviceArray {
    sys::ArrowDeviceArray {
        array: build(n),
        device_id: if device_type == DeviceType::CPU { -1 } else { 0 },
        device_type: device_type.raw(),
        ..Default::default()
    }
}

fn schema(format: &str) -> Schema {
    Schema::new(format, Some("x")).unwrap()
}

fn struct_schema(children: &[&str]) -> Schema {
    let mut b = Schema::builder("+s");
    for (i, f) in children.iter().enumerate() {
        b = b.child(Schema::new(f, Some(&format!("f{i}"))).unwrap());
    }
    b.build().unwrap()
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

/// Reads element `i` of `h` the way a user would, by its format: values,
/// strings, children (struct fields at i + offset, list items).
fn read_at(h: &HostArray<'_>, i: usize) -> ferry_arrow::Result<()> {
    h.is_valid(i)?;
    match h.format() {
        "i" => drop(h.value::<i32>(i)?),
        "u" => drop(h.str(i)?),
        "+s" => {
            for k in 0..h.schema().n_children() {
                read_at(&h.child(k)?, i + h.offset())?;
            }
        }
        "+l" => {
            let items = h.child(0)?;
            for j in h.list_range(i)? {
                read_at(&items, j)?;
            }
        }
        other => panic!("read_at does not know format {other:?}"),
    }
    if h.schema().dictionary().is_some() {
        read_all(&h.dictionary()?)?;
    }
    Ok(())
}

/// Every element of `h` (see read_at).
fn read_all(h: &HostArray<'_>) -> ferry_arrow::Result<()> {
    (0..h.len()).try_for_each(|i| read_at(h, i))
}

/// A structural lie: `validate` reports the finding, reading through
/// `host()` fails (at `host()` or at the accessor that meets the lie)
/// instead of reading anything the array does not declare, and `to_arrow`
/// refuses with the finding. The array is released on the way out
/// (callers check that LIVE is back to 0).
fn refused_everywhere(name: &str, schema: Schema, mut raw: sys::ArrowDeviceArray, needle: &str) {
    // Imported unchecked (the opt-out) so that the readers behind the
    // import meet the lie too.
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert_mentions(array.validate(&schema, false), needle, &format!("{name}: validate"));
    let read = array.host(&schema).and_then(|h| read_all(&h));
    assert!(read.is_err(), "{name}: host() read it all without an error");
    assert_mentions(read, "", &format!("{name}: host()"));
    #[cfg(feature = "arrow")]
    {
        let err = array.to_arrow(&schema).unwrap_err();
        assert!(
            err.message().starts_with("the array fails validation: "),
            "{name}: to_arrow: {err}"
        );
        assert_mentions(Err::<(), _>(err), needle, &format!("{name}: to_arrow"));
    }
    #[cfg(not(feature = "arrow"))]
    refused_on_import(name, &schema, array, needle);
}

/// The default import (`from_raw`, validated at DEFAULT) refuses `array`
/// once handed back to C: it takes the struct, releases it once, and names
/// the finding.
#[allow(dead_code)]
fn refused_on_import(name: &str, schema: &Schema, array: DeviceArray, needle: &str) {
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe { array.export_to(&mut raw) }.unwrap();
    let err = unsafe { DeviceArray::from_raw(&mut raw, schema) }.unwrap_err();
    assert!(raw.array.release.is_none(), "{name}: from_raw took the array");
    assert!(
        err.message().starts_with("the array fails validation: "),
        "{name}: from_raw: {err}"
    );
    assert_mentions(Err::<(), _>(err), needle, &format!("{name}: from_raw"));
}

/// A lie about what nobody reads (null count, reserved words): `validate`
/// and `to_arrow` report it; the values themselves read fine.
fn reported_not_in_the_way(name: &str, schema: Schema, mut raw: sys::ArrowDeviceArray, needle: &str) {
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert_mentions(array.validate(&schema, false), needle, &format!("{name}: validate"));
    read_all(&array.host(&schema).unwrap()).unwrap();
    #[cfg(feature = "arrow")]
    assert_mentions(array.to_arrow(&schema), needle, &format!("{name}: to_arrow"));
    #[cfg(not(feature = "arrow"))]
    refused_on_import(name, &schema, array, needle);
}

#[test]
fn structural_lies_are_refused_on_every_path() {
    let _s = serial();
    let int32_values = || i32s(&[1, 2, 3, 4]);
    type Case = (&'static str, Schema, Node, DeviceType, &'static str);
    let cases: Vec<Case> = vec![
        (
            "missing values buffer",
            schema("i"),
            node(4, vec![Buf::Null]),
            DeviceType::CPU,
            "buffer",
        ),
        (
            "NULL values buffer",
            schema("i"),
            node(4, vec![Buf::Null, Buf::Null]),
            DeviceType::CPU,
            "NULL",
        ),
        (
            "negative length",
            schema("i"),
            node(-1, vec![Buf::Null, int32_values()]),
            DeviceType::CPU,
            "length",
        ),
        (
            "negative offset",
            schema("i"),
            Node {
                offset: -2,
                ..node(2, vec![Buf::Null, int32_values()])
            },
            DeviceType::CPU,
            "offset",
        ),
        (
            "offset + length overflows",
            schema("i"),
            Node {
                offset: i64::MAX,
                ..node(2, vec![Buf::Null, int32_values()])
            },
            DeviceType::CPU,
            "overflow",
        ),
        (
            "negative n_buffers",
            schema("i"),
            Node {
                n_buffers: Some(-1),
                ..node(0, vec![])
            },
            DeviceType::CPU,
            "buffer",
        ),
        (
            "struct with a child missing",
            struct_schema(&["i", "u"]),
            Node {
                children: vec![Child::Node(node(1, vec![Buf::Null, i32s(&[1])]))],
                ..node(1, vec![Buf::Null])
            },
            DeviceType::CPU,
            "child",
        ),
        (
            "NULL child pointer",
            struct_schema(&["i"]),
            Node {
                children: vec![Child::Null],
                ..node(1, vec![Buf::Null])
            },
            DeviceType::CPU,
            "NULL",
        ),
        (
            "released child",
            struct_schema(&["i"]),
            Node {
                children: vec![Child::Released],
                ..node(1, vec![Buf::Null])
            },
            DeviceType::CPU,
            "released",
        ),
        (
            "child shorter than its parent",
            struct_schema(&["i"]),
            Node {
                children: vec![Child::Node(node(1, vec![Buf::Null, i32s(&[1])]))],
                ..node(3, vec![Buf::Null])
            },
            DeviceType::CPU,
            "length",
        ),
        (
            "dictionary missing",
            Schema::builder("i").dictionary(schema("u")).build().unwrap(),
            node(1, vec![Buf::Null, i32s(&[0])]),
            DeviceType::CPU,
            "dictionary",
        ),
        (
            "unknown device type",
            schema("i"),
            node(4, vec![Buf::Null, int32_values()]),
            DeviceType(999),
            "device",
        ),
    ];
    for (name, schema, node, device_type, needle) in cases {
        refused_everywhere(name, schema, device_array(node, device_type), needle);
        assert_eq!(
            LIVE.load(Ordering::SeqCst),
            0,
            "{name}: nothing leaked, nothing released twice"
        );
    }
    reported_not_in_the_way(
        "null_count above length",
        schema("i"),
        device_array(
            Node {
                null_count: 9,
                ..node(4, vec![Buf::Null, int32_values()])
            },
            DeviceType::CPU,
        ),
        "null_count",
    );
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

/// int32 of length 2^62: its byte size overflows int64. The core's
/// validator does not see it (yet); the buffer size computation does, and
/// arrow-rs must not get to read it either.
#[test]
fn a_length_whose_byte_size_overflows_is_refused() {
    let _s = serial();
    let mut raw = device_array(node(1 << 62, vec![Buf::Null, i32s(&[1, 2])]), DeviceType::CPU);
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    let int32 = schema("i");
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
        let err = array.to_arrow(&schema("i")).unwrap_err();
        assert_eq!(err.code(), errno::EINVAL, "{err}");
    }
    #[cfg(not(feature = "arrow"))]
    drop(array);
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

#[test]
fn a_cycle_of_children_ends_in_a_finding() {
    let _s = serial();
    // struct<struct<...>>: the inner struct's only child is itself.
    let inner = Schema::builder("+s")
        .child(Schema::new("i", Some("leaf")).unwrap())
        .build()
        .unwrap();
    let schema = Schema::builder("+s").child(inner).build().unwrap();
    let cycle = Child::SelfCycle(node(1, vec![Buf::Null]));
    let raw = device_array(
        Node {
            children: vec![cycle],
            ..node(1, vec![Buf::Null])
        },
        DeviceType::CPU,
    );
    let mut raw = raw;
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert!(array.validate(&schema, true).is_err());
    assert!(array.host(&schema).and_then(|h| read_all(&h)).is_err());
    drop(array);
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

#[test]
fn device_fields_that_lie_are_refused() {
    let _s = serial();
    let event = Box::new(0u64);
    let mut raw = device_array(node(1, vec![Buf::Null, i32s(&[1])]), DeviceType::CPU);
    raw.sync_event = &*event as *const u64 as *mut c_void;
    refused_everywhere("a CPU array with a sync event", schema("i"), raw, "sync_event");
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
    let mut raw = device_array(node(1, vec![Buf::Null, i32s(&[1])]), DeviceType::CPU);
    raw.reserved[1] = 7;
    reported_not_in_the_way("reserved words not zero", schema("i"), raw, "reserved");
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

/// A utf8 array over "abcdef" with these offsets (and a validity bitmap
/// when `nulls` is given).
fn utf8(offsets: &[i32], data: &[u8]) -> sys::ArrowDeviceArray {
    device_array(
        node(offsets.len() as i64 - 1, vec![Buf::Null, i32s(offsets), bytes(data)]),
        DeviceType::CPU,
    )
}

/// Content lies (only FULL validation reads them): `validate(full)` and
/// `to_arrow` refuse with the finding; `host()` checks structure only, and
/// its accessors refuse the element the lie is in.
#[test]
fn content_lies_are_caught_before_anything_reads_them() {
    let _s = serial();
    let s = schema("u");
    // Decreasing offsets.
    let mut raw = utf8(&[0, 4, 2, 6], b"abcdef");
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert_mentions(array.validate(&s, true), "offset", "decreasing offsets: validate");
    let host = array.host(&s).unwrap();
    assert_eq!(host.str(0).unwrap(), "abcd");
    assert_mentions(host.str(1), "decreasing", "decreasing offsets: str(1)");
    assert_mentions(host.str(3), "out of range", "str past the end");
    #[cfg(feature = "arrow")]
    assert_mentions(array.to_arrow(&s), "offset", "decreasing offsets: to_arrow");
    #[cfg(not(feature = "arrow"))]
    drop(array);

    // Bytes that are not UTF-8.
    let mut raw = utf8(&[0, 2, 4], b"ab\xff\xfe");
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert_mentions(array.validate(&s, true), "utf-8", "bad UTF-8: validate");
    let host = array.host(&s).unwrap();
    assert_eq!(host.bytes(1).unwrap(), b"\xff\xfe");
    assert_mentions(host.str(1), "not UTF-8", "bad UTF-8: str");
    #[cfg(feature = "arrow")]
    assert_mentions(array.to_arrow(&s), "utf-8", "bad UTF-8: to_arrow");
    #[cfg(not(feature = "arrow"))]
    drop(array);

    // A dictionary index past the dictionary.
    let dict_schema = Schema::builder("i").name("d").dictionary(schema("u")).build().unwrap();
    let dictionary = node(2, vec![Buf::Null, i32s(&[0, 1, 2]), bytes(b"ab")]);
    let raw = device_array(
        Node {
            dictionary: Some(Box::new(Child::Node(dictionary))),
            ..node(2, vec![Buf::Null, i32s(&[1, 5])])
        },
        DeviceType::CPU,
    );
    let mut raw = raw;
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert_mentions(
        array.validate(&dict_schema, true),
        "dictionary",
        "dictionary index: validate",
    );
    let host = array.host(&dict_schema).unwrap();
    assert_eq!(host.value::<i32>(1).unwrap(), 5);
    assert_mentions(
        host.dictionary().unwrap().str(5),
        "out of range",
        "dictionary index: lookup",
    );
    #[cfg(feature = "arrow")]
    assert_mentions(array.to_arrow(&dict_schema), "dictionary", "dictionary index: to_arrow");
    #[cfg(not(feature = "arrow"))]
    drop(array);

    // List offsets past the child.
    let list_schema = Schema::builder("+l")
        .child(Schema::new("i", Some("item")).unwrap())
        .build()
        .unwrap();
    let raw = device_array(
        Node {
            children: vec![Child::Node(node(2, vec![Buf::Null, i32s(&[1, 2])]))],
            ..node(2, vec![Buf::Null, i32s(&[0, 1, 5])])
        },
        DeviceType::CPU,
    );
    let mut raw = raw;
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    assert!(
        array.validate(&list_schema, true).is_err(),
        "list offsets past the child"
    );
    let host = array.host(&list_schema);
    if let Ok(host) = host {
        assert_eq!(host.list_range(0).unwrap(), 0..1);
        assert_mentions(host.list_range(1), "past the child", "list offsets: list_range");
    }
    #[cfg(feature = "arrow")]
    assert!(array.to_arrow(&list_schema).is_err());
    #[cfg(not(feature = "arrow"))]
    drop(array);

    assert_eq!(LIVE.load(Ordering::SeqCst), 0, "nothing leaked, nothing released twice");
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
    let mut raw = device_array(
        Node {
            offset: 3,
            ..node(2, vec![Buf::Null, i32s(&[1, 2, 3])])
        },
        DeviceType::CPU,
    );
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    // The buffer is declared by length + offset = 5 values (20 bytes); the
    // real one has 12: what no CPU consumer can see (README).
    let host = array.host(&schema).unwrap();
    assert_eq!(host.buffer(1).unwrap().unwrap().len(), 20);
    drop(array);
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------- schemas

/// A hand-made schema with any format and name bytes.
struct SchemaPrivate {
    _format: CString,
    _name: CString,
}

unsafe extern "C" fn release_schema(schema: *mut sys::ArrowSchema) {
    drop(Box::from_raw((*schema).private_data as *mut SchemaPrivate));
    (*schema).release = None;
    LIVE.fetch_sub(1, Ordering::SeqCst);
}

fn raw_schema(format: &[u8], name: &[u8]) -> Schema {
    let private = Box::new(SchemaPrivate {
        _format: CString::new(format).unwrap(),
        _name: CString::new(name).unwrap(),
    });
    let mut raw = sys::ArrowSchema {
        format: private._format.as_ptr(),
        name: private._name.as_ptr(),
        flags: sys::ARROW_FLAG_NULLABLE as i64,
        release: Some(release_schema),
        private_data: Box::into_raw(private) as *mut c_void,
        ..Default::default()
    };
    LIVE.fetch_add(1, Ordering::SeqCst);
    // Unchecked: the tests hand deliberately bad schemas to the readers.
    unsafe { Schema::from_raw_unchecked(&mut raw) }.unwrap()
}

#[test]
fn hostile_schemas_are_refused() {
    let _s = serial();
    let bad_format = raw_schema(b"zz", b"x");
    assert_mentions(bad_format.validate(), "format", "format zz");
    let mut raw = device_array(node(1, vec![bytes(&[1]), i32s(&[1])]), DeviceType::CPU);
    let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
    let host = array.host(&bad_format).unwrap();
    assert_mentions(host.is_valid(0), "format", "is_valid under format zz");
    assert_mentions(host.value::<i32>(0), "cannot read", "value under format zz");
    assert_mentions(host.buffer(1).map(|_| ()), "format", "buffer under format zz");
    #[cfg(feature = "arrow")]
    {
        assert_mentions(bad_format.to_arrow_field(), "format", "to_arrow_field of zz");
        // A name that is not UTF-8 passes ferry's validator but makes
        // arrow-rs panic: contained, reported, and silent (see the last test).
        let bad_name = raw_schema(b"i", b"\xff\xfe");
        assert_mentions(bad_name.to_arrow_field(), "utf8", "a non-UTF-8 name");
    }
    drop(array);
    drop(bad_format);
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------- streams

/// What a hand-made stream does.
#[derive(Clone, Copy)]
enum Behaviour {
    /// get_schema returns 0 and leaves the schema released.
    ReleasedSchema,
    /// get_schema hands over a schema with format "zz".
    BadSchema,
    /// get_next hands over a utf8 batch with decreasing offsets.
    BadBatch,
    /// get_next hands over a batch of another device type.
    WrongDevice,
    /// get_next fails with `code` and get_last_error returns NULL.
    Fails(c_int),
    /// get_next fills the batch and then returns EIO.
    FillsAndFails,
}

struct StreamPrivate {
    behaviour: Behaviour,
}

unsafe extern "C" fn stream_get_schema(stream: *mut sys::ArrowDeviceArrayStream, out: *mut sys::ArrowSchema) -> c_int {
    let private = &*((*stream).private_data as *const StreamPrivate);
    match private.behaviour {
        Behaviour::ReleasedSchema => 0,
        Behaviour::BadSchema => {
            let mut s = raw_schema(b"zz", b"x");
            *out = std::mem::take(&mut *(s.as_mut_ptr()));
            0
        }
        _ => {
            let s = Schema::builder("+s")
                .child(Schema::new("u", Some("s")).unwrap())
                .build()
                .unwrap();
            s.export_to(out).map_or(errno::EIO, |()| 0)
        }
    }
}

unsafe extern "C" fn stream_get_next(
    stream: *mut sys::ArrowDeviceArrayStream,
    out: *mut sys::ArrowDeviceArray,
) -> c_int {
    let private = &*((*stream).private_data as *const StreamPrivate);
    let strukt = |device_type| {
        let column = node(3, vec![Buf::Null, i32s(&[0, 4, 2, 6]), bytes(b"abcdef")]);
        device_array(
            Node {
                children: vec![Child::Node(column)],
                ..node(3, vec![Buf::Null])
            },
            device_type,
        )
    };
    match private.behaviour {
        // A bad schema's stream still hands out a batch (that a validating
        // consumer refuses against the schema).
        Behaviour::BadBatch | Behaviour::BadSchema => {
            *out = strukt(DeviceType::CPU);
            0
        }
        Behaviour::WrongDevice => {
            *out = strukt(DeviceType::SIM);
            0
        }
        Behaviour::Fails(code) => code,
        Behaviour::FillsAndFails => {
            *out = strukt(DeviceType::CPU);
            errno::EIO
        }
        _ => 0,
    }
}

unsafe extern "C" fn stream_last_error(_: *mut sys::ArrowDeviceArrayStream) -> *const c_char {
    ptr::null()
}

unsafe extern "C" fn stream_release(stream: *mut sys::ArrowDeviceArrayStream) {
    drop(Box::from_raw((*stream).private_data as *mut StreamPrivate));
    (*stream).release = None;
    LIVE.fetch_sub(1, Ordering::SeqCst);
}

fn hostile_stream(behaviour: Behaviour) -> DeviceArrayStream {
    hostile_stream_with(behaviour, Validation::None)
}

fn hostile_stream_with(behaviour: Behaviour, validation: Validation) -> DeviceArrayStream {
    LIVE.fetch_add(1, Ordering::SeqCst);
    let mut raw = sys::ArrowDeviceArrayStream {
        device_type: DeviceType::CPU.raw(),
        get_schema: Some(stream_get_schema),
        get_next: Some(stream_get_next),
        get_last_error: Some(stream_last_error),
        release: Some(stream_release),
        private_data: Box::into_raw(Box::new(StreamPrivate { behaviour })) as *mut c_void,
    };
    unsafe { DeviceArrayStream::from_raw_with(&mut raw, validation) }.unwrap()
}

#[test]
fn hostile_streams_come_back_as_errors() {
    let _s = serial();
    let mut s = hostile_stream(Behaviour::ReleasedSchema);
    let err = s.schema().unwrap_err();
    assert_eq!(err.code(), errno::EIO, "{err}");
    assert!(err.message().contains("released schema"), "{err}");
    drop(s);

    let mut s = hostile_stream(Behaviour::BadSchema);
    let schema = s.schema().unwrap();
    assert_mentions(schema.validate(), "format", "a stream's bad schema");
    drop((schema, s));

    let mut s = hostile_stream(Behaviour::WrongDevice);
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
        let mut s = hostile_stream(Behaviour::Fails(code));
        let err = s.next_array().unwrap_err();
        assert_eq!(err.code(), code);
        assert!(!err.message().is_empty());
        drop(s);
    }

    let mut s = hostile_stream(Behaviour::FillsAndFails);
    assert_eq!(s.next_array().unwrap_err().code(), errno::EIO);
    drop(s);

    let mut s = hostile_stream(Behaviour::BadBatch);
    let schema = s.schema().unwrap();
    let batch = s.next_array().unwrap().unwrap();
    assert_mentions(batch.validate(&schema, true), "offset", "a stream's bad batch");
    drop((batch, schema, s));

    // Validated imports (the default; FULL here): the bad schema or batch
    // fails the stream with the validator's finding, the refused batch is
    // released, and every later read gives the same error.
    let mut s = hostile_stream_with(Behaviour::BadSchema, Validation::Default);
    let err = s.next_array().unwrap_err();
    assert!(
        err.message().starts_with("the stream's schema fails validation: "),
        "{err}"
    );
    assert_mentions(Err::<(), _>(err.clone()), "format", "a stream's bad schema, validated");
    assert_eq!(s.next_array().unwrap_err(), err);
    drop(s);
    let mut s = hostile_stream_with(Behaviour::BadBatch, Validation::Full);
    let err = s.next_array().unwrap_err();
    assert!(err.message().starts_with("the array fails validation: "), "{err}");
    assert_mentions(Err::<(), _>(err.clone()), "offset", "a stream's bad batch, validated");
    assert_eq!(s.next_ref().unwrap_err(), err);
    drop(s);
    assert_eq!(
        LIVE.load(Ordering::SeqCst),
        0,
        "every schema, batch and stream released once"
    );
}

#[cfg(feature = "arrow")]
#[test]
fn hostile_streams_through_the_arrow_reader() {
    let _s = serial();
    let err = hostile_stream(Behaviour::BadSchema).into_arrow_reader().unwrap_err();
    assert!(err.message().contains("format"), "{err}");
    let err = hostile_stream(Behaviour::ReleasedSchema)
        .into_arrow_reader()
        .unwrap_err();
    assert!(err.message().contains("released schema"), "{err}");

    let mut reader = hostile_stream(Behaviour::BadBatch).into_arrow_reader().unwrap();
    let err = reader.next().unwrap().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the array fails validation") && text.contains("offset"),
        "{text}"
    );
    let again = reader.next().unwrap().unwrap_err().to_string();
    assert_eq!(again, text, "the same error on every later call");
    drop(reader);

    let mut reader = hostile_stream(Behaviour::Fails(errno::EIO))
        .into_arrow_reader()
        .unwrap();
    assert!(reader.next().unwrap().is_err());
    drop(reader);
    assert_eq!(LIVE.load(Ordering::SeqCst), 0);
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
