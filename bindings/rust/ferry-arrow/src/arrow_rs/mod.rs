//! Conversions to and from arrow-rs, one module per supported major release
//! (features `arrow-57` ... `arrow-60`; `arrow` is the newest, reachable as
//! `ferry_arrow::arrow`). Each module has the same API, written once in
//! `imp.rs` against that release's crates:
//!
//! - arrays: [`ArrowArrayExt`](arrow60::ArrowArrayExt) on [`DeviceArray`]
//!   (`from_arrow`, `to_arrow`, `from_record_batch`, `to_record_batch`);
//! - schemas: [`ArrowSchemaExt`](arrow60::ArrowSchemaExt) on [`Schema`]
//!   and [`ArrowSchemaViewExt`](arrow60::ArrowSchemaViewExt) on
//!   [`SchemaView`];
//! - streams: [`ArrowStreamExt`](arrow60::ArrowStreamExt) on
//!   [`DeviceArrayStream`] (`from_arrow_reader` for any
//!   `RecordBatchReader`, `into_arrow_reader` giving an
//!   [`ArrowReader`](arrow60::ArrowReader)).
//!
//! Why features per release and not a version range: cargo resolves a range
//! to the newest release on its own, so a project on an older arrow would
//! end up with two copies of `arrow-array` and types that do not match.
//! Enable the feature of the arrow release your project uses; several may
//! be enabled at once (each module is independent).
//!
//! Imports validate first, once: `to_arrow` at DEFAULT (the structure),
//! raised to FULL for types whose contents arrow-rs reads unchecked in safe
//! code (offsets, UTF-8, views, dictionary keys, union type ids, run ends);
//! `to_arrow_with(.., Validation::Full)` checks everything by choice. A
//! finding is the validator's error; arrow-rs's own asserts are contained
//! and reported as errors, with nothing printed. Flat layouts (primitives,
//! booleans, structs of them) are built straight from the C struct and
//! exported through the core's `ferry_array_init` (its release, a hook that
//! drops one box of arrow buffers); the rest goes through arrow-rs's `ffi`.
//!
//! [`DeviceArray`]: crate::DeviceArray
//! [`Schema`]: crate::Schema
//! [`SchemaView`]: crate::SchemaView
//! [`DeviceArrayStream`]: crate::DeviceArrayStream

/// Declares the module of one arrow-rs release: the crates, re-exported
/// (so that a user can name exactly the types ferry converts), and the
/// conversions of `imp.rs`.
macro_rules! arrow_release {
    ($feature:literal, $module:ident, $arrow_array:ident, $arrow_schema:ident, $arrow_buffer:ident) => {
        #[cfg(feature = $feature)]
        #[doc = concat!("Conversions to and from arrow-rs ", $feature, " (feature `", $feature, "`).")]
        pub mod $module {
            /// The arrow-rs crate this module converts to and from.
            pub use $arrow_array as arrow_array;
            /// The arrow-rs crate this module converts to and from.
            pub use $arrow_schema as arrow_schema;
            /// The arrow-rs buffer crate of this release (the buffers of the
            /// arrays `to_arrow` builds).
            pub use $arrow_buffer as arrow_buffer;
            include!("imp.rs");
        }
    };
}

arrow_release!("arrow-57", arrow57, arrow_array_57, arrow_schema_57, arrow_buffer_57);
arrow_release!("arrow-58", arrow58, arrow_array_58, arrow_schema_58, arrow_buffer_58);
arrow_release!("arrow-59", arrow59, arrow_array_59, arrow_schema_59, arrow_buffer_59);
arrow_release!("arrow-60", arrow60, arrow_array_60, arrow_schema_60, arrow_buffer_60);
