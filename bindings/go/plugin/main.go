// Command plugin is the Go participant of ferry's cross-language tests: built
// with -buildmode=c-shared into build/plugins/libferry_it_go.so, it exports
// the ferry_it_* entry points of core/include/ferry/ferry_it.h, producing and
// checking every case of cases.md through the Go binding (package ferry).
//
// One Go runtime per process: load this library into C, Java, Rust or Lua
// hosts, never into a Go program.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../ferry/include
#cgo pkg-config: ferry
#include <stddef.h>
#include <stdint.h>
#include "ferry/ferry.h"
void ferry_go_it_set_last_error(const char* message, size_t length);
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
	"github.com/ferryarrow/ferry/bindings/go/internal/itcase"
)

func main() {}

// finish turns an entry point's outcome into its return code, recording the
// message on this thread; a recovered panic becomes EIO.
func finish(err error, r any) C.int {
	if r != nil {
		err = &ferry.Error{Code: syscall.EIO, Message: fmt.Sprintf("panic in the Go plugin: %v", r)}
	}
	if err == nil {
		return 0
	}
	code := syscall.EIO
	msg := err.Error()
	var fe *ferry.Error
	if errors.As(err, &fe) {
		if fe.Code != 0 {
			code = fe.Code
		}
		if fe == err {
			msg = fe.Message
		}
	}
	C.ferry_go_it_set_last_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	return C.int(code)
}

// run is the body of the entry point named entry: EINVAL naming it when one
// of its arguments is NULL (ok false), else f's error, as the return code and
// this thread's last error.
func run(entry string, ok bool, f func() error) C.int {
	if !ok {
		return finish(&ferry.Error{Code: syscall.EINVAL, Message: entry + ": NULL argument"}, nil)
	}
	return finish(f(), nil)
}

// runCase is run with the parsed case of spec handed to f.
func runCase(entry string, spec *C.char, ok bool, f func(c *itcase.Case) error) C.int {
	return run(entry, spec != nil && ok, func() error {
		c, err := itcase.Parse(C.GoString(spec))
		if err != nil {
			return err
		}
		return f(c)
	})
}

// caught is an entry point's return code after recover() returned r: EIO
// for a panic, else rc. Every //export defers it first.
func caught(rc C.int, r any) C.int {
	if r != nil {
		return finish(nil, r)
	}
	return rc
}

// handOver is the outcome of moving an export out to the consumer's struct:
// on failure the export is released here.
func handOver(err error, release func()) error {
	if err != nil {
		release()
	}
	return err
}

//export ferry_it_export_array
func ferry_it_export_array(spec *C.char, schemaOut *C.struct_ArrowSchema, arrayOut *C.struct_ArrowDeviceArray) (rc C.int) {
	defer func() { rc = caught(rc, recover()) }()
	return runCase("ferry_it_export_array", spec, schemaOut != nil && arrayOut != nil, func(c *itcase.Case) error {
		a, err := itcase.Export(c)
		if err != nil {
			return err
		}
		return handOver(a.ExportTo(unsafe.Pointer(arrayOut), unsafe.Pointer(schemaOut)), a.Release)
	})
}

// releaseLeftovers releases what a consumer entry point was handed and did
// not import (its ownership was taken either way). The fields are read in
// Go: after an import both structs are released, and a cgo call per struct
// would cost more than the check.
func releaseLeftovers(schema *C.struct_ArrowSchema, array *C.struct_ArrowDeviceArray) {
	if schema != nil && (*abi.ArrowSchema)(unsafe.Pointer(schema)).Release != nil {
		C.ferry_schema_release(schema)
	}
	if array != nil && (*abi.ArrowDeviceArray)(unsafe.Pointer(array)).Array.Release != nil {
		C.ferry_device_array_release(array)
	}
}

// releaseLeftoverStream releases a stream a consumer entry point was handed
// and did not import.
func releaseLeftoverStream(stream *C.struct_ArrowDeviceArrayStream) {
	if stream != nil && (*abi.ArrowDeviceArrayStream)(unsafe.Pointer(stream)).Release != nil {
		C.ferry_array_stream_release(stream)
	}
}

//export ferry_it_check_array
func ferry_it_check_array(spec *C.char, schema *C.struct_ArrowSchema, array *C.struct_ArrowDeviceArray) (rc C.int) {
	defer func() {
		rc = caught(rc, recover())
		releaseLeftovers(schema, array) // ownership was taken: nothing stays live
	}()
	return runCase("ferry_it_check_array", spec, schema != nil && array != nil, func(c *itcase.Case) error {
		a, err := ferry.ImportDeviceArray(unsafe.Pointer(array), unsafe.Pointer(schema))
		if err != nil {
			return err
		}
		return itcase.Check(c, a)
	})
}

//export ferry_it_export_stream
func ferry_it_export_stream(spec *C.char, out *C.struct_ArrowDeviceArrayStream) (rc C.int) {
	defer func() { rc = caught(rc, recover()) }()
	return runCase("ferry_it_export_stream", spec, out != nil, func(c *itcase.Case) error {
		s, err := itcase.ExportStream(c)
		if err != nil {
			return err
		}
		return handOver(s.ExportTo(unsafe.Pointer(out)), s.Release)
	})
}

//export ferry_it_check_stream
func ferry_it_check_stream(spec *C.char, stream *C.struct_ArrowDeviceArrayStream) (rc C.int) {
	defer func() {
		rc = caught(rc, recover())
		releaseLeftoverStream(stream) // ownership was taken
	}()
	return runCase("ferry_it_check_stream", spec, stream != nil, func(c *itcase.Case) error {
		s, err := ferry.ImportStream(unsafe.Pointer(stream))
		if err != nil {
			return err
		}
		return itcase.CheckStream(c, s)
	})
}

//export ferry_it_live_allocations
func ferry_it_live_allocations() (n C.int64_t) {
	defer func() {
		if r := recover(); r != nil {
			n = -1
		}
	}()
	return C.int64_t(ferry.LiveAllocations())
}
