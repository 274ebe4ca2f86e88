package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
)

// cArray reads the fields of an ArrowArray in C memory from Go, without a
// cgo call (a call costs more than every read of a handoff together), through
// abi.ArrowArray: the layout core/abi/api.json describes, which
// zz_generated_layout_check.go proves equal to the C compiler's at compile
// time. A nil array reads as length 0, no buffers and no children, as the
// core's accessors do. Only fields are read here: whether they make sense is
// for Host's checks or the validator.
type cArray struct{ c *C.struct_ArrowArray }

// abiArray views a C ArrowArray through its described layout.
func abiArray(p *C.struct_ArrowArray) *abi.ArrowArray { return (*abi.ArrowArray)(unsafe.Pointer(p)) }

// abiSchema views a C ArrowSchema through its described layout.
func abiSchema(p *C.struct_ArrowSchema) *abi.ArrowSchema {
	return (*abi.ArrowSchema)(unsafe.Pointer(p))
}

// embeddedArray is the ArrowArray inside a C ArrowDeviceArray (nil for nil,
// as ferry_device_array_array).
func embeddedArray(p *C.struct_ArrowDeviceArray) *C.struct_ArrowArray {
	if p == nil {
		return nil
	}
	return (*C.struct_ArrowArray)(unsafe.Pointer(&abiDeviceArray(p).Array))
}

// deviceOf reads where a C ArrowDeviceArray lives (0, 0 for nil, as the
// core's ferry_device_array_device_type and _device_id answer).
func deviceOf(p *C.struct_ArrowDeviceArray) (C.ArrowDeviceType, C.int64_t) {
	if p == nil {
		return 0, 0
	}
	d := abiDeviceArray(p)
	return C.ArrowDeviceType(d.DeviceType), C.int64_t(d.DeviceId)
}

// schemaChild is child i of a C ArrowSchema, nil when out of range or the
// table is NULL (as ferry_schema_child).
func schemaChild(p *C.struct_ArrowSchema, i int64) *C.struct_ArrowSchema {
	if p == nil {
		return nil
	}
	s := abiSchema(p)
	if s.Children == nil || i < 0 || i >= s.NChildren {
		return nil
	}
	return unsafe.Slice((**C.struct_ArrowSchema)(s.Children), s.NChildren)[i]
}

// abiCStream views a C ArrowArrayStream through its described layout.
func abiCStream(p unsafe.Pointer) *abi.ArrowArrayStream { return (*abi.ArrowArrayStream)(p) }

// abiDeviceArray views a C ArrowDeviceArray through its described layout.
func abiDeviceArray(p *C.struct_ArrowDeviceArray) *abi.ArrowDeviceArray {
	return (*abi.ArrowDeviceArray)(unsafe.Pointer(p))
}

// noArray stands in for the struct of a nil cArray: its counts read 0 and
// its pointers nil. Never written.
var noArray abi.ArrowArray

// fields is a's struct through its described layout (noArray when a is nil).
func (a cArray) fields() *abi.ArrowArray {
	if a.c == nil {
		return &noArray
	}
	return abiArray(a.c)
}

func (a cArray) length() int64    { return a.fields().Length }
func (a cArray) nullCount() int64 { return a.fields().NullCount }
func (a cArray) offset() int64    { return a.fields().Offset }
func (a cArray) nBuffers() int64  { return a.fields().NBuffers }
func (a cArray) nChildren() int64 { return a.fields().NChildren }

func (a cArray) released() bool { return a.c == nil || abiArray(a.c).Release == nil }

// buffer returns buffer i's address; nil when NULL, when i is out of
// [0, n_buffers) or when the buffer table itself is NULL.
func (a cArray) buffer(i int) unsafe.Pointer {
	n := a.nBuffers()
	if i < 0 || int64(i) >= n || abiArray(a.c).Buffers == nil {
		return nil
	}
	return unsafe.Slice((*unsafe.Pointer)(abiArray(a.c).Buffers), n)[i]
}

// child returns child i; nil when out of range or the table is NULL.
func (a cArray) child(i int) *C.struct_ArrowArray {
	n := a.nChildren()
	if i < 0 || int64(i) >= n || abiArray(a.c).Children == nil {
		return nil
	}
	return unsafe.Slice((**C.struct_ArrowArray)(abiArray(a.c).Children), n)[i]
}

func (a cArray) dictionary() *C.struct_ArrowArray {
	return (*C.struct_ArrowArray)(a.fields().Dictionary)
}

// cString returns the NUL-terminated C string at p as a Go string sharing
// its memory (no copy): valid only while that memory is, so it never leaves
// the package. At most max bytes are scanned; a longer string reads as "".
func cString(p *C.char, max int) string {
	if p == nil {
		return ""
	}
	bytes := (*[1 << 30]byte)(unsafe.Pointer(p))
	for n := 0; n < max; n++ {
		if bytes[n] == 0 {
			return unsafe.String(&bytes[0], n)
		}
	}
	return ""
}
