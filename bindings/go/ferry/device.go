package ferry

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// String returns the device type's lower-case name ("cpu", "cuda", "ext_dev").
func (t DeviceType) String() string {
	return C.GoString(C.ferry_device_type_name(C.ArrowDeviceType(t)))
}

// DeviceSim is the device type of ferry's simulated device.
const DeviceSim = DeviceExtDev

// ParseDeviceType parses a device type name ("cpu", "sim", "cuda", ...).
func ParseDeviceType(name string) (DeviceType, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var t C.ArrowDeviceType
	err := call(func(e *C.struct_FerryError) C.int { return C.ferry_device_type_from_name(cs, &t, e) })
	return DeviceType(t), err
}

// Device is a device of ferry's registry; it lives as long as the process.
type Device struct{ c *C.struct_FerryDevice }

// ResolveDevice finds the device (deviceType, deviceID), loading its backend
// on first use; the CPU is (DeviceCPU, -1). ENODEV/ENOTSUP with the reason
// when the device is not available.
func ResolveDevice(deviceType DeviceType, deviceID int64) (*Device, error) {
	var d *C.struct_FerryDevice
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_device_resolve(C.ArrowDeviceType(deviceType), C.int64_t(deviceID), &d, e)
	})
	if err != nil {
		return nil, err
	}
	return &Device{c: d}, nil
}

func (d *Device) Type() DeviceType { return DeviceType(C.ferry_device_type(d.c)) }
func (d *Device) ID() int64        { return int64(C.ferry_device_id(d.c)) }

// HostAccessible reports whether the host may read this device's memory
// directly (after waiting on the producer's event).
func (d *Device) HostAccessible() bool { return C.ferry_device_is_host_accessible(d.c) != 0 }

// LiveAllocations counts allocations on this device not freed yet (all
// runtimes of the process together).
func (d *Device) LiveAllocations() int64 { return int64(C.ferry_device_live_allocations(d.c)) }

// callOut runs a core call that returns a pointer through its out
// parameter (a handle or memory the caller then owns): that pointer and
// the call's error.
func callOut(f func(out *unsafe.Pointer, e *C.struct_FerryError) C.int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := call(func(e *C.struct_FerryError) C.int { return f(&p, e) })
	return p, err
}

// Allocate allocates raw device memory that the caller frees with
// Deallocate. For buffers of an export use AllocBuffer.
func (d *Device) Allocate(size int64) (unsafe.Pointer, error) {
	return callOut(func(p *unsafe.Pointer, e *C.struct_FerryError) C.int {
		return C.ferry_device_allocate(d.c, C.int64_t(size), p, e)
	})
}

// Deallocate frees memory from Allocate.
func (d *Device) Deallocate(p unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_deallocate(d.c, p, e) })
}

// AllocBuffer allocates size bytes on the device for an export: the export
// that takes the buffer deallocates it when the consumer releases the array.
func (d *Device) AllocBuffer(size int64) (Buffer, error) {
	p, err := callOut(func(p *unsafe.Pointer, e *C.struct_FerryError) C.int {
		return C.ferrygo_device_allocate(d.c, C.int64_t(size), p, e)
	})
	if err != nil {
		return Buffer{}, err
	}
	return Buffer{ptr: p, size: size, kind: bufDevice, device: d.c}, nil
}

// Memcpy copies size bytes from (srcDev, src) to (dstDev, dst); with stream
// nil the copy is complete on return, else it is ordered on that stream.
// Host memory passed here must not be Go memory unless stream is nil.
func Memcpy(dstDev *Device, dst unsafe.Pointer, srcDev *Device, src unsafe.Pointer, size int64, stream unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int {
		return C.ferry_device_memcpy(dstDev.c, dst, srcDev.c, src, C.int64_t(size), stream, e)
	})
}

// StreamCreate creates a device stream owned by the caller (StreamDestroy).
func (d *Device) StreamCreate() (unsafe.Pointer, error) {
	return callOut(func(s *unsafe.Pointer, e *C.struct_FerryError) C.int {
		return C.ferry_device_stream_create(d.c, s, e)
	})
}

func (d *Device) StreamDestroy(s unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_stream_destroy(d.c, s, e) })
}

// StreamSynchronize blocks until the work queued on s is done.
func (d *Device) StreamSynchronize(s unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_stream_synchronize(d.c, s, e) })
}

// EventCreate creates an event (a pointer to the native handle) owned by the
// caller (EventDestroy).
func (d *Device) EventCreate() (unsafe.Pointer, error) {
	return callOut(func(ev *unsafe.Pointer, e *C.struct_FerryError) C.int {
		return C.ferry_device_event_create(d.c, ev, e)
	})
}

func (d *Device) EventDestroy(ev unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_event_destroy(d.c, ev, e) })
}

// EventRecord records ev at the current end of stream s.
func (d *Device) EventRecord(ev, s unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_event_record(d.c, ev, s, e) })
}

// EventSynchronize blocks the host until ev has completed.
func (d *Device) EventSynchronize(ev unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_event_synchronize(d.c, ev, e) })
}

// StreamWaitEvent makes stream s wait for ev without blocking the host.
func (d *Device) StreamWaitEvent(s, ev unsafe.Pointer) error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_stream_wait_event(d.c, s, ev, e) })
}

// SimSetStrict turns the sim device's strict mode on or off (process-wide).
func SimSetStrict(strict bool) {
	v := C.int32_t(0)
	if strict {
		v = 1
	}
	C.ferry_sim_set_strict(v)
}

// SimIsStrict reports whether the sim device is in strict mode.
func SimIsStrict() bool { return C.ferry_sim_is_strict() != 0 }

// Backends lists the device backends compiled into the core, with nil or the
// reason each one cannot be used now.
func Backends() map[string]error {
	out := map[string]error{}
	n := int64(C.ferry_backend_count())
	for i := int64(0); i < n; i++ {
		name := C.GoString(C.ferry_backend_name(C.int64_t(i)))
		out[name] = call(func(e *C.struct_FerryError) C.int { return C.ferry_backend_probe(C.int64_t(i), e) })
	}
	return out
}
