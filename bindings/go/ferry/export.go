package ferry

/*
// The C-memory export path neither keeps its arguments nor calls back into
// Go, so Go may leave the per-node buffer lists on its stack.
#cgo noescape ferrygo_export_leaf_c_only
#cgo nocallback ferrygo_export_leaf_c_only
#cgo noescape ferrygo_export_leaf_schema
#cgo nocallback ferrygo_export_leaf_schema
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"
)

type bufferKind uint8

const (
	bufNone    bufferKind = iota // NULL buffer
	bufC                         // ferrygo_alloc memory, freed at release
	bufDevice                    // ferry_device_allocate memory, deallocated at release
	bufPinned                    // Go memory, pinned until release
	bufForeign                   // memory owned elsewhere; optional Go callback at release
)

// Buffer is memory that an exported array will point at, together with the
// rule for giving it back when the consumer releases the array. A Buffer is
// handed to exactly one export (ExportArray takes it, on success and on
// failure alike); one that is never exported must be given back with Free.
//
// Three kinds exist, all zero-copy at export:
//   - AllocBuffer / AllocSlice / CopySlice: host memory outside the Go heap
//     (64-byte aligned), filled from Go through a slice; released entirely in
//     C (no call back into Go). The default, and the cheapest to export.
//   - PinSlice: a Go slice exported in place, pinned with runtime.Pinner until
//     the consumer releases the array; the release stays in C and Go unpins
//     afterwards (pins.go).
//   - Device.AllocBuffer: memory on a device (sim, CUDA, ROCm), deallocated
//     through the core at release.
//
// ForeignBuffer wraps memory owned by something else (for instance arrow-go).
type Buffer struct {
	ptr     unsafe.Pointer
	size    int64
	kind    bufferKind
	device  *C.struct_FerryDevice
	pinned  unsafe.Pointer
	release func()
}

// AllocBuffer allocates size bytes of host memory outside the Go heap for an
// export; fill it through Bytes.
func AllocBuffer(size int64) (Buffer, error) {
	if size < 0 {
		return Buffer{}, errorf(syscall.EINVAL, "AllocBuffer: negative size %d", size)
	}
	p := C.ferrygo_alloc(C.int64_t(size))
	if p == nil {
		return Buffer{}, errorf(syscall.ENOMEM, "AllocBuffer: out of memory (%d bytes)", size)
	}
	return Buffer{ptr: p, size: size, kind: bufC}, nil
}

// AllocSlice allocates host memory outside the Go heap for n values of T and
// returns the buffer with a slice over it (the slice is valid until the
// buffer is exported and released, or freed).
func AllocSlice[T any](n int) (Buffer, []T, error) {
	var zero T
	b, err := AllocBuffer(int64(n) * int64(unsafe.Sizeof(zero)))
	if err != nil {
		return b, nil, err
	}
	return b, unsafe.Slice((*T)(b.ptr), n), nil
}

// CopySlice copies values into a new buffer outside the Go heap.
func CopySlice[T any](values []T) (Buffer, error) {
	b, s, err := AllocSlice[T](len(values))
	if err == nil {
		copy(s, values)
	}
	return b, err
}

// PinSlice exports values in place (zero-copy): the slice's backing array is
// pinned from export until the consumer releases the array, and may stay
// pinned (and referenced) a little longer: the release runs in C and the
// binding unpins at its next export, at LiveAllocations or after the next
// garbage collection, keeping the last few pins for memory exported again.
// T must hold no Go pointers. Go code must not write to the slice while a
// consumer may read.
func PinSlice[T any](values []T) Buffer {
	if len(values) == 0 {
		return Buffer{}
	}
	var zero T
	p := unsafe.Pointer(unsafe.SliceData(values))
	return Buffer{ptr: p, size: int64(len(values)) * int64(unsafe.Sizeof(zero)), kind: bufPinned, pinned: p}
}

// ForeignBuffer points at memory owned elsewhere that stays valid until the
// array is released; release (may be nil) is called then, from the thread
// that releases the array.
func ForeignBuffer(ptr unsafe.Pointer, size int64, release func()) Buffer {
	return Buffer{ptr: ptr, size: size, kind: bufForeign, release: release}
}

// Ptr returns the buffer's address (nil for a NULL buffer).
func (b Buffer) Ptr() unsafe.Pointer { return b.ptr }

// Size returns the buffer's size in bytes.
func (b Buffer) Size() int64 { return b.size }

// Bytes returns the host memory of the buffer as a slice (nil for device
// memory and NULL buffers).
func (b Buffer) Bytes() []byte {
	if b.ptr == nil || b.kind == bufDevice {
		return nil
	}
	return unsafe.Slice((*byte)(b.ptr), b.size)
}

// Free gives back a buffer that was never exported.
func (b *Buffer) Free() {
	switch b.kind {
	case bufC:
		C.ferrygo_free(b.ptr)
	case bufDevice:
		owned := C.struct_ferrygo_owned_ptr{ptr: C.uintptr_t(uintptr(b.ptr)), device: C.uintptr_t(uintptr(unsafe.Pointer(b.device)))}
		C.ferrygo_give_back(1, &owned, 0)
	case bufForeign:
		if b.release != nil {
			b.release()
		}
	}
	*b = Buffer{}
}

// ArrayData describes an array to export: its type (a format string of the C
// data interface, a name, flags, metadata), its shape and its buffers,
// children and dictionary. ExportArray takes ownership of every Buffer in
// the tree.
type ArrayData struct {
	Format   string
	Name     string
	Flags    SchemaFlags
	Metadata []KeyValue

	Length     int64
	NullCount  int64
	Offset     int64
	Buffers    []Buffer
	Children   []*ArrayData
	Dictionary *ArrayData

	// Keep lists memory the node owns without pointing at it (for example
	// the host staging of an asynchronous copy to a device); OnRelease runs
	// at release before any buffer is given back (for example to synchronize
	// and destroy the producer's device stream). Both are optional.
	Keep      []Buffer
	OnRelease func()
	// AfterRelease (optional) runs once, on a Go goroutine, some time after
	// the consumer's release and never before it: at the binding's next
	// export, after the next garbage collection, or at LiveAllocations. The
	// release itself then stays in C (no call back into Go on the
	// consumer's thread, which costs more than the rest of an export): for
	// references that need Go to let go but not at that instant, such as
	// arrow-go's Release of the data an export points at. It must not call
	// ReleaseDeferred or LiveAllocations, which wait for it to finish.
	AfterRelease func()
}

// Field returns the schema description of the tree.
func (a *ArrayData) Field() Field {
	f := Field{Format: a.Format, Name: a.Name, Flags: a.Flags, Metadata: a.Metadata}
	for _, c := range a.Children {
		f.Children = append(f.Children, c.Field())
	}
	if a.Dictionary != nil {
		d := a.Dictionary.Field()
		f.Dictionary = &d
	}
	return f
}

// Free gives back every buffer of a tree that was never exported.
func (a *ArrayData) Free() {
	if a == nil {
		return
	}
	if a.OnRelease != nil {
		a.OnRelease()
	}
	if a.AfterRelease != nil {
		a.AfterRelease()
	}
	for i := range a.Buffers {
		a.Buffers[i].Free()
	}
	for i := range a.Keep {
		a.Keep[i].Free()
	}
	for _, c := range a.Children {
		c.Free()
	}
	a.Dictionary.Free()
}

// ExportOptions says where the exported array lives. The zero value (or a
// nil *ExportOptions) means the CPU.
type ExportOptions struct {
	// Device holding the buffers; nil means the CPU.
	Device *Device
	// ProducerStream is the device stream the data was written on; nil means
	// nothing is pending. With a stream, Policy says how the consumer is
	// synchronized (SyncRecordEvent: an event is recorded and exported as
	// sync_event; SyncSynchronize: the stream is synchronized now).
	ProducerStream unsafe.Pointer
	Policy         SyncPolicy
	// SyncEvent passes the producer's own event through unchanged (the third
	// policy of docs/events.md): a pointer to the native event handle (a
	// CUevent*, a hipEvent_t*, a sim event) made by the producer on Device,
	// which must be set; ProducerStream must be nil. ReleaseEvent, when not
	// nil, is called exactly once after the consumer has released the array:
	// that is where the producer destroys the event. With ReleaseEvent nil
	// the producer keeps the event and promises that it outlives the array.
	// If the export fails, ReleaseEvent is not called and the event is still
	// the producer's. Not for streams: each batch needs an event of its own.
	SyncEvent    unsafe.Pointer
	ReleaseEvent func()
}

// check refuses contradictory options, naming the problem.
func (o *ExportOptions) check(where string) error {
	if o.SyncEvent == nil {
		if o.ReleaseEvent != nil {
			return errorf(syscall.EINVAL, "%s: ExportOptions.ReleaseEvent is set without a SyncEvent", where)
		}
		return nil
	}
	if o.Device == nil {
		return errorf(syscall.EINVAL, "%s: ExportOptions.SyncEvent needs the Device it belongs to", where)
	}
	if o.ProducerStream != nil {
		return errorf(syscall.EINVAL, "%s: ExportOptions.SyncEvent and ProducerStream exclude each other "+
			"(pass your own event, or let ferry record or synchronize on the stream)", where)
	}
	return nil
}

// eventHandle puts the producer's event release behind a handle (0 when
// there is none); the caller takes it back if the export fails.
func (o *ExportOptions) eventHandle() uintptr {
	if o.SyncEvent == nil || o.ReleaseEvent == nil {
		return 0
	}
	return handles.put(&exportState{releases: []func(){o.ReleaseEvent}})
}

// ExportArray exports data (zero-copy: the buffers are pointed at, not
// copied) as an owned DeviceArray with its schema attached. Ownership of
// every buffer passes to the export on success and on failure; on success
// the buffers are given back when the last consumer releases the array.
func ExportArray(data *ArrayData, opts *ExportOptions) (*DeviceArray, error) {
	if data == nil {
		return nil, errorf(syscall.EINVAL, "ExportArray: nil data")
	}
	if opts == nil {
		opts = &noOptions
	}
	if oneCallLeaf(data, opts) {
		return exportLeafWithSchema(data, opts)
	}
	field := data.Field()
	schema, err := field.Export()
	if err != nil {
		data.Free()
		return nil, err
	}
	arr, err := exportDeviceArray(data, opts)
	if err != nil {
		schema.Release()
		return nil, err
	}
	arr.schema = schema
	return arr, nil
}

// oneCallLeaf says whether ExportArray can export a with its schema in one
// call that never enters Go: a leaf without metadata whose Go state, if
// any, only pins (no OnRelease, no foreign release, no producer event).
func oneCallLeaf(a *ArrayData, opts *ExportOptions) bool {
	if len(a.Children) != 0 || a.Dictionary != nil || len(a.Metadata) != 0 || a.OnRelease != nil ||
		opts.SyncEvent != nil || opts.ReleaseEvent != nil {
		return false
	}
	for _, list := range [2][]Buffer{a.Buffers, a.Keep} {
		for i := range list {
			if list[i].kind == bufForeign && list[i].release != nil {
				return false
			}
		}
	}
	return true
}

// exportLeafWithSchema is ExportArray of a oneCallLeaf: the schema and the
// array in one cgo call, into recycled C structs, as one Go object.
func exportLeafWithSchema(a *ArrayData, opts *ExportOptions) (*DeviceArray, error) {
	sc, c := newSchemaStruct(), newArrayStruct()
	if sc == nil || c == nil {
		if sc != nil {
			recycleSchema(sc)
		}
		if c != nil {
			recycle(c)
		}
		a.Free()
		return nil, errorf(syscall.ENOMEM, "ExportArray: out of memory")
	}
	n := nodeBuffers{}
	n.collect(a, true)
	// C addresses travel as integers: cgo checks no pointer argument here
	// but the buffer list and the outcome (which hold no pointers).
	var dev uintptr
	if opts.Device != nil {
		dev = uintptr(unsafe.Pointer(opts.Device.c))
	}
	nameLen := C.int64_t(-1)
	if a.Name != "" {
		nameLen = C.int64_t(len(a.Name))
	}
	var outcome C.struct_ferrygo_outcome
	rc := C.ferrygo_export_leaf_schema(C.uintptr_t(uintptr(unsafe.Pointer(sc))), goChars(a.Format), C.int64_t(len(a.Format)),
		goChars(a.Name), nameLen, C.int64_t(a.Flags), C.uintptr_t(uintptr(unsafe.Pointer(c))),
		C.int64_t(a.Length), C.int64_t(a.NullCount), C.int64_t(a.Offset),
		C.int64_t(len(a.Buffers)), n.bufs.first(), C.int64_t(n.owned.n), n.owned.first(), C.uintptr_t(n.handle),
		C.uintptr_t(dev), C.uintptr_t(uintptr(opts.ProducerStream)), C.int32_t(opts.Policy), &outcome)
	for _, h := range outcome.taken[:outcome.n_taken] {
		releaseDeferred(uintptr(h))
	}
	if rc != 0 {
		if outcome.handle_kept != 0 {
			releaseDeferred(n.handle &^ deferredHandle)
		}
		recycleSchema(sc)
		recycle(c)
		err := outcomeError(&outcome)
		if outcome.format_bad != 0 {
			err.Message = fmt.Sprintf("field %q: %s", a.Name, err.Message)
		}
		return nil, err
	}
	d := &DeviceArray{c: c}
	d.ownSchema = Schema{c: sc, owned: true, embedded: true}
	d.schema = &d.ownSchema
	track(d)
	return d, nil
}

// ExportArrayNoSchema is ExportArray without building the schema, for hot
// paths (stream batches) where the schema travels separately.
func ExportArrayNoSchema(data *ArrayData, opts *ExportOptions) (*DeviceArray, error) {
	if data == nil {
		return nil, errorf(syscall.EINVAL, "ExportArray: nil data")
	}
	return exportDeviceArray(data, opts)
}

func exportDeviceArray(data *ArrayData, opts *ExportOptions) (*DeviceArray, error) {
	spare := takeSpareArray() // nil: the export allocates
	c, err := exportDeviceArrayC(data, opts, spare)
	if err != nil {
		if spare != nil {
			recycle(spare) // still released: kept for the next export
		}
		return nil, err
	}
	return newOwnedDeviceArray(c, nil), nil
}

// spareArray holds one released ArrowDeviceArray struct (C memory) for the
// next export to fill: DeviceArray.ExportTo moves the array out in Go and
// leaves its struct here, which saves the cgo call that would free it (and
// the allocation in the export that follows).
var spareArray atomic.Pointer[C.struct_ArrowDeviceArray]

func takeSpareArray() *C.struct_ArrowDeviceArray { return spareArray.Swap(nil) }

// newArrayStruct returns a released ArrowDeviceArray struct in C memory:
// the spare, or a new one (nil when out of memory).
func newArrayStruct() *C.struct_ArrowDeviceArray {
	if c := takeSpareArray(); c != nil {
		return c
	}
	return C.ferry_device_array_new()
}

// recycle keeps the released struct c as the spare (freeing the one it
// replaces, if any).
func recycle(c *C.struct_ArrowDeviceArray) {
	if old := spareArray.Swap(c); old != nil {
		C.ferry_device_array_free(old)
	}
}

// noOptions is the zero ExportOptions (the CPU), shared and never written.
var noOptions ExportOptions

// exportDeviceArrayC exports data into `into` (a released struct; nil: a new
// C struct, which the caller owns) without making a Go object: for a leaf
// this is one cgo call.
func exportDeviceArrayC(data *ArrayData, opts *ExportOptions, into *C.struct_ArrowDeviceArray) (*C.struct_ArrowDeviceArray, error) {
	if opts == nil {
		opts = &noOptions
	}
	if err := opts.check("ExportArray"); err != nil {
		data.Free()
		return nil, err
	}
	if len(data.Children) == 0 && data.Dictionary == nil {
		return exportLeafInto(data, opts, into)
	}
	if into != nil && abiDeviceArray(into).Array.Release != nil {
		data.Free()
		return nil, errorf(syscall.EINVAL, "ExportArray: the destination ArrowDeviceArray is not released")
	}
	tmp := C.ferry_array_new()
	out := into
	if out == nil {
		out = C.ferry_device_array_new()
	}
	if tmp == nil || out == nil {
		C.ferry_array_free(tmp)
		if into == nil {
			C.ferry_device_array_free(out)
		}
		data.Free()
		return nil, errorf(syscall.ENOMEM, "ExportArray: out of memory")
	}
	fail := func(err error) (*C.struct_ArrowDeviceArray, error) {
		C.ferry_array_free(tmp) // releases the nodes exported so far, giving back
		if into == nil {
			C.ferry_device_array_free(out)
		}
		return nil, err
	}
	if err := exportNode(tmp, data); err != nil {
		return fail(err)
	}
	var err error
	switch {
	case opts.Device == nil:
		err = call(func(e *C.struct_FerryError) C.int {
			return C.ferrygo_device_array_init(out, tmp, C.ArrowDeviceType(DeviceCPU), -1, nil, e)
		})
	case opts.SyncEvent != nil:
		h := opts.eventHandle()
		err = call(func(e *C.struct_FerryError) C.int {
			return C.ferrygo_device_array_init_event(out, tmp, opts.Device.c, opts.SyncEvent, C.uintptr_t(h), e)
		})
		if err != nil {
			handles.take(h) // not attached: the event stays the producer's
		}
	default:
		err = call(func(e *C.struct_FerryError) C.int {
			return C.ferry_device_array_init_async(out, tmp, opts.Device.c, opts.ProducerStream, C.int32_t(opts.Policy), e)
		})
	}
	if err != nil {
		return fail(err)
	}
	C.ferry_array_free(tmp) // moved into out: only the struct is freed
	return out, nil
}

// exportLeafInto exports a leaf into `into` (nil: a new C struct) in one
// cgo call.
func exportLeafInto(a *ArrayData, opts *ExportOptions, into *C.struct_ArrowDeviceArray) (*C.struct_ArrowDeviceArray, error) {
	n := nodeBuffers{}
	n.collect(a, true)
	var dev *C.struct_FerryDevice
	devType, devID := C.ArrowDeviceType(DeviceCPU), C.int64_t(-1)
	if opts.Device != nil {
		dev = opts.Device.c
	}
	if (n.handle == 0 || n.handle&deferredHandle != 0) && opts.SyncEvent == nil {
		var outcome C.struct_ferrygo_outcome
		out := C.ferrygo_export_leaf_c_only(into, C.int64_t(a.Length), C.int64_t(a.NullCount), C.int64_t(a.Offset),
			C.int64_t(len(a.Buffers)), n.bufs.first(), C.int64_t(n.owned.n), n.owned.first(), C.uintptr_t(n.handle),
			devType, devID, dev, opts.ProducerStream, C.int32_t(opts.Policy), &outcome)
		for _, h := range outcome.taken[:outcome.n_taken] {
			releaseDeferred(uintptr(h))
		}
		if out == nil {
			if outcome.handle_kept != 0 {
				releaseDeferred(n.handle &^ deferredHandle)
			}
			return nil, outcomeError(&outcome)
		}
		return out, nil
	}
	var rc C.int
	e := getErrorBuffer()
	defer putErrorBuffer(e)
	eventHandle := opts.eventHandle()
	out := exportLeafWithGoState(into, a, opts, n, dev, eventHandle, &rc, e)
	if out == nil {
		handles.take(eventHandle) // not attached: the event stays the producer's
		return nil, codeError(rc, e)
	}
	return out, nil
}

// exportLeafWithGoState is the export of a leaf holding pinned or foreign
// buffers: its release calls back into Go, so its lists live on the heap.
func exportLeafWithGoState(into *C.struct_ArrowDeviceArray, a *ArrayData, opts *ExportOptions, n nodeBuffers,
	dev *C.struct_FerryDevice, eventHandle uintptr, rc *C.int, e *C.struct_FerryError) *C.struct_ArrowDeviceArray {
	heap := new(nodeBuffers)
	*heap = n
	return C.ferrygo_export_leaf(into, C.int64_t(a.Length), C.int64_t(a.NullCount), C.int64_t(a.Offset),
		C.int64_t(len(a.Buffers)), heap.bufs.first(), C.int64_t(heap.owned.n), heap.owned.first(), C.uintptr_t(heap.handle),
		C.ArrowDeviceType(DeviceCPU), -1, dev, opts.ProducerStream, C.int32_t(opts.Policy),
		opts.SyncEvent, C.uintptr_t(eventHandle), rc, e)
}

// describeLeaf describes a leaf export of a in batch, for the stream
// trampoline to perform once get_next has returned (see exports.go); false
// when a does not fit there (children, a dictionary, more than
// FERRYGO_BATCH_MAX_BUFFERS buffers) and must be exported directly.
func describeLeaf(batch *C.struct_ferrygo_batch, a *ArrayData, opts *ExportOptions) bool {
	if len(a.Children) != 0 || a.Dictionary != nil || len(a.Buffers)+len(a.Keep) > C.FERRYGO_BATCH_MAX_BUFFERS {
		return false
	}
	if opts == nil {
		opts = &noOptions
	}
	n := nodeBuffers{}
	n.collect(a, true) // the trampoline took the queue before calling Go
	batch.kind = C.FERRYGO_BATCH_LEAF
	batch.length, batch.null_count, batch.offset = C.int64_t(a.Length), C.int64_t(a.NullCount), C.int64_t(a.Offset)
	batch.n_buffers, batch.n_owned = C.int64_t(n.bufs.n), C.int64_t(n.owned.n)
	copy(batch.buffers[:], n.bufs.list())
	copy(batch.owned[:], n.owned.list())
	batch.go_handle = C.uintptr_t(n.handle)
	// The struct is uninitialized C stack memory: every field is written.
	batch.device, batch.producer_stream, batch.policy = 0, 0, 0
	if opts.Device != nil {
		batch.device = C.uintptr_t(uintptr(unsafe.Pointer(opts.Device.c)))
		batch.producer_stream = C.uintptr_t(uintptr(opts.ProducerStream))
		batch.policy = C.int32_t(opts.Policy)
	}
	return true
}

// ExportArrayTo exports data straight into the released ArrowDeviceArray at
// dst (a consumer's struct), without a Go object in between: for a leaf
// array this is one cgo call. Ownership of the buffers passes as for
// ExportArray; the schema is not exported (use Field.Export).
func ExportArrayTo(data *ArrayData, opts *ExportOptions, dst unsafe.Pointer) error {
	if data == nil || dst == nil {
		data.Free()
		return errorf(syscall.EINVAL, "ExportArrayTo: nil data or destination")
	}
	_, err := exportDeviceArrayC(data, opts, (*C.struct_ArrowDeviceArray)(dst))
	return err
}

// nodeBuffers gathers what one node points at and owns, for the C side, as
// integers (see shim.h: no cgo pointer scan). Every address names C memory
// or Go memory pinned until release. Up to 8 of each fit inline, so a
// typical export allocates nothing here (the struct stays on the stack:
// the C functions are declared noescape).
type nodeBuffers struct {
	bufs   smallList[C.uintptr_t]
	owned  smallList[C.struct_ferrygo_owned_ptr]
	handle uintptr
}

// collect records a's buffers; pinned and foreign buffers and OnRelease go
// into a Go state behind a handle (0 when there is none). A state that only
// pins gets a deferred handle: its release stays in C (see pins.go).
// Unless queueTaken (the caller's C call takes the queue of released
// pins-only states), the queue is taken here first.
func (n *nodeBuffers) collect(a *ArrayData, queueTaken bool) {
	var releases []func()
	if a.OnRelease != nil {
		releases = []func(){a.OnRelease}
	}
	var pinned smallList[unsafe.Pointer]
	for k := 0; k < len(a.Buffers)+len(a.Keep); k++ {
		var b *Buffer
		if k < len(a.Buffers) {
			b = &a.Buffers[k]
			n.bufs.add(C.uintptr_t(uintptr(b.ptr)))
		} else {
			b = &a.Keep[k-len(a.Buffers)]
		}
		switch b.kind {
		case bufC:
			n.owned.add(C.struct_ferrygo_owned_ptr{ptr: C.uintptr_t(uintptr(b.ptr))})
		case bufDevice:
			n.owned.add(C.struct_ferrygo_owned_ptr{ptr: C.uintptr_t(uintptr(b.ptr)),
				device: C.uintptr_t(uintptr(unsafe.Pointer(b.device)))})
		case bufPinned:
			pinned.add(b.pinned)
		case bufForeign:
			if b.release != nil {
				releases = append(releases, b.release)
			}
		}
	}
	if len(releases) == 0 && pinned.n == 0 && a.AfterRelease == nil {
		return
	}
	if !queueTaken {
		drainDeferred(false)
	}
	state := pinState(&pinned)
	state.releases = releases
	state.after = a.AfterRelease
	n.handle = state.handle()
}

// exportNode fills the released ArrowArray out from a. It takes ownership of
// every buffer of the subtree: on failure everything not attached to out is
// given back, and the caller releases out.
func exportNode(out *C.struct_ArrowArray, a *ArrayData) error {
	n := nodeBuffers{}
	n.collect(a, false)
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferrygo_array_init(out, C.int64_t(a.Length), C.int64_t(a.NullCount), C.int64_t(a.Offset),
			C.int64_t(len(a.Buffers)), n.bufs.first(), C.int64_t(len(a.Children)),
			C.int64_t(n.owned.n), n.owned.first(), C.uintptr_t(n.handle), e)
	})
	if err != nil {
		// This node's buffers were given back by ferrygo_array_init.
		for _, c := range a.Children {
			c.Free()
		}
		a.Dictionary.Free()
		return err
	}
	for i, c := range a.Children {
		if err := exportNode(C.ferry_array_child(out, C.int64_t(i)), c); err != nil {
			for _, rest := range a.Children[i+1:] {
				rest.Free()
			}
			a.Dictionary.Free()
			return err
		}
	}
	if a.Dictionary != nil {
		var dict *C.struct_ArrowArray
		err := call(func(e *C.struct_FerryError) C.int { return C.ferry_array_allocate_dictionary(out, &dict, e) })
		if err != nil {
			a.Dictionary.Free()
			return err
		}
		return exportNode(dict, a.Dictionary)
	}
	return nil
}

// LiveAllocations returns the buffers allocated through this package (host
// and device) that are not given back yet, plus the Go states (pins,
// producers) still referenced from C: zero when every export was released.
func LiveAllocations() int64 {
	drainDeferred(true)
	return int64(C.ferrygo_live_allocations()) + handles.live.Load()
}

// LiveGoExports returns the array nodes and streams exported by this
// package that are not released yet: zero when every consumer let go.
func LiveGoExports() int64 { return int64(C.ferrygo_live_exports()) }

// LiveExports returns the schemas, arrays and streams made by the core's
// producer helpers (ferry_live_exports) that are not released yet: counted
// process-wide, whichever runtime exported them.
func LiveExports() int64 { return int64(C.ferry_live_exports()) }
