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
use ferry_arrow::{
    errno, sys, ArrayBuilder, Buffer, Device, DeviceArray, DeviceArrayStream, DeviceType, ExportPolicy, Schema,
};

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
        .with_metadata(std::collections::HashMap::from([(
            "origin".to_string(),
            "test".to_string(),
        )])),
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
    assert_eq!(
        output.schema().metadata().get("origin").map(String::as_str),
        Some("test")
    );
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
    let batches = vec![
        batch(&[1, 2], &[Some("x"), None]),
        batch(&[], &[]),
        batch(&[7], &[Some("y")]),
    ];
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
    let mut arrow_reader = DeviceArrayStream::from_arrow_reader(reader)
        .unwrap()
        .into_arrow_reader()
        .unwrap();
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
    let schema = Schema::builder("+s")
        .child(Schema::new("i", Some("v")).unwrap())
        .build()
        .unwrap();
    let batches = (0..3i32).map(move |b| {
        let mut memory = sim.allocate(8)?;
        let bytes: Vec<u8> = [b, b + 1].iter().flat_map(|v| v.to_ne_bytes()).collect();
        memory.copy_from_host(&bytes)?;
        ArrayBuilder::new(2)
            .buffer(Buffer::null())
            .child(
                ArrayBuilder::new(2)
                    .buffer(Buffer::null())
                    .buffer(Buffer::from_device(memory)),
            )
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

/// An int32 array whose null count lies (2 claimed, none in the bitmap).
fn int32_with_a_wrong_null_count() -> (Schema, DeviceArray) {
    let (validity, _) = ferry_arrow::validity_bitmap(&[true, true, true]);
    let array = ArrayBuilder::new(3)
        .null_count(2)
        .buffer(Buffer::from_vec(validity))
        .buffer(Buffer::from_vec(vec![1i32, 2, 3]))
        .build()
        .unwrap();
    (Schema::builder("i").nullable(true).build().unwrap(), array)
}

#[test]
fn to_arrow_validates_at_default_and_full_is_an_explicit_choice() {
    use ferry_arrow::Validation;
    // DEFAULT reads no buffer: a fixed-width array with a lying null count
    // passes (as it does arrow-rs's own from_ffi), FULL finds it.
    let (schema, array) = int32_with_a_wrong_null_count();
    assert_eq!(array.to_arrow(&schema).unwrap().len(), 3);
    let (schema, array) = int32_with_a_wrong_null_count();
    let err = array.to_arrow_with(&schema, Validation::Full).unwrap_err();
    assert!(err.message().starts_with("the array fails validation: "), "{err}");
    // The unchecked import is the unsafe function, not a level.
    let (schema, array) = int32_with_a_wrong_null_count();
    let err = array.to_arrow_with(&schema, Validation::None).unwrap_err();
    assert!(
        err.is_invalid_argument() && err.message().contains("to_arrow_unchecked"),
        "{err}"
    );
    let (schema, array) = int32_with_a_wrong_null_count();
    assert_eq!(unsafe { array.to_arrow_unchecked(&schema) }.unwrap().len(), 3);
    // Offsets are checked whatever level was asked (arrow-rs reads them
    // unchecked in safe code), nested in a struct too.
    let (schema, array) = utf8_with_offsets(vec![0, 4, 2, 6]);
    let err = array.to_arrow_with(&schema, Validation::Default).unwrap_err();
    assert!(err.message().contains("offset"), "{err}");
}

#[test]
fn a_reader_checks_offsets_even_when_the_stream_validates_at_default() {
    // One batch: a struct whose utf8 child has decreasing offsets.
    let schema = Schema::builder("+s")
        .child(Schema::new("u", Some("s")).unwrap())
        .build()
        .unwrap();
    let child = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(Buffer::from_vec(vec![0i32, 4, 2, 6]))
        .buffer(Buffer::from_static(b"abcdef"));
    let batches = vec![Ok(ArrayBuilder::new(3).buffer(Buffer::null()).child(child))];
    let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, schema).unwrap();
    assert_eq!(stream.validation(), ferry_arrow::Validation::Default);
    let mut reader = stream.into_arrow_reader().unwrap();
    let err = reader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("offset"), "{err}");
}

/// arrow-rs's own C stream in, ferry's plain C stream out to arrow-rs's
/// reader: the C stream interface both ways.
#[test]
#[allow(deprecated)] // ArrowArrayStreamReader: the name both ends of the range have
fn plain_c_streams_cross_with_arrow_rs_both_ways() {
    use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
    let batches = vec![batch(&[1, 2], &[Some("x"), None]), batch(&[7], &[Some("y")])];
    let schema = batches[0].schema();

    // arrow-rs produces a plain ArrowArrayStream; ferry imports it.
    let reader = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone());
    let mut c = FFI_ArrowArrayStream::new(Box::new(reader));
    let stream =
        unsafe { DeviceArrayStream::from_c_stream(&mut c as *mut FFI_ArrowArrayStream as *mut sys::ArrowArrayStream) }
            .unwrap();
    assert_eq!(stream.device_type(), DeviceType::CPU);
    let output: Vec<RecordBatch> = stream
        .into_arrow_reader()
        .unwrap()
        .collect::<Result<_, ArrowError>>()
        .unwrap();
    assert_eq!(output, batches);

    // ferry exports a plain ArrowArrayStream; arrow-rs imports it.
    let reader = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone());
    let stream = DeviceArrayStream::from_arrow_reader(reader).unwrap();
    let mut c = FFI_ArrowArrayStream::empty();
    unsafe {
        stream
            .export_to_c_stream(&mut c as *mut FFI_ArrowArrayStream as *mut sys::ArrowArrayStream)
            .unwrap()
    };
    let arrow_reader = ArrowArrayStreamReader::try_new(c).unwrap();
    assert_eq!(arrow_reader.schema(), schema);
    let output: Vec<RecordBatch> = arrow_reader.collect::<Result<_, ArrowError>>().unwrap();
    assert_eq!(output, batches);

    // A producer's error reaches arrow-rs's reader with its message.
    let items = vec![
        Ok(batches[0].clone()),
        Err(ArrowError::ComputeError("disk on fire".into())),
    ];
    let stream = DeviceArrayStream::from_arrow_reader(RecordBatchIterator::new(items, schema)).unwrap();
    let mut c = FFI_ArrowArrayStream::empty();
    unsafe {
        stream
            .export_to_c_stream(&mut c as *mut FFI_ArrowArrayStream as *mut sys::ArrowArrayStream)
            .unwrap()
    };
    let mut arrow_reader = ArrowArrayStreamReader::try_new(c).unwrap();
    assert!(arrow_reader.next().unwrap().is_ok());
    let err = arrow_reader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("disk on fire"), "{err}");
}

/// The direct import (primitives, booleans, structs built straight from the
/// C struct) and its fallback to from_ffi give arrow the same arrays.
#[test]
fn direct_import_matches_arrow_for_slices_nulls_structs_and_odd_buffers() {
    // Structs with nulls in the struct and in its children, sliced (the
    // parent's offset slices the children), booleans at bit offsets.
    let ints: ArrayRef = Arc::new(Int32Array::from(
        (0..40).map(|i| (i % 3 != 0).then_some(i)).collect::<Vec<_>>(),
    ));
    let bools: ArrayRef = Arc::new(BooleanArray::from(
        (0..40).map(|i| (i % 5 != 0).then_some(i % 2 == 0)).collect::<Vec<_>>(),
    ));
    let nulls = arrow_buffer_nulls(&(0..40).map(|i| i % 7 != 0).collect::<Vec<_>>());
    let fields = vec![
        Field::new("i", DataType::Int32, true),
        Field::new("b", DataType::Boolean, true),
    ];
    let structs: ArrayRef = Arc::new(StructArray::new(
        fields.into(),
        vec![ints.clone(), bools.clone()],
        nulls,
    ));
    for input in [
        ints.slice(3, 30),
        bools.slice(5, 11),
        structs.clone(),
        structs.slice(9, 17),
        structs.slice(40, 0),
    ] {
        assert_eq!(&round_trip(input.clone()), &input, "{:?}", input.data_type());
    }

    // An int32 buffer that is not 4-byte aligned: the direct path declines
    // and from_ffi decides, as it would without ferry.
    let mut bytes = vec![0u8; 4 * 3 + 1];
    for (k, v) in [7i32, -1, 9].iter().enumerate() {
        bytes[1 + 4 * k..1 + 4 * k + 4].copy_from_slice(&v.to_ne_bytes());
    }
    let unaligned = ArrayBuilder::new(3)
        .buffer(Buffer::null())
        .buffer(Buffer::from_owner(OddStart(bytes)))
        .build()
        .unwrap();
    // (arrow-rs 57 refuses it with an error, later releases copy it aligned.)
    match unaligned.to_arrow(&Schema::new("i", None).unwrap()) {
        Ok(output) => {
            assert_eq!(
                output.as_any().downcast_ref::<Int32Array>().unwrap().values().to_vec(),
                vec![7, -1, 9]
            )
        }
        Err(e) => assert!(e.message().contains("aligned"), "arrow's own error: {e}"),
    }
}

/// A struct-level validity of `valid`.
fn arrow_buffer_nulls(valid: &[bool]) -> Option<arrow_buffer::NullBuffer> {
    Some(arrow_buffer::NullBuffer::from(valid.to_vec()))
}

/// Bytes seen from their second one: a buffer at an odd address.
struct OddStart(Vec<u8>);
impl AsRef<[u8]> for OddStart {
    fn as_ref(&self) -> &[u8] {
        &self.0[1..]
    }
}

/// A record batch of flat columns is exported with children a consumer may
/// move out and release after the parent (the specification's rule).
#[test]
fn a_flat_batch_export_lets_a_child_outlive_its_parent() {
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]));
    let bools: ArrayRef = Arc::new(BooleanArray::from(vec![true, false, true]));
    let batch = RecordBatch::try_from_iter([("i", ints.clone()), ("b", bools)]).unwrap();
    let (array, schema) = DeviceArray::from_record_batch(&batch).unwrap();
    array.validate(&schema, true).unwrap();
    let mut raw = sys::ArrowDeviceArray::default();
    unsafe {
        array.export_to(&mut raw).unwrap();
        assert_eq!(raw.array.n_children, 2);
        // Move child 0 out, release the parent, then read and release it.
        let slot = *raw.array.children;
        let mut child: sys::ArrowArray = std::ptr::read(slot);
        (*slot).release = None;
        (raw.array.release.unwrap())(&mut raw.array);
        assert!(raw.array.release.is_none());
        assert_eq!((child.length, child.null_count), (3, 1));
        assert_eq!(*(*child.buffers.add(1) as *const i32).add(2), 3);
        (child.release.unwrap())(&mut child);
        assert!(child.release.is_none());
    }
    // And the whole batch comes back equal through arrow.
    let (array, schema) = DeviceArray::from_record_batch(&batch).unwrap();
    assert_eq!(array.to_record_batch(&schema).unwrap(), batch);
}
