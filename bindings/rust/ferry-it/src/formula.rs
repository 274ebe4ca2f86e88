//! The value formula of docs/cases.md, on wrapping unsigned 32-bit
//! arithmetic: u(i) = seed * 2654435761 + i * 40503 (mod 2^32).

/// u(i) for `seed` and logical (or child) index `i`.
#[inline]
pub fn u(seed: u32, i: i64) -> u32 {
    seed.wrapping_mul(2_654_435_761)
        .wrapping_add((i as u32).wrapping_mul(40503))
}

pub fn int8(seed: u32, i: i64) -> i8 {
    u(seed, i) as u8 as i8
}
pub fn int16(seed: u32, i: i64) -> i16 {
    u(seed, i) as u16 as i16
}
pub fn int32(seed: u32, i: i64) -> i32 {
    u(seed, i) as i32
}
pub fn uint64(seed: u32, i: i64) -> u64 {
    ((u(seed, i) as u64) << 32) | u(seed, i + 1) as u64
}
pub fn float32(seed: u32, i: i64) -> f32 {
    (u(seed, i) as u16 as i16) as f32 / 4.0
}
pub fn float64(seed: u32, i: i64) -> f64 {
    (u(seed, i) as i32) as f64 / 1024.0
}
pub fn boolean(seed: u32, i: i64) -> bool {
    u(seed, i) & 1 == 1
}
/// "" when i % 5 == 0, else the decimal digits of u(i) mod 100000.
pub fn utf8(seed: u32, i: i64) -> String {
    if i % 5 == 0 {
        String::new()
    } else {
        (u(seed, i) % 100_000).to_string()
    }
}
/// Number of elements of list i.
pub fn list_len(seed: u32, i: i64) -> i32 {
    (u(seed, i) % 4) as i32
}
/// Dictionary index of element i.
pub fn dict_index(seed: u32, i: i64) -> i32 {
    (u(seed, i) % 7) as i32
}
/// The 7 dictionary values.
pub fn dict_value(k: i64) -> String {
    format!("d{k}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_wraps_as_specified() {
        // seed 1: 2654435761 + i * 40503, computed by hand for i = 0, 1.
        assert_eq!(u(1, 0), 2_654_435_761);
        assert_eq!(u(1, 1), 2_654_476_264);
        // seed 2 wraps: 2 * 2654435761 = 5308871522 - 2^32 = 1013904226.
        assert_eq!(u(2, 0), 1_013_904_226);
        assert_eq!(int32(1, 0), (2_654_435_761u32) as i32);
        assert_eq!(uint64(1, 0), (2_654_435_761u64 << 32) | 2_654_476_264u64);
        assert_eq!(utf8(1, 0), "");
        assert_eq!(utf8(1, 1), (2_654_476_264u32 % 100_000).to_string());
        assert_eq!(float32(1, 0), ((2_654_435_761u32 & 0xffff) as u16 as i16) as f32 / 4.0);
    }
}
