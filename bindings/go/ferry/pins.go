package ferry

/*
#cgo noescape ferrygo_take_deferred
#cgo nocallback ferrygo_take_deferred
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// The Go state of exported nodes, and the deferred release of the nodes
// whose state only pins Go memory (PinSlice).
//
// A release that calls back into Go costs a C -> Go transition on the
// consumer's thread (on a thread Go has not seen, also the binding of an M):
// more than the rest of the export. Unpinning needs Go, but nothing needs it
// at the instant of the release: the consumer is done with the memory, and
// an object pinned a little longer is only kept a little longer. So a
// pins-only node's release stays in C: it queues the node's handle
// (FERRYGO_HANDLE_DEFERRED, shim.h), and Go takes the queue and unpins at
// the next export, at LiveAllocations, and after each garbage collection
// while pinned states are outstanding. A state with a foreign release
// callback or OnRelease is given back at the release itself, as documented.

// deferredHandle is the bit of FERRYGO_HANDLE_DEFERRED (the top bit).
const deferredHandle = ^(^uintptr(0) >> 1)

// exportState is the Go side of one exported node: pins and foreign
// callbacks, reached from C through a handle and given back at release.
type exportState struct {
	pinner   runtime.Pinner
	releases []func()
}

func (s *exportState) giveBack() {
	s.pinner.Unpin()
	for _, f := range s.releases {
		f()
	}
}

// handle stores s in the handle table: deferred when s only pins.
func (s *exportState) handle() uintptr {
	if len(s.releases) != 0 {
		return handles.put(s)
	}
	pinStates.Add(1)
	watchPins()
	return handles.put(s) | deferredHandle
}

// spareState keeps one given-back pins-only state (its Pinner keeps its
// reference store), so an export loop allocates no state.
var spareState atomic.Pointer[exportState]

// newPinState returns an empty state, after giving back the states of the
// nodes released since the last call (so an object exported again right
// after its release is pinned afresh, the runtime's cheapest pin).
func newPinState() *exportState {
	drainDeferred(false)
	if s := spareState.Swap(nil); s != nil {
		return s
	}
	return &exportState{}
}

// pinStates counts pins-only states not given back yet; pinWatch says a
// collection sentinel is pending.
var (
	pinStates atomic.Int64
	pinWatch  atomic.Bool
)

// deferredCount is the C counter of queued handles (ferrygo_deferred_count).
var deferredCount = (*int64)(unsafe.Pointer(&C.ferrygo_deferred_count))

// drainDeferred gives back the states of released pins-only nodes; with
// always, it asks C even when the counter says the queue is empty (a
// release racing with the count).
func drainDeferred(always bool) {
	for always || atomic.LoadInt64(deferredCount) > 0 {
		var taken [64]C.uintptr_t
		n := int(C.ferrygo_take_deferred(&taken[0], C.int64_t(len(taken))))
		for _, h := range taken[:n] {
			releaseDeferred(uintptr(h))
		}
		if n < len(taken) {
			return
		}
	}
}

// releaseDeferred gives back the pins-only state behind h (its bit cleared)
// and keeps it as the spare.
func releaseDeferred(h uintptr) {
	s, ok := handles.take(h).(*exportState)
	if !ok {
		return
	}
	s.giveBack()
	pinStates.Add(-1)
	spareState.Store(s)
}

// watchPins gives back released pins-only states after the next garbage
// collection, and again after each one while any is outstanding, so that
// a program that stops exporting does not keep its last slices pinned.
func watchPins() {
	if pinWatch.Load() || !pinWatch.CompareAndSwap(false, true) {
		return
	}
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		drainDeferred(true)
		pinWatch.Store(false)
		if pinStates.Load() > 0 {
			watchPins()
		}
	}, struct{}{})
}
