package itcase

import (
	"math"
	"strconv"
)

// U is the value formula's base: (seed * 2654435761 + i * 40503) mod 2^32.
func U(seed uint32, i int64) uint32 { return seed*2654435761 + uint32(i)*40503 }

// IsNull says whether logical element i is null for a nulls setting k.
func IsNull(k, i int64) bool { return k > 0 && i%k == k-1 }

// NullCount is the number of nulls among length elements.
func NullCount(k, length int64) int64 {
	if k <= 0 {
		return 0
	}
	return length / k // elements k-1, 2k-1, ... below length
}

// Bits returns the value bits of element i of a fixed-width type (the
// bytes as stored, little-endian, in the low bits).
func Bits(t Type, seed uint32, i int64) uint64 {
	v := U(seed, i)
	switch t {
	case Int8, Uint8:
		return uint64(v & 0xff)
	case Int16, Uint16:
		return uint64(v & 0xffff)
	case Int32, Uint32:
		return uint64(v)
	case DictInt32UTF8:
		return uint64(v % 7)
	case Int64, Uint64:
		return uint64(v)<<32 | uint64(U(seed, i+1))
	case Float32:
		return uint64(math.Float32bits(float32(int16(uint16(v))) / 4))
	case Float64:
		return math.Float64bits(float64(int32(v)) / 1024)
	case Bool:
		return uint64(v & 1)
	}
	panic("Bits: not a fixed-width type")
}

// Width is the byte width of a fixed-width type's values (0 for bool).
func Width(t Type) int {
	switch t {
	case Int8, Uint8:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Uint32, Float32, DictInt32UTF8:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

// String is the utf8 (and binary) value of element i.
func String(seed uint32, i int64) string {
	if i%5 == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(U(seed, i)%100000), 10)
}

// ListLength is the number of elements of list i.
func ListLength(seed uint32, i int64) int64 { return int64(U(seed, i) % 4) }

// DictIndex is the dictionary index of element i.
func DictIndex(seed uint32, i int64) int32 { return int32(U(seed, i) % 7) }

// DictValues are the dictionary's values.
var DictValues = []string{"d0", "d1", "d2", "d3", "d4", "d5", "d6"}
