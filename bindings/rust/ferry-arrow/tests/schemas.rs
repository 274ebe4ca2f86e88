//! Schemas: builder, accessors, metadata, deep copy, move in and out.
use ferry_arrow::sys;
use ferry_arrow::{Schema, FLAG_NULLABLE};

fn sample() -> Schema {
    Schema::builder("+s")
        .name("row")
        .nullable(true)
        .metadata("k1", "v1")
        .metadata("k2", "")
        .child(Schema::builder("i").name("a").build().unwrap())
        .child(
            Schema::builder("+l")
                .name("b")
                .child(Schema::builder("u").name("item").nullable(true).build().unwrap())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

#[test]
fn builder_and_accessors() {
    let s = sample();
    assert_eq!(s.format(), "+s");
    assert_eq!(s.name(), Some("row"));
    assert_eq!(s.flags(), FLAG_NULLABLE);
    assert_eq!(s.n_children(), 2);
    let names: Vec<_> = s.children().map(|c| c.name().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let item = s.child(1).unwrap().child(0).unwrap();
    assert_eq!((item.format(), item.is_nullable()), ("u", true));
    let meta = s.metadata().unwrap();
    assert_eq!(meta, vec![(&b"k1"[..], &b"v1"[..]), (&b"k2"[..], &b""[..])]);
    assert_eq!(s.metadata_value("k1").unwrap(), Some(&b"v1"[..]));
    assert_eq!(s.metadata_value("zz").unwrap(), None);
    s.validate().unwrap();
}

#[test]
fn deep_copy_is_independent_and_equal() {
    let s = sample();
    let copy = s.to_owned_schema().unwrap();
    drop(s);
    assert_eq!(format!("{copy:?}"), format!("{:?}", sample()));
    assert_eq!(copy.metadata().unwrap().len(), 2);
}

#[test]
fn move_out_and_back() {
    let mut raw = sys::ArrowSchema::default();
    unsafe { sample().export_to(&mut raw).unwrap() };
    assert_eq!(unsafe { sys::ferry_schema_is_released(&raw) }, 0);
    let back = unsafe { Schema::from_raw(&mut raw).unwrap() };
    assert_eq!(unsafe { sys::ferry_schema_is_released(&raw) }, 1);
    assert_eq!(back.child(0).unwrap().name(), Some("a"));
    let err = unsafe { Schema::from_raw(&mut raw) }.unwrap_err();
    assert!(err.is_invalid_argument());
}

#[test]
fn invalid_format_is_reported() {
    let err = Schema::new("not a format", None)
        .and_then(|s| s.validate().map(|_| s))
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
}

#[test]
fn dictionary_schema() {
    let s = Schema::builder("i")
        .name("codes")
        .dictionary(Schema::new("u", None).unwrap())
        .build()
        .unwrap();
    assert_eq!(s.dictionary().unwrap().format(), "u");
    assert!(s.child(0).is_none());
}
