package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
)

// Raw structs in C memory, for handing to C APIs that fill or consume an
// ArrowSchema / ArrowDeviceArray / ArrowDeviceArrayStream by pointer. Each
// New returns a released struct; the matching Free releases it first if it is
// still live, then frees it. (The tests' own C helpers and benchmark floors
// live in internal/chelper: test code is not compiled into this package.)

func NewRawSchema() unsafe.Pointer        { return unsafe.Pointer(C.ferry_schema_new()) }
func FreeRawSchema(p unsafe.Pointer)      { C.ferry_schema_free((*C.struct_ArrowSchema)(p)) }
func NewRawDeviceArray() unsafe.Pointer   { return unsafe.Pointer(C.ferry_device_array_new()) }
func FreeRawDeviceArray(p unsafe.Pointer) { C.ferry_device_array_free((*C.struct_ArrowDeviceArray)(p)) }
func NewRawStream() unsafe.Pointer        { return unsafe.Pointer(C.ferry_array_stream_new()) }

// MaxReadBytes bounds a buffer the binding reads or hands to another Arrow
// library (2^48 bytes, as the core's FULL validation and copy): a larger
// declaration is a made-up length or offset, refused by name.
const MaxReadBytes = int64(1) << 48

// ReleaseRawPair releases the ArrowDeviceArray at array and the ArrowSchema
// at schema (either may be nil; each only when live) in one cgo call; the
// structs stay the caller's, released, for reuse or Free.
func ReleaseRawPair(array, schema unsafe.Pointer) {
	C.ferrygo_release_both(C.uintptr_t(uintptr(array)), C.uintptr_t(uintptr(schema)))
}

func FreeRawStream(p unsafe.Pointer) {
	C.ferry_array_stream_free((*C.struct_ArrowDeviceArrayStream)(p))
}
func RawDeviceArrayIsReleased(p unsafe.Pointer) bool {
	return p == nil || (*abi.ArrowDeviceArray)(p).Array.Release == nil // a Go read: no cgo call
}

// NewRawAsyncHandler is a released struct ArrowAsyncDeviceStreamHandler in
// C memory, for a consumer that fills one (arrow-go's
// cdata.CreateAsyncDeviceStreamHandler); free it with FreeRawAsyncHandler
// once its producer has released it.
func NewRawAsyncHandler() unsafe.Pointer { return unsafe.Pointer(C.ferry_async_handler_new()) }
func FreeRawAsyncHandler(p unsafe.Pointer) {
	C.ferry_async_handler_free((*C.struct_ArrowAsyncDeviceStreamHandler)(p))
}
func RawSchemaIsReleased(p unsafe.Pointer) bool {
	return p == nil || (*abi.ArrowSchema)(p).Release == nil
}
func RawStreamIsReleased(p unsafe.Pointer) bool {
	return p == nil || (*abi.ArrowDeviceArrayStream)(p).Release == nil
}

// SetRawDeviceArrayCPU marks the ArrowDeviceArray at p as CPU memory
// (device_type CPU, device_id -1, no sync event), for code that filled its
// embedded ArrowArray through the plain C data interface (arrow-go's cdata).
func SetRawDeviceArrayCPU(p unsafe.Pointer) {
	d := (*abi.ArrowDeviceArray)(p)
	d.DeviceType, d.DeviceId, d.SyncEvent = int32(DeviceCPU), -1, nil
}
