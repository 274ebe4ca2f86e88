//! Round trips with the arrow crate (feature `arrow`): arrow -> ferry -> C
//! struct -> ferry -> arrow, zero-copy, for flat, nested and dictionary
//! types; ferry-made arrays imported into arrow; sim arrays via the CPU.
#![cfg(feature = "arrow")]
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, StringDictionaryBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int16Array, Int32Array, Int64Array, StringArray,
    StructArray, UInt8Array,
};
use arrow_schema::{DataType, Field};
use ferry::{sys, ArrayBuilder, Buffer, Device, DeviceArray, DeviceType, ExportPolicy, Schema};

/// arrow -> ferry -> raw C struct (as a foreign consumer) -> ferry -> arrow.
fn round_trip(input: ArrayRef) -> ArrayRef {
    let (schema, array) = DeviceArray::from_arrow(&input).unwrap();
    array.validate(&schema, true).unwrap();
    let mut raw_schema = sys::ArrowSchema::default();
    let mut raw_array = sys::ArrowDeviceArray::default();
    unsafe {
        schema.export_to(&mut raw_schema).unwrap();
        array.export_to(&mut raw_array).unwrap();
        let schema = Schema::from_raw(&mut raw_schema).unwrap();
        let array = DeviceArray::from_raw(&mut raw_array).unwrap();
        array.to_arrow(&schema).unwrap()
    }
}

#[test]
fn flat_types_round_trip_equal() {
    let inputs: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)])),
        Arc::new(Int64Array::from(vec![i64::MIN, 0, i64::MAX])),
        Arc::new(Int16Array::from(Vec::<i16>::new())),
        Arc::new(UInt8Array::from(vec![255u8, 0])),
        Arc::new(Float64Array::from(vec![Some(0.5), None])),
        Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        Arc::new(StringArray::from(vec![Some("ferry"), None, Some(""), Some("ü")])),
        Arc::new(BinaryArray::from(vec![&b"\x00\x01"[..], b""])),
    ];
    for input in inputs {
        let output = round_trip(input.clone());
        assert_eq!(&output, &input, "{:?}", input.data_type());
    }
}

#[test]
fn sliced_arrays_keep_their_offset() {
    let input: ArrayRef = Arc::new(Int32Array::from((0..100).collect::<Vec<i32>>()));
    let sliced = input.slice(10, 5);
    let output = round_trip(sliced.clone());
    assert_eq!(&output, &sliced);
    assert_eq!(output.len(), 5);
}

#[test]
fn nested_and_dictionary_round_trip_equal() {
    let mut list = ListBuilder::new(Int32Builder::new());
    list.append_value([Some(1), Some(2)]);
    list.append_null();
    list.append_value([]);
    let list: ArrayRef = Arc::new(list.finish());

    let strukt: ArrayRef = Arc::new(StructArray::from(vec![
        (
            Arc::new(Field::new("a", DataType::Int32, false)),
            Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("b", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec![Some("x"), None])) as ArrayRef,
        ),
    ]));

    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    dict.append_value("d0");
    dict.append_value("d1");
    dict.append_value("d0");
    let dict: ArrayRef = Arc::new(dict.finish());

    for input in [list, strukt, dict] {
        assert_eq!(&round_trip(input.clone()), &input, "{:?}", input.data_type());
    }
}

#[test]
fn conversion_is_zero_copy() {
    let input = Int32Array::from((0..1000).collect::<Vec<i32>>());
    let address = input.values().as_ptr();
    let input: ArrayRef = Arc::new(input);
    let (_schema, array) = DeviceArray::from_arrow(&input).unwrap();
    assert_eq!(array.buffer(1) as *const i32, address, "export shares arrow's buffer");
    let output = round_trip(input);
    let output = output.as_any().downcast_ref::<Int32Array>().unwrap();
    assert_eq!(output.values().as_ptr(), address, "import shares it too");
}

#[test]
fn ferry_made_arrays_import_into_arrow() {
    let (schema, array) = ferry::export_primitive(vec![5i32, 6, 7], Some(&[true, false, true])).unwrap();
    let arrow = array.to_arrow(&schema).unwrap();
    assert_eq!(
        &arrow,
        &(Arc::new(Int32Array::from(vec![Some(5), None, Some(7)])) as ArrayRef)
    );

    let (schema, array) = ferry::export_utf8(&[Some("a"), None]).unwrap();
    let arrow = array.to_arrow(&schema).unwrap();
    assert_eq!(
        &arrow,
        &(Arc::new(StringArray::from(vec![Some("a"), None])) as ArrayRef)
    );
}

#[test]
fn sim_arrays_are_copied_to_the_cpu_first() {
    let sim = Device::sim(0).unwrap();
    let stream = Arc::new(sim.create_stream().unwrap());
    let mut buffer = sim.allocate(8).unwrap();
    let bytes: Vec<u8> = [3i32, 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
    unsafe { buffer.copy_from_host_async(&bytes, &stream).unwrap() };
    let array = ArrayBuilder::new(2)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .keep_alive(stream.clone())
        .build_async(&sim, Some(&stream), ExportPolicy::RecordEvent)
        .unwrap();
    assert_eq!(array.device_type(), DeviceType::SIM);
    let arrow = array.to_arrow(&Schema::new("i", None).unwrap()).unwrap();
    assert_eq!(&arrow, &(Arc::new(Int32Array::from(vec![3, 4])) as ArrayRef));
}

#[test]
fn schemas_convert_both_ways() {
    let field = Field::new(
        "l",
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        true,
    );
    let schema = Schema::from_arrow_field(&field).unwrap();
    assert_eq!(schema.format(), "+l");
    assert_eq!(schema.child(0).unwrap().format(), "u");
    assert_eq!(schema.to_arrow_field().unwrap(), field);
    let t = Schema::from_arrow_type(&DataType::Float32).unwrap();
    assert_eq!(t.to_arrow_type().unwrap(), DataType::Float32);
    // A list format without its child: arrow would assert; ferry
    // reports an error instead of unwinding.
    let err = Schema::new("+l", None).unwrap().to_arrow_type().unwrap_err();
    assert_ne!(err.code(), 0);
}
