package ferry

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// moveChildOut moves child i of a live array into the released
// ArrowDeviceArray at dst (as a CPU device array) and returns the child's
// last buffer address. Tests use it to show children own their buffers.
func moveChildOut(a *DeviceArray, i int, dst unsafe.Pointer) unsafe.Pointer {
	child := C.ferry_array_child(&a.c.array, C.int64_t(i))
	out := (*C.struct_ArrowDeviceArray)(dst)
	C.ferry_array_move(child, &out.array)
	out.device_type = C.ArrowDeviceType(DeviceCPU)
	out.device_id = -1
	n := C.ferry_array_n_buffers(&out.array)
	return unsafe.Pointer(C.ferry_array_buffer(&out.array, n-1))
}
