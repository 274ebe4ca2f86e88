package ferry

import (
	"fmt"
	"os"
	"sync/atomic"
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
