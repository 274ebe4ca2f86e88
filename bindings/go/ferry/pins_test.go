package ferry

import (
	"errors"
	"syscall"
	"testing"

	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

// A pins-only node is released in C (no call into Go) and its pin is given
// back by Go later: at the next export, at LiveAllocations, or after a
// collection (pins.go). Each path gives the state back exactly once.

func TestPinnedReleaseIsQueuedAndGivenBackAtTheNextExport(t *testing.T) {
	baseline(t)
	values := []int32{7, 8, 9}
	dst := NewRawDeviceArray()
	defer FreeRawDeviceArray(dst)
	before := pinStates.Load()
	for i := 0; i < 3; i++ {
		if err := ExportArrayTo(&ArrayData{Format: "i", Length: 3, Buffers: []Buffer{{}, PinSlice(values)}}, nil, dst); err != nil {
			t.Fatal(err)
		}
		if got := pinStates.Load(); got != before+1 {
			t.Fatalf("export %d: %d pinned states outstanding, expected %d (the previous one given back)", i, got, before+1)
		}
		if chelper.ConsumeArray(dst) != 7 { // the C consumer releases: queued, not given back
			t.Fatal("element 0")
		}
		if got := pinStates.Load(); got != before+1 {
			t.Fatalf("release %d: the state must wait in the queue, %d outstanding", i, got)
		}
	}
	LiveAllocations()
	if pinStates.Load() != before {
		t.Fatalf("LiveAllocations must give back the queued states: %d outstanding", pinStates.Load()-before)
	}
}

func TestPinnedReleaseIsGivenBackAfterACollection(t *testing.T) {
	baseline(t)
	dst := NewRawDeviceArray()
	defer FreeRawDeviceArray(dst)
	before := pinStates.Load()
	if err := ExportArrayTo(&ArrayData{Format: "i", Length: 2, Buffers: []Buffer{{}, PinSlice([]int32{5, 6})}}, nil, dst); err != nil {
		t.Fatal(err)
	}
	chelper.ConsumeArray(dst)
	// The sentinel's cleanup runs on the cleanup goroutine after a
	// collection: collect until it has run (bounded), reading only the count.
	collectUntil(100, func() bool { return pinStates.Load() == before })
	if got := pinStates.Load(); got != before {
		t.Fatalf("%d pinned states still outstanding after 100 collections", got-before)
	}
}

func TestPinnedExportIntoALiveDestinationGivesThePinBack(t *testing.T) {
	baseline(t)
	dst := NewRawDeviceArray()
	defer FreeRawDeviceArray(dst)
	if err := ExportArrayTo(&ArrayData{Format: "i", Length: 1, Buffers: []Buffer{{}, PinSlice([]int32{1})}}, nil, dst); err != nil {
		t.Fatal(err)
	}
	defer chelper.ConsumeArray(dst)
	err := ExportArrayTo(&ArrayData{Format: "i", Length: 1, Buffers: []Buffer{{}, PinSlice([]int32{2})}}, nil, dst)
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("export into a live ArrowDeviceArray: %v, expected EINVAL", err)
	}
}
