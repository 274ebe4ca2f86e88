//! [`HostArray`]: safe, bounds-checked reads of an array the host can read.
//!
//! Every accessor checks its index against the array's length and every
//! byte it reads against the size of its buffer as the core computes it
//! from the schema, the length and the offset (`ferry_array_buffer_size`).
//! A producer that lies cannot make these reads leave the buffer sizes its
//! own array declares; what no consumer can check on the CPU is a buffer
//! smaller than the length says (the C interface carries no CPU buffer
//! sizes: README, "What validation cannot see").
use std::fmt;
use std::ops::Range;

use crate::array::{ArrayView, DeviceArray};
use crate::builder::NativeType;
use crate::device::DeviceType;
use crate::error::{Error, Result};
use crate::schema::SchemaView;

/// A host-readable array with its schema, checked for reading: made by
/// [`DeviceArray::host`], which waits on the producer's event and validates
/// the structure first. Children and the dictionary are `HostArray`s too.
/// Element accessors take logical indices (the array's offset is applied)
/// and, like arrow-rs, ignore validity: ask [`is_valid`](Self::is_valid).
///
/// ```
/// use ferry_arrow::{ArrayBuilder, Buffer, Schema};
/// // list<int32> [[1, 2], [], [3]]
/// let list = ArrayBuilder::new(3)
///     .buffer(Buffer::null())
///     .buffer(Buffer::from_vec(vec![0i32, 2, 2, 3]))
///     .child(ArrayBuilder::new(3).buffer(Buffer::null()).buffer(Buffer::from_vec(vec![1i32, 2, 3])))
///     .build()
///     .unwrap();
/// let schema = Schema::builder("+l").child(Schema::new("i", Some("item")).unwrap()).build().unwrap();
/// let host = list.host(&schema).unwrap();
/// let items = host.child(0).unwrap();
/// let first: Vec<i32> = host.list_range(0).unwrap().map(|j| items.value::<i32>(j).unwrap()).collect();
/// assert_eq!(first, vec![1, 2]);
/// assert!(host.list_range(1).unwrap().is_empty());
/// assert!(host.list_range(3).is_err());
/// ```
pub struct HostArray<'a> {
    schema: &'a SchemaView,
    array: &'a ArrayView,
    device_type: DeviceType,
    device_id: i64,
    /// The size in bytes of every buffer (0 for a NULL one).
    sizes: Vec<usize>,
}

/// The message for an index past the end.
#[cold]
fn out_of_range(what: &str, i: usize, len: usize) -> Error {
    Error::invalid(format!("{what} {i} is out of range for a length of {len}"))
}

impl<'a> HostArray<'a> {
    pub(crate) fn new(array: &'a DeviceArray, schema: &'a SchemaView) -> Result<HostArray<'a>> {
        if array.is_released() {
            return Err(Error::invalid("cannot read a released array"));
        }
        let device_type = array.device_type();
        if device_type != DeviceType::CPU && !array.device()?.is_host_accessible() {
            return Err(Error::invalid(format!(
                "the array lives in {device_type} memory, which the host cannot read; \
                 bring it over with DeviceArray::to_host first"
            )));
        }
        array.wait()?;
        array.validate(schema, false)?;
        HostArray::node(schema, array.array(), device_type, array.device_id())
    }

    fn node(schema: &'a SchemaView, array: &'a ArrayView, device_type: DeviceType, device_id: i64) -> Result<Self> {
        let sizes = (0..array.n_buffers())
            .map(|i| {
                if array.buffer(i).is_null() {
                    Ok(0)
                } else {
                    array.buffer_size(schema, device_type, device_id, i)
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        Ok(HostArray {
            schema,
            array,
            device_type,
            device_id,
            sizes,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &'a SchemaView {
        self.schema
    }
    /// The raw array (for what the accessors do not cover).
    pub fn array(&self) -> &'a ArrayView {
        self.array
    }
    /// The format string.
    pub fn format(&self) -> &'a str {
        self.schema.format()
    }
    /// Logical length.
    pub fn len(&self) -> usize {
        self.array.length().max(0) as usize
    }
    /// True when the length is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Offset of element 0 in the buffers.
    pub fn offset(&self) -> usize {
        self.array.offset().max(0) as usize
    }
    /// Null count as the producer declared it (-1: not computed).
    pub fn null_count(&self) -> i64 {
        self.array.null_count()
    }

    /// Buffer `i` as bytes, its size computed by the core; `None` for a
    /// NULL buffer, `EINVAL` past the last buffer.
    pub fn buffer(&self, i: usize) -> Result<Option<&'a [u8]>> {
        let size = *self
            .sizes
            .get(i)
            .ok_or_else(|| out_of_range("buffer", i, self.sizes.len()))?;
        // SAFETY: the host can read this memory (checked in new), the core
        // computed its size from the validated structure, and the array is
        // borrowed for 'a.
        Ok(unsafe { self.array.buffer_slice::<u8>(i, size) })
    }

    fn check_index(&self, i: usize) -> Result<usize> {
        if i >= self.len() {
            return Err(out_of_range("index", i, self.len()));
        }
        Ok(self.offset() + i)
    }

    /// `size_of::<T>()` bytes at element `slot` of buffer `b` (unaligned).
    fn read<T: NativeType>(&self, b: usize, slot: usize) -> Result<T> {
        let width = std::mem::size_of::<T>();
        let bytes = self.buffer(b)?.unwrap_or(&[]);
        let start = slot.checked_mul(width).unwrap_or(usize::MAX);
        let chunk = bytes.get(start..start.saturating_add(width)).ok_or_else(|| {
            Error::invalid(format!(
                "element {slot} of buffer {b} is past its end ({} bytes)",
                bytes.len()
            ))
        })?;
        // SAFETY: `chunk` holds exactly size_of::<T>() bytes, and every bit
        // pattern is a valid NativeType (a sealed set of integers and floats).
        Ok(unsafe { std::ptr::read_unaligned(chunk.as_ptr() as *const T) })
    }

    fn bit(&self, b: usize, slot: usize) -> Result<bool> {
        let bytes = self.buffer(b)?.unwrap_or(&[]);
        let byte = bytes.get(slot / 8).ok_or_else(|| {
            Error::invalid(format!(
                "bit {slot} of buffer {b} is past its end ({} bytes)",
                bytes.len()
            ))
        })?;
        Ok(byte & (1 << (slot % 8)) != 0)
    }

    /// False when element `i` is null (its validity bit is clear, or the
    /// type is `null`); true without a validity bitmap.
    pub fn is_valid(&self, i: usize) -> Result<bool> {
        let slot = self.check_index(i)?;
        if self.format() == "n" {
            return Ok(false);
        }
        if self.sizes.is_empty() || self.array.buffer(0).is_null() {
            return Ok(true);
        }
        self.bit(0, slot)
    }

    fn check_type<T: NativeType>(&self) -> Result<()> {
        let format = self.format();
        if format == T::FORMAT || T::is_physical_type_of(format) {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "cannot read {} values from an array of format {format:?}",
            std::any::type_name::<T>()
        )))
    }

    /// The values of a fixed-width array (`T` matches the format: `i32` for
    /// "i", and for temporal formats the integer of their width) as a
    /// slice of `len()` elements, zero-copy. `EINVAL` for another type, a
    /// buffer shorter than the length needs, or values not aligned for `T`
    /// (then use [`value`](Self::value), which reads unaligned).
    pub fn values<T: NativeType>(&self) -> Result<&'a [T]> {
        self.check_type::<T>()?;
        let width = std::mem::size_of::<T>();
        let bytes = self.buffer(1)?.unwrap_or(&[]);
        let start = self.offset().checked_mul(width);
        let end = (self.offset() + self.len()).checked_mul(width);
        let range = start.zip(end).map(|(start, end)| start..end);
        let bytes = range.and_then(|range| bytes.get(range)).ok_or_else(|| {
            Error::invalid(format!(
                "{} values from offset {} do not fit buffer 1 ({} bytes)",
                self.len(),
                self.offset(),
                bytes.len()
            ))
        })?;
        if bytes.is_empty() {
            return Ok(&[]);
        }
        if bytes.as_ptr() as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::invalid(format!(
                "buffer 1 is not aligned for {}; read it with value()",
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: in bounds and aligned, checked above; any bit pattern is
        // a valid NativeType.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const T, self.len()) })
    }

    /// Element `i` of a fixed-width array (see [`values`](Self::values)).
    pub fn value<T: NativeType>(&self, i: usize) -> Result<T> {
        self.check_type::<T>()?;
        let slot = self.check_index(i)?;
        self.read::<T>(1, slot)
    }

    /// Element `i` of a boolean array ("b").
    pub fn bool_value(&self, i: usize) -> Result<bool> {
        if self.format() != "b" {
            return Err(Error::invalid(format!(
                "bool_value needs format \"b\", not {:?}",
                self.format()
            )));
        }
        let slot = self.check_index(i)?;
        self.bit(1, slot)
    }

    /// An offset of a variable-size layout: 32 bits for `wide == false`.
    fn offset_at(&self, slot: usize, wide: bool) -> Result<i64> {
        if wide {
            self.read::<i64>(1, slot)
        } else {
            self.read::<i32>(1, slot).map(i64::from)
        }
    }

    /// The `[start, end)` range of element `i` from an offsets buffer,
    /// checked to be non-negative and not decreasing.
    fn offsets_range(&self, i: usize, wide: bool) -> Result<Range<usize>> {
        let slot = self.check_index(i)?;
        let (start, end) = (self.offset_at(slot, wide)?, self.offset_at(slot + 1, wide)?);
        if start < 0 || end < start {
            return Err(Error::invalid(format!(
                "the offsets of element {i} are [{start}, {end}): negative or decreasing"
            )));
        }
        Ok(start as usize..end as usize)
    }

    /// Element `i` of a utf8 or binary array ("u", "z", "U", "Z") as bytes.
    pub fn bytes(&self, i: usize) -> Result<&'a [u8]> {
        let wide = match self.format() {
            "u" | "z" => false,
            "U" | "Z" => true,
            other => {
                return Err(Error::invalid(format!(
                    "bytes needs a utf8 or binary format, not {other:?}"
                )))
            }
        };
        let range = self.offsets_range(i, wide)?;
        let data = self.buffer(2)?.unwrap_or(&[]);
        let end = range.end;
        data.get(range).ok_or_else(|| {
            Error::invalid(format!(
                "element {i} ends at byte {end}, past the data buffer ({} bytes)",
                data.len()
            ))
        })
    }

    /// Element `i` of a utf8 array ("u", "U"); `EINVAL` when its bytes are
    /// not UTF-8.
    pub fn str(&self, i: usize) -> Result<&'a str> {
        if !matches!(self.format(), "u" | "U") {
            return Err(Error::invalid(format!(
                "str needs a utf8 format, not {:?}",
                self.format()
            )));
        }
        std::str::from_utf8(self.bytes(i)?).map_err(|e| Error::invalid(format!("element {i} is not UTF-8: {e}")))
    }

    /// The positions in [`child(0)`](Self::child) of list element `i`
    /// ("+l", "+L", "+w:N"), checked against the child's length.
    pub fn list_range(&self, i: usize) -> Result<Range<usize>> {
        let format = self.format();
        let range = match format {
            "+l" => self.offsets_range(i, false)?,
            "+L" => self.offsets_range(i, true)?,
            _ => match format.strip_prefix("+w:").and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => {
                    let slot = self.check_index(i)?;
                    slot.saturating_mul(n)..(slot + 1).saturating_mul(n)
                }
                None => return Err(Error::invalid(format!("list_range needs a list format, not {format:?}"))),
            },
        };
        let child_len = self.child(0)?.len();
        if range.end > child_len {
            return Err(Error::invalid(format!(
                "list element {i} ends at {}, past the child's length {child_len}",
                range.end
            )));
        }
        Ok(range)
    }

    /// Child `k` (with its schema), checked like its parent.
    pub fn child(&self, k: usize) -> Result<HostArray<'a>> {
        let n = self.array.n_children();
        if k >= n {
            return Err(out_of_range("child", k, n));
        }
        match (self.schema.child(k), self.array.child(k)) {
            (Some(schema), Some(array)) => HostArray::node(schema, array, self.device_type, self.device_id),
            _ => Err(Error::invalid(format!("child {k} is missing from the schema or the array"))),
        }
    }

    /// The dictionary (with its schema) of a dictionary-encoded array.
    pub fn dictionary(&self) -> Result<HostArray<'a>> {
        match (self.schema.dictionary(), self.array.dictionary()) {
            (Some(schema), Some(array)) => HostArray::node(schema, array, self.device_type, self.device_id),
            _ => Err(Error::invalid("the array is not dictionary-encoded")),
        }
    }
}

impl fmt::Debug for HostArray<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostArray")
            .field("format", &self.format())
            .field("len", &self.len())
            .field("offset", &self.offset())
            .field("buffer_sizes", &self.sizes)
            .finish()
    }
}
