//! ferry from Rust, end to end: a producer hands an int32 column with a
//! null to a consumer through the Arrow C Device Data Interface (the C
//! structs any runtime in the process could be on the other side of), the
//! same data goes to and from arrow-rs, a stream of record batches crosses
//! as an arrow `RecordBatchReader`, and a device array is made on a GPU
//! when there is one (CUDA, then ROCm), else on ferry's simulated device,
//! and brought back to the host by the consumer.
use std::sync::Arc;

use arrow_array::{Array, Int32Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::{DataType, Field};
use ferry_arrow::arrow::{ArrowArrayExt, ArrowStreamExt};
use ferry_arrow::{
    sys, ArrayBuilder, Buffer, Device, DeviceArray, DeviceArrayStream, DeviceType, Result, Schema,
    Validation,
};

/// The producer: exports `values` (None = null) without copying them into
/// the consumer's structs; the vectors are freed when the consumer releases.
fn produce(
    values: &[Option<i32>],
    array_out: *mut sys::ArrowDeviceArray,
    schema_out: *mut sys::ArrowSchema,
) -> Result<()> {
    let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
    let (validity, null_count) = ferry_arrow::validity_bitmap(&valid);
    let data: Vec<i32> = values.iter().map(|v| v.unwrap_or(0)).collect();
    let array = ArrayBuilder::new(values.len() as i64)
        .null_count(null_count)
        .buffer(Buffer::from_vec(validity))
        .buffer(Buffer::from_vec(data))
        .build()?;
    let schema = Schema::builder("i").name("n").nullable(true).build()?;
    // SAFETY: the out-structs are released and ours to fill.
    unsafe {
        array.export_to(array_out)?;
        schema.export_to(schema_out)
    }
}

/// The consumer: takes ownership of the structs (released when dropped),
/// brings the array to the host if it lives on a device, and reads it
/// through the checked accessors.
fn consume(
    array: *mut sys::ArrowDeviceArray,
    schema: *mut sys::ArrowSchema,
) -> Result<(Vec<Option<i32>>, String)> {
    // SAFETY: both point to structs a producer filled. Both are taken (and
    // released on any failure), and the array is validated against the
    // schema (DEFAULT level) before anything reads it.
    let (array, schema) = unsafe { DeviceArray::import(array, schema, Validation::Default)? };
    let came_from = format!("{}:{}", array.device_type(), array.device_id());
    let array = array.to_host(&schema)?; // no copy when already on the CPU
    let host = array.host(&schema)?; // waits; every read is bounds-checked
    let mut values = Vec::with_capacity(host.len());
    for i in 0..host.len() {
        values.push(if host.is_valid(i)? {
            Some(host.value::<i32>(i)?)
        } else {
            None
        });
    }
    Ok((values, came_from))
}

fn show(values: &[Option<i32>]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| v.map_or("null".to_string(), |v| v.to_string()))
        .collect();
    format!("[{}]", items.join(", "))
}

/// Hands `values` from the producer to the consumer through C structs.
fn hand_over(values: &[Option<i32>]) -> Result<Vec<Option<i32>>> {
    let mut schema = sys::ArrowSchema::default();
    let mut array = sys::ArrowDeviceArray::default();
    produce(values, &mut array, &mut schema)?;
    Ok(consume(&mut array, &mut schema)?.0)
}

/// A GPU when one works, else the simulated device (always there).
fn pick_device() -> Result<(Device, String)> {
    for device_type in [DeviceType::CUDA, DeviceType::ROCM] {
        match Device::resolve(device_type, 0) {
            Ok(device) => return Ok((device, String::new())),
            Err(e) => eprintln!("note: no {device_type} here ({})", e.message()),
        }
    }
    Ok((
        Device::sim(0)?,
        " (no GPU: the simulated device)".to_string(),
    ))
}

/// A producer on a device: the column moved to `device`, handed over; the
/// consumer brings it back to the host.
fn device_round_trip(values: &[Option<i32>]) -> Result<String> {
    let (device, note) = pick_device()?;
    let mut schema = sys::ArrowSchema::default();
    let mut array = sys::ArrowDeviceArray::default();
    produce(values, &mut array, &mut schema)?;
    // Stand in for a GPU producer: move the exported column onto the device.
    let (cpu_array, cpu_schema) =
        unsafe { DeviceArray::import(&mut array, &mut schema, Validation::Default)? };
    let on_device = cpu_array.move_to(&cpu_schema, device.device_type(), device.id())?;
    unsafe {
        cpu_schema.export_to(&mut schema)?;
        on_device.export_to(&mut array)?;
    }
    let (back, came_from) = consume(&mut array, &mut schema)?;
    Ok(format!("device: {came_from}{note} -> host {}", show(&back)))
}

/// arrow-rs in and out: an Int32Array exported without a copy, imported
/// back (validated first).
fn arrow_round_trip(values: &[Option<i32>]) -> Result<String> {
    let input = Int32Array::from(values.to_vec());
    let (array, schema) = DeviceArray::from_arrow(&input)?;
    let output = array.to_arrow(&schema)?;
    let output = output
        .as_any()
        .downcast_ref::<Int32Array>()
        .expect("an int32 column");
    assert_eq!(output, &input);
    Ok(format!("arrow: {:?}", output.iter().collect::<Vec<_>>()))
}

/// A RecordBatchReader out as a ferry stream, through its C struct, and
/// back in as a RecordBatchReader.
fn stream_round_trip() -> Result<String> {
    let schema = Arc::new(arrow_schema::Schema::new(vec![Field::new(
        "name",
        DataType::Utf8,
        false,
    )]));
    let batches: Vec<RecordBatch> = [&["a", "b"][..], &["c"], &["d", "e", "f"]]
        .iter()
        .map(|names| {
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(StringArray::from(names.to_vec()))],
            )
            .expect("a batch")
        })
        .collect();
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let mut raw = sys::ArrowDeviceArrayStream::default();
    unsafe { DeviceArrayStream::from_arrow_reader(reader)?.export_to(&mut raw)? };

    let stream = unsafe { DeviceArrayStream::from_raw(&mut raw)? };
    let (mut batches, mut names) = (0, Vec::new());
    for batch in stream.into_arrow_reader()? {
        let batch = batch.map_err(|e| ferry_arrow::Error::io(e.to_string()))?;
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("a utf8 column");
        names.extend(column.iter().flatten().map(str::to_string));
        batches += 1;
    }
    Ok(format!(
        "stream: {batches} batches, {} rows: {}",
        names.len(),
        names.join(",")
    ))
}

fn main() -> Result<()> {
    ferry_arrow::check_abi()?;
    println!("ferry {}", ferry_arrow::version());
    let values = [Some(1), None, Some(3), Some(4)];
    let got = hand_over(&values)?;
    let sum: i32 = got.iter().flatten().sum();
    println!("consumer: {}, sum {sum}", show(&got));
    println!("{}", arrow_round_trip(&values)?);
    println!("{}", stream_round_trip()?);
    println!("{}", device_round_trip(&values)?);
    Ok(())
}
