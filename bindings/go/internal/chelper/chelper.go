// Package chelper holds C helpers for the ferry package's tests and
// benchmarks: consumers on new pthreads (foreign threads for Go), a C
// producer at the handoff floor, and loops of C -> Go callbacks.
package chelper

/*
#cgo CFLAGS: -I${SRCDIR}/../../ferry/include -O2
#cgo pkg-config: ferry
#include "chelper.h"
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// DrainStream reads the ArrowDeviceArrayStream at stream to its end from C
// (on a new pthread when newThread) and returns the batch count, the summed
// length, the nanoseconds spent and the failure, if any.
func DrainStream(stream unsafe.Pointer, newThread bool) (batches, elements, ns int64, code syscall.Errno, message string) {
	var b, e, t C.int64_t
	var msg [1024]C.char
	rc := C.chelper_drain_stream((*C.struct_ArrowDeviceArrayStream)(stream), boolInt(newThread), &b, &e, &t, &msg[0], 1024)
	return int64(b), int64(e), int64(t), syscall.Errno(rc), C.GoString(&msg[0])
}

// EndlessStream fills the released stream struct at out with an endless C
// stream of static int32 arrays of length elements (at most 1024).
func EndlessStream(out unsafe.Pointer, length int64) {
	C.chelper_endless_stream((*C.struct_ArrowDeviceArrayStream)(out), C.int64_t(length))
}

// ConsumeArray is a C consumer: it moves the array out, reads its first
// value and releases it.
func ConsumeArray(array unsafe.Pointer) int32 {
	return int32(C.chelper_consume_array((*C.struct_ArrowDeviceArray)(array)))
}

// CallGo calls a trivial Go export n times from C (a new pthread when
// newThread) and returns the nanoseconds spent.
func CallGo(n int64, newThread bool) int64 {
	return int64(C.chelper_call_go(C.int64_t(n), boolInt(newThread)))
}

// C2CHandoffs runs n C -> C handoffs and returns the nanoseconds spent.
func C2CHandoffs(n int64) int64 { return int64(C.chelper_c2c_handoffs(C.int64_t(n))) }

// DLPackTensor makes a C DLPack tensor over n int64 values 3*i, with ndim 1
// or 2 (shape {1, n}); its deleter counts (DLPackDeleted).
func DLPackTensor(n int64, ndim int32) unsafe.Pointer {
	return unsafe.Pointer(C.chelper_dlpack_tensor(C.int64_t(n), C.int32_t(ndim)))
}

// DLPackDeleted returns how many DLPackTensor tensors were deleted.
func DLPackDeleted() int64 { return int64(C.chelper_dlpack_deleted()) }

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
