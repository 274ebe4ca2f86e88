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
	"sync"
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
// while pinned states are outstanding. The last states given back stay
// pinned as spares for the next exports of the same memory (spareStates). A state with a foreign release
// callback or OnRelease is given back at the release itself, as documented.

// deferredHandle is the bit of FERRYGO_HANDLE_DEFERRED (the top bit).
const deferredHandle = ^(^uintptr(0) >> 1)

// exportState is the Go side of one exported node: pins and foreign
// callbacks, reached from C through a handle and given back at release.
type exportState struct {
	pinner runtime.Pinner
	pins   []unsafe.Pointer // what pinner holds
	// key is pins as they were made, never written again: a spare is
	// matched by it, so that pinState may compare a spare another
	// goroutine is unpinning at that moment (it then fails to take it)
	// without a data race on pins.
	key      []unsafe.Pointer
	releases []func()
	after    func() // ArrayData.AfterRelease: run when Go takes the state back
}

func (s *exportState) giveBack() {
	s.unpin()
	for _, f := range s.releases {
		f()
	}
	s.runAfter()
}

// runAfter runs the node's AfterRelease once; the state then only pins.
func (s *exportState) runAfter() {
	if f := s.after; f != nil {
		s.after = nil
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

// smallList gathers the entries of one node (the Go addresses it pins, its
// buffers, what it owns): up to 8 inline, so a typical node allocates
// nothing, the rest in an overflow slice that then holds them all.
type smallList[T any] struct {
	n        int
	inline   [8]T
	overflow []T
}

func (l *smallList[T]) add(v T) {
	if l.n < len(l.inline) && l.overflow == nil {
		l.inline[l.n] = v
	} else {
		if l.overflow == nil {
			l.overflow = append([]T(nil), l.inline[:]...)
		}
		l.overflow = append(l.overflow, v)
	}
	l.n++
}

func (l *smallList[T]) list() []T {
	if l.overflow != nil {
		return l.overflow
	}
	return l.inline[:l.n]
}

// first is the address of the first entry for a C call (nil when empty).
func (l *smallList[T]) first() *T {
	if l.n == 0 {
		return nil
	}
	return &l.list()[0]
}

// spareStates keep the states of the last pins-only nodes given back, still
// pinned: a producer that exports the same Go memory again (a cached
// column, every batch of a stream over one slice, a few buffers in turn)
// reuses one without touching the runtime's pin bits, which take a lock per
// object. A spare is unpinned when a newer one takes its slot, or after the
// next collection.
var (
	spareStates [4]atomic.Pointer[exportState]
	spareNext   atomic.Uint32
)

// pinState returns a state holding exactly the pins in l (nothing else).
func pinState(l *smallList[unsafe.Pointer]) *exportState {
	want := l.list()
	for i := range spareStates {
		if s := spareStates[i].Load(); s != nil && slices.Equal(s.key, want) && spareStates[i].CompareAndSwap(s, nil) {
			return s
		}
	}
	s := &exportState{}
	for _, p := range want {
		s.pinner.Pin(p)
	}
	s.pins = append(s.pins, want...)
	s.key = s.pins
	return s
}

// keepSpare makes s, a pins-only state given back, a spare: in a free slot,
// else in the next slot round the ring, unpinning the spare it replaces.
func keepSpare(s *exportState) {
	for i := range spareStates {
		if spareStates[i].CompareAndSwap(nil, s) {
			return
		}
	}
	if old := spareStates[spareNext.Add(1)%uint32(len(spareStates))].Swap(s); old != nil {
		old.unpin()
	}
}

// dropSpares unpins every spare.
func dropSpares() {
	for i := range spareStates {
		if s := spareStates[i].Swap(nil); s != nil {
			s.unpin()
		}
	}
}

// pinStates counts pins-only states not given back yet; pinWatch says a
// collection sentinel is pending.
var (
	pinStates atomic.Int64
	pinWatch  atomic.Bool
)

// deferredCount is the C counter of queued handles (ferrygo_deferred_count).
var deferredCount = (*int64)(unsafe.Pointer(&C.ferrygo_deferred_count))

// drainMu makes one drain at a time, so that a drain with always returns
// only once every state taken so far has run its AfterRelease: the
// collection sentinel's drain (on the cleanup goroutine) may have taken a
// state that LiveAllocations, on the test's goroutine, would otherwise count
// as still live.
var drainMu sync.Mutex

// drainDeferred gives back the states of released pins-only nodes; with
// always, it asks C even when the counter says the queue is empty (a
// release racing with the count) and waits for a drain under way; without,
// it leaves the queue to a drain under way (an export need not wait).
func drainDeferred(always bool) {
	if !always {
		if atomic.LoadInt64(deferredCount) == 0 || !drainMu.TryLock() {
			return
		}
	} else {
		drainMu.Lock()
	}
	defer drainMu.Unlock()
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
// as a spare.
func releaseDeferred(h uintptr) {
	s, ok := handles.take(h).(*exportState)
	if !ok {
		return
	}
	pinStates.Add(-1)
	s.runAfter()
	keepSpare(s)
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
		dropSpares()
		pinWatch.Store(false)
		if pinStates.Load() > 0 {
			watchPins()
		}
	}, struct{}{})
}

// ReleaseDeferred gives back now what consumers have released since Go last
// looked: it unpins the Go memory of those exports and runs their
// ArrayData.AfterRelease (ferryarrow's exports let go of arrow-go's data
// there). Otherwise that happens at the next export, after the next garbage
// collection, or at LiveAllocations; call it before checking an arrow-go
// allocator's balance, or to free C memory promptly.
func ReleaseDeferred() {
	drainDeferred(true)
}
