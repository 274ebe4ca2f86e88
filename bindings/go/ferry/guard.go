package ferry

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The leak safety net of owned objects (DeviceArray, DeviceArrayStream,
// Schema), registered lazily.
//
// A runtime.AddCleanup per object, stopped again at Release, costs 110-280 ns
// (three allocations plus the span's specials list, searched linearly by
// Stop): more than the export it guards. Most owned objects live for
// microseconds, so a new object starts in a small nursery instead, and gets
// its cleanup only when it outlives the nursery: when newer objects push it
// out, or when a garbage collection finds it still there (a sentinel's
// cleanup empties the nursery after every collection that finds objects in
// it). An object released while in the nursery never registers anything:
// its cost is a mutex-guarded slot store and one compare-and-swap.
//
// Leaks are still reported and released, one collection later than with an
// immediate cleanup: the nursery holds the object until the first
// collection, the cleanup registered then fires at a later one.

// nurserySize bounds the objects kept without a cleanup. Short-lived objects
// are released long before 64 newer ones are made.
const nurserySize = 64

// Guard states.
const (
	guardNew      int32 = iota // in the nursery, no cleanup registered
	guardArmed                 // cleanup registered
	guardReleased              // released (cleanup stopped, if there was one)
	guardArming                // a cleanup is being registered right now
)

// leakGuard is embedded in every owned object.
type leakGuard struct {
	state   atomic.Int32
	queued  atomic.Bool     // in the nursery (a reused DeviceArray is tracked again at each Import)
	cleanup runtime.Cleanup // valid in state guardArmed
}

// guarded is an owned object that can register its cleanup.
type guarded interface {
	guardState() *leakGuard
	// addCleanup registers the cleanup that reports and releases the
	// object; called at most once, never concurrently with its release.
	addCleanup() runtime.Cleanup
}

// guardsArmed counts cleanups registered by the nursery (for tests).
var guardsArmed atomic.Int64

// arm registers o's cleanup unless o was released already.
func arm(o guarded) {
	g := o.guardState()
	if g.state.Load() != guardNew || !g.state.CompareAndSwap(guardNew, guardArming) {
		return
	}
	g.cleanup = o.addCleanup()
	guardsArmed.Add(1)
	g.state.Store(guardArmed)
}

// disarm is the release side: after it returns the cleanup can no longer
// run, and it must be called before the object's C memory is released or
// handed on. It returns false when the object was released already.
func (g *leakGuard) disarm() bool {
	for {
		switch g.state.Load() {
		case guardNew:
			if g.state.CompareAndSwap(guardNew, guardReleased) {
				return true
			}
		case guardArmed:
			if g.state.CompareAndSwap(guardArmed, guardReleased) {
				g.cleanup.Stop()
				return true
			}
		case guardReleased:
			return false
		case guardArming:
			runtime.Gosched() // the other side is inside AddCleanup: brief
		}
	}
}

type nursery struct {
	mu       sync.Mutex
	slots    [nurserySize]guarded
	next     int
	watching bool // a collection sentinel is pending
}

var objects nursery

// track puts a new owned object under the safety net.
func track(o guarded) {
	if o.guardState().queued.Swap(true) {
		return // still in the nursery from an earlier life: watched already
	}
	n := &objects
	n.mu.Lock()
	old := n.slots[n.next]
	n.slots[n.next] = o
	n.next = (n.next + 1) % nurserySize
	if !n.watching {
		n.watching = true
		watchNextCollection()
	}
	n.mu.Unlock()
	if old != nil {
		old.guardState().queued.Store(false)
		arm(old) // pushed out while still unreleased: it gets its cleanup
	}
}

// gcSentinel is an object whose only purpose is to become garbage: its
// cleanup runs after a collection and empties the nursery. (Large enough to
// stay out of the tiny allocator, whose objects may never be collected.)
type gcSentinel struct{ _ [16]byte }

func watchNextCollection() {
	runtime.AddCleanup(new(gcSentinel), func(struct{}) { objects.flush() }, struct{}{})
}

// flush registers the cleanups of everything left in the nursery.
func (n *nursery) flush() {
	n.mu.Lock()
	slots := n.slots
	n.slots = [nurserySize]guarded{}
	n.watching = false
	n.mu.Unlock()
	for _, o := range slots {
		if o != nil {
			o.guardState().queued.Store(false)
			arm(o)
		}
	}
}
