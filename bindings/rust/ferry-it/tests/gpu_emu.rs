//! The plugins on CUDA and ROCm device memory through the core's driver
//! emulations (tests/gpu/emu; bindings/rust/test.sh builds them and sets
//! FERRY_CUDA_LIBRARY and FERRY_HIP_LIBRARY for this file): every case on
//! device=cuda and device=rocm, C -> Rust, Rust -> C and Rust -> Rust,
//! arrays and streams. The Rust checker must copy memory the host cannot
//! read to the CPU first (its `host()` view refuses such memory), so a
//! checker that read device memory in place fails here. Skipped loudly
//! without the variables.
mod common;

use common::{all_cases, assert_all_cross, build_dir, load_plugin, rust_plugin, COUNTERS};
use ferry_arrow::{Device, DeviceType};

fn gpu_cases(device: &str) -> Vec<String> {
    all_cases()
        .into_iter()
        .filter(|c| !c.contains("device="))
        .map(|c| format!("{c}:device={device}"))
        .collect()
}

#[test]
fn every_case_crosses_on_emulated_gpus() {
    let _lock = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    if std::env::var_os("FERRY_CUDA_LIBRARY").is_none() || std::env::var_os("FERRY_HIP_LIBRARY").is_none() {
        eprintln!("SKIPPED: plugins on emulated GPUs: FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY are not set (bindings/rust/test.sh sets them)");
        return;
    }
    for t in [DeviceType::CUDA, DeviceType::ROCM] {
        let device = Device::resolve(t, 0).unwrap_or_else(|e| panic!("{t} emulation unavailable: {e}"));
        assert!(
            !device.is_host_accessible(),
            "{t}: the test needs memory the host may not read"
        );
    }
    let rust = rust_plugin();
    let c = load_plugin("c", build_dir().join("plugins/libferry_it_c.so").to_str().unwrap());
    if let Err(reason) = &c {
        eprintln!("SKIPPED: the C side of the GPU cases: {reason}");
    }
    let before = (rust.live_allocations)();
    let mut pairs = vec![(&rust, &rust)];
    if let Ok(c) = &c {
        pairs.push((c, &rust));
        pairs.push((&rust, c));
    }
    let cases: Vec<String> = gpu_cases("cuda").into_iter().chain(gpu_cases("rocm")).collect();
    assert_all_cross(&pairs, &cases);
    assert_eq!((rust.live_allocations)(), before, "every export freed");
}
