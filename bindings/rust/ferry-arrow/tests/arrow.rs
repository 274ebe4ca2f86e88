//! The arrow-rs conversions, run once per enabled arrow-rs release (features
//! `arrow-57` ... `arrow-60`; test.sh enables the two ends of the supported
//! range, 57 and 60): the same cases (arrow/cases.rs) against each release's
//! module of ferry_arrow.

/// The cases against one release: `$m` is ferry_arrow's module for it.
macro_rules! arrow_release_tests {
    ($feature:literal, $m:ident) => {
        #[cfg(feature = $feature)]
        mod $m {
            use ferry_arrow::$m::{arrow_array, arrow_buffer, arrow_schema};
            #[allow(unused_imports)]
            use ferry_arrow::$m::{ArrowArrayExt, ArrowReader, ArrowSchemaExt, ArrowSchemaViewExt, ArrowStreamExt};
            include!("arrow/cases.rs");
        }
    };
}

arrow_release_tests!("arrow-57", arrow57);
arrow_release_tests!("arrow-58", arrow58);
arrow_release_tests!("arrow-59", arrow59);
arrow_release_tests!("arrow-60", arrow60);
