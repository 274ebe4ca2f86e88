package ferry

// The //export functions that C calls back into. Each one starts with a
// deferred recover(): a panic must never unwind through ferry's C frames (it
// would kill the process), so it becomes EIO plus a message. This file's
// preamble may only declare (a rule of cgo for files with //export).

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// ferrygoReleaseHandle gives back the Go state behind a handle: the pins and
// foreign callbacks of an exported array node, or a stream producer.
//
//export ferrygoReleaseHandle
func ferrygoReleaseHandle(h C.uintptr_t) {
	defer func() {
		if r := recover(); r != nil {
			// A release hook has no error channel; say it loudly.
			fmt.Fprintf(os.Stderr, "ferry: panic in a Go release hook (recovered): %v\n", r)
		}
	}()
	switch v := handles.take(uintptr(h)).(type) {
	case *exportState:
		v.giveBack()
		if len(v.releases) == 0 { // a pins-only state (deferred) given back at once
			pinStates.Add(-1)
		}
	case *streamProducer:
		if v.stop != nil {
			v.stop()
		}
	}
}

//export ferrygoStreamGetSchema
func ferrygoStreamGetSchema(h C.uintptr_t, out *C.struct_ArrowSchema, e *C.struct_FerryError) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			rc = recovered(r, e, "get_schema")
		}
	}()
	p, ok := handles.get(uintptr(h)).(*streamProducer)
	if !ok {
		setCError(e, "get_schema: unknown Go stream producer")
		return C.int(syscall.EINVAL)
	}
	if err := p.getSchema(out); err != nil {
		return fillCError(err, e)
	}
	return 0
}

// ferrygoStreamGetNext produces one batch. A leaf batch is not exported from
// here: it is described in `batch` (C memory on the trampoline's stack) and
// the trampoline exports it after this returns, which saves the nested
// Go -> C call per batch; the same for an owned DeviceArray, which the
// trampoline moves into out and frees.
//
//export ferrygoStreamGetNext
func ferrygoStreamGetNext(h C.uintptr_t, out *C.struct_ArrowDeviceArray, batch *C.struct_ferrygo_batch, e *C.struct_FerryError) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			rc = recovered(r, e, "get_next")
		}
	}()
	for _, t := range batch.taken[:batch.n_taken] {
		releaseDeferred(uintptr(t))
	}
	p, ok := handles.get(uintptr(h)).(*streamProducer)
	if !ok {
		setCError(e, "get_next: unknown Go stream producer")
		return C.int(syscall.EINVAL)
	}
	if p.data != nil {
		d, err := p.data()
		if err != nil {
			d.Free()
			return fillCError(err, e)
		}
		if d == nil {
			return 0 // end of stream
		}
		if describeLeaf(batch, d, p.opts) {
			return 0
		}
		if err := ExportArrayTo(d, p.opts, unsafe.Pointer(out)); err != nil {
			return fillCError(err, e)
		}
		return 0
	}
	a, err := p.next()
	if err != nil {
		a.Release()
		return fillCError(err, e)
	}
	if a == nil {
		return 0 // end of stream: out stays released
	}
	if a.IsReleased() {
		setCError(e, "get_next: the Go producer returned a released array")
		return C.int(syscall.EINVAL)
	}
	if a.batchOf != nil {
		// A batch of another stream: moved out, the struct stays that stream's.
		C.ferry_device_array_move(a.c, out)
		return 0
	}
	c := a.handOver()
	batch.kind = C.FERRYGO_BATCH_MOVE
	batch.src = C.uintptr_t(uintptr(unsafe.Pointer(c)))
	return 0
}

// ferrygoFinding collects one validation finding into the *[]Finding
// behind the handle (see Findings).
//
//export ferrygoFinding
func ferrygoFinding(h C.uintptr_t, rule, where, what *C.char) {
	defer func() { _ = recover() }() // a finding cannot fail the validation
	if list, ok := handles.get(uintptr(h)).(*[]Finding); ok {
		*list = append(*list, Finding{Rule: C.GoString(rule), Where: C.GoString(where), What: C.GoString(what)})
	}
}
