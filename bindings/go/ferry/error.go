package ferry

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// Error is a failure reported by the core or by a producer: an errno code and
// the message that came with it. errors.Is(err, syscall.EINVAL) works, since
// Error unwraps to its Code.
type Error struct {
	Code    syscall.Errno
	Message string
}

func (e *Error) Error() string {
	name := C.GoString(C.ferry_errno_name(C.int(e.Code)))
	if e.Message == "" {
		return "ferry: " + name
	}
	return "ferry: " + name + ": " + e.Message
}

// Unwrap returns the errno code, so errors.Is compares codes.
func (e *Error) Unwrap() error { return e.Code }

// errorBuffers recycles FerryError message buffers (1 KB each) for calls off
// the hot path; they live on the Go heap and hold no pointers, so passing them
// to C follows the cgo rules.
var errorBuffers = sync.Pool{New: func() any { return new(C.struct_FerryError) }}

func getErrorBuffer() *C.struct_FerryError {
	e := errorBuffers.Get().(*C.struct_FerryError)
	e.message[0] = 0
	return e
}

func putErrorBuffer(e *C.struct_FerryError) { errorBuffers.Put(e) }

// codeError turns a return code and its message buffer into an error (nil for
// FERRY_OK).
func codeError(rc C.int, e *C.struct_FerryError) error {
	if rc == 0 {
		return nil
	}
	msg := ""
	if e != nil {
		msg = C.GoString(&e.message[0])
	}
	return &Error{Code: syscall.Errno(rc), Message: msg}
}

// call runs f with a message buffer and converts its result.
func call(f func(e *C.struct_FerryError) C.int) error {
	e := getErrorBuffer()
	err := codeError(f(e), e)
	putErrorBuffer(e)
	return err
}

// err turns a failed outcome of a one-call helper into an *Error, freeing
// its message.
func outcomeError(o *C.struct_ferrygo_outcome) *Error {
	msg := C.ferrygo_outcome_message(o.message)
	e := &Error{Code: syscall.Errno(o.rc), Message: C.GoString(msg)}
	C.free(unsafe.Pointer(msg))
	return e
}

// errorf builds an *Error from Go.
func errorf(code syscall.Errno, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// fillCError reports err through a callback's out parameters: the code to
// return, with the message copied into e (C memory owned by ferry).
func fillCError(err error, e *C.struct_FerryError) C.int {
	code := syscall.EIO
	var fe *Error
	msg := err.Error()
	if errors.As(err, &fe) {
		code, msg = fe.Code, fe.Message
	} else if errno, ok := err.(syscall.Errno); ok {
		code = errno
	}
	if code == 0 {
		code = syscall.EIO
	}
	setCError(e, msg)
	return C.int(code)
}

func setCError(e *C.struct_FerryError, msg string) {
	if e == nil {
		return
	}
	if msg == "" {
		e.message[0] = 0
		return
	}
	C.ferrygo_set_error(e, (*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.int64_t(len(msg)))
}

// recovered converts a recovered panic value into an errno code and message
// (EIO): no panic may unwind through the C frames between ferry and Go.
func recovered(r any, e *C.struct_FerryError, where string) C.int {
	setCError(e, fmt.Sprintf("panic in Go %s: %v", where, r))
	return C.int(syscall.EIO)
}

// Version returns the version string of the loaded libferry.
func Version() string { return C.GoString(C.ferry_version()) }

// CheckABI returns nil when the loaded libferry can serve these bindings
// (generated for ABIVersion), else an EINVAL error naming both versions.
func CheckABI() error {
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_check_abi_version(C.int32_t(ABIVersion), e) })
}

// codeOf is err's errno (EIO for an error that carries none).
func codeOf(err error) syscall.Errno {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	var no syscall.Errno
	if errors.As(err, &no) {
		return no
	}
	return syscall.EIO
}

// messageOf is err's message without the "ferry: CODE: " prefix.
func messageOf(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}
