// Package chelper holds C helpers for the ferry package's tests and
// benchmarks: consumers on new pthreads (foreign threads for Go), a C
// producer at the handoff floor, loops of C -> Go callbacks, and the floors
// written as bare cgo calls. It is internal and only tests import it, so none
// of it is compiled into the ferry package.
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

// CallFloor is the cheapest cgo call into libferry (a pure accessor on the
// ArrowDeviceArray at p): the per-call floor the benchmarks compare against.
func CallFloor(p unsafe.Pointer) int {
	return int(C.ferry_device_array_is_released((*C.struct_ArrowDeviceArray)(p)))
}

// NextRelease is one consumer step written as bare cgo calls (get_next, then
// release), the floor of DeviceArrayStream.Next.
func NextRelease(stream, batch unsafe.Pointer) int {
	rc := C.ferry_array_stream_get_next((*C.struct_ArrowDeviceArrayStream)(stream), (*C.struct_ArrowDeviceArray)(batch), nil)
	C.ferry_device_array_release((*C.struct_ArrowDeviceArray)(batch))
	return int(rc)
}

// GoToC is a Go -> C handoff written as bare cgo calls against the core
// (malloc a buffer, ferry_array_init with free as the release hook,
// ferry_device_array_init into the consumer's struct at dst, the C consumer;
// tmp holds the ArrowArray): the floor of ExportArrayNoSchema + ExportTo.
func GoToC(tmp, dst unsafe.Pointer, consume func(unsafe.Pointer) int32) int32 {
	buf := C.chelper_alloc(64)
	bufs := [2]unsafe.Pointer{nil, buf} // C pointers only
	arr := (*C.struct_ArrowArray)(tmp)
	C.ferry_array_init(arr, 16, 0, 0, 2, &bufs[0], 0, C.FerryReleaseHook(C.chelper_free), buf, nil)
	C.ferry_device_array_init((*C.struct_ArrowDeviceArray)(dst), arr, C.ARROW_DEVICE_CPU, -1, nil, nil, nil, nil)
	return consume(dst)
}

// MoveChildOut moves child i of the live ArrowDeviceArray at array into the
// released ArrowDeviceArray at dst (as a CPU device array) and returns the
// child's last buffer address. Tests use it to show children own their buffers.
func MoveChildOut(array unsafe.Pointer, i int, dst unsafe.Pointer) unsafe.Pointer {
	return C.chelper_move_child_out((*C.struct_ArrowDeviceArray)(array), C.int64_t(i), (*C.struct_ArrowDeviceArray)(dst))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
