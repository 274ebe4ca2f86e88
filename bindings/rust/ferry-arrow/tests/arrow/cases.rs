// Round trips with arrow-rs: arrow -> ferry -> C struct -> ferry -> arrow,
// zero-copy, for flat, nested and dictionary types; ferry-made arrays
// imported into arrow; sim arrays via the CPU; record batches and
// RecordBatchReader streams both ways; what arrow must never see.
// Included by tests/arrow.rs once per arrow-rs release.
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, StringDictionaryBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int16Array, Int32Array, Int64Array, RecordBatch,
    RecordBatchIterator, RecordBatchReader, StringArray, StructArray, UInt8Array,
};
use arrow_schema::{ArrowError, DataType, Field};
use ferry_arrow::{errno, sys, ArrayBuilder, Buffer, Device, DeviceArray, DeviceArrayStream, DeviceType, ExportPolicy, Schema};

/// arrow -> ferry -> raw C struct (as a foreign consumer) -> ferry -> arrow.
fn round_trip(input: ArrayRef) -> ArrayRef {
    let (array, schema) = DeviceArray::from_arrow(input.as_ref()).unwrap();
    array.validate(&schema, true).unwrap();
    let mut raw_schema = sys::ArrowSchema::default();
    let mut raw_array = sys::ArrowDeviceArray::default();
    unsafe {
        schema.export_to(&mut raw_schema).unwrap();
        array.export_to(&mut raw_array).unwrap();
        let schema = Schema::from_raw(&mut raw_schema).unwrap();
        let array = DeviceArray::from_raw(&mut raw_array, &schema).unwrap();
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
    let (array, _schema) = DeviceArray::from_arrow(&input).unwrap();
    assert_eq!(array.buffer(1) as *const i32, address, "export shares arrow's buffer");
    let output = round_trip(input);
    let output = output.as_any().downcast_ref::<Int32Array>().unwrap();
    assert_eq!(output.values().as_ptr(), address, "import shares it too");
}

#[test]
fn ferry_made_arrays_import_into_arrow() {
    let (array, schema) = ferry_arrow::export_primitive(vec![5i32, 6, 7], Some(&[true, false, true])).unwrap();
    let arrow = array.to_arrow(&schema).unwrap();
    assert_eq!(
        &arrow,
        &(Arc::new(Int32Array::from(vec![Some(5), None, Some(7)])) as ArrayRef)
    );

    let (array, schema) = ferry_arrow::export_utf8(&[Some("a"), None]).unwrap();
    let arrow = array.to_arrow(&schema).unwrap();
    assert_eq!(
        &arrow,
        &(Arc::new(StringArray::from(vec![Some("a"), None])) as ArrayRef)
    );
}

#[test]
fn sim_arrays_are_brought_to_the_host_first() {
    let sim = Device::sim(0).unwrap();
    let stream = Arc::new(sim.create_stream().unwrap());
    let mut buffer = sim.allocate(8).unwrap();
    let bytes: Vec<u8> = [3i32, 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
    unsafe { buffer.copy_from_host_async(&bytes, &stream).unwrap() };
    let array = ArrayBuilder::new(2)
        .buffer(Buffer::null())
        .buffer(Buffer::from_device(buffer))
        .keep_alive(stream.clone())
        .build_async(&stream, ExportPolicy::RecordEvent)
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

fn batch(values: &[i32], names: &[Option<&str>]) -> RecordBatch {
    let schema = Arc::new(
        arrow_schema::Schema::new(vec![
            Field::new("n", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ])
        .with_metadata(std::collections::HashMap::from([("origin".to_string(), "test".to_string())])),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(values.to_vec())),
        Arc::new(StringArray::from(names.to_vec())),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

#[test]
fn record_batches_round_trip_with_their_metadata() {
    let input = batch(&[1, 2, 3], &[Some("a"), None, Some("c")]);
    let (array, schema) = DeviceArray::from_record_batch(&input).unwrap();
    assert_eq!(schema.format(), "+s");
    assert_eq!(schema.metadata_value("origin").unwrap(), Some(&b"test"[..]));
    let output = array.to_record_batch(&schema).unwrap();
    assert_eq!(output, input);
    assert_eq!(output.schema().metadata().get("origin").map(String::as_str), Some("test"));
}

#[test]
fn a_struct_with_null_rows_is_no_record_batch_and_says_so() {
    let (array, schema) = DeviceArray::from_arrow(&StructArray::new(
        vec![Field::new("a", DataType::Int32, true)].into(),
        vec![Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef],
        Some(vec![true, false].into()),
    ))
    .unwrap();
    let err = array.to_record_batch(&schema).unwrap_err();
    assert!(err.message().contains("null rows"), "{err}");
}

/// arrow reader -> ferry stream -> C struct -> ferry stream -> arrow reader.
#[test]
fn record_batch_readers_bridge_both_ways() {
    let batches = vec![batch(&[1, 2], &[Some("x"), None]), batch(&[], &[]), batch(&[7], &[Some("y")])];
    let schema = batches[0].schema();
    let reader = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone());
    let stream = DeviceArrayStream::from_arrow_reader(reader).unwrap();
    assert_eq!(stream.device_type(), DeviceType::CPU);
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { stream.export_to(&mut raw).unwrap() };
    let stream = unsafe { DeviceArrayStream::from_raw(&mut raw) }.unwrap();
    let reader: ArrowReader = stream.into_arrow_reader().unwrap();
    assert_eq!(reader.schema(), schema);
    let output: Vec<RecordBatch> = reader.collect::<Result<_, ArrowError>>().unwrap();
    assert_eq!(output, batches);
}

#[test]
fn reader_errors_travel_both_ways() {
    let good = batch(&[1], &[Some("a")]);
    let schema = good.schema();
    let items = vec![Ok(good.clone()), Err(ArrowError::ComputeError("disk on fire".into()))];
    let reader = RecordBatchIterator::new(items, schema);
    let mut stream = DeviceArrayStream::from_arrow_reader(reader).unwrap();
    assert!(stream.next_array().unwrap().is_some());
    let err = stream.next_array().unwrap_err();
    assert_eq!(err.code(), errno::EIO);
    assert!(err.message().contains("disk on fire"), "{err}");

    let items = vec![Ok(good), Err(ArrowError::ComputeError("disk on fire".into()))];
    let reader = RecordBatchIterator::new(items, batch(&[], &[]).schema());
    let mut arrow_reader = DeviceArrayStream::from_arrow_reader(reader).unwrap().into_arrow_reader().unwrap();
    assert!(arrow_reader.next().unwrap().is_ok());
    let err = arrow_reader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("disk on fire"), "{err}");
    // The ferry error is inside, with its code.
    match err {
        ArrowError::ExternalError(inner) => {
            assert_eq!(inner.downcast_ref::<ferry_arrow::Error>().unwrap().code(), errno::EIO)
        }
        other => panic!("expected an ExternalError, got {other:?}"),
    }
    // Every later call reports the same error; the producer is not asked.
    for _ in 0..3 {
        let again = arrow_reader.next().unwrap().unwrap_err();
        assert!(again.to_string().contains("disk on fire"), "{again}");
    }
    assert!(arrow_reader.collect::<Result<Vec<_>, ArrowError>>().is_err());
}

#[test]
fn a_stream_of_non_struct_batches_is_no_reader() {
    let stream = DeviceArrayStream::from_iter(
        DeviceType::CPU,
        std::iter::empty::<ferry_arrow::Result<DeviceArray>>(),
        Schema::new("i", None).unwrap(),
    )
    .unwrap();
    let err = stream.into_arrow_reader().unwrap_err();
    assert!(err.message().contains("struct"), "{err}");
}

#[test]
fn sim_batches_reach_the_reader_on_the_host() {
    let sim = Device::sim(1).unwrap();
    let stream = Arc::new(sim.create_stream().unwrap());
    let schema = Schema::builder("+s").child(Schema::new("i", Some("v")).unwrap()).build().unwrap();
    let batches = (0..3i32).map(move |b| {
        let mut memory = sim.allocate(8)?;
        let bytes: Vec<u8> = [b, b + 1].iter().flat_map(|v| v.to_ne_bytes()).collect();
        memory.copy_from_host(&bytes)?;
        ArrayBuilder::new(2)
            .buffer(Buffer::null())
            .child(ArrayBuilder::new(2).buffer(Buffer::null()).buffer(Buffer::from_device(memory)))
            .keep_alive(stream.clone())
            .build_async(&stream, ExportPolicy::RecordEvent)
    });
    let ferry_stream = DeviceArrayStream::from_iter(DeviceType::SIM, batches, schema).unwrap();
    let firsts: Vec<i32> = ferry_stream
        .into_arrow_reader()
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            b.column(0).as_any().downcast_ref::<Int32Array>().unwrap().value(1)
        })
        .collect();
    assert_eq!(firsts, vec![1, 2, 3]);
}

/// A utf8 array with the given offsets over "abcdef", built by hand.
fn utf8_with_offsets(offsets: Vec<i32>) -> (Schema, DeviceArray) {
    let length = offsets.len() as i64 - 1;
    let array = ArrayBuilder::new(length)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(offsets))
        .buffer(Buffer::from_static(b"abcdef"))
        .build()
        .unwrap();
    (Schema::new("u", None).unwrap(), array)
}

#[test]
fn decreasing_offsets_are_the_validators_error_not_arrows_problem() {
    let (schema, array) = utf8_with_offsets(vec![0, 4, 2, 6]);
    let err = array.to_arrow(&schema).unwrap_err();
    assert_eq!(err.code(), errno::EINVAL);
    assert!(err.message().starts_with("the array fails validation: "), "{err}");
    assert!(err.message().contains("offset"), "the validator's finding: {err}");
    // The same producer is fine with increasing offsets.
    let (schema, array) = utf8_with_offsets(vec![0, 2, 4, 6]);
    let ok = array.to_arrow(&schema).unwrap();
    assert_eq!(ok.len(), 3);
}
