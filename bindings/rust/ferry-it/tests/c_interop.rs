//! C <-> Rust both ways: the C plugin ($FERRY_BUILD_DIR/plugins/libferry_it_c.so)
//! produces what the Rust plugin checks and the other way round, for arrays,
//! streams and injected failures. Skips loudly when the C plugin is absent.
mod common;

use common::{all_cases, assert_all_cross, build_dir, load_plugin, rust_plugin, Plugin, COUNTERS};
use ferry_arrow::errno;

fn c_plugin() -> Option<Plugin> {
    let path = build_dir().join("plugins/libferry_it_c.so");
    match load_plugin("c", path.to_str().unwrap()) {
        Ok(p) => Some(p),
        Err(reason) => {
            eprintln!("SKIPPED: C <-> Rust interop test: the C plugin is not available ({reason}); build it with scripts/build.sh");
            None
        }
    }
}

#[test]
fn arrays_and_streams_cross_both_ways() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(c) = c_plugin() else { return };
    let rust = rust_plugin();
    let (rust_before, c_before) = ((rust.live_allocations)(), (c.live_allocations)());
    assert_all_cross(&[(&c, &rust), (&rust, &c)], &all_cases());
    assert_eq!((rust.live_allocations)(), rust_before);
    assert_eq!((c.live_allocations)(), c_before);
}

#[test]
fn failures_cross_both_ways() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(c) = c_plugin() else { return };
    let rust = rust_plugin();
    for (producer, consumer) in [(&c, &rust), (&rust, &c)] {
        let pair = format!("{}->{}", producer.name, consumer.name);
        // Checkers told about the failure expect it exactly and succeed.
        for case in [
            "int32:fail=get_next@2",
            "int32:batches=3:fail=get_next@4:device=sim",
            "utf8:fail=get_schema",
        ] {
            producer
                .stream_to(consumer, case)
                .unwrap_or_else(|e| panic!("{pair} {case}: {e:?}"));
        }
        // Checkers not told about it pass the producer's code and message on.
        let (rc, m) = producer
            .stream_to_as(consumer, "int32:fail=get_next@2", "int32")
            .unwrap_err();
        assert_eq!(rc, errno::EIO, "{pair}");
        assert!(m.contains("injected failure at get_next 2"), "{pair}: {m}");
        let (rc, m) = producer
            .stream_to_as(consumer, "utf8:fail=get_schema", "utf8")
            .unwrap_err();
        assert_eq!(rc, errno::EIO, "{pair}");
        assert!(m.contains("injected failure at get_schema"), "{pair}: {m}");
        let (rc, m) = producer.stream_to(consumer, "utf8:fail=export").unwrap_err();
        assert_eq!(rc, errno::EIO);
        assert_eq!(m, "injected failure at export");
    }
    // Each side's checker rejects the other's data for a different seed.
    for (producer, consumer) in [(&c, &rust), (&rust, &c)] {
        let (rc, mut schema, mut array) = producer.export_raw("int32:seed=1");
        assert_eq!(rc, 0);
        let rc = consumer.check_raw("int32:seed=2", &mut schema, &mut array);
        assert_ne!(rc, 0, "{} accepted wrong values from {}", consumer.name, producer.name);
    }
}
