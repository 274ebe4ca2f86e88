//! [`HostArray`]: safe, bounds-checked reads of an array the host can read.
//!
//! Every accessor checks its index against the array's length, and every
//! byte it reads against the size its buffer has by the array's own
//! declaration: the Arrow layout of its format, length and offset (for
//! variable-size data, up to the last offset). Typed accessors compute that
//! size from the layout of the type they read; [`HostArray::buffer`] asks
//! the core (`ferry_array_buffer_size`) for any buffer. Nothing is checked
//! up front (the view costs a wait on the producer's event and a device
//! check), so a structural lie shows as an error of the accessor that meets
//! it; [`DeviceArray::validate`] reports everything at once. What no CPU
//! consumer can check is a buffer smaller than its declaration (the C
//! interface carries no CPU buffer sizes: README, "What validation cannot
//! see").
use std::cell::Cell;
use std::fmt;
use std::ops::Range;

use crate::array::{ArrayView, DeviceArray};
use crate::builder::NativeType;
use crate::device::DeviceType;
use crate::error::{Error, Result};
use crate::schema::SchemaView;

/// A host-readable array with its schema, for reading values: made by
/// [`DeviceArray::host`], which waits on the producer's event first.
/// Children and the dictionary are `HostArray`s too. Element accessors take
/// logical indices (the array's offset is applied) and, like arrow-rs,
/// ignore validity: ask [`is_valid`](Self::is_valid).
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
    /// The schema's format string, read once (compared as bytes: the
    /// formats accessors accept are ASCII).
    format: &'a [u8],
    device_type: DeviceType,
    device_id: i64,
    /// The core's size of buffers 0..3, computed on first use.
    sizes: [Cell<Option<usize>>; 3],
}

/// The message for an index past the end.
#[cold]
fn out_of_range(what: &str, i: usize, len: usize) -> Error {
    Error::invalid(format!("{what} {i} is out of range for a length of {len}"))
}

#[cold]
fn past_end(what: &str, b: usize, len: usize) -> Error {
    Error::invalid(format!("{what} of buffer {b} is past its end ({len} bytes)"))
}

impl<'a> HostArray<'a> {
    #[inline]
    pub(crate) fn new(array: &'a DeviceArray, schema: &'a SchemaView) -> Result<HostArray<'a>> {
        let device_type = array.device_type();
        if device_type != DeviceType::CPU {
            HostArray::check_host_readable(array)?;
        }
        array.wait()?;
        HostArray::node(schema, array.array(), device_type, array.device_id())
    }

    #[cold]
    fn check_host_readable(array: &DeviceArray) -> Result<()> {
        if !array.device()?.is_host_accessible() {
            return Err(Error::invalid(format!(
                "the array lives in {} memory, which the host cannot read; \
                 bring it over with DeviceArray::to_host first",
                array.device_type()
            )));
        }
        Ok(())
    }

    #[inline]
    fn node(schema: &'a SchemaView, array: &'a ArrayView, device_type: DeviceType, device_id: i64) -> Result<Self> {
        if array.is_released() || schema.as_raw().release.is_none() {
            return Err(Error::invalid("cannot read a released array or schema"));
        }
        // The few integers every accessor's arithmetic relies on.
        let a = array.as_raw();
        if a.length < 0
            || a.offset < 0
            || a.n_buffers < 0
            || a.n_children < 0
            || a.length.checked_add(a.offset).is_none()
        {
            return Err(Error::invalid(format!(
                "length {}, offset {}, n_buffers {} or n_children {} is negative, or offset + length overflows",
                a.length, a.offset, a.n_buffers, a.n_children
            )));
        }
        Ok(HostArray {
            schema,
            array,
            format: schema.format_bytes(),
            device_type,
            device_id,
            sizes: Default::default(),
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
    /// The format string ("" when it is not UTF-8).
    #[inline]
    pub fn format(&self) -> &'a str {
        std::str::from_utf8(self.format).unwrap_or("")
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

    /// The core's size of buffer `i` (cached for the first three).
    fn size(&self, i: usize) -> Result<usize> {
        if let Some(size) = self.sizes.get(i).and_then(Cell::get) {
            return Ok(size);
        }
        let size = self
            .array
            .buffer_size(self.schema, self.device_type, self.device_id, i)?;
        if let Some(cell) = self.sizes.get(i) {
            cell.set(Some(size));
        }
        Ok(size)
    }

    /// Buffer `i` as bytes, its size computed by the core from the schema,
    /// the length and the offset; `None` for a NULL buffer, `EINVAL` past
    /// the last buffer or when the declared size cannot be computed.
    pub fn buffer(&self, i: usize) -> Result<Option<&'a [u8]>> {
        let n = self.array.n_buffers();
        if i >= n {
            return Err(out_of_range("buffer", i, n));
        }
        if self.array.buffer(i).is_null() {
            return Ok(None);
        }
        let size = self.addressable(i, self.size(i)?)?;
        // SAFETY: the host can read this memory (checked in new), of the
        // size its producer declared, borrowed for 'a.
        Ok(unsafe { self.array.buffer_slice::<u8>(i, size) })
    }

    /// Buffer `b` as `len` bytes, `len` being the size the layout of the
    /// type being read gives it (the typed accessors' own computation).
    fn layout_buffer(&self, b: usize, len: Option<usize>) -> Result<&'a [u8]> {
        let n = self.array.n_buffers();
        if b >= n {
            return Err(Error::invalid(format!(
                "the array has {n} buffers; format {:?} needs buffer {b}",
                self.format()
            )));
        }
        let len = len.ok_or_else(|| {
            Error::invalid(format!(
                "the size of buffer {b} overflows (length {}, offset {})",
                self.array.length(),
                self.array.offset()
            ))
        })?;
        if len == 0 {
            return Ok(&[]);
        }
        let len = self.addressable(b, len)?;
        // SAFETY: as in buffer().
        unsafe { self.array.buffer_slice::<u8>(b, len) }
            .ok_or_else(|| Error::invalid(format!("buffer {b} is NULL in an array of length {}", self.len())))
    }

    /// `len`, unless no buffer of a process can be that large (the binding
    /// contract, item 5): a length that says so is a lie, refused before
    /// any slice of it exists.
    fn addressable(&self, b: usize, len: usize) -> Result<usize> {
        if len as u64 > 1 << 48 {
            return Err(Error::invalid(format!(
                "buffer {b} of length {} at offset {} needs {len} bytes, more than a process can address (2^48)",
                self.array.length(),
                self.array.offset()
            )));
        }
        Ok(len)
    }

    /// Slots `0 .. offset + len` (+ `extra`) times `width` bytes.
    fn slots_bytes(&self, width: usize, extra: usize) -> Option<usize> {
        self.offset()
            .checked_add(self.len())?
            .checked_add(extra)?
            .checked_mul(width)
    }

    /// Bytes of a bitmap over slots `0 .. offset + len`.
    fn bitmap_bytes(&self) -> Option<usize> {
        Some(self.offset().checked_add(self.len())?.div_ceil(8))
    }

    fn check_index(&self, i: usize) -> Result<usize> {
        if i >= self.len() {
            return Err(out_of_range("index", i, self.len()));
        }
        Ok(self.offset() + i)
    }

    /// `size_of::<T>()` bytes at element `slot` of `bytes` (buffer `b`),
    /// unaligned.
    fn read<T: NativeType>(bytes: &[u8], b: usize, slot: usize) -> Result<T> {
        let width = std::mem::size_of::<T>();
        let start = slot.saturating_mul(width);
        let chunk = bytes
            .get(start..start.saturating_add(width))
            .ok_or_else(|| past_end(&format!("element {slot}"), b, bytes.len()))?;
        // SAFETY: `chunk` holds exactly size_of::<T>() bytes, and every bit
        // pattern is a valid NativeType (a sealed set of integers and floats).
        Ok(unsafe { std::ptr::read_unaligned(chunk.as_ptr() as *const T) })
    }

    fn bit(bytes: &[u8], b: usize, slot: usize) -> Result<bool> {
        let byte = bytes
            .get(slot / 8)
            .ok_or_else(|| past_end(&format!("bit {slot}"), b, bytes.len()))?;
        Ok(byte & (1 << (slot % 8)) != 0)
    }

    /// False when element `i` is null (its validity bit is clear, or the
    /// type is `null`); true without a validity bitmap.
    pub fn is_valid(&self, i: usize) -> Result<bool> {
        let slot = self.check_index(i)?;
        let format = self.format;
        if format == b"n" {
            return Ok(false);
        }
        if format.starts_with(b"+u") || format.starts_with(b"+r") {
            return Err(Error::invalid(format!(
                "format {:?} has no validity bitmap: ask its children",
                self.format()
            )));
        }
        // Buffer 0 is the validity bitmap of every other layout; its size
        // (and with it that the format is one) comes from the core.
        match self.buffer(0)? {
            None => Ok(true),
            Some(bitmap) => HostArray::bit(bitmap, 0, slot),
        }
    }

    #[inline]
    fn check_type<T: NativeType>(&self) -> Result<()> {
        if self.format == T::FORMAT.as_bytes() || T::is_physical_type_of(self.format()) {
            return Ok(());
        }
        self.wrong_type::<T>()
    }

    #[cold]
    fn wrong_type<T: NativeType>(&self) -> Result<()> {
        let format = self.format();
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
        if self.is_empty() {
            return Ok(&[]);
        }
        let bytes = self.layout_buffer(1, self.slots_bytes(width, 0))?;
        let bytes = &bytes[self.offset() * width..];
        if bytes.as_ptr() as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::invalid(format!(
                "buffer 1 is not aligned for {}; read it with value()",
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: len() values fit (the slice holds offset + len of them),
        // aligned, checked above; any bit pattern is a valid NativeType.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const T, self.len()) })
    }

    /// Element `i` of a fixed-width array (see [`values`](Self::values)).
    #[inline]
    pub fn value<T: NativeType>(&self, i: usize) -> Result<T> {
        self.check_type::<T>()?;
        let slot = self.check_index(i)?;
        let width = std::mem::size_of::<T>();
        HostArray::read::<T>(self.layout_buffer(1, self.slots_bytes(width, 0))?, 1, slot)
    }

    /// Element `i` of a boolean array ("b").
    pub fn bool_value(&self, i: usize) -> Result<bool> {
        if self.format != b"b" {
            return Err(Error::invalid(format!(
                "bool_value needs format \"b\", not {:?}",
                self.format()
            )));
        }
        let slot = self.check_index(i)?;
        HostArray::bit(self.layout_buffer(1, self.bitmap_bytes())?, 1, slot)
    }

    /// The offsets buffer (buffer 1) of a variable-size layout: 32-bit
    /// offsets for `wide == false`, `offset + len + 1` of them.
    fn offsets(&self, wide: bool) -> Result<&'a [u8]> {
        let width = if wide { 8 } else { 4 };
        self.layout_buffer(1, self.slots_bytes(width, 1))
    }

    fn offset_at(offsets: &[u8], slot: usize, wide: bool) -> Result<i64> {
        if wide {
            HostArray::read::<i64>(offsets, 1, slot)
        } else {
            HostArray::read::<i32>(offsets, 1, slot).map(i64::from)
        }
    }

    /// The `[start, end)` range of element `i` from the offsets buffer,
    /// checked to be non-negative and not decreasing.
    fn offsets_range(&self, i: usize, wide: bool) -> Result<Range<usize>> {
        let slot = self.check_index(i)?;
        let offsets = self.offsets(wide)?;
        let (start, end) = (
            HostArray::offset_at(offsets, slot, wide)?,
            HostArray::offset_at(offsets, slot + 1, wide)?,
        );
        if start < 0 || end < start {
            return Err(Error::invalid(format!(
                "the offsets of element {i} are [{start}, {end}): negative or decreasing"
            )));
        }
        Ok(start as usize..end as usize)
    }

    /// Element `i` of a utf8 or binary array ("u", "z", "U", "Z") as bytes.
    pub fn bytes(&self, i: usize) -> Result<&'a [u8]> {
        let wide = match self.format {
            b"u" | b"z" => false,
            b"U" | b"Z" => true,
            _ => {
                return Err(Error::invalid(format!(
                    "bytes needs a utf8 or binary format, not {:?}",
                    self.format()
                )))
            }
        };
        let range = self.offsets_range(i, wide)?;
        // The data buffer's declared size is the last offset.
        let last = HostArray::offset_at(self.offsets(wide)?, self.offset() + self.len(), wide)?;
        if range.end as i64 > last {
            return Err(Error::invalid(format!(
                "element {i} ends at byte {}, past the data buffer ({last} bytes by the last offset)",
                range.end
            )));
        }
        let data = self.layout_buffer(2, Some(last.max(0) as usize))?;
        Ok(&data[range])
    }

    /// Element `i` of a utf8 array ("u", "U"); `EINVAL` when its bytes are
    /// not UTF-8.
    pub fn str(&self, i: usize) -> Result<&'a str> {
        if !matches!(self.format, b"u" | b"U") {
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
                None => {
                    return Err(Error::invalid(format!(
                        "list_range needs a list format, not {format:?}"
                    )))
                }
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

    /// Child `k` (with its schema); `EINVAL` when it is missing or released.
    pub fn child(&self, k: usize) -> Result<HostArray<'a>> {
        let n = self.array.n_children();
        if k >= n {
            return Err(out_of_range("child", k, n));
        }
        match (self.schema.child(k), self.array.child(k)) {
            (Some(schema), Some(array)) => HostArray::node(schema, array, self.device_type, self.device_id),
            _ => Err(Error::invalid(format!(
                "child {k} is missing from the schema or the array"
            ))),
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
            .field("n_buffers", &self.array.n_buffers())
            .finish()
    }
}
