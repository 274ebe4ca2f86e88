//! Checking a case: every property docs/cases.md lists, computed from the
//! formula, never from a table. Values are read only after the producer's
//! sync event has been waited on.
use ferry_arrow::{ArrayView, DeviceArray, DeviceType, Error, HostArray, Result, SchemaView};

use crate::case::{Case, Ty};
use crate::formula as f;

fn fail<T>(what: String) -> Result<T> {
    Err(Error::invalid(what))
}

macro_rules! ensure {
    ($cond:expr, $($msg:tt)*) => {
        if !$cond {
            return fail(format!($($msg)*));
        }
    };
}

fn check_schema_field(schema: &SchemaView, path: &str, format: &str, name: &str) -> Result<()> {
    ensure!(
        schema.format() == format,
        "{path}: format is {:?}, expected {format:?}",
        schema.format()
    );
    ensure!(
        schema.name().unwrap_or("") == name,
        "{path}: name is {:?}, expected {name:?}",
        schema.name()
    );
    Ok(())
}

/// Checks the schema of `ty` (formats and names everywhere, top-level
/// nullable).
pub fn check_schema(ty: Ty, schema: &SchemaView) -> Result<()> {
    ensure!(!schema.is_released(), "schema is released");
    check_schema_field(schema, "schema", ty.format(), ty.word())?;
    ensure!(schema.is_nullable(), "schema: the top-level field is not nullable");
    let (n_children, has_dict) = match ty {
        Ty::ListInt32 => (1, false),
        Ty::StructInt32Utf8 => (2, false),
        Ty::DictInt32Utf8 => (0, true),
        _ => (0, false),
    };
    ensure!(
        schema.n_children() == n_children,
        "schema: {} children, expected {n_children}",
        schema.n_children()
    );
    ensure!(
        schema.dictionary().is_some() == has_dict,
        "schema: dictionary present is {}, expected {has_dict}",
        schema.dictionary().is_some()
    );
    match ty {
        Ty::ListInt32 => check_schema_field(schema.child(0).unwrap(), "schema.children[0]", "i", "item")?,
        Ty::StructInt32Utf8 => {
            check_schema_field(schema.child(0).unwrap(), "schema.children[0]", "i", "a")?;
            check_schema_field(schema.child(1).unwrap(), "schema.children[1]", "u", "b")?;
        }
        Ty::DictInt32Utf8 => {
            let d = schema.dictionary().unwrap();
            ensure!(
                d.format() == "u",
                "schema.dictionary: format is {:?}, expected \"u\"",
                d.format()
            );
        }
        _ => {}
    }
    Ok(())
}

/// A child or dictionary: offset 0, no nulls, at least `min_length` long.
fn check_plain(array: &ArrayView, path: &str, n_buffers: usize, min_length: i64) -> Result<()> {
    ensure!(array.offset() == 0, "{path}: offset is {}, expected 0", array.offset());
    ensure!(
        array.null_count() == 0,
        "{path}: null_count is {}, expected 0",
        array.null_count()
    );
    ensure!(
        array.n_buffers() == n_buffers,
        "{path}: {} buffers, expected {n_buffers}",
        array.n_buffers()
    );
    ensure!(
        array.length() >= min_length,
        "{path}: length {} is shorter than {min_length}",
        array.length()
    );
    Ok(())
}

/// Checks variable-size element `i` (an index of `array`) against
/// `expected`; HostArray checks the offsets and bounds.
fn check_var(array: &HostArray<'_>, i: usize, expected: &[u8], path: &str) -> Result<()> {
    let got = array
        .bytes(i)
        .map_err(|e| Error::invalid(format!("{path}: element {i}: {}", e.message())))?;
    ensure!(
        got == expected,
        "{path}: element {i} is {:?}, expected {:?}",
        String::from_utf8_lossy(got),
        String::from_utf8_lossy(expected)
    );
    Ok(())
}

/// Checks the top-level array of `case`, read through the bounds-checked
/// HostArray accessors (a producer's bad offset or short buffer is an
/// error here, never a read outside what its array declares).
pub fn check_array_contents(case: &Case, host: &HostArray<'_>) -> Result<()> {
    let array = host.array();
    let (seed, o) = (case.seed, case.offset);
    ensure!(!array.is_released(), "array is released");
    ensure!(
        array.length() == case.length,
        "array: length is {}, expected {}",
        array.length(),
        case.length
    );
    ensure!(array.offset() == o, "array: offset is {}, expected {o}", array.offset());
    ensure!(
        array.null_count() == case.null_count(),
        "array: null_count is {}, expected {}",
        array.null_count(),
        case.null_count()
    );
    let n_buffers = match case.ty {
        Ty::Utf8 | Ty::Binary => 3,
        Ty::StructInt32Utf8 => 1,
        _ => 2,
    };
    ensure!(
        array.n_buffers() == n_buffers,
        "array: {} buffers, expected {n_buffers}",
        array.n_buffers()
    );
    // Any correct producer passes (cases.md): a missing bitmap is fine only
    // when no element is null; a present one must match every bit, so with
    // nulls=0 a bitmap of all ones is as good as none.
    if array.buffer(0).is_null() {
        ensure!(
            case.null_count() == 0,
            "array: {} elements are null but buffer 0 (validity) is NULL",
            case.null_count()
        );
    } else {
        for i in 0..case.length {
            let valid = host.is_valid(i as usize)?;
            ensure!(
                valid != case.is_null(i),
                "array: validity bit of element {i} is {valid}, expected {}",
                !case.is_null(i)
            );
        }
    }
    let n_children = match case.ty {
        Ty::ListInt32 => 1,
        Ty::StructInt32Utf8 => 2,
        _ => 0,
    };
    ensure!(
        array.n_children() == n_children,
        "array: {} children, expected {n_children}",
        array.n_children()
    );
    ensure!(
        array.dictionary().is_some() == (case.ty == Ty::DictInt32Utf8),
        "array: dictionary present is {}",
        array.dictionary().is_some()
    );

    let live = (0..case.length).filter(|i| !case.is_null(*i));
    macro_rules! primitive {
        ($t:ty, $value:expr) => {{
            for i in live {
                let (got, want): ($t, $t) = (host.value::<$t>(i as usize)?, $value(seed, i));
                ensure!(got == want, "array: element {i} is {got:?}, expected {want:?}");
            }
        }};
    }
    match case.ty {
        Ty::Int8 => primitive!(i8, f::int8),
        Ty::UInt8 => primitive!(u8, |s, i| f::int8(s, i) as u8),
        Ty::Int16 => primitive!(i16, f::int16),
        Ty::UInt16 => primitive!(u16, |s, i| f::int16(s, i) as u16),
        Ty::Int32 => primitive!(i32, f::int32),
        Ty::UInt32 => primitive!(u32, |s, i| f::int32(s, i) as u32),
        Ty::Int64 => primitive!(i64, |s, i| f::uint64(s, i) as i64),
        Ty::UInt64 => primitive!(u64, f::uint64),
        Ty::Float32 => primitive!(f32, f::float32),
        Ty::Float64 => primitive!(f64, f::float64),
        Ty::Bool => {
            for i in live {
                let (got, want) = (host.bool_value(i as usize)?, f::boolean(seed, i));
                ensure!(got == want, "array: element {i} is {got}, expected {want}");
            }
        }
        Ty::Utf8 | Ty::Binary => {
            for i in live {
                check_var(host, i as usize, f::utf8(seed, i).as_bytes(), "array")?;
            }
        }
        Ty::ListInt32 => {
            let child = host.child(0)?;
            let last = match case.length {
                0 => 0,
                n => host.list_range(n as usize - 1)?.end as i64,
            };
            check_plain(child.array(), "array.children[0]", 2, last)?;
            for i in live {
                let range = host.list_range(i as usize)?;
                let want_len = f::list_len(seed, i) as usize;
                ensure!(
                    range.len() == want_len,
                    "array: list {i} spans {range:?}, expected {want_len} elements"
                );
                for j in range {
                    let (got, want) = (child.value::<i32>(j)?, f::int32(seed, j as i64));
                    ensure!(got == want, "array.children[0]: element {j} is {got}, expected {want}");
                }
            }
        }
        Ty::StructInt32Utf8 => {
            let (a, b) = (host.child(0)?, host.child(1)?);
            check_plain(a.array(), "array.children[0]", 2, case.length + o)?;
            check_plain(b.array(), "array.children[1]", 3, case.length + o)?;
            for i in live {
                let slot = (i + o) as usize;
                let (got, want) = (a.value::<i32>(slot)?, f::int32(seed, i));
                ensure!(got == want, "array.children[0]: element {i} is {got}, expected {want}");
                check_var(
                    &b,
                    slot,
                    f::utf8(seed.wrapping_add(1), i).as_bytes(),
                    "array.children[1]",
                )?;
            }
        }
        Ty::DictInt32Utf8 => {
            let dict = host.dictionary()?;
            check_plain(dict.array(), "array.dictionary", 3, 7)?;
            ensure!(
                dict.len() == 7,
                "array.dictionary: length is {}, expected 7",
                dict.len()
            );
            for k in 0..7 {
                check_var(&dict, k, f::dict_value(k as i64).as_bytes(), "array.dictionary")?;
            }
            primitive!(i32, f::dict_index);
        }
    }
    Ok(())
}

/// Checks a whole device array: device type, then the sync event waited on
/// before any buffer is read (memory the host cannot reach is copied to the
/// CPU with `copy_to`, which waits first), then structure (the core's full
/// validation) and contents. Borrows the array: it is released where the
/// producer's get_next wrote it (the conformance suite's release watch
/// follows structs by address), by the caller.
pub fn check_device_array(case: &Case, array: &DeviceArray, schema: &SchemaView) -> Result<()> {
    ensure!(
        array.device_type() == case.device_type,
        "array: device type is {}, expected {} ({})",
        array.device_type(),
        case.device_type,
        case.device_word
    );
    ensure!(array.reserved_is_zero(), "array: the reserved words are not zero");
    if array.device_type() == DeviceType::CPU {
        ensure!(
            array.sync_event().is_null(),
            "array: a CPU array must have a NULL sync_event"
        );
    }
    let host_readable = array.device_type() == DeviceType::CPU || array.device()?.is_host_accessible();
    if host_readable {
        // Read in place (the sim device's strict mode then shows a read
        // that did not wait as poison): wait first.
        array.wait()?;
        check_host(case, schema, array)
    } else {
        check_host(case, schema, &array.copy_to(schema, DeviceType::CPU, -1)?)
    }
}

fn check_host(case: &Case, schema: &SchemaView, array: &DeviceArray) -> Result<()> {
    // The core's validation first, so that the value checks read
    // validated offsets.
    array
        .validate(schema, true)
        .map_err(|e| Error::new(e.code(), format!("array fails ferry's validation: {}", e.message())))?;
    check_array_contents(case, &array.host(schema)?)
}
