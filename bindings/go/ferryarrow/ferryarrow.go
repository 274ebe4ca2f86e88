// Package ferryarrow converts between ferry's device arrays (CPU memory)
// and github.com/apache/arrow-go's arrays and records, through the Arrow C
// data interface and arrow-go's cdata package. It is a separate module so
// that the ferry package itself depends on nothing but libferry.
//
// Both directions are zero-copy for the buffers:
//   - ToArrow moves a ferry DeviceArray into arrow-go (cdata.ImportCArray);
//     arrow-go then owns it and calls the producer's release when the
//     arrow.Array is released.
//   - FromArrow exports an arrow.Array (cdata.ExportArrowArray) and hands it
//     to ferry as a CPU DeviceArray; releasing the DeviceArray releases
//     arrow-go's reference.
package ferryarrow

import (
	"fmt"
	"syscall"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// ToArrow moves a CPU DeviceArray with its schema into an arrow.Array; a
// is released (moved) on success and left untouched on failure. The caller
// releases the result (arr.Release()).
func ToArrow(a *ferry.DeviceArray) (arrow.Array, error) {
	if a.IsReleased() || a.Schema() == nil {
		return nil, &ferry.Error{Code: syscall.EINVAL, Message: "ToArrow: released array or no schema"}
	}
	if a.DeviceType() != ferry.DeviceCPU {
		return nil, &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf("ToArrow: arrow-go reads CPU memory, the array is on %s", a.DeviceType())}
	}
	if err := a.Wait(nil); err != nil {
		return nil, err
	}
	rawArray, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(rawArray)
	defer ferry.FreeRawSchema(rawSchema)
	if err := a.ExportTo(rawArray, rawSchema); err != nil {
		return nil, err
	}
	// The ArrowArray is the first member of ArrowDeviceArray (the
	// specification's layout), so the device struct's address is the
	// array's.
	field, err := cdata.ImportCArrowField((*cdata.CArrowSchema)(rawSchema))
	if err != nil {
		return nil, err
	}
	arr, err := cdata.ImportCArrayWithType((*cdata.CArrowArray)(rawArray), field.Type)
	if err != nil {
		return nil, err
	}
	return arr, nil
}

// ToRecord moves a CPU DeviceArray of struct type into an arrow.Record.
func ToRecord(a *ferry.DeviceArray) (arrow.RecordBatch, error) {
	arr, err := ToArrow(a)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	st, ok := arr.(*array.Struct)
	if !ok {
		return nil, &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf("ToRecord: a %s array is not a struct", arr.DataType())}
	}
	return array.RecordFromStructArray(st, nil), nil
}

// FromArrow exports arr (which keeps its own reference alive until the
// consumer releases the result) as an owned CPU DeviceArray with its schema.
func FromArrow(arr arrow.Array) (*ferry.DeviceArray, error) {
	rawArray, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(rawArray)
	defer ferry.FreeRawSchema(rawSchema)
	// Export the ArrowArray into the first member of the device struct, then
	// set the device fields: CPU, device_id -1, no event, reserved zero (the
	// struct came zeroed from the core).
	cdata.ExportArrowArray(arr, (*cdata.CArrowArray)(rawArray), (*cdata.CArrowSchema)(rawSchema))
	setCPU(rawArray)
	return ferry.ImportDeviceArray(rawArray, rawSchema)
}

// FromRecord exports a record as a struct DeviceArray.
func FromRecord(rec arrow.RecordBatch) (*ferry.DeviceArray, error) {
	rawArray, rawSchema := ferry.NewRawDeviceArray(), ferry.NewRawSchema()
	defer ferry.FreeRawDeviceArray(rawArray)
	defer ferry.FreeRawSchema(rawSchema)
	cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(rawArray), (*cdata.CArrowSchema)(rawSchema))
	setCPU(rawArray)
	return ferry.ImportDeviceArray(rawArray, rawSchema)
}

func setCPU(rawDeviceArray unsafe.Pointer) {
	ferry.SetRawDeviceArrayCPU(rawDeviceArray)
}
