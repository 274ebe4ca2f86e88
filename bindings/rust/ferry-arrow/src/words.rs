//! Moving freshly written `ArrowDeviceArray`s at full speed.
//!
//! A load of bytes still in the store buffer is forwarded from the store
//! only when one store covers it. C producers (the core's ferry_array_init
//! included) write the struct with 8-byte (and 4-byte) stores, while
//! `ptr::copy`, the compiler's moves of a `DeviceArray` value and glibc's
//! memcpy load 16 bytes at a time: a move right after the fill stalls until
//! the stores retire, 5-7 ns on this class of machine, a third of a whole
//! handoff (perf-floors.md, "128-B move right after the fill" vs "source
//! stable"). So the crate
//! - loads a struct written by foreign code in 8-byte words
//!   ([`move_device_array`], [`rewrite_wide`]), which forward, and
//! - stores what it writes in 16-byte words aligned to the struct's start
//!   (`DeviceArray` is 16-byte aligned), from which both 8-byte loads and
//!   the compiler's aligned 16-byte moves forward.
//!
//! Off x86_64 these are plain copies (the forwarding rules differ and the
//! figures were measured on x86_64 only).
use std::ptr;

use ferry_arrow_sys as sys;

const WORDS: usize = std::mem::size_of::<sys::ArrowDeviceArray>() / 8;
const _: () = assert!(WORDS == 16 && std::mem::size_of::<sys::ArrowDeviceArray>() == 128);
/// The 16-byte chunks of the embedded `ArrowArray` (80 bytes).
pub(crate) const ARRAY_CHUNKS: usize = std::mem::size_of::<sys::ArrowArray>() / 16;
const _: () = assert!(ARRAY_CHUNKS * 16 == std::mem::size_of::<sys::ArrowArray>());

/// Stores the two words `lo`, `hi` as one 16-byte store at `dst`.
#[inline(always)]
unsafe fn store_pair(dst: *mut u64, lo: u64, hi: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_set_epi64x, _mm_storeu_si128};
        // SSE2 is part of the x86_64 baseline.
        _mm_storeu_si128(dst as *mut __m128i, _mm_set_epi64x(hi as i64, lo as i64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        dst.write(lo);
        dst.add(1).write(hi);
    }
}

/// Copies the first `chunks` 16-byte chunks from `src` to `dst` with 8-byte
/// loads and 16-byte stores; `src == dst` rewrites in place.
#[inline(always)]
unsafe fn copy_chunks(dst: *mut u64, src: *const u64, chunks: usize) {
    for i in 0..chunks {
        // Volatile keeps the compiler from merging the two loads into the
        // 16-byte load this exists to avoid.
        let lo = ptr::read_volatile(src.add(2 * i));
        let hi = ptr::read_volatile(src.add(2 * i + 1));
        store_pair(dst.add(2 * i), lo, hi);
    }
}

/// The bitwise move of the specification (without clearing the source's
/// release) from a struct foreign code may have just written.
///
/// # Safety
/// `src` readable and `dst` writable for one `ArrowDeviceArray`, not
/// overlapping.
#[inline(always)]
pub(crate) unsafe fn move_device_array(dst: *mut sys::ArrowDeviceArray, src: *const sys::ArrowDeviceArray) {
    copy_chunks(dst as *mut u64, src as *const u64, WORDS / 2);
}

/// Re-stores, in place, the first `chunks` 16-byte chunks of a struct that
/// foreign code has just written, so that the value's later moves forward.
///
/// # Safety
/// `p` must be valid for reads and writes of one `ArrowDeviceArray`.
#[inline(always)]
pub(crate) unsafe fn rewrite_wide(p: *mut sys::ArrowDeviceArray, chunks: usize) {
    debug_assert!(chunks <= WORDS / 2);
    copy_chunks(p as *mut u64, p as *const u64, chunks);
}

/// Writes every byte of `out` after the embedded array (device id, type,
/// padding, event, reserved words), as ferry_device_array_init does (the
/// specification wants `reserved` zero and tools compare whole structs),
/// in 16-byte stores.
///
/// # Safety
/// `out` must point to a writable `ArrowDeviceArray`.
#[inline(always)]
pub(crate) unsafe fn write_device_fields(
    out: *mut sys::ArrowDeviceArray,
    device_type: i32,
    device_id: i64,
    sync_event: *mut std::os::raw::c_void,
) {
    // device_type and the 4 padding bytes after it form one word.
    let mut type_word = [0u8; 8];
    type_word[..4].copy_from_slice(&device_type.to_ne_bytes());
    let tail = ptr::addr_of_mut!((*out).device_id) as *mut u64;
    store_pair(tail, device_id as u64, u64::from_ne_bytes(type_word));
    store_pair(tail.add(2), sync_event as u64, 0);
    store_pair(tail.add(4), 0, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern() -> sys::ArrowDeviceArray {
        let mut a = sys::ArrowDeviceArray::default();
        let words = &mut a as *mut _ as *mut u64;
        for i in 0..WORDS {
            unsafe { words.add(i).write(0x0101_0101_0101_0101 * (i as u64 + 1)) };
        }
        a
    }

    fn words(a: &sys::ArrowDeviceArray) -> [u64; WORDS] {
        unsafe { ptr::read(a as *const _ as *const [u64; WORDS]) }
    }

    #[test]
    fn move_copies_every_byte() {
        let src = pattern();
        let mut dst = sys::ArrowDeviceArray::default();
        unsafe { move_device_array(&mut dst, &src) };
        assert_eq!(words(&dst), words(&src));
    }

    #[test]
    fn rewrite_in_place_changes_nothing() {
        let mut a = pattern();
        let before = words(&a);
        unsafe { rewrite_wide(&mut a, WORDS / 2) };
        assert_eq!(words(&a), before);
    }

    #[test]
    fn device_fields_are_written_with_zero_padding() {
        let mut a = pattern();
        let event = 0x1234usize as *mut std::os::raw::c_void;
        unsafe { write_device_fields(&mut a, 10, 3, event) };
        assert_eq!(
            (a.device_id, a.device_type, a.sync_event, a.reserved),
            (3, 10, event, [0; 3])
        );
        let w = words(&a);
        assert_eq!(
            &w[11].to_ne_bytes()[4..],
            &[0; 4],
            "the padding after device_type is zero"
        );
        assert_eq!(&w[..10], &words(&pattern())[..10], "the array is untouched");
    }
}
