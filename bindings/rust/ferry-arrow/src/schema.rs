//! Schemas: the owned [`Schema`], the borrowed [`SchemaView`] and the
//! [`SchemaBuilder`] that exports one through the core's `ferry_schema_init`.
use std::ffi::{CStr, CString};
use std::fmt;
use std::ops::Deref;
use std::ptr;

use ferry_arrow_sys as sys;

use crate::error::{call, move_out, Error, Result};
use crate::leak::LeakToken;

/// `ARROW_FLAG_DICTIONARY_ORDERED`.
pub const FLAG_DICTIONARY_ORDERED: i64 = sys::ARROW_FLAG_DICTIONARY_ORDERED as i64;
/// `ARROW_FLAG_NULLABLE`.
pub const FLAG_NULLABLE: i64 = sys::ARROW_FLAG_NULLABLE as i64;
/// `ARROW_FLAG_MAP_KEYS_SORTED`.
pub const FLAG_MAP_KEYS_SORTED: i64 = sys::ARROW_FLAG_MAP_KEYS_SORTED as i64;

/// A borrowed `struct ArrowSchema` (a child, a dictionary, or the inside of a
/// [`Schema`]). Every accessor goes through the core's `ferry_schema_*`.
///
/// ```
/// use ferry_arrow::Schema;
/// let schema = Schema::builder("+s")
///     .name("row")
///     .child(Schema::builder("i").name("a").build().unwrap())
///     .build()
///     .unwrap();
/// let view: &ferry_arrow::SchemaView = &schema;
/// assert_eq!(view.n_children(), 1);
/// assert_eq!(view.child(0).unwrap().name(), Some("a"));
/// assert!(view.child(1).is_none());
/// ```
#[repr(transparent)]
pub struct SchemaView(sys::ArrowSchema);

impl SchemaView {
    /// Borrows the schema at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to a valid `ArrowSchema` that outlives `'a` and is not
    /// released or moved meanwhile.
    pub unsafe fn from_ptr<'a>(ptr: *const sys::ArrowSchema) -> &'a SchemaView {
        &*(ptr as *const SchemaView)
    }

    /// The raw pointer.
    pub fn as_ptr(&self) -> *const sys::ArrowSchema {
        &self.0
    }

    /// True when the release callback is NULL.
    pub fn is_released(&self) -> bool {
        unsafe { sys::ferry_schema_is_released(self.as_ptr()) != 0 }
    }

    /// The raw struct (read-only).
    #[inline]
    pub(crate) fn as_raw(&self) -> &sys::ArrowSchema {
        &self.0
    }

    /// The format string's bytes, read from the struct directly (no UTF-8
    /// check); empty when absent.
    #[inline]
    pub(crate) fn format_bytes(&self) -> &[u8] {
        if self.0.format.is_null() {
            return &[];
        }
        // SAFETY: a valid schema's format is a NUL-terminated string that
        // lives as long as the schema.
        unsafe { CStr::from_ptr(self.0.format) }.to_bytes()
    }

    /// The format string ("i", "+s", "u", ...); "" when absent or not UTF-8.
    pub fn format(&self) -> &str {
        unsafe { opt_str(sys::ferry_schema_format(self.as_ptr())) }.unwrap_or("")
    }

    /// The field name, if any.
    pub fn name(&self) -> Option<&str> {
        unsafe { opt_str(sys::ferry_schema_name(self.as_ptr())) }
    }

    /// The `ARROW_FLAG_*` bits.
    pub fn flags(&self) -> i64 {
        unsafe { sys::ferry_schema_flags(self.as_ptr()) }
    }

    /// True when `ARROW_FLAG_NULLABLE` is set.
    pub fn is_nullable(&self) -> bool {
        self.flags() & FLAG_NULLABLE != 0
    }

    /// Number of children.
    pub fn n_children(&self) -> usize {
        unsafe { sys::ferry_schema_n_children(self.as_ptr()) }.max(0) as usize
    }

    /// Child `i`, or `None` when out of range.
    pub fn child(&self, i: usize) -> Option<&SchemaView> {
        let child = unsafe { sys::ferry_schema_child(self.as_ptr(), i as i64) };
        // SAFETY: children live as long as the parent.
        (!child.is_null()).then(|| unsafe { SchemaView::from_ptr(child) })
    }

    /// All children in order.
    pub fn children(&self) -> impl Iterator<Item = &SchemaView> + '_ {
        (0..self.n_children()).filter_map(move |i| self.child(i))
    }

    /// The dictionary's value schema, if the field is dictionary-encoded.
    pub fn dictionary(&self) -> Option<&SchemaView> {
        let dict = unsafe { sys::ferry_schema_dictionary(self.as_ptr()) };
        (!dict.is_null()).then(|| unsafe { SchemaView::from_ptr(dict) })
    }

    /// The metadata as (key, value) byte strings, in order; `EINVAL` when the
    /// encoding is malformed.
    pub fn metadata(&self) -> Result<Vec<(&[u8], &[u8])>> {
        let count = unsafe { sys::ferry_schema_metadata_count(self.as_ptr()) };
        if count < 0 {
            return Err(Error::invalid("schema metadata is malformed"));
        }
        let mut pairs = Vec::with_capacity(count as usize);
        for i in 0..count {
            let (mut klen, mut vlen) = (0i32, 0i32);
            // SAFETY: the core returns pointers into the metadata and lengths
            // within it, valid as long as the schema.
            unsafe {
                let k = sys::ferry_schema_metadata_key(self.as_ptr(), i, &mut klen);
                let v = sys::ferry_schema_metadata_value(self.as_ptr(), i, &mut vlen);
                if k.is_null() || v.is_null() || klen < 0 || vlen < 0 {
                    return Err(Error::invalid(format!("schema metadata pair {i} is malformed")));
                }
                pairs.push((
                    std::slice::from_raw_parts(k as *const u8, klen as usize),
                    std::slice::from_raw_parts(v as *const u8, vlen as usize),
                ));
            }
        }
        Ok(pairs)
    }

    /// The value of metadata `key`, if present.
    pub fn metadata_value(&self, key: &str) -> Result<Option<&[u8]>> {
        Ok(self
            .metadata()?
            .into_iter()
            .find(|(k, _)| *k == key.as_bytes())
            .map(|(_, v)| v))
    }

    /// Validates the schema with the core (`EINVAL` with the first finding).
    pub fn validate(&self) -> Result<()> {
        call(|err| unsafe { sys::ferry_validate_schema(self.as_ptr(), None, ptr::null_mut(), err) })
    }

    /// A deep copy owned by ferry's producer helpers (format, name, flags,
    /// metadata, children and dictionary).
    pub fn to_owned_schema(&self) -> Result<Schema> {
        if self.is_released() {
            return Err(Error::invalid("cannot copy a released schema"));
        }
        let mut builder = SchemaBuilder::new(self.format()).flags(self.flags());
        if let Some(name) = self.name() {
            builder = builder.name(name);
        }
        for (k, v) in self.metadata()? {
            builder = builder.metadata(
                std::str::from_utf8(k).map_err(|_| Error::invalid("metadata key is not UTF-8"))?,
                std::str::from_utf8(v).map_err(|_| Error::invalid("metadata value is not UTF-8"))?,
            );
        }
        for child in self.children() {
            builder = builder.child(child.to_owned_schema()?);
        }
        if let Some(dict) = self.dictionary() {
            builder = builder.dictionary(dict.to_owned_schema()?);
        }
        builder.build()
    }
}

impl fmt::Debug for SchemaView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_released() {
            return f.write_str("Schema(released)");
        }
        let mut d = f.debug_struct("Schema");
        d.field("format", &self.format())
            .field("name", &self.name())
            .field("flags", &self.flags());
        if self.n_children() > 0 {
            d.field("children", &self.children().collect::<Vec<_>>());
        }
        if let Some(dict) = self.dictionary() {
            d.field("dictionary", &dict);
        }
        d.finish()
    }
}

/// An owned `struct ArrowSchema`, released exactly once when dropped (the
/// core's release leaves a released struct alone). Not `Clone`: use
/// [`SchemaView::to_owned_schema`] for an independent deep copy. `Send` and
/// `Sync`: a schema is immutable and its release may run on any thread;
/// release needs ownership, so it cannot overlap a reader.
///
/// ```
/// use ferry_arrow::Schema;
/// let schema = Schema::builder("i")
///     .name("x")
///     .nullable(true)
///     .metadata("unit", "m")
///     .build()
///     .unwrap();
/// assert_eq!(schema.format(), "i");
/// assert_eq!(schema.name(), Some("x"));
/// assert!(schema.is_nullable());
/// assert_eq!(schema.metadata_value("unit").unwrap(), Some(&b"m"[..]));
///
/// // Hand it to C and take it back, by move.
/// let mut raw = ferry_arrow::sys::ArrowSchema::default();
/// unsafe { schema.export_to(&mut raw).unwrap() };
/// let back = unsafe { Schema::from_raw(&mut raw).unwrap() };
/// assert_eq!(back.name(), Some("x"));
/// ```
pub struct Schema {
    raw: sys::ArrowSchema,
    /// The leak report's registration of an import.
    leak: LeakToken,
}

// SAFETY: see the type's documentation; the Arrow specification allows
// releasing from any thread.
unsafe impl Send for Schema {}
unsafe impl Sync for Schema {}

impl Schema {
    /// A schema with `format`, an optional name and no children.
    pub fn new(format: &str, name: Option<&str>) -> Result<Schema> {
        let mut b = SchemaBuilder::new(format);
        if let Some(name) = name {
            b = b.name(name);
        }
        b.build()
    }

    /// Starts a [`SchemaBuilder`].
    pub fn builder(format: &str) -> SchemaBuilder {
        SchemaBuilder::new(format)
    }

    /// Imports the schema at `ptr` by move and validates it with the core
    /// (the binding contract's default). Once `ptr` holds a live schema the
    /// result owns it and `*ptr` is left released, also on failure: a schema
    /// that fails validation is released and `EINVAL` names the finding
    /// ("the schema fails validation: ..."). `EINVAL` for NULL or a released
    /// schema (nothing taken).
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowSchema`.
    pub unsafe fn from_raw(ptr: *mut sys::ArrowSchema) -> Result<Schema> {
        let schema = Schema::from_raw_unchecked(ptr)?;
        // On a finding `schema` is dropped here: released once.
        schema
            .validate()
            .map_err(|e| Error::new(e.code(), format!("the schema fails validation: {}", e.message())))?;
        Ok(schema)
    }

    /// Imports the schema at `ptr` by move without validating it: the
    /// explicit opt-out (an import with [`DeviceArray::from_raw`](crate::DeviceArray::from_raw)
    /// validates the schema with the array anyway). Ownership as
    /// [`from_raw`](Self::from_raw).
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowSchema`.
    pub unsafe fn from_raw_unchecked(ptr: *mut sys::ArrowSchema) -> Result<Schema> {
        if ptr.is_null() {
            return Err(Error::invalid("schema pointer is NULL"));
        }
        let mut schema = Schema::new_released();
        if sys::ferry_schema_move(ptr, &mut schema.raw) != 0 {
            return Err(Error::invalid("cannot import a released schema"));
        }
        schema.leak = LeakToken::track(|| {
            let format = unsafe { SchemaView::from_ptr(&schema.raw) }.format().to_string();
            format!("Schema imported by from_raw never dropped (format {format:?})")
        });
        Ok(schema)
    }

    /// Moves the schema into `out` (which must be released or zeroed); the
    /// receiver then owns it and must release it.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowSchema`.
    pub unsafe fn export_to(mut self, out: *mut sys::ArrowSchema) -> Result<()> {
        move_out(out, "schema", |out| sys::ferry_schema_move(&mut self.raw, out))?;
        // The receiver answers for it from now on (in the leak report too).
        self.leak.untrack();
        Ok(())
    }

    /// A zeroed (released) schema used as an out-parameter inside the crate.
    pub(crate) fn new_released() -> Schema {
        Schema {
            raw: sys::ArrowSchema::default(),
            leak: LeakToken::NONE,
        }
    }

    /// The raw pointer (still owned by `self`).
    pub fn as_mut_ptr(&mut self) -> *mut sys::ArrowSchema {
        &mut self.raw
    }
}

impl Deref for Schema {
    type Target = SchemaView;
    fn deref(&self) -> &SchemaView {
        // SAFETY: repr(transparent) over the same struct, borrowed from self.
        unsafe { SchemaView::from_ptr(&self.raw) }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        unsafe { sys::ferry_schema_release(&mut self.raw) };
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Builds a [`Schema`] with the core's producer helpers (which own copies of
/// every string).
///
/// ```
/// use ferry_arrow::Schema;
/// let list = Schema::builder("+l")
///     .name("values")
///     .nullable(true)
///     .child(Schema::builder("i").name("item").build().unwrap())
///     .build()
///     .unwrap();
/// assert_eq!(list.child(0).unwrap().format(), "i");
///
/// let dict = Schema::builder("i")
///     .name("codes")
///     .dictionary(Schema::new("u", None).unwrap())
///     .build()
///     .unwrap();
/// assert_eq!(dict.dictionary().unwrap().format(), "u");
/// ```
#[derive(Debug)]
pub struct SchemaBuilder {
    format: String,
    name: Option<String>,
    flags: i64,
    metadata: Vec<(String, String)>,
    children: Vec<Schema>,
    dictionary: Option<Schema>,
}

impl SchemaBuilder {
    /// A builder for a field of `format`.
    pub fn new(format: &str) -> Self {
        SchemaBuilder {
            format: format.to_string(),
            name: None,
            flags: 0,
            metadata: Vec::new(),
            children: Vec::new(),
            dictionary: None,
        }
    }
    /// Sets the field name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
    /// Replaces all flags.
    pub fn flags(mut self, flags: i64) -> Self {
        self.flags = flags;
        self
    }
    /// Sets or clears `ARROW_FLAG_NULLABLE`.
    pub fn nullable(mut self, nullable: bool) -> Self {
        if nullable {
            self.flags |= FLAG_NULLABLE;
        } else {
            self.flags &= !FLAG_NULLABLE;
        }
        self
    }
    /// Appends a metadata pair.
    pub fn metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.push((key.to_string(), value.to_string()));
        self
    }
    /// Appends a child (moved in).
    pub fn child(mut self, child: Schema) -> Self {
        self.children.push(child);
        self
    }
    /// Sets the dictionary's value schema (moved in).
    pub fn dictionary(mut self, dictionary: Schema) -> Self {
        self.dictionary = Some(dictionary);
        self
    }

    /// Builds the schema; `EINVAL` naming the field for a bad format or a
    /// string with a NUL byte.
    pub fn build(self) -> Result<Schema> {
        let what = self.name.clone().unwrap_or_else(|| format!("<{}>", self.format));
        let nul = |part: &str| Error::invalid(format!("{part} of field {what:?} contains a NUL byte"));
        let format = CString::new(self.format.as_str()).map_err(|_| nul("format"))?;
        let name = match &self.name {
            Some(n) => Some(CString::new(n.as_str()).map_err(|_| nul("name"))?),
            None => None,
        };
        let mut schema = Schema::new_released();
        call(|err| unsafe {
            sys::ferry_schema_init(
                &mut schema.raw,
                format.as_ptr(),
                name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
                self.flags,
                self.children.len() as i64,
                err,
            )
        })?;
        // From here on `schema` is live: an early return releases it, and
        // with it every child already moved in.
        for (key, value) in &self.metadata {
            let k = CString::new(key.as_str()).map_err(|_| nul("metadata key"))?;
            let v = CString::new(value.as_str()).map_err(|_| nul("metadata value"))?;
            call(|err| unsafe { sys::ferry_schema_add_metadata(&mut schema.raw, k.as_ptr(), v.as_ptr(), err) })?;
        }
        for (i, mut child) in self.children.into_iter().enumerate() {
            let slot = unsafe { sys::ferry_schema_child(&schema.raw, i as i64) };
            if slot.is_null() || unsafe { sys::ferry_schema_move(&mut child.raw, slot) } != 0 {
                return Err(Error::io(format!("could not move child {i} into field {what:?}")));
            }
        }
        if let Some(mut dict) = self.dictionary {
            let mut slot: *mut sys::ArrowSchema = ptr::null_mut();
            call(|err| unsafe { sys::ferry_schema_allocate_dictionary(&mut schema.raw, &mut slot, err) })?;
            if slot.is_null() || unsafe { sys::ferry_schema_move(&mut dict.raw, slot) } != 0 {
                return Err(Error::io(format!("could not move the dictionary into field {what:?}")));
            }
        }
        Ok(schema)
    }
}

/// A borrowed C string as `&str` (None for NULL or non-UTF-8).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn opt_str<'a>(p: *const std::os::raw::c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        CStr::from_ptr(p).to_str().ok()
    }
}
