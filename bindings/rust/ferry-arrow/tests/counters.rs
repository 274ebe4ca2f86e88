//! Process-wide counters back at baseline. One test in this binary, so no
//! other test thread moves the counters meanwhile.
use ferry_arrow::{Device, DeviceArrayStream, DeviceType, Schema};

#[test]
fn every_export_is_released_and_every_device_allocation_freed() {
    let exports = ferry_arrow::live_exports();
    let sim = Device::sim(0).unwrap();
    let allocations = sim.live_allocations();
    {
        let (array, schema) = ferry_arrow::export_utf8(&[Some("a"), None]).unwrap();
        let copy = schema.to_owned_schema().unwrap();
        let stream = DeviceArrayStream::from_iter(
            DeviceType::CPU,
            (0..3).map(|i| ferry_arrow::export_primitive(vec![i], None).map(|(a, _)| a)),
            Schema::new("i", None).unwrap(),
        )
        .unwrap();
        assert!(ferry_arrow::live_exports() > exports);
        // A stream consumed half-way, then dropped: the rest is released too.
        let mut stream = stream;
        let first = stream.next().unwrap().unwrap();
        drop((schema, array, copy, first, stream));
        let _buffer = sim.allocate(64).unwrap();
        assert_eq!(sim.live_allocations(), allocations + 1);
    }
    assert_eq!(ferry_arrow::live_exports(), exports);
    assert_eq!(sim.live_allocations(), allocations);
}
