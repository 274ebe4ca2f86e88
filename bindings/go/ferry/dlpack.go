package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// DLPack interchange: a fixed-width array without nulls becomes a
// one-dimensional DLPack 1.x tensor (DLManagedTensorVersioned, C memory) over
// the same memory, and back. Tensors travel as unsafe.Pointer, because their
// consumers and producers are C APIs (and Python's __dlpack__ through them).

// Bits of a DLPack tensor's flags.
const (
	DLPackFlagReadOnly            = uint64(C.DLPACK_FLAG_BITMASK_READ_ONLY)
	DLPackFlagIsCopied            = uint64(C.DLPACK_FLAG_BITMASK_IS_COPIED)
	DLPackFlagIsSubbyteTypePadded = uint64(C.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)
)

// DLPackCode is DLDataType.code, the element type family.
type DLPackCode uint8

const (
	DLPackInt   = DLPackCode(C.kDLInt)
	DLPackUInt  = DLPackCode(C.kDLUInt)
	DLPackFloat = DLPackCode(C.kDLFloat)
	DLPackBool  = DLPackCode(C.kDLBool)
)

// DLPackTensor is what a DLPack tensor says about itself, read by
// DescribeDLPack.
type DLPackTensor struct {
	Major, Minor uint32         // DLPack ABI version
	Flags        uint64         // DLPackFlag* bits
	Data         unsafe.Pointer // the first element is at Data + ByteOffset
	ByteOffset   uint64
	DeviceType   DeviceType // DLPack's device types are Arrow's
	DeviceID     int32      // 0 for the CPU (Arrow says -1)
	Code         DLPackCode
	Bits         uint8
	Lanes        uint16
	Shape        []int64
	Strides      []int64 // nil when the tensor is compact row-major
}

// ToDLPack exports the array as a one-dimensional DLPack tensor over the same
// memory (integers, floats, dates, times, timestamps and durations without
// nulls; the schema must be attached). DLPack carries no event, so first
// consumerStream (a stream of the array's device) is made to wait on the
// array's sync event, or the host waits when it is nil. The tensor is flagged
// read-only (Arrow data is immutable), never as copied. On success d is
// consumed and the caller owns the tensor: hand it to a DLPack consumer,
// which calls its deleter, or call DeleteDLPack. On failure d is untouched.
func (d *DeviceArray) ToDLPack(consumerStream unsafe.Pointer) (unsafe.Pointer, error) {
	if err := d.acquire("DeviceArray.ToDLPack", false); err != nil {
		return nil, err
	}
	defer d.unlock()
	s := d.schemaView()
	if s == nil {
		return nil, errorf(syscall.EINVAL, "DeviceArray.ToDLPack: no schema attached")
	}
	var tensor *C.DLManagedTensorVersioned
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_device_array_to_dlpack(s.c, d.c, consumerStream, &tensor, e)
	})
	if err != nil {
		return nil, err
	}
	if d.batchOf == nil {
		C.ferry_device_array_free(d.handOver()) // moved into the tensor: only freed
	}
	return unsafe.Pointer(tensor), nil
}

// FromDLPack imports a one-dimensional, contiguous DLPack 1.x tensor of
// integers or floats without copying, as a non-nullable array on the
// tensor's device with no pending work. On success the tensor is moved in
// (its deleter runs exactly once, when the array is released) and the array
// carries its schema, which is also returned (borrowed from the array: it is
// released with it). On failure the caller still owns the tensor and its
// deleter was not called.
func FromDLPack(tensor unsafe.Pointer) (*DeviceArray, *Schema, error) {
	if tensor == nil {
		return nil, nil, errorf(syscall.EINVAL, "FromDLPack: NULL tensor")
	}
	sc, ac := C.ferry_schema_new(), C.ferry_device_array_new()
	if sc == nil || ac == nil {
		C.ferry_schema_free(sc)
		C.ferry_device_array_free(ac)
		return nil, nil, errorf(syscall.ENOMEM, "FromDLPack: out of memory")
	}
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_device_array_from_dlpack((*C.DLManagedTensorVersioned)(tensor), sc, ac, e)
	})
	if err != nil {
		C.ferry_schema_free(sc)
		C.ferry_device_array_free(ac)
		return nil, nil, err
	}
	a := newOwnedDeviceArray(ac, newOwnedSchema(sc))
	return a, a.Schema(), nil
}

// DescribeDLPack reads the fields of the DLPack tensor at tensor (borrowed).
func DescribeDLPack(tensor unsafe.Pointer) (DLPackTensor, error) {
	if tensor == nil {
		return DLPackTensor{}, errorf(syscall.EINVAL, "DescribeDLPack: NULL tensor")
	}
	const maxDims = 8
	var data unsafe.Pointer
	var devType, devID C.int32_t
	var code, bits C.uint8_t
	var lanes C.uint16_t
	var byteOffset, flags C.uint64_t
	var major, minor C.uint32_t
	var shape, strides [maxDims]C.int64_t
	ndim := int(C.ferrygo_dlpack_describe((*C.DLManagedTensorVersioned)(tensor), &data, &devType, &devID,
		&code, &bits, &lanes, &byteOffset, &flags, &major, &minor, &shape[0], &strides[0], maxDims))
	if ndim < 0 || ndim > maxDims {
		return DLPackTensor{}, errorf(syscall.EINVAL, "DescribeDLPack: %d dimensions (at most %d are read)", ndim, maxDims)
	}
	t := DLPackTensor{Major: uint32(major), Minor: uint32(minor), Flags: uint64(flags),
		Data: data, ByteOffset: uint64(byteOffset),
		DeviceType: DeviceType(devType), DeviceID: int32(devID),
		Code: DLPackCode(code), Bits: uint8(bits), Lanes: uint16(lanes), Shape: make([]int64, ndim)}
	hasStrides := false
	for i := 0; i < ndim; i++ {
		t.Shape[i] = int64(shape[i])
		hasStrides = hasStrides || strides[i] != 0
	}
	if hasStrides {
		t.Strides = make([]int64, ndim)
		for i := range t.Strides {
			t.Strides[i] = int64(strides[i])
		}
	}
	return t, nil
}

// DeleteDLPack calls the tensor's deleter: what a DLPack consumer does when
// it is done with a tensor (for a tensor from ToDLPack this releases the
// array). The tensor must not be used afterwards.
func DeleteDLPack(tensor unsafe.Pointer) {
	C.ferrygo_dlpack_delete((*C.DLManagedTensorVersioned)(tensor))
}
