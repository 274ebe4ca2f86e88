package ferry

import (
	"sync"
	"sync/atomic"
)

// handleTable maps small integers to Go values, so C memory can name Go state
// (a producer, pinned buffers) without holding a Go pointer. It replaces
// runtime/cgo.Handle on the export path: a mutex and a free list are cheaper
// than cgo.Handle's sync.Map (BenchmarkHandle* measures both). Handle 0 is
// never issued, so C can use 0 for "no Go state".
type handleTable struct {
	mu    sync.Mutex
	slots []any
	free  []uintptr
	live  atomic.Int64
}

var handles handleTable

// put stores v and returns its handle.
func (t *handleTable) put(v any) uintptr {
	t.mu.Lock()
	var h uintptr
	if n := len(t.free); n > 0 {
		h = t.free[n-1]
		t.free = t.free[:n-1]
		t.slots[h-1] = v
	} else {
		t.slots = append(t.slots, v)
		h = uintptr(len(t.slots))
	}
	t.mu.Unlock()
	t.live.Add(1)
	return h
}

// get returns the value stored under h, or nil for an unknown handle.
func (t *handleTable) get(h uintptr) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h == 0 || h > uintptr(len(t.slots)) {
		return nil
	}
	return t.slots[h-1]
}

// take removes and returns the value stored under h (nil when unknown, so a
// second release of the same handle is harmless).
func (t *handleTable) take(h uintptr) any {
	t.mu.Lock()
	if h == 0 || h > uintptr(len(t.slots)) || t.slots[h-1] == nil {
		t.mu.Unlock()
		return nil
	}
	v := t.slots[h-1]
	t.slots[h-1] = nil
	t.free = append(t.free, h)
	t.mu.Unlock()
	t.live.Add(-1)
	return v
}
