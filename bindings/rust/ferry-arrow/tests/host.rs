//! HostArray on well-formed arrays of every layout it reads: the values
//! come back right, offsets and validity are applied, and the checks that
//! guard hostile input (type, index, alignment) answer as documented.
use std::os::raw::c_void;

use ferry_arrow::{ArrayBuilder, Buffer, DeviceArray, Schema};

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

#[test]
fn utf8_and_binary_with_an_offset_and_nulls() {
    // ["x", null, "yz", ""] stored from slot 1 (slot 0 is "skip").
    let (bits, _) = ferry_arrow::validity_bitmap(&[true, true, false, true, true]);
    for (format, wide) in [("u", false), ("z", false), ("U", true), ("Z", true)] {
        let offsets = [0i64, 4, 5, 5, 7, 7];
        let offsets = if wide {
            Buffer::from_vec(offsets.to_vec())
        } else {
            Buffer::from_vec(offsets.iter().map(|&o| o as i32).collect::<Vec<_>>())
        };
        let array = ArrayBuilder::new(4)
            .offset(1)
            .null_count(1)
            .buffer(Buffer::from_vec(bits.clone()))
            .buffer(offsets)
            .buffer(Buffer::from_static(b"skipxyz"))
            .build()
            .unwrap();
        let schema = Schema::new(format, None).unwrap();
        array.validate(&schema, true).unwrap();
        let host = array.host(&schema).unwrap();
        assert_eq!((host.len(), host.offset(), host.null_count()), (4, 1, 1));
        let got: Vec<Option<&[u8]>> = (0..4)
            .map(|i| host.is_valid(i).unwrap().then(|| host.bytes(i).unwrap()))
            .collect();
        assert_eq!(got, vec![Some(&b"x"[..]), None, Some(b"yz"), Some(b"")], "{format}");
        if format.eq_ignore_ascii_case("u") {
            assert_eq!(host.str(2).unwrap(), "yz");
        } else {
            assert!(host.str(0).is_err(), "str of binary {format}");
        }
        let width = if wide { 8 } else { 4 };
        assert_eq!(host.buffer(1).unwrap().unwrap().len(), 6 * width, "offsets of {format}");
        assert_eq!(host.buffer(2).unwrap().unwrap(), b"skipxyz", "data of {format}");
    }
}

#[test]
fn booleans_and_temporal_values() {
    let (values, _) = ferry_arrow::validity_bitmap(&[true, false, true]);
    let bools = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(values))
        .build()
        .unwrap();
    let schema = Schema::new("b", None).unwrap();
    let host = bools.host(&schema).unwrap();
    let got: Vec<bool> = (0..3).map(|i| host.bool_value(i).unwrap()).collect();
    assert_eq!(got, [true, false, true]);
    assert!(host.bool_value(3).is_err());
    assert!(host.value::<i8>(0).is_err(), "a bitmap is not i8 values");

    let (schema, dates) = (
        Schema::new("tdD", None).unwrap(),
        ArrayBuilder::new(2)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec(vec![19000i32, 19001]))
            .build()
            .unwrap(),
    );
    let host = dates.host(&schema).unwrap();
    assert_eq!(host.values::<i32>().unwrap(), &[19000, 19001]);
    assert!(host.values::<i64>().is_err(), "date32 is 32 bits");
}

#[test]
fn nested_values_through_children_and_the_dictionary() {
    // struct<a: int32, b: utf8> with offset 1 over 3 rows; its children
    // have 4 slots (the parent's offset applies to them).
    let strukt = ArrayBuilder::new(3)
        .offset(1)
        .buffer(Buffer::null())
        .child(
            ArrayBuilder::new(4)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![0i32, 10, 20, 30])),
        )
        .child(
            ArrayBuilder::new(4)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![0i32, 1, 2, 3, 4]))
                .buffer(Buffer::from_static(b"pqrs")),
        )
        .build()
        .unwrap();
    let schema = Schema::builder("+s")
        .child(Schema::new("i", Some("a")).unwrap())
        .child(Schema::new("u", Some("b")).unwrap())
        .build()
        .unwrap();
    let host = strukt.host(&schema).unwrap();
    let (a, b) = (host.child(0).unwrap(), host.child(1).unwrap());
    let rows: Vec<(i32, &str)> = (0..3)
        .map(|i| {
            let slot = i + host.offset();
            (a.value::<i32>(slot).unwrap(), b.str(slot).unwrap())
        })
        .collect();
    assert_eq!(rows, vec![(10, "q"), (20, "r"), (30, "s")]);
    assert!(host.is_valid(2).unwrap());

    // dictionary<int32, utf8> and fixed-size / large lists.
    let dict = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(vec![1i32, 0, 1]))
        .dictionary(
            ArrayBuilder::new(2)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![0i32, 2, 5]))
                .buffer(Buffer::from_static(b"nobody")),
        )
        .build()
        .unwrap();
    let schema = Schema::builder("i")
        .dictionary(Schema::new("u", None).unwrap())
        .build()
        .unwrap();
    let host = dict.host(&schema).unwrap();
    let words = host.dictionary().unwrap();
    let decoded: Vec<&str> = (0..3)
        .map(|i| words.str(host.value::<i32>(i).unwrap() as usize).unwrap())
        .collect();
    assert_eq!(decoded, ["bod", "no", "bod"]);

    for (format, offsets) in [("+w:2", None), ("+L", Some(vec![0i64, 2, 4]))] {
        let mut list = ArrayBuilder::new(2).buffer(Buffer::null());
        if let Some(o) = offsets {
            list = list.buffer(Buffer::from_vec(o));
        }
        let list = list
            .child(
                ArrayBuilder::new(4)
                    .buffer(Buffer::null())
                    .buffer(Buffer::from_vec(vec![5i32, 6, 7, 8])),
            )
            .build()
            .unwrap();
        let schema = Schema::builder(format)
            .child(Schema::new("i", Some("item")).unwrap())
            .build()
            .unwrap();
        list.validate(&schema, true).unwrap();
        let host = list.host(&schema).unwrap();
        assert_eq!(host.list_range(1).unwrap(), 2..4, "{format}");
        let items = host.child(0).unwrap();
        assert_eq!(items.values::<i32>().unwrap(), &[5, 6, 7, 8]);
    }
}

#[test]
fn unaligned_values_read_one_by_one_not_as_a_slice() {
    let bytes = {
        let mut b = vec![0u8];
        b.extend(i32_bytes(&[7, 8, 9]));
        b
    };
    let p = bytes.as_ptr();
    // Buffer 1 starts one byte into the vector: not aligned for i32.
    let unaligned = unsafe { Buffer::from_raw_parts(p.add(1) as *const c_void, 12, bytes) };
    let array = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(unaligned)
        .build()
        .unwrap();
    let schema = Schema::new("i", None).unwrap();
    let host = array.host(&schema).unwrap();
    let err = host.values::<i32>().unwrap_err();
    assert!(err.message().contains("not aligned"), "{err}");
    let got: Vec<i32> = (0..3).map(|i| host.value::<i32>(i).unwrap()).collect();
    assert_eq!(got, [7, 8, 9]);
}

#[test]
fn layouts_without_a_validity_bitmap_say_so() {
    let nulls = ArrayBuilder::new(2).build().unwrap();
    let schema = Schema::new("n", None).unwrap();
    let host = nulls.host(&schema).unwrap();
    assert!(!host.is_valid(1).unwrap(), "every element of a null array is null");

    // A dense union's validity lives in its children.
    let union = ArrayBuilder::new(1)
        .buffer(Buffer::from_vec(vec![0i8]))
        .buffer(Buffer::from_vec(vec![0i32]))
        .child(
            ArrayBuilder::new(1)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![1i32])),
        )
        .build()
        .unwrap();
    let schema = Schema::builder("+ud:0")
        .child(Schema::new("i", Some("a")).unwrap())
        .build()
        .unwrap();
    let host = union.host(&schema).unwrap();
    let err = host.is_valid(0).unwrap_err();
    assert!(err.message().contains("children"), "{err}");
}

#[test]
fn cpu_and_sim_arrays_are_read_in_place() {
    let (array, schema) = ferry_arrow::export_primitive(vec![1i32], None).unwrap();
    let mut raw = ferry_arrow::sys::ArrowDeviceArray::default();
    unsafe { array.export_to(&mut raw).unwrap() };
    let array = unsafe { DeviceArray::from_raw(&mut raw, &schema) }.unwrap();
    assert_eq!(array.host(&schema).unwrap().value::<i32>(0).unwrap(), 1);
    // A sim array is readable where it lies (after the wait host() does).
    let sim = array.move_to(&schema, ferry_arrow::DeviceType::SIM, 2).unwrap();
    assert_eq!(sim.host(&schema).unwrap().values::<i32>().unwrap(), &[1]);
}
