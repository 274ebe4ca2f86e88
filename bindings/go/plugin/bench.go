package main

// The benchmark entry points of core/harness/ferry_it_bench.h, written
// the way a Go user of package ferry writes them: a cached Go slice exported
// in place with PinSlice (pinned until the consumer releases the array, the
// release unpins it: it only drops a reference), ExportArray (schema
// attached) and ExportTo into the consumer's structs, as the README's first
// producer example; ExportDataStream with a func for a stream; the everyday consumer path of the README to consume
// (ImportDeviceArray or ImportStream with Next, Host, the checked Value).
// Every //export recovers panics, as the plugin's other entry points do.

/*
#cgo CFLAGS: -I${SRCDIR}/../ferry/include
#cgo pkg-config: ferry
#include <stdint.h>
#include "ferry/ferry.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// benchMaxLength is the largest length accepted: 1 GiB of int32.
const benchMaxLength = 1 << 28

type benchBuffer struct {
	length int64
	values []int32
}

// benchCache holds the buffers made so far; it is replaced, never mutated,
// so lookups are one atomic load.
var (
	benchCache  atomic.Pointer[[]benchBuffer]
	benchInsert sync.Mutex
)

var benchField = ferry.Field{Format: "i", Name: "values"}

func findBenchBuffer(length int64) []int32 {
	if list := benchCache.Load(); list != nil {
		for i := range *list {
			if (*list)[i].length == length {
				return (*list)[i].values
			}
		}
	}
	return nil
}

// cachedValues returns the slice of length values (each holding length),
// made on first use.
func cachedValues(length int64) ([]int32, error) {
	if values := findBenchBuffer(length); values != nil {
		return values, nil
	}
	if length < 0 || length > benchMaxLength {
		return nil, &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf("length %d is outside 0..%d", length, benchMaxLength)}
	}
	benchInsert.Lock()
	defer benchInsert.Unlock()
	if values := findBenchBuffer(length); values != nil {
		return values, nil
	}
	values := make([]int32, max(length, 1))[:length]
	if length > 0 {
		values[0] = int32(length)
	}
	var list []benchBuffer
	if old := benchCache.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, benchBuffer{length: length, values: values})
	benchCache.Store(&list)
	return values, nil
}

func benchData(length int64, values []int32) *ferry.ArrayData {
	return &ferry.ArrayData{Format: benchField.Format, Name: benchField.Name, Length: length,
		Buffers: []ferry.Buffer{{}, ferry.PinSlice(values)}}
}

// readFirst reads element 0 of a consumed array the everyday way (Host,
// then the checked Value) and checks that it holds the length.
func readFirst(a *ferry.DeviceArray) error {
	h, err := a.Host()
	if err != nil || h.Len() == 0 {
		return err
	}
	first, err := ferry.Value[int32](h, 0)
	if err != nil {
		return err
	}
	if first != int32(h.Len()) {
		return &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf("element 0 is %d, expected the length %d", first, h.Len())}
	}
	return nil
}

//export ferry_it_bench_noop
func ferry_it_bench_noop(x C.int64_t) (y C.int64_t) {
	defer func() {
		if r := recover(); r != nil {
			y = -1 << 63
		}
	}()
	return x + 1
}

//export ferry_it_bench_export_array
func ferry_it_bench_export_array(length C.int64_t, schemaOut *C.struct_ArrowSchema, arrayOut *C.struct_ArrowDeviceArray) (rc C.int) {
	defer func() { rc = caught(rc, recover()) }()
	return run("ferry_it_bench_export_array", schemaOut != nil && arrayOut != nil, func() error {
		values, err := cachedValues(int64(length))
		if err != nil {
			return err
		}
		a, err := ferry.ExportArray(benchData(int64(length), values), nil)
		if err != nil {
			return err
		}
		return handOver(a.ExportTo(unsafe.Pointer(arrayOut), unsafe.Pointer(schemaOut)), a.Release)
	})
}

//export ferry_it_bench_consume_array
func ferry_it_bench_consume_array(schema *C.struct_ArrowSchema, array *C.struct_ArrowDeviceArray) (rc C.int) {
	defer func() {
		rc = caught(rc, recover())
		releaseLeftovers(schema, array) // ownership was taken
	}()
	return run("ferry_it_bench_consume_array", schema != nil && array != nil, func() error {
		a, err := ferry.ImportDeviceArray(unsafe.Pointer(array), unsafe.Pointer(schema))
		if err != nil {
			return err
		}
		defer a.Release()
		return readFirst(a)
	})
}

//export ferry_it_bench_export_stream
func ferry_it_bench_export_stream(length, batches C.int64_t, out *C.struct_ArrowDeviceArrayStream) (rc C.int) {
	defer func() { rc = caught(rc, recover()) }()
	return run("ferry_it_bench_export_stream", out != nil, func() error {
		return benchExportStream(int64(length), int64(batches), unsafe.Pointer(out))
	})
}

func benchExportStream(length, batches int64, out unsafe.Pointer) error {
	if batches < 0 {
		return &ferry.Error{Code: syscall.EINVAL, Message: fmt.Sprintf("batches %d is negative", batches)}
	}
	values, err := cachedValues(length)
	if err != nil {
		return err
	}
	remaining := batches
	s, err := ferry.ExportDataStream(benchField, ferry.DeviceCPU, nil, func() (*ferry.ArrayData, error) {
		if remaining == 0 {
			return nil, nil
		}
		remaining--
		return benchData(length, values), nil
	})
	if err != nil {
		return err
	}
	return handOver(s.ExportTo(out), s.Release)
}

//export ferry_it_bench_consume_stream
func ferry_it_bench_consume_stream(stream *C.struct_ArrowDeviceArrayStream) (rc C.int) {
	defer func() {
		rc = caught(rc, recover())
		releaseLeftoverStream(stream) // ownership was taken
	}()
	return run("ferry_it_bench_consume_stream", stream != nil, func() error {
		s, err := ferry.ImportStream(unsafe.Pointer(stream))
		if err != nil {
			return err
		}
		defer s.Release()
		for s.Next() {
			if err := readFirst(s.Batch()); err != nil {
				return err
			}
		}
		return s.Err()
	})
}
