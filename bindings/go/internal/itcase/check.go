package itcase

import (
	"encoding/binary"
	"fmt"
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

// view is a host-readable array: a ferry.ArrayView plus byte slices over
// its buffers, bounded by the sizes the core computes.
type view struct {
	v     ferry.ArrayView
	where string
}

func (v view) buffer(i int) ([]byte, error) {
	b, err := v.v.BufferBytes(i)
	if err != nil {
		return nil, mismatch(v.where, "buffer %d: %v", i, err)
	}
	return b, nil
}

func (v view) need(b []byte, i int, n int64) error {
	if int64(len(b)) < n {
		return mismatch(v.where, "buffer %d holds %d bytes, %d needed", i, len(b), n)
	}
	return nil
}

func bit(b []byte, p int64) bool { return b[p/8]&(1<<(p%8)) != 0 }

// CheckArray checks an owned array (with its schema attached) against the
// case with the given seed. It does not release the array.
func CheckArray(c *Case, seed uint32, a *ferry.DeviceArray, where string) error {
	if a.IsReleased() {
		return mismatch(where, "array is released")
	}
	if got := a.DeviceType(); got != c.DeviceType {
		return mismatch(where, "device type: expected %s (%d), got %s (%d)", c.DeviceName, c.DeviceType, got, got)
	}
	if err := CheckSchema(c, a.Schema()); err != nil {
		return err
	}
	host := a
	if c.DeviceType != ferry.DeviceCPU {
		dev, err := ferry.ResolveDevice(a.DeviceType(), a.DeviceID())
		if err != nil {
			return err
		}
		if dev.HostAccessible() {
			// Read in place, after waiting on the producer's event.
			if err := a.Wait(nil); err != nil {
				return mismatch(where, "waiting on the sync event: %v", err)
			}
		} else {
			copied, err := a.CopyTo(ferry.DeviceCPU, -1)
			if err != nil {
				return mismatch(where, "copying to the host: %v", err)
			}
			defer copied.Release()
			return checkHost(c, seed, view{v: copied.RootWithSchema(a.Schema()), where: where})
		}
	}
	return checkHost(c, seed, view{v: host.Root(), where: where})
}

func checkHost(c *Case, seed uint32, v view) error {
	if v.v.Length() != c.Length {
		return mismatch(v.where, "length: expected %d, got %d", c.Length, v.v.Length())
	}
	if v.v.Offset() != c.Offset {
		return mismatch(v.where, "offset: expected %d, got %d", c.Offset, v.v.Offset())
	}
	if want := NullCount(c.Nulls, c.Length); v.v.NullCount() != want {
		return mismatch(v.where, "null_count: expected %d, got %d", want, v.v.NullCount())
	}
	validity, err := v.buffer(0)
	if err != nil {
		return err
	}
	if validity == nil && c.Nulls > 0 && c.Length >= c.Nulls {
		return mismatch(v.where, "validity buffer is NULL, but %d elements are null", NullCount(c.Nulls, c.Length))
	}
	if validity != nil {
		if err := v.need(validity, 0, (c.Offset+c.Length+7)/8); err != nil {
			return err
		}
		for i := int64(0); i < c.Length; i++ {
			if got, want := bit(validity, i+c.Offset), !IsNull(c.Nulls, i); got != want {
				return mismatch(v.where, "validity of element %d (physical %d): expected %v, got %v", i, i+c.Offset, want, got)
			}
		}
	}
	valid := func(i int64) bool { return !IsNull(c.Nulls, i) }
	switch c.Type {
	case UTF8, Binary:
		return checkStrings(v, c.Length, c.Offset, valid, func(i int64) string { return String(seed, i) })
	case ListInt32:
		return checkList(c, seed, v, valid)
	case StructInt32UTF8:
		if v.v.NumChildren() != 2 {
			return mismatch(v.where, "struct has %d children, expected 2", v.v.NumChildren())
		}
		a := view{v: v.v.Child(0), where: v.where + "children[0]: "}
		bv := view{v: v.v.Child(1), where: v.where + "children[1]: "}
		for _, ch := range []view{a, bv} {
			if ch.v.NullCount() != 0 || ch.v.Offset() != 0 || ch.v.Length() < c.Offset+c.Length {
				return mismatch(ch.where, "child null_count %d, offset %d, length %d: expected 0, 0 and at least %d",
					ch.v.NullCount(), ch.v.Offset(), ch.v.Length(), c.Offset+c.Length)
			}
		}
		if err := checkFixed(a, Int32, seed, c.Length, c.Offset, valid); err != nil {
			return err
		}
		return checkStrings(bv, c.Length, c.Offset, valid, func(i int64) string { return String(seed+1, i) })
	case DictInt32UTF8:
		if err := checkFixed(v, DictInt32UTF8, seed, c.Length, c.Offset, valid); err != nil {
			return err
		}
		d := view{v: v.v.Dictionary(), where: v.where + "dictionary: "}
		if d.v.IsNil() {
			return mismatch(v.where, "dictionary missing")
		}
		if d.v.Length() != int64(len(DictValues)) || d.v.NullCount() != 0 {
			return mismatch(d.where, "length %d, null_count %d: expected %d, 0", d.v.Length(), d.v.NullCount(), len(DictValues))
		}
		return checkStrings(d, int64(len(DictValues)), d.v.Offset(), func(int64) bool { return true },
			func(i int64) string { return DictValues[i] })
	default:
		return checkFixed(v, c.Type, seed, c.Length, c.Offset, valid)
	}
}

// checkFixed checks values of logical elements [0, length) at physical slot
// i + shift (the array's own offset for the top level).
func checkFixed(v view, t Type, seed uint32, length, shift int64, valid func(int64) bool) error {
	values, err := v.buffer(1)
	if err != nil {
		return err
	}
	if t == Bool {
		if err := v.need(values, 1, (shift+length+7)/8); err != nil {
			return err
		}
		for i := int64(0); i < length; i++ {
			if valid(i) && bit(values, i+shift) != (Bits(t, seed, i) != 0) {
				return mismatch(v.where, "value of element %d: expected %v", i, Bits(t, seed, i) != 0)
			}
		}
		return nil
	}
	w := int64(Width(t))
	if err := v.need(values, 1, (shift+length)*w); err != nil {
		return err
	}
	for i := int64(0); i < length; i++ {
		if !valid(i) {
			continue
		}
		p := (i + shift) * w
		var got uint64
		switch w {
		case 1:
			got = uint64(values[p])
		case 2:
			got = uint64(binary.LittleEndian.Uint16(values[p:]))
		case 4:
			got = uint64(binary.LittleEndian.Uint32(values[p:]))
		case 8:
			got = binary.LittleEndian.Uint64(values[p:])
		}
		if want := Bits(t, seed, i); got != want {
			return mismatch(v.where, "value of element %d: expected bits %#x, got %#x", i, want, got)
		}
	}
	return nil
}

func checkStrings(v view, length, shift int64, valid func(int64) bool, value func(int64) string) error {
	offsets, err := v.buffer(1)
	if err != nil {
		return err
	}
	if err := v.need(offsets, 1, (shift+length+1)*4); err != nil {
		return err
	}
	data, err := v.buffer(2)
	if err != nil {
		return err
	}
	for i := int64(0); i < length; i++ {
		if !valid(i) {
			continue
		}
		p := i + shift
		start := int64(int32(binary.LittleEndian.Uint32(offsets[p*4:])))
		end := int64(int32(binary.LittleEndian.Uint32(offsets[p*4+4:])))
		if start < 0 || end < start || end > int64(len(data)) {
			return mismatch(v.where, "offsets of element %d out of range: [%d, %d) with %d data bytes", i, start, end, len(data))
		}
		if got, want := string(data[start:end]), value(i); got != want {
			return mismatch(v.where, "value of element %d: expected %q, got %q", i, want, got)
		}
	}
	return nil
}

func checkList(c *Case, seed uint32, v view, valid func(int64) bool) error {
	offsets, err := v.buffer(1)
	if err != nil {
		return err
	}
	if err := v.need(offsets, 1, (c.Offset+c.Length+1)*4); err != nil {
		return err
	}
	if v.v.NumChildren() != 1 {
		return mismatch(v.where, "list has %d children, expected 1", v.v.NumChildren())
	}
	child := view{v: v.v.Child(0), where: v.where + "children[0]: "}
	if child.v.NullCount() != 0 || child.v.Offset() != 0 {
		return mismatch(child.where, "child null_count %d, offset %d: expected 0, 0", child.v.NullCount(), child.v.Offset())
	}
	values, err := child.buffer(1)
	if err != nil {
		return err
	}
	n := child.v.Length()
	if err := child.need(values, 1, n*4); err != nil {
		return err
	}
	for i := int64(0); i < c.Length; i++ {
		if !valid(i) {
			continue
		}
		p := i + c.Offset
		start := int64(int32(binary.LittleEndian.Uint32(offsets[p*4:])))
		end := int64(int32(binary.LittleEndian.Uint32(offsets[p*4+4:])))
		if start < 0 || end < start || end > n {
			return mismatch(v.where, "list %d: offsets [%d, %d) outside the child's %d elements", i, start, end, n)
		}
		if end-start != ListLength(seed, i) {
			return mismatch(v.where, "list %d: expected %d elements, got %d", i, ListLength(seed, i), end-start)
		}
		for j := start; j < end; j++ {
			if got, want := binary.LittleEndian.Uint32(values[j*4:]), U(seed, j); got != want {
				return mismatch(child.where, "value at position %d: expected %d, got %d", j, int32(want), int32(got))
			}
		}
	}
	return nil
}
