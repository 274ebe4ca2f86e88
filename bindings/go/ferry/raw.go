package ferry

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// Raw structs in C memory, for handing to C APIs that fill or consume an
// ArrowSchema / ArrowDeviceArray / ArrowDeviceArrayStream by pointer (and for
// tests). Each New returns a released struct; the matching Free releases it
// first if it is still live, then frees it.

func NewRawSchema() unsafe.Pointer        { return unsafe.Pointer(C.ferry_schema_new()) }
func FreeRawSchema(p unsafe.Pointer)      { C.ferry_schema_free((*C.struct_ArrowSchema)(p)) }
func NewRawDeviceArray() unsafe.Pointer   { return unsafe.Pointer(C.ferry_device_array_new()) }
func FreeRawDeviceArray(p unsafe.Pointer) { C.ferry_device_array_free((*C.struct_ArrowDeviceArray)(p)) }
func NewRawStream() unsafe.Pointer        { return unsafe.Pointer(C.ferry_stream_new()) }
func FreeRawStream(p unsafe.Pointer)      { C.ferry_stream_free((*C.struct_ArrowDeviceArrayStream)(p)) }
func RawDeviceArrayIsReleased(p unsafe.Pointer) bool {
	return C.ferry_device_array_is_released((*C.struct_ArrowDeviceArray)(p)) != 0
}
func RawStreamIsReleased(p unsafe.Pointer) bool {
	return C.ferry_stream_is_released((*C.struct_ArrowDeviceArrayStream)(p)) != 0
}

// rawCallFloor is the cheapest cgo call into libferry (a pure accessor): the
// per-call floor the benchmarks compare against.
func rawCallFloor(p unsafe.Pointer) int {
	return int(C.ferry_device_array_is_released((*C.struct_ArrowDeviceArray)(p)))
}

// rawNextRelease is one consumer step written as bare cgo calls (get_next,
// then release), the floor of DeviceArrayStream.Next.
func rawNextRelease(stream, batch unsafe.Pointer) int {
	rc := C.ferry_stream_get_next((*C.struct_ArrowDeviceArrayStream)(stream), (*C.struct_ArrowDeviceArray)(batch), nil)
	C.ferry_device_array_release((*C.struct_ArrowDeviceArray)(batch))
	return int(rc)
}
