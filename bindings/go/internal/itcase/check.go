package itcase

import (
	"fmt"
	"math"
	"syscall"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

func mismatch(where, format string, args ...any) error {
	return &ferry.Error{Code: syscall.EINVAL, Message: where + fmt.Sprintf(format, args...)}
}

type fieldWant struct {
	format, name string
	children     []fieldWant
	dictionary   *fieldWant
}

func wantField(c *Case) fieldWant {
	w := fieldWant{format: typeFormats[c.Type], name: c.Type.String()}
	switch c.Type {
	case ListInt32:
		w.children = []fieldWant{{format: "i", name: "item"}}
	case StructInt32UTF8:
		w.children = []fieldWant{{format: "i", name: "a"}, {format: "u", name: "b"}}
	case DictInt32UTF8:
		w.dictionary = &fieldWant{format: "u"}
	}
	return w
}

func checkField(s *ferry.Schema, w fieldWant, where string, checkName bool) error {
	if s == nil {
		return mismatch(where, "schema missing")
	}
	if got := s.Format(); got != w.format {
		return mismatch(where, "format: expected %q, got %q", w.format, got)
	}
	if checkName && s.Name() != w.name {
		return mismatch(where, "name: expected %q, got %q", w.name, s.Name())
	}
	if s.Flags()&ferry.FlagNullable == 0 {
		return mismatch(where, "field is not nullable (flags %d)", s.Flags())
	}
	if s.NumChildren() != len(w.children) {
		return mismatch(where, "expected %d children, got %d", len(w.children), s.NumChildren())
	}
	for i, cw := range w.children {
		if err := checkField(s.Child(i), cw, fmt.Sprintf("%schildren[%d].", where, i), true); err != nil {
			return err
		}
	}
	if (w.dictionary == nil) != (s.Dictionary() == nil) {
		return mismatch(where, "dictionary presence: expected %v", w.dictionary != nil)
	}
	if w.dictionary != nil {
		return checkField(s.Dictionary(), *w.dictionary, where+"dictionary.", false)
	}
	return nil
}

// CheckSchema checks a schema against the case.
func CheckSchema(c *Case, s *ferry.Schema) error { return checkField(s, wantField(c), "schema ", true) }

// CheckArray checks an array (with its schema: attached, or its stream's
// for a batch) against the case with the given seed, reading it the way a
// user of package ferry does: in place through the checked HostArray when
// the host can read its memory (the CPU; the sim device, after Host waited
// on the producer's event), else through an explicit host copy: ToHost
// for an owned array (which it consumes), CopyTo for a stream batch (which
// stays where get_next put it, for the stream to release). It does not
// release an owned array it did not consume.
func CheckArray(c *Case, seed uint32, a *ferry.DeviceArray, where string, owned bool) error {
	if a.IsReleased() {
		return mismatch(where, "array is released")
	}
	if got := a.DeviceType(); got != c.DeviceType {
		return mismatch(where, "device type: expected %s (%d), got %s (%d)", c.DeviceName, c.DeviceType, got, got)
	}
	if err := CheckSchema(c, a.Schema()); err != nil {
		return err
	}
	if c.DeviceType != ferry.DeviceCPU {
		dev, err := ferry.ResolveDevice(a.DeviceType(), a.DeviceID())
		if err != nil {
			return err
		}
		if !dev.HostAccessible() {
			var host *ferry.DeviceArray
			if owned {
				host, err = a.ToHost()
			} else {
				host, err = a.CopyTo(ferry.DeviceCPU, -1)
			}
			if err != nil {
				return mismatch(where, "bringing the array to the host: %v", err)
			}
			defer host.Release()
			a = host
		}
	}
	h, err := a.Host()
	if err != nil {
		return mismatch(where, "reading on the host: %v", err)
	}
	return checkHost(c, seed, h, where)
}

func checkHost(c *Case, seed uint32, h ferry.HostArray, where string) error {
	if h.Len() != c.Length {
		return mismatch(where, "length: expected %d, got %d", c.Length, h.Len())
	}
	if h.Offset() != c.Offset {
		return mismatch(where, "offset: expected %d, got %d", c.Offset, h.Offset())
	}
	if want := NullCount(c.Nulls, c.Length); h.NullCount() != want {
		return mismatch(where, "null_count: expected %d, got %d", want, h.NullCount())
	}
	// A validity buffer may be present with nulls=0 (every bit set then),
	// and NULL is fine without nulls (cases.md, "What a checker verifies").
	validity, err := h.Buffer(0)
	if err != nil {
		return mismatch(where, "validity buffer: %v", err)
	}
	if validity == nil && NullCount(c.Nulls, c.Length) > 0 {
		return mismatch(where, "validity buffer is NULL, but %d elements are null", NullCount(c.Nulls, c.Length))
	}
	for i := int64(0); i < c.Length; i++ {
		got, err := h.IsValid(i)
		if err != nil {
			return mismatch(where, "validity of element %d: %v", i, err)
		}
		if want := !IsNull(c.Nulls, i); got != want {
			return mismatch(where, "validity of element %d (physical %d): expected %v, got %v", i, i+c.Offset, want, got)
		}
	}
	valid := func(i int64) bool { return !IsNull(c.Nulls, i) }
	switch c.Type {
	case UTF8, Binary:
		return checkStrings(h, where, c.Length, 0, valid, func(i int64) string { return String(seed, i) })
	case ListInt32:
		return checkList(c, seed, h, where, valid)
	case StructInt32UTF8:
		if h.NumChildren() != 2 {
			return mismatch(where, "struct has %d children, expected 2", h.NumChildren())
		}
		var ch [2]ferry.HostArray
		for k := range ch {
			if ch[k], err = h.Child(k); err != nil {
				return mismatch(where, "children[%d]: %v", k, err)
			}
			if ch[k].NullCount() != 0 || ch[k].Offset() != 0 || ch[k].Len() < c.Offset+c.Length {
				return mismatch(fmt.Sprintf("%schildren[%d]: ", where, k), "child null_count %d, offset %d, length %d: expected 0, 0 and at least %d",
					ch[k].NullCount(), ch[k].Offset(), ch[k].Len(), c.Offset+c.Length)
			}
		}
		// A struct's offset applies to its children: element i is at
		// child position i + offset.
		if err := checkFixed(ch[0], where+"children[0]: ", Int32, seed, c.Length, c.Offset, valid); err != nil {
			return err
		}
		return checkStrings(ch[1], where+"children[1]: ", c.Length, c.Offset, valid, func(i int64) string { return String(seed+1, i) })
	case DictInt32UTF8:
		if err := checkFixed(h, where, DictInt32UTF8, seed, c.Length, 0, valid); err != nil {
			return err
		}
		d, err := h.Dictionary()
		if err != nil {
			return mismatch(where, "dictionary: %v", err)
		}
		if d.Len() != int64(len(DictValues)) || d.NullCount() != 0 {
			return mismatch(where+"dictionary: ", "length %d, null_count %d: expected %d, 0", d.Len(), d.NullCount(), len(DictValues))
		}
		return checkStrings(d, where+"dictionary: ", int64(len(DictValues)), 0, func(int64) bool { return true },
			func(i int64) string { return DictValues[i] })
	default:
		return checkFixed(h, where, c.Type, seed, c.Length, 0, valid)
	}
}

// bitsOf reads element j of h as a T and converts it with bits.
func bitsOf[T ferry.Native](h ferry.HostArray, j int64, bits func(T) uint64) (uint64, error) {
	v, err := ferry.Value[T](h, j)
	return bits(v), err
}

// fixedBits reads element j of h as the bits Bits returns for type t.
func fixedBits(h ferry.HostArray, t Type, j int64) (uint64, error) {
	switch t {
	case Int8:
		return bitsOf(h, j, func(v int8) uint64 { return uint64(uint8(v)) })
	case Uint8:
		return bitsOf(h, j, func(v uint8) uint64 { return uint64(v) })
	case Int16:
		return bitsOf(h, j, func(v int16) uint64 { return uint64(uint16(v)) })
	case Uint16:
		return bitsOf(h, j, func(v uint16) uint64 { return uint64(v) })
	case Int32, DictInt32UTF8:
		return bitsOf(h, j, func(v int32) uint64 { return uint64(uint32(v)) })
	case Uint32:
		return bitsOf(h, j, func(v uint32) uint64 { return uint64(v) })
	case Int64:
		return bitsOf(h, j, func(v int64) uint64 { return uint64(v) })
	case Uint64:
		return ferry.Value[uint64](h, j)
	case Float32:
		return bitsOf(h, j, func(v float32) uint64 { return uint64(math.Float32bits(v)) })
	case Float64:
		return bitsOf(h, j, math.Float64bits)
	case Bool:
		v, err := h.Bool(j)
		if v {
			return 1, err
		}
		return 0, err
	}
	return 0, mismatch("", "%s is not a fixed-width type", t)
}

// checkFixed checks the values of logical elements [0, length), read at
// position i + shift of h (the parent struct's offset for a child).
func checkFixed(h ferry.HostArray, where string, t Type, seed uint32, length, shift int64, valid func(int64) bool) error {
	for i := int64(0); i < length; i++ {
		if !valid(i) {
			continue
		}
		got, err := fixedBits(h, t, i+shift)
		if err != nil {
			return mismatch(where, "value of element %d: %v", i, err)
		}
		if want := Bits(t, seed, i); got != want {
			return mismatch(where, "value of element %d: expected bits %#x, got %#x", i, want, got)
		}
	}
	return nil
}

func checkStrings(h ferry.HostArray, where string, length, shift int64, valid func(int64) bool, value func(int64) string) error {
	for i := int64(0); i < length; i++ {
		if !valid(i) {
			continue
		}
		got, err := h.Bytes(i + shift)
		if err != nil {
			return mismatch(where, "value of element %d: %v", i, err)
		}
		if want := value(i); string(got) != want {
			return mismatch(where, "value of element %d: expected %q, got %q", i, want, got)
		}
	}
	return nil
}

func checkList(c *Case, seed uint32, h ferry.HostArray, where string, valid func(int64) bool) error {
	if h.NumChildren() != 1 {
		return mismatch(where, "list has %d children, expected 1", h.NumChildren())
	}
	items, err := h.Child(0)
	if err != nil {
		return mismatch(where, "children[0]: %v", err)
	}
	if items.NullCount() != 0 || items.Offset() != 0 {
		return mismatch(where+"children[0]: ", "child null_count %d, offset %d: expected 0, 0", items.NullCount(), items.Offset())
	}
	for i := int64(0); i < c.Length; i++ {
		if !valid(i) {
			continue
		}
		start, end, err := h.ListRange(i)
		if err != nil {
			return mismatch(where, "list %d: %v", i, err)
		}
		if end-start != ListLength(seed, i) {
			return mismatch(where, "list %d: expected %d elements, got %d", i, ListLength(seed, i), end-start)
		}
		for j := start; j < end; j++ {
			got, err := ferry.Value[int32](items, j)
			if err != nil {
				return mismatch(where+"children[0]: ", "value at position %d: %v", j, err)
			}
			if want := U(seed, j); uint32(got) != want {
				return mismatch(where+"children[0]: ", "value at position %d: expected %d, got %d", j, int32(want), got)
			}
		}
	}
	return nil
}
