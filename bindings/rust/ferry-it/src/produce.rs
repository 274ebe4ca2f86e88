//! Producing a case: buffers computed from the formula, exported without a
//! further copy (CPU) or copied asynchronously to the case's device, with a
//! recorded sync event the consumer must wait on.
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use ferry_arrow::{ArrayBuilder, Buffer, Device, DeviceArray, DeviceStream, DeviceType, ExportPolicy, Result, Schema};

use crate::case::{Case, Ty};
use crate::formula as f;

/// Allocations owned by this plugin's exports right now (host vectors,
/// device buffers, device streams, stream producers).
pub static LIVE: AtomicI64 = AtomicI64::new(0);

/// Anything whose life counts in [`LIVE`].
pub struct Counted<T>(pub T);

impl<T> Counted<T> {
    pub fn new(value: T) -> Self {
        LIVE.fetch_add(1, Ordering::SeqCst);
        Counted(value)
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Host bytes with 8-byte alignment (a Vec<u8> guarantees only 1).
pub struct Bytes {
    words: Vec<u64>,
    len: usize,
}

impl Bytes {
    fn zeroed(len: usize) -> Bytes {
        Bytes {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }
    fn from_slice(data: &[u8]) -> Bytes {
        let mut b = Bytes::zeroed(data.len());
        b.as_mut().copy_from_slice(data);
        b
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: the words hold at least len bytes.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
    fn put<T: Copy>(&mut self, index: usize, value: T) {
        let size = std::mem::size_of::<T>();
        let bytes = unsafe { std::slice::from_raw_parts(&value as *const T as *const u8, size) };
        self.as_mut()[index * size..(index + 1) * size].copy_from_slice(bytes);
    }
    fn set_bit(&mut self, p: usize) {
        self.as_mut()[p / 8] |= 1 << (p % 8);
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
}

impl AsRef<[u8]> for Counted<Bytes> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref()
    }
}

/// The host layout of one array (before it is exported or copied).
pub struct Layout {
    length: i64,
    null_count: i64,
    offset: i64,
    buffers: Vec<Option<Bytes>>,
    children: Vec<Layout>,
    dictionary: Option<Box<Layout>>,
}

fn values<T: Copy>(physical: i64, offset: i64, value: impl Fn(i64) -> T) -> Bytes {
    let mut b = Bytes::zeroed(physical as usize * std::mem::size_of::<T>());
    for p in offset..physical {
        b.put(p as usize, value(p - offset));
    }
    b
}

/// Offsets and data of a variable-size layout; slots before `offset` are
/// empty.
fn var_size(physical: i64, offset: i64, value: impl Fn(i64) -> Vec<u8>) -> (Bytes, Bytes) {
    let mut offsets = Bytes::zeroed((physical as usize + 1) * 4);
    let mut data = Vec::new();
    for p in 0..physical {
        if p >= offset {
            data.extend_from_slice(&value(p - offset));
        }
        offsets.put(p as usize + 1, data.len() as i32);
    }
    (offsets, Bytes::from_slice(&data))
}

fn plain(length: i64, buffers: Vec<Option<Bytes>>) -> Layout {
    Layout {
        length,
        null_count: 0,
        offset: 0,
        buffers,
        children: Vec::new(),
        dictionary: None,
    }
}

/// The host layout of `case`.
pub fn layout(case: &Case) -> Layout {
    let (seed, o) = (case.seed, case.offset);
    let physical = case.length + o;
    let validity = (case.nulls > 0).then(|| {
        let mut bits = Bytes::zeroed((physical as usize).div_ceil(8));
        for p in 0..physical {
            if p < o || !case.is_null(p - o) {
                bits.set_bit(p as usize);
            }
        }
        bits
    });
    let mut children = Vec::new();
    let mut dictionary = None;
    let mut buffers = vec![validity];
    match case.ty {
        Ty::Int8 | Ty::UInt8 => buffers.push(Some(values(physical, o, |i| f::int8(seed, i)))),
        Ty::Int16 | Ty::UInt16 => buffers.push(Some(values(physical, o, |i| f::int16(seed, i)))),
        Ty::Int32 | Ty::UInt32 => buffers.push(Some(values(physical, o, |i| f::int32(seed, i)))),
        Ty::Int64 | Ty::UInt64 => buffers.push(Some(values(physical, o, |i| f::uint64(seed, i)))),
        Ty::Float32 => buffers.push(Some(values(physical, o, |i| f::float32(seed, i)))),
        Ty::Float64 => buffers.push(Some(values(physical, o, |i| f::float64(seed, i)))),
        Ty::Bool => {
            let mut bits = Bytes::zeroed((physical as usize).div_ceil(8));
            for p in o..physical {
                if f::boolean(seed, p - o) {
                    bits.set_bit(p as usize);
                }
            }
            buffers.push(Some(bits));
        }
        Ty::Utf8 | Ty::Binary => {
            let (offsets, data) = var_size(physical, o, |i| f::utf8(seed, i).into_bytes());
            buffers.push(Some(offsets));
            buffers.push(Some(data));
        }
        Ty::ListInt32 => {
            let mut offsets = Bytes::zeroed((physical as usize + 1) * 4);
            let mut total = 0i32;
            for p in 0..physical {
                if p >= o {
                    total += f::list_len(seed, p - o);
                }
                offsets.put(p as usize + 1, total);
            }
            buffers.push(Some(offsets));
            let items = total as i64;
            children.push(plain(items, vec![None, Some(values(items, 0, |j| f::int32(seed, j)))]));
        }
        Ty::StructInt32Utf8 => {
            // Struct element i's fields sit at child position i + offset.
            children.push(plain(
                physical,
                vec![None, Some(values(physical, o, |i| f::int32(seed, i)))],
            ));
            let seed_b = seed.wrapping_add(1);
            let (offsets, data) = var_size(physical, o, |i| f::utf8(seed_b, i).into_bytes());
            children.push(plain(physical, vec![None, Some(offsets), Some(data)]));
        }
        Ty::DictInt32Utf8 => {
            buffers.push(Some(values(physical, o, |i| f::dict_index(seed, i))));
            let (offsets, data) = var_size(7, 0, |k| f::dict_value(k).into_bytes());
            dictionary = Some(Box::new(plain(7, vec![None, Some(offsets), Some(data)])));
        }
    }
    Layout {
        length: case.length,
        null_count: case.null_count(),
        offset: o,
        buffers,
        children,
        dictionary,
    }
}

/// The schema of `case`: the top-level field is named by the TYPE word, the
/// list child "item", the struct children "a" and "b"; every field nullable.
pub fn schema(ty: Ty) -> Result<Schema> {
    let field = |format: &str, name: &str| Schema::builder(format).name(name).nullable(true);
    let top = field(ty.format(), ty.word());
    match ty {
        Ty::ListInt32 => top.child(field("i", "item").build()?).build(),
        Ty::StructInt32Utf8 => top
            .child(field("i", "a").build()?)
            .child(field("u", "b").build()?)
            .build(),
        Ty::DictInt32Utf8 => top.dictionary(field("u", "").build()?).build(),
        _ => top.build(),
    }
}

/// Turns a host layout into a builder: host buffers are handed over as they
/// are (CPU), or copied to `device` on `stream` first.
fn builder(layout: Layout, target: Option<(&Device, &DeviceStream)>) -> Result<ArrayBuilder> {
    let mut b = ArrayBuilder::new(layout.length)
        .null_count(layout.null_count)
        .offset(layout.offset);
    for buffer in layout.buffers {
        b = b.buffer(match (buffer, target) {
            (None, _) => Buffer::null(),
            (Some(host), None) => Buffer::from_owner(Counted::new(host)),
            (Some(host), Some((device, stream))) => {
                let mut on_device = device.allocate(host.len.max(1))?;
                // The sim device captures pageable host sources when the copy
                // is queued, so `host` may go once this returns; the copy
                // itself runs when the consumer waits on the event.
                unsafe { on_device.copy_from_host_async(host.as_ref(), stream)? };
                let (ptr, len) = (on_device.as_ptr() as *const std::os::raw::c_void, on_device.len());
                unsafe { Buffer::from_raw_parts(ptr, len, Counted::new(on_device)) }
            }
        });
    }
    for child in layout.children {
        b = b.child(builder(child, target)?);
    }
    if let Some(dict) = layout.dictionary {
        b = b.dictionary(builder(*dict, target)?);
    }
    Ok(b)
}

/// Exports `case` as an array on the case's device.
pub fn array(case: &Case) -> Result<DeviceArray> {
    let layout = layout(case);
    if case.device_type == DeviceType::CPU {
        return builder(layout, None)?.build();
    }
    let device = Device::resolve(case.device_type, case.device_id)?;
    // The producer stream lives until the consumer releases the array, so
    // the queued copies run only when the consumer waits on the sync event.
    let stream = Arc::new(Counted::new(device.create_stream()?));
    builder(layout, Some((&device, &stream.0)))?
        .keep_alive(stream.clone())
        .build_async(&stream.0, ExportPolicy::RecordEvent)
}
