package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
)

// HostArray is a checked view of an array the host can read, with its
// schema: made by DeviceArray.Host, which first refuses memory the host
// cannot read and waits on the producer's event. Children and the
// dictionary are HostArrays too.
//
// Every accessor checks its index against the array's length, and every
// byte it reads against the size its buffer has by the array's own
// declaration: the Arrow layout of its format, length and offset (for
// variable-size data, up to the last offset). Typed accessors compute that
// size from the layout of the type they read; Buffer asks the core
// (ferry_array_buffer_size) for any buffer. Nothing is checked up front
// beyond the few integers the arithmetic relies on, so a structural lie
// shows as the error of the accessor that meets it; DeviceArray.Validate
// reports everything at once. What no CPU consumer can check is a buffer
// smaller than its declaration (the C interface carries no CPU buffer
// sizes; see README.md, "What validation cannot see").
//
// Element accessors take logical indices (the array's offset is applied)
// and, like arrow-go's, ignore validity: ask IsValid. A HostArray borrows
// from its DeviceArray: use it, and the slices it returns, only while that
// array is live.
type HostArray struct {
	arr     *C.struct_ArrowArray
	schema  *C.struct_ArrowSchema
	format  string // shares the schema's C memory: never handed out
	devType C.ArrowDeviceType
	devID   C.int64_t
}

// a and s read the array's and the schema's fields through their described
// layouts (carray.go).
func (h HostArray) a() *abi.ArrowArray  { return abiArray(h.arr) }
func (h HostArray) s() *abi.ArrowSchema { return abiSchema(h.schema) }

// maxFormat bounds the format strings read in Go; longer ones (a timestamp
// with a very long time zone) go to the core.
const maxFormat = 256

// Host returns a checked view for reading the array on the host. It refuses
// memory the host cannot read (EINVAL naming ToHost for CUDA or ROCm device
// memory, ENODEV for a device type ferry does not know), then waits on the
// producer's sync event. The array needs its schema (attached, or the
// stream's for a batch; HostWith otherwise).
func (d *DeviceArray) Host() (HostArray, error) {
	if d == nil {
		return HostArray{}, errorf(syscall.EINVAL, "DeviceArray.Host: the array is released")
	}
	d.rlock()
	defer d.runlock()
	return d.hostView()
}

// hostView is Host under d's lock.
func (d *DeviceArray) hostView() (HostArray, error) {
	if d.released() {
		return HostArray{}, errorf(syscall.EINVAL, "DeviceArray.Host: the array is released")
	}
	var s *C.struct_ArrowSchema
	if d.batchOf != nil {
		if d.batchOf.schema != nil { // fetched once per stream
			s = d.batchOf.schema.c
		} else if sc, err := d.batchOf.loadSchema(); err == nil {
			s = sc.c
		}
	} else if d.schema != nil {
		s = d.schema.c
	}
	if s == nil {
		return HostArray{}, errorf(syscall.EINVAL, "DeviceArray.Host: no schema attached (use HostWith)")
	}
	return d.host(s)
}

// HostWith is Host for an array described by schema s (borrowed), for
// arrays that carry no schema of their own.
func (d *DeviceArray) HostWith(s *Schema) (HostArray, error) {
	if err := d.acquire("DeviceArray.HostWith", true); err != nil {
		return HostArray{}, err
	}
	defer d.runlock()
	if s.IsReleased() {
		return HostArray{}, errorf(syscall.EINVAL, "DeviceArray.HostWith: the schema is released")
	}
	return d.host(s.c)
}

func (d *DeviceArray) host(s *C.struct_ArrowSchema) (HostArray, error) {
	dc := abiDeviceArray(d.c)
	devType, devID := C.ArrowDeviceType(dc.DeviceType), C.int64_t(dc.DeviceId)
	if devType != C.ArrowDeviceType(DeviceCPU) {
		if err := checkHostReadable(devType, devID); err != nil {
			return HostArray{}, err
		}
	}
	if dc.SyncEvent != nil {
		if err := d.wait(nil); err != nil {
			return HostArray{}, err
		}
	}
	return hostNode(s, embeddedArray(d.c), devType, devID)
}

func hostNode(s *C.struct_ArrowSchema, a *C.struct_ArrowArray, devType C.ArrowDeviceType, devID C.int64_t) (HostArray, error) {
	if a == nil || abiArray(a).Release == nil || s == nil || abiSchema(s).Release == nil {
		return HostArray{}, errorf(syscall.EINVAL, "cannot read a released array or schema")
	}
	m := abiArray(a)
	// The few integers every accessor's arithmetic relies on.
	if m.Length < 0 || m.Offset < 0 || m.NBuffers < 0 || m.NChildren < 0 ||
		m.Length > int64(^uint64(0)>>1)-m.Offset {
		return HostArray{}, errorf(syscall.EINVAL, "length %d, offset %d, n_buffers %d or n_children %d is negative, "+
			"or offset + length overflows", m.Length, m.Offset, m.NBuffers, m.NChildren)
	}
	return HostArray{arr: a, schema: s, format: cString((*C.char)(abiSchema(s).Format), maxFormat), devType: devType, devID: devID}, nil
}

// Len is the logical length; Offset the position of element 0 in the
// buffers; NullCount the producer's null count (-1: not computed).
func (h HostArray) Len() int64       { return h.a().Length }
func (h HostArray) Offset() int64    { return h.a().Offset }
func (h HostArray) NullCount() int64 { return h.a().NullCount }
func (h HostArray) NumBuffers() int  { return int(h.a().NBuffers) }
func (h HostArray) NumChildren() int { return int(h.a().NChildren) }

// Format returns the schema's format string (a copy).
func (h HostArray) Format() string { return strings.Clone(h.formatOf()) }

// Schema returns the view's schema, borrowed like the view.
func (h HostArray) Schema() *Schema { return &Schema{c: h.schema} }

// formatOf is the format for comparisons: the shared string, or for a
// format longer than maxFormat a copy.
func (h HostArray) formatOf() string {
	if h.format == "" && h.s().Format != nil {
		return C.GoString((*C.char)(h.s().Format))
	}
	return h.format
}

func outOfRange(what string, i, n int64) error {
	return errorf(syscall.EINVAL, "%s %d is out of range for a length of %d", what, i, n)
}

func pastEnd(what string, b int, n int64) error {
	return errorf(syscall.EINVAL, "%s of buffer %d is past its end (%d bytes)", what, b, n)
}

func (h HostArray) checkIndex(i int64) (int64, error) {
	if i < 0 || i >= h.a().Length {
		return 0, outOfRange("index", i, h.a().Length)
	}
	return h.a().Offset + i, nil
}

// slotsBytes is (offset + length + extra) * width, false on overflow.
func (h HostArray) slotsBytes(width, extra int64) (int64, bool) {
	slots := h.a().Offset + h.a().Length + extra // no overflow: hostNode checked
	if slots < 0 || (width > 0 && slots > (int64(^uint64(0)>>1))/width) {
		return 0, false
	}
	return slots * width, true
}

// bitmapBytes is the size of a bitmap over offset + length slots.
func (h HostArray) bitmapBytes() int64 {
	return (h.a().Offset + h.a().Length + 7) / 8
}

// layoutBuffer returns buffer b as size bytes, size being what the layout
// of the type being read gives it (ok false: the computation overflowed).
func (h HostArray) layoutBuffer(b int, size int64, ok bool) ([]byte, error) {
	if int64(b) >= h.a().NBuffers {
		return nil, errorf(syscall.EINVAL, "the array has %d buffers; format %q needs buffer %d",
			h.a().NBuffers, h.formatOf(), b)
	}
	if !ok {
		return nil, errorf(syscall.EINVAL, "the size of buffer %d overflows (length %d, offset %d)",
			b, h.a().Length, h.a().Offset)
	}
	if size == 0 {
		return []byte{}, nil
	}
	// No buffer of a process is that large (the binding contract, item 5):
	// a length that says so is a lie, refused before any read.
	if size > MaxReadBytes {
		return nil, errorf(syscall.EINVAL, "buffer %d of length %d at offset %d needs %d bytes, "+
			"more than a process can address (2^48)", b, h.a().Length, h.a().Offset, size)
	}
	p := cArray{h.arr}.buffer(b)
	if p == nil {
		return nil, errorf(syscall.EINVAL, "buffer %d is NULL in an array of length %d", b, h.a().Length)
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// Buffer returns buffer b as bytes (no copy), its size computed by the core
// from the schema, the length and the offset; nil for a NULL buffer, EINVAL
// past the last buffer or when the size cannot be computed.
func (h HostArray) Buffer(b int) ([]byte, error) {
	if b < 0 || int64(b) >= h.a().NBuffers {
		return nil, outOfRange("buffer", int64(b), h.a().NBuffers)
	}
	p := cArray{h.arr}.buffer(b)
	if p == nil {
		return nil, nil
	}
	size, err := h.coreSize(b)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), size), nil
}

func (h HostArray) coreSize(b int) (int64, error) {
	var size C.int64_t
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_array_buffer_size(h.schema, h.arr, h.devType, h.devID, C.int64_t(b), &size, e)
	})
	return int64(size), err
}

// hasValidity says whether buffer 0 of format is a validity bitmap; known
// false for formats Go does not classify (the core is asked then).
func hasValidity(format string) (has, known bool) {
	switch format {
	case "n", "+r":
		return false, true
	case "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "u", "U", "z", "Z", "vu", "vz",
		"+l", "+L", "+s", "+m", "+vl", "+vL", "tdD", "tdm", "tts", "ttm", "ttu", "ttn",
		"tDs", "tDm", "tDu", "tDn", "tiM", "tiD", "tin":
		return true, true
	}
	if strings.HasPrefix(format, "+u") {
		return false, true
	}
	return false, false
}

// IsValid reports whether element i is not null: its validity bit, true
// without a bitmap, false for the null type. EINVAL for an index out of
// range, or a union or run-end encoded array (ask their children).
func (h HostArray) IsValid(i int64) (bool, error) {
	slot, err := h.checkIndex(i)
	if err != nil {
		return false, err
	}
	format := h.formatOf()
	has, known := hasValidity(format)
	if known && !has {
		if format == "n" {
			return false, nil
		}
		return false, errorf(syscall.EINVAL, "format %q has no validity bitmap: ask its children", format)
	}
	if h.a().NBuffers < 1 {
		return false, errorf(syscall.EINVAL, "the array has no buffers; format %q needs a validity buffer", format)
	}
	if (cArray{h.arr}).buffer(0) == nil {
		return true, nil
	}
	size := h.bitmapBytes()
	if !known {
		// The core knows every format, and refuses what is not one.
		if size, err = h.coreSize(0); err != nil {
			return false, err
		}
	}
	bitmap, err := h.layoutBuffer(0, size, true)
	if err != nil {
		return false, err
	}
	return bit(bitmap, 0, slot)
}

func bit(bytes []byte, b int, slot int64) (bool, error) {
	if slot/8 >= int64(len(bytes)) {
		return false, pastEnd("bit "+strconv.FormatInt(slot, 10), b, int64(len(bytes)))
	}
	return bytes[slot/8]&(1<<(slot%8)) != 0, nil
}

// Native is the Go type of a fixed-width Arrow value read by Value and
// Values.
type Native interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

// formatHolds reports whether values of format are stored as T: its own
// format ("i" for int32), and for temporal formats the integer of their
// width (int32 for date32, time32 and month intervals; int64 for date64,
// time64, timestamps and durations). A dictionary-encoded array's format is
// its index type.
func formatHolds[T Native](format string) bool {
	var zero T
	switch any(zero).(type) {
	case int8:
		return format == "c"
	case uint8:
		return format == "C"
	case int16:
		return format == "s"
	case uint16:
		return format == "S"
	case int32:
		return format == "i" || format == "tdD" || format == "tts" || format == "ttm" || format == "tiM"
	case uint32:
		return format == "I"
	case int64:
		return format == "l" || format == "tdm" || format == "ttu" || format == "ttn" ||
			(len(format) >= 3 && (format[:2] == "ts" || format[:2] == "tD") && (len(format) == 3 || format[3] == ':'))
	case uint64:
		return format == "L"
	case float32:
		return format == "f"
	case float64:
		return format == "g"
	}
	return false
}

func wrongType[T Native](h HostArray) error {
	var zero T
	return errorf(syscall.EINVAL, "cannot read %T values from an array of format %q", zero, h.formatOf())
}

// Values returns the values of a fixed-width array as a slice of Len()
// elements over the producer's memory (no copy; valid while the array is).
// T must match the format (int32 for "i"; see Native). EINVAL for another
// type, a buffer the length does not fit, or values not aligned for T
// (Value reads unaligned values).
func Values[T Native](h HostArray) ([]T, error) {
	if !formatHolds[T](h.formatOf()) {
		return nil, wrongType[T](h)
	}
	var zero T
	width := int64(unsafe.Sizeof(zero))
	if h.a().Length == 0 {
		return []T{}, nil
	}
	size, ok := h.slotsBytes(width, 0)
	bytes, err := h.layoutBuffer(1, size, ok)
	if err != nil {
		return nil, err
	}
	first := unsafe.Pointer(&bytes[h.a().Offset*width])
	if uintptr(first)%unsafe.Alignof(zero) != 0 {
		return nil, errorf(syscall.EINVAL, "buffer 1 is not aligned for %T; read it with Value", zero)
	}
	return unsafe.Slice((*T)(first), h.a().Length), nil
}

// Value returns element i of a fixed-width array (see Values), aligned or
// not.
func Value[T Native](h HostArray, i int64) (T, error) {
	var v T
	if !formatHolds[T](h.formatOf()) {
		return v, wrongType[T](h)
	}
	slot, err := h.checkIndex(i)
	if err != nil {
		return v, err
	}
	width := int64(unsafe.Sizeof(v))
	size, ok := h.slotsBytes(width, 0)
	bytes, err := h.layoutBuffer(1, size, ok)
	if err != nil {
		return v, err
	}
	start := slot * width
	if start+width > int64(len(bytes)) { // layoutBuffer sized it; defensive
		return v, pastEnd("element "+strconv.FormatInt(slot, 10), 1, int64(len(bytes)))
	}
	p := unsafe.Pointer(&bytes[start])
	if uintptr(p)%unsafe.Alignof(v) == 0 {
		return *(*T)(p), nil
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), width), bytes[start:start+width])
	return v, nil
}

// Bool returns element i of a boolean array ("b").
func (h HostArray) Bool(i int64) (bool, error) {
	if h.formatOf() != "b" {
		return false, errorf(syscall.EINVAL, "Bool needs format \"b\", not %q", h.formatOf())
	}
	slot, err := h.checkIndex(i)
	if err != nil {
		return false, err
	}
	bits, err := h.layoutBuffer(1, h.bitmapBytes(), true)
	if err != nil {
		return false, err
	}
	return bit(bits, 1, slot)
}

// offsetsBuffer is buffer 1 of a variable-size layout: offset + length + 1
// offsets of 4 bytes, or 8 when wide.
func (h HostArray) offsetsBuffer(wide bool) ([]byte, error) {
	width := int64(4)
	if wide {
		width = 8
	}
	size, ok := h.slotsBytes(width, 1)
	return h.layoutBuffer(1, size, ok)
}

func offsetAt(offsets []byte, slot int64, wide bool) (int64, error) {
	if wide {
		if (slot+1)*8 > int64(len(offsets)) {
			return 0, pastEnd("offset "+strconv.FormatInt(slot, 10), 1, int64(len(offsets)))
		}
		var v int64
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 8), offsets[slot*8:])
		return v, nil
	}
	if (slot+1)*4 > int64(len(offsets)) {
		return 0, pastEnd("offset "+strconv.FormatInt(slot, 10), 1, int64(len(offsets)))
	}
	var v int32
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4), offsets[slot*4:])
	return int64(v), nil
}

// offsetsRange is [start, end) of element i from the offsets, checked to be
// non-negative and not decreasing.
func (h HostArray) offsetsRange(i int64, wide bool) (start, end int64, offsets []byte, err error) {
	slot, err := h.checkIndex(i)
	if err != nil {
		return 0, 0, nil, err
	}
	if offsets, err = h.offsetsBuffer(wide); err != nil {
		return 0, 0, nil, err
	}
	if start, err = offsetAt(offsets, slot, wide); err != nil {
		return 0, 0, nil, err
	}
	if end, err = offsetAt(offsets, slot+1, wide); err != nil {
		return 0, 0, nil, err
	}
	if start < 0 || end < start {
		return 0, 0, nil, errorf(syscall.EINVAL, "the offsets of element %d are [%d, %d): negative or decreasing", i, start, end)
	}
	return start, end, offsets, nil
}

// Bytes returns element i of a utf8 or binary array ("u", "z", "U", "Z")
// over the producer's memory (no copy; valid while the array is).
func (h HostArray) Bytes(i int64) ([]byte, error) {
	var wide bool
	switch h.formatOf() {
	case "u", "z":
	case "U", "Z":
		wide = true
	default:
		return nil, errorf(syscall.EINVAL, "Bytes needs a utf8 or binary format, not %q", h.formatOf())
	}
	start, end, offsets, err := h.offsetsRange(i, wide)
	if err != nil {
		return nil, err
	}
	// The data buffer's declared size is the last offset.
	last, err := offsetAt(offsets, h.a().Offset+h.a().Length, wide)
	if err != nil {
		return nil, err
	}
	if end > last {
		return nil, errorf(syscall.EINVAL, "element %d ends at byte %d, past the data buffer (%d bytes by the last offset)",
			i, end, last)
	}
	data, err := h.layoutBuffer(2, last, true)
	if err != nil {
		return nil, err
	}
	return data[start:end:end], nil
}

// String returns element i of a utf8 array ("u", "U") as a Go string (a
// copy); EINVAL when its bytes are not UTF-8.
func (h HostArray) String(i int64) (string, error) {
	if f := h.formatOf(); f != "u" && f != "U" {
		return "", errorf(syscall.EINVAL, "String needs a utf8 format, not %q", f)
	}
	b, err := h.Bytes(i)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", errorf(syscall.EINVAL, "element %d is not UTF-8", i)
	}
	return string(b), nil
}

// ListRange returns the positions [start, end) in Child(0) of list element
// i ("+l", "+L", "+w:N"), checked against the child's length.
func (h HostArray) ListRange(i int64) (start, end int64, err error) {
	format := h.formatOf()
	switch {
	case format == "+l" || format == "+L":
		if start, end, _, err = h.offsetsRange(i, format == "+L"); err != nil {
			return 0, 0, err
		}
	case strings.HasPrefix(format, "+w:"):
		n, perr := strconv.ParseInt(format[3:], 10, 64)
		if perr != nil || n <= 0 {
			return 0, 0, errorf(syscall.EINVAL, "format %q has no valid list size", format)
		}
		slot, err := h.checkIndex(i)
		if err != nil {
			return 0, 0, err
		}
		if slot > (int64(^uint64(0)>>1))/n-1 {
			return 0, 0, errorf(syscall.EINVAL, "list element %d: position overflows", i)
		}
		start, end = slot*n, (slot+1)*n
	default:
		return 0, 0, errorf(syscall.EINVAL, "ListRange needs a list format, not %q", format)
	}
	child, err := h.Child(0)
	if err != nil {
		return 0, 0, err
	}
	if end > child.Len() {
		return 0, 0, errorf(syscall.EINVAL, "list element %d ends at %d, past the child's length %d", i, end, child.Len())
	}
	return start, end, nil
}

// Child returns child k with its schema; EINVAL when it is out of range,
// missing or released.
func (h HostArray) Child(k int) (HostArray, error) {
	n := h.a().NChildren
	if k < 0 || int64(k) >= n {
		return HostArray{}, outOfRange("child", int64(k), n)
	}
	var sc *C.struct_ArrowSchema
	if ns := h.s().NChildren; int64(k) < ns && h.s().Children != nil {
		sc = unsafe.Slice((**C.struct_ArrowSchema)(h.s().Children), ns)[k]
	}
	ac := cArray{h.arr}.child(k)
	if sc == nil || ac == nil {
		return HostArray{}, errorf(syscall.EINVAL, "child %d is missing from the schema or the array", k)
	}
	return hostNode(sc, ac, h.devType, h.devID)
}

// Dictionary returns the dictionary (with its schema) of a
// dictionary-encoded array.
func (h HostArray) Dictionary() (HostArray, error) {
	sc, ac := (*C.struct_ArrowSchema)(h.s().Dictionary), cArray{h.arr}.dictionary()
	if sc == nil || ac == nil {
		return HostArray{}, errorf(syscall.EINVAL, "the array is not dictionary-encoded")
	}
	return hostNode(sc, ac, h.devType, h.devID)
}

// ToHost brings the array to the host (the CPU), which every reader of
// values needs for CUDA and ROCm device memory: moved without a copy where
// the host can reach the memory (a CPU array; cuda_host, rocm_host and
// cuda_managed memory), deep-copied otherwise, after waiting on the
// producer's event. The result is a CPU array with no pending work,
// carrying d's schema when d owned one. On success d is consumed (left
// released); on failure d is untouched and still the caller's. To keep d,
// use CopyTo(DeviceCPU, -1).
func (d *DeviceArray) ToHost() (*DeviceArray, error) {
	return d.MoveToDevice(nil, DeviceCPU, -1)
}

// Read runs f with a checked view of the array (Host's), holding the array
// against a Release from another goroutine until f returns: the way for
// goroutines that share an array, one of which may release it, to read its
// values. f must not call d's own methods (the hold is not reentrant) and
// must not keep the view or the slices it returns. Host's errors come back
// without f running; otherwise f's error.
func (d *DeviceArray) Read(f func(h HostArray) error) error {
	if d == nil {
		return errorf(syscall.EINVAL, "DeviceArray.Read: the array is released")
	}
	d.rlock()
	defer d.runlock()
	h, err := d.hostView()
	if err != nil {
		return err
	}
	return f(h)
}
