package ferry

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"
)

var (
	leaks    atomic.Int64
	leakHook atomic.Pointer[func(what string)]
)

// SetLeakHook installs f to be told about every owned object (DeviceArray,
// DeviceArrayStream, Schema) that became unreachable without Release; nil
// restores the default, a line on stderr. The cleanup that reports the leak
// also releases the object: the hook is a diagnostic, not the mechanism.
func SetLeakHook(f func(what string)) {
	if f == nil {
		leakHook.Store(nil)
		return
	}
	leakHook.Store(&f)
}

// Leaks returns how many owned objects were released by the garbage
// collector's cleanup instead of by Release, since the process started.
func Leaks() int64 { return leaks.Load() }

func reportLeak(what string) {
	leaks.Add(1)
	if f := leakHook.Load(); f != nil {
		(*f)(what)
		return
	}
	fmt.Fprintf(os.Stderr, "ferry: a %s was not released; released by its cleanup (call Release)\n", what)
}

// ---- the core's leak report at exit (FERRY_LEAK_REPORT=1) -----------------

// leakReportOn says whether the core keeps its leak report (the variable is
// read once, as the core reads it). Off, tracking costs this one branch.
var leakReportOn = func() bool {
	v := os.Getenv("FERRY_LEAK_REPORT")
	return v != "" && v != "0"
}()

// goRuntime names this binding in the report's lines ("ferry: leak: go: ...").
var goRuntime = C.CString("go") // lives as long as the process

// leakTrack registers an import object still open with the core's report
// (callers test leakReportOn first, so that nothing is built when it is
// off). 0: not tracked.
func leakTrack(description string) int64 {
	d := C.CString(description)
	defer C.free(unsafe.Pointer(d))
	return int64(C.ferry_leak_track(goRuntime, d))
}

// leakUntrack forgets a tracked object (0: nothing to forget).
func leakUntrack(token int64) {
	if token != 0 {
		C.ferry_leak_untrack(C.int64_t(token))
	}
}

// describeArray is a tracked array's line in the report.
func describeArray(how string, schema *C.struct_ArrowSchema, c *C.struct_ArrowDeviceArray) string {
	format := "?"
	if schema != nil && abiSchema(schema).Format != nil {
		format = cString((*C.char)(abiSchema(schema).Format), maxFormat)
	}
	return fmt.Sprintf("DeviceArray from %s never released (format %q, length %d, %s)",
		how, format, abiDeviceArray(c).Array.Length, DeviceType(abiDeviceArray(c).DeviceType))
}

// Exit ends the process with code through the C library's exit, which runs
// libferry's exit handler: with FERRY_LEAK_REPORT=1 that prints the leak
// report (what is still live: imports never released, exports never
// released by their consumer). Go's own os.Exit, and a return from main,
// end the process without running C exit handlers, so a Go program that
// wants the report ends with ferry.Exit. Deferred functions do not run.
func Exit(code int) {
	_ = os.Stdout.Sync()
	_ = os.Stderr.Sync()
	C.exit(C.int(code))
}
