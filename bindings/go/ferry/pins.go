package ferry

/*
#cgo noescape ferrygo_take_deferred
#cgo nocallback ferrygo_take_deferred
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"slices"
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
// the next export (the export's own C call, or the stream trampoline's,
// takes the queue: no extra crossing), at LiveAllocations, and after each
// garbage collection
// while pinned states are outstanding. The last state given back stays
// pinned as a spare for the next export of the same memory (spareState). A state with a foreign release
// callback or OnRelease is given back at the release itself, as documented.

// deferredHandle is the bit of FERRYGO_HANDLE_DEFERRED (the top bit).
const deferredHandle = ^(^uintptr(0) >> 1)

// exportState is the Go side of one exported node: pins and foreign
// callbacks, reached from C through a handle and given back at release.
type exportState struct {
	pinner   runtime.Pinner
	pins     []unsafe.Pointer // what pinner holds
	releases []func()
}

func (s *exportState) giveBack() {
	s.unpin()
	for _, f := range s.releases {
		f()
	}
}

func (s *exportState) unpin() {
	s.pinner.Unpin()
	s.pins = s.pins[:0]
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

// pinList gathers the Go addresses one node pins (inline up to 8).
type pinList struct {
	n        int
	inline   [8]unsafe.Pointer
	overflow []unsafe.Pointer
}

func (l *pinList) add(p unsafe.Pointer) {
	if l.n < len(l.inline) && l.overflow == nil {
		l.inline[l.n] = p
	} else {
		if l.overflow == nil {
			l.overflow = append([]unsafe.Pointer(nil), l.inline[:]...)
		}
		l.overflow = append(l.overflow, p)
	}
	l.n++
}

func (l *pinList) list() []unsafe.Pointer {
	if l.overflow != nil {
		return l.overflow
	}
	return l.inline[:l.n]
}

// spareState is the state of the last pins-only node given back, still
// pinned: a producer that exports the same Go memory again (a cached
// column, every batch of a stream over one slice) reuses it without
// touching the runtime's pin bits, which take a lock per object. It is
// unpinned when an export needs other pins, or after the next collection.
var spareState atomic.Pointer[exportState]

// pinState returns a state holding exactly the pins in l (nothing else).
func pinState(l *pinList) *exportState {
	want := l.list()
	s := spareState.Swap(nil)
	if s != nil && slices.Equal(s.pins, want) {
		return s
	}
	if s == nil {
		s = &exportState{}
	} else {
		s.unpin()
	}
	for _, p := range want {
		s.pinner.Pin(p)
	}
	s.pins = append(s.pins, want...)
	return s
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

// releaseDeferred takes back the pins-only state behind h (its bit cleared)
// as the spare, unpinning the spare it replaces.
func releaseDeferred(h uintptr) {
	s, ok := handles.take(h).(*exportState)
	if !ok {
		return
	}
	pinStates.Add(-1)
	if old := spareState.Swap(s); old != nil {
		old.unpin()
	}
}

// watchPins gives back released pins-only states and unpins the spare after
// the next garbage collection, and again after each one while a pinned
// state is outstanding, so that a program that stops exporting does not
// keep its last slices pinned (nor alive: the states reference them).
func watchPins() {
	if pinWatch.Load() || !pinWatch.CompareAndSwap(false, true) {
		return
	}
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		drainDeferred(true)
		if s := spareState.Swap(nil); s != nil {
			s.unpin()
		}
		pinWatch.Store(false)
		if pinStates.Load() > 0 {
			watchPins()
		}
	}, struct{}{})
}
