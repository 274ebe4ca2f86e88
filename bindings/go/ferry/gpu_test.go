package ferry_test

// The GPU API on CUDA and ROCm device memory, through the core's driver
// emulations (tests/gpu/emu): bindings/go/test.sh runs these tests with
// FERRY_CUDA_LIBRARY and FERRY_HIP_LIBRARY pointing at them; without those
// variables every test here is skipped, loudly. The emulations' device
// memory is not host-accessible, so each test reaches the values through
// the explicit ways to the host (ToHost, CopyTo). Streams and events "of the
// user's own CUDA library" are made by calling the driver library directly
// (internal/chelper/native.c), not through ferry.

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/internal/chelper"
)

type gpu struct {
	name   string
	typ    ferry.DeviceType
	native chelper.Native
	dev    *ferry.Device
	cpu    *ferry.Device
}

// gpus returns the emulated GPUs configured for this run; each missing one
// is skipped loudly.
func gpus(t *testing.T) []gpu {
	t.Helper()
	var out []gpu
	for _, g := range []struct {
		name, variable string
		typ            ferry.DeviceType
		native         chelper.Native
	}{
		{"cuda", "FERRY_CUDA_LIBRARY", ferry.DeviceCUDA, chelper.NativeCUDA},
		{"rocm", "FERRY_HIP_LIBRARY", ferry.DeviceROCm, chelper.NativeHIP},
	} {
		if os.Getenv(g.variable) == "" {
			t.Logf("SKIPPED: %s through the driver emulation: %s is not set (bindings/go/test.sh sets it)", g.name, g.variable)
			continue
		}
		dev, err := ferry.ResolveDevice(g.typ, 0)
		if err != nil {
			t.Fatalf("%s is set but %s 0 is unavailable: %v", g.variable, g.name, err)
		}
		cpu, err := ferry.ResolveDevice(ferry.DeviceCPU, -1)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, gpu{g.name, g.typ, g.native, dev, cpu})
	}
	return out
}

// counted checks at the end of the test that ferry's and the device's
// allocations are back where they were.
func counted(t *testing.T, g gpu) {
	t.Helper()
	allocs, device := ferry.LiveAllocations(), g.dev.LiveAllocations()
	t.Cleanup(func() {
		if got := ferry.LiveAllocations(); got != allocs {
			t.Errorf("%s: ferry allocations %d, %d before", g.name, got, allocs)
		}
		if got := g.dev.LiveAllocations(); got != device {
			t.Errorf("%s: device allocations %d, %d before", g.name, got, device)
		}
	})
}

func (g gpu) nativeStream(t *testing.T) unsafe.Pointer {
	t.Helper()
	s, err := g.native.Stream()
	if err != nil {
		t.Fatalf("%s: %v", g.name, err)
	}
	t.Cleanup(func() {
		g.native.OpenGates()
		_ = g.dev.StreamSynchronize(s)
		if rc := g.native.DestroyStream(s); rc != 0 {
			t.Errorf("%s: destroying the native stream: driver error %d", g.name, rc)
		}
	})
	return s
}

// data is an int32 array description over device memory that values are
// copied into on stream (asynchronously: the host staging buffer is kept by
// the array until its release).
func (g gpu) data(t *testing.T, stream unsafe.Pointer, values []int32) *ferry.ArrayData {
	t.Helper()
	staging, err := ferry.CopySlice(values)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := g.dev.AllocBuffer(int64(4 * len(values)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ferry.Memcpy(g.dev, buf.Ptr(), g.cpu, staging.Ptr(), staging.Size(), stream); err != nil {
		t.Fatal(err)
	}
	return &ferry.ArrayData{Format: "i", Name: "v", Length: int64(len(values)),
		Buffers: []ferry.Buffer{{}, buf}, Keep: []ferry.Buffer{staging}}
}

// array exports values on the device, produced on stream with a recorded
// event.
func (g gpu) array(t *testing.T, stream unsafe.Pointer, values []int32) *ferry.DeviceArray {
	t.Helper()
	a, err := ferry.ExportArray(g.data(t, stream, values), &ferry.ExportOptions{Device: g.dev, ProducerStream: stream,
		Policy: ferry.SyncRecordEvent})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// hostValues reads the int32 values of an array already on the CPU.
func hostValues(t *testing.T, a *ferry.DeviceArray) []int32 {
	t.Helper()
	h, err := a.Host()
	if err != nil {
		t.Fatal(err)
	}
	v, err := ferry.Values[int32](h)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(v)
}

// onHost brings a to the host with ToHost (consuming it) and returns its
// values.
func onHost(t *testing.T, a *ferry.DeviceArray) []int32 {
	t.Helper()
	host, err := a.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Release()
	return hostValues(t, host)
}

func TestGPUDeviceMemoryReachesTheHostOnlyExplicitly(t *testing.T) {
	for _, g := range gpus(t) {
		counted(t, g)
		s := g.nativeStream(t)
		a := g.array(t, s, []int32{1, 2, 3})
		if _, err := a.Host(); err == nil || !strings.Contains(err.Error(), "ToHost") {
			t.Fatalf("%s: Host of device memory: %v", g.name, err)
		}
		if _, err := a.Root().BufferBytes(1); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("%s: BufferBytes of device memory: %v", g.name, err)
		}
		copied, err := a.CopyTo(ferry.DeviceCPU, -1)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostValues(t, copied); !slices.Equal(got, []int32{1, 2, 3}) || a.IsReleased() {
			t.Fatalf("%s: CopyTo the CPU gave %v (source released: %v)", g.name, got, a.IsReleased())
		}
		copied.Release()
		host, err := a.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		if !a.IsReleased() || host.DeviceType() != ferry.DeviceCPU || host.SyncEvent() != nil {
			t.Fatalf("%s: ToHost must consume the source and give a CPU array without an event", g.name)
		}
		if got := hostValues(t, host); !slices.Equal(got, []int32{1, 2, 3}) {
			t.Fatalf("%s: ToHost gave %v", g.name, got)
		}
		host.Release()
	}
}

func TestGPUMovesAndCopiesBetweenDevices(t *testing.T) {
	for _, g := range gpus(t) {
		counted(t, g)
		s := g.nativeStream(t)
		a := g.array(t, s, []int32{4, 5, 6, 7})
		// A deep copy on the same kind of device leaves the source alone.
		b, err := a.CopyTo(g.typ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if b.DeviceType() != g.typ || b.Buffer(1) == a.Buffer(1) || a.IsReleased() {
			t.Fatalf("%s: CopyTo %s: device %v, same buffer %v", g.name, g.name, b.DeviceType(), b.Buffer(1) == a.Buffer(1))
		}
		// A move to the device the memory is on is zero-copy.
		addr := b.Buffer(1)
		moved, err := b.MoveToDevice(nil, g.typ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if moved.Buffer(1) != addr || !b.IsReleased() {
			t.Fatalf("%s: a move to the same device copied", g.name)
		}
		// A refused move leaves the array to its owner.
		if _, err := moved.MoveToDevice(nil, g.typ, 99); err == nil || moved.IsReleased() {
			t.Fatalf("%s: a move to device 99: %v (released: %v)", g.name, err, moved.IsReleased())
		}
		onCPU, err := moved.MoveToDevice(nil, ferry.DeviceCPU, -1)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostValues(t, onCPU); !slices.Equal(got, []int32{4, 5, 6, 7}) {
			t.Fatalf("%s: moved to the CPU: %v", g.name, got)
		}
		// And from the CPU back to the device (a copy).
		back, err := onCPU.MoveToDevice(nil, g.typ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if back.DeviceType() != g.typ {
			t.Fatalf("%s: moved back to %v", g.name, back.DeviceType())
		}
		back.Release()
		a.Release()
	}
}

// The per-array consumer-stream handoff: the consumer's stream is made to
// wait on the producer's event, and the host does not block (the
// producer's copy is held behind a gate the whole time).
func TestGPUConsumerStreamPerArray(t *testing.T) {
	for _, g := range gpus(t) {
		counted(t, g)
		producer, consumer := g.nativeStream(t), g.nativeStream(t)
		if g.native.CloseGate(producer) != 0 {
			t.Fatal("gate")
		}
		a := g.array(t, producer, []int32{9, 8, 7})
		event := a.SyncEvent()
		if event == nil || g.native.EventDone(event) {
			t.Fatalf("%s: the export must carry a pending event", g.name)
		}
		if err := a.Wait(consumer); err != nil { // returns although the copy is held
			t.Fatal(err)
		}
		if g.native.Pending(consumer) == 0 {
			t.Fatalf("%s: the consumer stream queued no wait", g.name)
		}
		g.native.OpenGates()
		if err := g.dev.StreamSynchronize(consumer); err != nil {
			t.Fatal(err)
		}
		if !g.native.EventDone(event) {
			t.Fatalf("%s: the consumer stream finished before the producer's event", g.name)
		}
		if got := onHost(t, a); !slices.Equal(got, []int32{9, 8, 7}) {
			t.Fatalf("%s: %v", g.name, got)
		}
	}
}

// The per-batch handoff: NextOn hands each batch's event to the consumer's
// stream without blocking the host.
func TestGPUConsumerStreamPerBatch(t *testing.T) {
	for _, g := range gpus(t) {
		counted(t, g)
		producer, consumer := g.nativeStream(t), g.nativeStream(t)
		n := int32(0)
		stream, err := ferry.ExportDataStream(ferry.Field{Format: "i", Name: "v"}, g.typ,
			&ferry.ExportOptions{Device: g.dev, ProducerStream: producer, Policy: ferry.SyncRecordEvent},
			func() (*ferry.ArrayData, error) {
				if n == 3 {
					return nil, nil
				}
				n++
				return g.data(t, producer, []int32{n, 10 * n}), nil
			})
		if err != nil {
			t.Fatal(err)
		}
		for batch := int32(1); ; batch++ {
			g.native.CloseGate(producer) // this batch's copy is held
			if !stream.NextOn(consumer) {
				break
			}
			if g.native.Pending(consumer) == 0 {
				t.Fatalf("%s: batch %d: the consumer stream queued no wait", g.name, batch)
			}
			g.native.OpenGates()
			if err := g.dev.StreamSynchronize(consumer); err != nil {
				t.Fatal(err)
			}
			copied, err := stream.Batch().CopyTo(ferry.DeviceCPU, -1)
			if err != nil {
				t.Fatal(err)
			}
			if got := hostValues(t, copied); !slices.Equal(got, []int32{batch, 10 * batch}) {
				t.Fatalf("%s: batch %d: %v", g.name, batch, got)
			}
			copied.Release()
		}
		g.native.OpenGates()
		if stream.Err() != nil || n != 3 {
			t.Fatalf("%s: %d batches, %v", g.name, n, stream.Err())
		}
		stream.Release()
	}
}

// A stream and an event of the user's own CUDA/HIP code (made by calling
// the driver directly): produce on their stream (ferry records its event
// there), consume on another of theirs, and export with their own event,
// which their release function destroys exactly once after the consumer's
// release.
func TestGPUUsersOwnStreamAndEvent(t *testing.T) {
	for _, g := range gpus(t) {
		counted(t, g)
		theirs, theirConsumer := g.nativeStream(t), g.nativeStream(t)
		a := g.array(t, theirs, []int32{42})
		if err := a.Wait(theirConsumer); err != nil {
			t.Fatal(err)
		}
		if err := g.dev.StreamSynchronize(theirConsumer); err != nil {
			t.Fatal(err)
		}
		if got := onHost(t, a); !slices.Equal(got, []int32{42}) {
			t.Fatalf("%s: %v", g.name, got)
		}

		event, err := g.native.Event()
		if err != nil {
			t.Fatal(err)
		}
		data := g.data(t, theirs, []int32{43})
		if err := g.dev.EventRecord(event, theirs); err != nil { // their event, after their copy
			t.Fatal(err)
		}
		var destroyed atomic.Int32
		a, err = ferry.ExportArray(data, &ferry.ExportOptions{Device: g.dev, SyncEvent: event,
			ReleaseEvent: func() {
				destroyed.Add(1)
				if rc := g.native.DestroyEvent(event); rc != 0 {
					t.Errorf("%s: destroying their event: driver error %d", g.name, rc)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		if a.SyncEvent() != event {
			t.Fatalf("%s: their event was not passed through", g.name)
		}
		if got := onHost(t, a); !slices.Equal(got, []int32{43}) {
			t.Fatalf("%s: %v", g.name, got)
		}
		if destroyed.Load() != 1 {
			t.Fatalf("%s: their event's release ran %d times", g.name, destroyed.Load())
		}
	}
}

func TestGPUDLPackBothWays(t *testing.T) {
	for _, g := range gpus(t) {
		counted(t, g)
		s, consumer := g.nativeStream(t), g.nativeStream(t)
		a := g.array(t, s, []int32{3, 1, 4, 1, 5})
		tensor, err := a.ToDLPack(consumer)
		if err != nil {
			t.Fatal(err)
		}
		if !a.IsReleased() {
			t.Fatalf("%s: ToDLPack must consume the array", g.name)
		}
		d, err := ferry.DescribeDLPack(tensor)
		if err != nil {
			t.Fatal(err)
		}
		if d.DeviceType != g.typ || d.DeviceID != 0 || d.Code != ferry.DLPackInt || d.Bits != 32 ||
			!slices.Equal(d.Shape, []int64{5}) || d.Flags&ferry.DLPackFlagReadOnly == 0 {
			t.Fatalf("%s: tensor %+v", g.name, d)
		}
		back, schema, err := ferry.FromDLPack(tensor)
		if err != nil {
			t.Fatal(err)
		}
		if back.DeviceType() != g.typ || schema.Format() != "i" {
			t.Fatalf("%s: imported on %v as %q", g.name, back.DeviceType(), schema.Format())
		}
		if err := g.dev.StreamSynchronize(consumer); err != nil {
			t.Fatal(err)
		}
		if got := onHost(t, back); !slices.Equal(got, []int32{3, 1, 4, 1, 5}) {
			t.Fatalf("%s: %v", g.name, got)
		}
	}
}
