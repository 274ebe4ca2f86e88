package ferry

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// cArray reads the fields of an ArrowArray in C memory from Go, without a
// cgo call (a call costs more than every read of a handoff together). A nil
// array reads as length 0, no buffers and no children, as the core's
// accessors do. Only fields are read here: whether they make sense is for
// Host's checks or the validator.
type cArray struct{ c *C.struct_ArrowArray }

func (a cArray) length() int64 {
	if a.c == nil {
		return 0
	}
	return int64(a.c.length)
}

func (a cArray) nullCount() int64 {
	if a.c == nil {
		return 0
	}
	return int64(a.c.null_count)
}

func (a cArray) offset() int64 {
	if a.c == nil {
		return 0
	}
	return int64(a.c.offset)
}

func (a cArray) nBuffers() int64 {
	if a.c == nil {
		return 0
	}
	return int64(a.c.n_buffers)
}

func (a cArray) nChildren() int64 {
	if a.c == nil {
		return 0
	}
	return int64(a.c.n_children)
}

func (a cArray) released() bool { return a.c == nil || a.c.release == nil }

// buffer returns buffer i's address; nil when NULL, when i is out of
// [0, n_buffers) or when the buffer table itself is NULL.
func (a cArray) buffer(i int) unsafe.Pointer {
	n := a.nBuffers()
	if i < 0 || int64(i) >= n || a.c.buffers == nil {
		return nil
	}
	return unsafe.Slice((*unsafe.Pointer)(unsafe.Pointer(a.c.buffers)), n)[i]
}

// child returns child i; nil when out of range or the table is NULL.
func (a cArray) child(i int) *C.struct_ArrowArray {
	n := a.nChildren()
	if i < 0 || int64(i) >= n || a.c.children == nil {
		return nil
	}
	return unsafe.Slice(a.c.children, n)[i]
}

func (a cArray) dictionary() *C.struct_ArrowArray {
	if a.c == nil {
		return nil
	}
	return a.c.dictionary
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
