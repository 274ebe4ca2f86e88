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
func NewRawStream() unsafe.Pointer        { return unsafe.Pointer(C.ferry_array_stream_new()) }
func FreeRawStream(p unsafe.Pointer)      { C.ferry_array_stream_free((*C.struct_ArrowDeviceArrayStream)(p)) }
func RawDeviceArrayIsReleased(p unsafe.Pointer) bool {
	return C.ferry_device_array_is_released((*C.struct_ArrowDeviceArray)(p)) != 0
}
func RawStreamIsReleased(p unsafe.Pointer) bool {
	return C.ferry_array_stream_is_released((*C.struct_ArrowDeviceArrayStream)(p)) != 0
}

// rawCallFloor is the cheapest cgo call into libferry (a pure accessor): the
// per-call floor the benchmarks compare against.
func rawCallFloor(p unsafe.Pointer) int {
	return int(C.ferry_device_array_is_released((*C.struct_ArrowDeviceArray)(p)))
}

// rawNextRelease is one consumer step written as bare cgo calls (get_next,
// then release), the floor of DeviceArrayStream.Next.
func rawNextRelease(stream, batch unsafe.Pointer) int {
	rc := C.ferry_array_stream_get_next((*C.struct_ArrowDeviceArrayStream)(stream), (*C.struct_ArrowDeviceArray)(batch), nil)
	C.ferry_device_array_release((*C.struct_ArrowDeviceArray)(batch))
	return int(rc)
}

// rawGoToC is a Go -> C handoff written as bare cgo calls against the core
// (malloc a buffer, ferry_array_init with free as the release hook,
// ferry_device_array_init into the consumer's struct, the C consumer): the
// floor of ExportArrayNoSchema + ExportTo.
func rawGoToC(tmp, dst unsafe.Pointer, consume func(unsafe.Pointer) int32) int32 {
	buf := C.ferrygo_alloc(64)
	bufs := [2]unsafe.Pointer{nil, buf} // C pointers only
	arr := (*C.struct_ArrowArray)(tmp)
	C.ferry_array_init(arr, 16, 0, 0, 2, &bufs[0], 0, C.FerryReleaseHook(C.ferrygo_free), buf, nil)
	C.ferry_device_array_init((*C.struct_ArrowDeviceArray)(dst), arr, C.ArrowDeviceType(DeviceCPU), -1, nil, nil, nil, nil)
	return consume(dst)
}

// SetRawDeviceArrayCPU marks the ArrowDeviceArray at p as CPU memory
// (device_type CPU, device_id -1, no sync event), for code that filled its
// embedded ArrowArray through the plain C data interface (arrow-go's cdata).
func SetRawDeviceArrayCPU(p unsafe.Pointer) {
	d := (*C.struct_ArrowDeviceArray)(p)
	d.device_type = C.ArrowDeviceType(DeviceCPU)
	d.device_id = -1
	d.sync_event = nil
}
