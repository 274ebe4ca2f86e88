//! Checking a case: every property shared/cases.md lists, computed from the
//! formula, never from a table. Values are read only after the producer's
//! sync event has been waited on.
use ferry_arrow::{ArrayView, DeviceArray, DeviceType, Error, Result, SchemaView};

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

/// Reads element `p` of a buffer (unaligned reads: the checker must not
/// assume the producer aligned anything).
fn read<T: Copy>(buffer: *const u8, p: i64) -> T {
    unsafe { std::ptr::read_unaligned((buffer as *const T).add(p as usize)) }
}

fn bit(buffer: *const u8, p: i64) -> bool {
    read::<u8>(buffer, p / 8) & (1 << (p % 8)) != 0
}

fn buffer(array: &ArrayView, i: usize, path: &str) -> Result<*const u8> {
    let b = array.buffer(i) as *const u8;
    ensure!(!b.is_null(), "{path}: buffer {i} is NULL");
    Ok(b)
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

/// Checks variable-size element `i` at physical slot `p` against `expected`.
fn check_var(offsets: *const u8, data: *const u8, p: i64, expected: &[u8], path: &str, i: i64) -> Result<()> {
    let (start, end) = (read::<i32>(offsets, p), read::<i32>(offsets, p + 1));
    ensure!(
        start >= 0 && end >= start,
        "{path}: offsets [{start}, {end}) of element {i} are not monotone"
    );
    let got = unsafe { std::slice::from_raw_parts(data.add(start as usize), (end - start) as usize) };
    ensure!(
        got == expected,
        "{path}: element {i} is {:?}, expected {:?}",
        String::from_utf8_lossy(got),
        String::from_utf8_lossy(expected)
    );
    Ok(())
}

/// Checks the (host-readable) top-level array of `case`.
pub fn check_array_contents(case: &Case, array: &ArrayView) -> Result<()> {
    let path = "array";
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
    // A missing bitmap is fine only when no element is null; a present one
    // must match every bit (the same rule as the C checker).
    let validity = array.buffer(0) as *const u8;
    if validity.is_null() {
        ensure!(
            case.null_count() == 0,
            "array: {} elements are null but buffer 0 (validity) is NULL",
            case.null_count()
        );
    } else {
        for i in 0..case.length {
            let valid = bit(validity, i + o);
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
            let values = buffer(array, 1, path)?;
            for i in live {
                let (got, want): ($t, $t) = (read::<$t>(values, i + o), $value(seed, i));
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
            let values = buffer(array, 1, path)?;
            for i in live {
                let (got, want) = (bit(values, i + o), f::boolean(seed, i));
                ensure!(got == want, "array: element {i} is {got}, expected {want}");
            }
        }
        Ty::Utf8 | Ty::Binary => {
            let (offsets, data) = (buffer(array, 1, path)?, buffer(array, 2, path)?);
            for i in live {
                check_var(offsets, data, i + o, f::utf8(seed, i).as_bytes(), path, i)?;
            }
        }
        Ty::ListInt32 => {
            let offsets = buffer(array, 1, path)?;
            let child = array.child(0).unwrap();
            let last = read::<i32>(offsets, case.length + o) as i64;
            check_plain(child, "array.children[0]", 2, last)?;
            let items = buffer(child, 1, "array.children[0]")?;
            for i in live {
                let (start, end) = (
                    read::<i32>(offsets, i + o) as i64,
                    read::<i32>(offsets, i + o + 1) as i64,
                );
                let want_len = f::list_len(seed, i) as i64;
                ensure!(
                    start >= 0 && end - start == want_len,
                    "array: list {i} spans [{start}, {end}), expected {want_len} elements"
                );
                for j in start..end {
                    let (got, want) = (read::<i32>(items, j), f::int32(seed, j));
                    ensure!(got == want, "array.children[0]: element {j} is {got}, expected {want}");
                }
            }
        }
        Ty::StructInt32Utf8 => {
            let (a, b) = (array.child(0).unwrap(), array.child(1).unwrap());
            check_plain(a, "array.children[0]", 2, case.length + o)?;
            check_plain(b, "array.children[1]", 3, case.length + o)?;
            let a_values = buffer(a, 1, "array.children[0]")?;
            let (b_offsets, b_data) = (buffer(b, 1, "array.children[1]")?, buffer(b, 2, "array.children[1]")?);
            for i in live {
                let (got, want) = (read::<i32>(a_values, i + o), f::int32(seed, i));
                ensure!(got == want, "array.children[0]: element {i} is {got}, expected {want}");
                check_var(
                    b_offsets,
                    b_data,
                    i + o,
                    f::utf8(seed.wrapping_add(1), i).as_bytes(),
                    "array.children[1]",
                    i,
                )?;
            }
        }
        Ty::DictInt32Utf8 => {
            let dict = array.dictionary().unwrap();
            check_plain(dict, "array.dictionary", 3, 7)?;
            ensure!(
                dict.length() == 7,
                "array.dictionary: length is {}, expected 7",
                dict.length()
            );
            let (d_offsets, d_data) = (
                buffer(dict, 1, "array.dictionary")?,
                buffer(dict, 2, "array.dictionary")?,
            );
            for k in 0..7 {
                check_var(d_offsets, d_data, k, f::dict_value(k).as_bytes(), "array.dictionary", k)?;
            }
            primitive!(i32, f::dict_index);
        }
    }
    Ok(())
}

/// Checks a whole device array: device type, sync event waited on, then
/// structure (by the core's full validation) and contents.
pub fn check_device_array(case: &Case, schema: &SchemaView, array: &DeviceArray) -> Result<()> {
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
    // Wait on the producer's event before touching any buffer.
    array.wait()?;
    let host_readable = array.device_type() == DeviceType::CPU || array.device()?.is_host_accessible();
    if !host_readable {
        let copy = array.copy_to(schema, DeviceType::CPU, -1)?;
        return check_host(case, schema, &copy);
    }
    check_host(case, schema, array)
}

fn check_host(case: &Case, schema: &SchemaView, array: &DeviceArray) -> Result<()> {
    // The core's validation first, so that no bad offset sends the value
    // checks outside a buffer.
    array
        .validate(schema, true)
        .map_err(|e| Error::new(e.code(), format!("array fails ferry's validation: {}", e.message())))?;
    check_array_contents(case, array.array())
}
