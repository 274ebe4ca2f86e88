// Package chelper holds C helpers for the ferry package's tests and
// benchmarks: consumers on new pthreads (foreign threads for Go), a C
// producer at the handoff floor, loops of C -> Go callbacks, and the floors
// written as bare cgo calls. It is internal and only tests import it, so none
// of it is compiled into the ferry package.
package chelper

/*
#cgo CFLAGS: -I${SRCDIR}/../../ferry/include -I${SRCDIR}/../../../../tests/hostile -O2
#cgo pkg-config: ferry
#cgo LDFLAGS: -lferry_hostile
#include <stdlib.h>
#include "chelper.h"
#include "ferry_hostile.h"
*/
import "C"

import (
	"errors"
	"strconv"
	"syscall"
	"unsafe"
)

// DrainStream reads the ArrowDeviceArrayStream at stream to its end from C
// (on a new pthread when newThread) and returns the batch count, the summed
// length, the nanoseconds spent and the failure, if any.
func DrainStream(stream unsafe.Pointer, newThread bool) (batches, elements, ns int64, code syscall.Errno, message string) {
	var b, e, t C.int64_t
	var msg [1024]C.char
	rc := C.chelper_drain_stream((*C.struct_ArrowDeviceArrayStream)(stream), boolInt(newThread), &b, &e, &t, &msg[0], 1024)
	return int64(b), int64(e), int64(t), syscall.Errno(rc), C.GoString(&msg[0])
}

// EndlessStream fills the released stream struct at out with an endless C
// stream of static int32 arrays of length elements (at most 1024).
func EndlessStream(out unsafe.Pointer, length int64) {
	C.chelper_endless_stream((*C.struct_ArrowDeviceArrayStream)(out), C.int64_t(length))
}

// ConsumeArray is a C consumer: it moves the array out, reads its first
// value and releases it.
func ConsumeArray(array unsafe.Pointer) int32 {
	return int32(C.chelper_consume_array((*C.struct_ArrowDeviceArray)(array)))
}

// CallGo calls a trivial Go export n times from C (a new pthread when
// newThread) and returns the nanoseconds spent.
func CallGo(n int64, newThread bool) int64 {
	return int64(C.chelper_call_go(C.int64_t(n), boolInt(newThread)))
}

// C2CHandoffs runs n C -> C handoffs and returns the nanoseconds spent.
func C2CHandoffs(n int64) int64 { return int64(C.chelper_c2c_handoffs(C.int64_t(n))) }

// DLPackTensor makes a C DLPack tensor over n int64 values 3*i, with ndim 1
// or 2 (shape {1, n}); its deleter counts (DLPackDeleted).
func DLPackTensor(n int64, ndim int32) unsafe.Pointer {
	return unsafe.Pointer(C.chelper_dlpack_tensor(C.int64_t(n), C.int32_t(ndim)))
}

// DLPackDeleted returns how many DLPackTensor tensors were deleted.
func DLPackDeleted() int64 { return int64(C.chelper_dlpack_deleted()) }

// CallFloor is the cheapest cgo call into libferry (a pure accessor on the
// ArrowDeviceArray at p): the per-call floor the benchmarks compare against.
func CallFloor(p unsafe.Pointer) int {
	return int(C.ferry_device_array_is_released((*C.struct_ArrowDeviceArray)(p)))
}

// NextRelease is one consumer step written as bare cgo calls (get_next, then
// release), the floor of DeviceArrayStream.Next.
func NextRelease(stream, batch unsafe.Pointer) int {
	rc := C.ferry_array_stream_get_next((*C.struct_ArrowDeviceArrayStream)(stream), (*C.struct_ArrowDeviceArray)(batch), nil)
	C.ferry_device_array_release((*C.struct_ArrowDeviceArray)(batch))
	return int(rc)
}

// GoToC is a Go -> C handoff written as bare cgo calls against the core
// (malloc a buffer, ferry_array_init with free as the release hook,
// ferry_device_array_init into the consumer's struct at dst, the C consumer;
// tmp holds the ArrowArray): the floor of ExportArrayNoSchema + ExportTo.
func GoToC(tmp, dst unsafe.Pointer, consume func(unsafe.Pointer) int32) int32 {
	buf := C.chelper_alloc(64)
	bufs := [2]unsafe.Pointer{nil, buf} // C pointers only
	arr := (*C.struct_ArrowArray)(tmp)
	C.ferry_array_init(arr, 16, 0, 0, 2, &bufs[0], 0, C.FerryReleaseHook(C.chelper_free), buf, nil)
	C.ferry_device_array_init((*C.struct_ArrowDeviceArray)(dst), arr, C.ARROW_DEVICE_CPU, -1, nil, nil, nil, nil)
	return consume(dst)
}

// MoveChildOut moves child i of the live ArrowDeviceArray at array into the
// released ArrowDeviceArray at dst (as a CPU device array) and returns the
// child's last buffer address. Tests use it to show children own their buffers.
func MoveChildOut(array unsafe.Pointer, i int, dst unsafe.Pointer) unsafe.Pointer {
	return C.chelper_move_child_out((*C.struct_ArrowDeviceArray)(array), C.int64_t(i), (*C.struct_ArrowDeviceArray)(dst))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// ---- hostile producers (tests/hostile, libferry_hostile.so) ---------------------

// HostileCase is one array case of the catalogue of tests/hostile (the one
// library of hostile producers every binding's hostile suite loads).
type HostileCase struct {
	Name   string
	Kind   int    // HostileRefused, HostileFull or HostileReader
	Flags  int    // HostileReadable | HostileDevice
	Where  string // "rule: where" of the finding ("" for a reader case)
	Needle string // a part of the finding's message
}

// What a consumer must do with a case, and the flags of a case (ferry_hostile.h).
const (
	HostileRefused  = C.FERRY_HOSTILE_REFUSED
	HostileFull     = C.FERRY_HOSTILE_FULL
	HostileReader   = C.FERRY_HOSTILE_READER
	HostileReadable = C.FERRY_HOSTILE_READABLE
	HostileDevice   = C.FERRY_HOSTILE_DEVICE
)

// HostileCases is the catalogue, in order.
func HostileCases() []HostileCase {
	return catalogue(int(C.ferry_hostile_count()), func(k C.int32_t) HostileCase {
		return HostileCase{C.GoString(C.ferry_hostile_name(k)), int(C.ferry_hostile_kind(k)),
			int(C.ferry_hostile_flags(k)), C.GoString(C.ferry_hostile_where(k)), C.GoString(C.ferry_hostile_needle(k))}
	})
}

// catalogue is the n entries of a catalogue of tests/hostile, entry k read
// by read.
func catalogue[T any](n int, read func(k C.int32_t) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = read(C.int32_t(i))
	}
	return out
}

// HostileArray makes the case called name into new C structs: the device
// array and its schema (free them with ferry.FreeRawDeviceArray and
// ferry.FreeRawSchema, which release what was not moved out).
func HostileArray(name string) (array, schema unsafe.Pointer) {
	array = unsafe.Pointer(C.ferry_device_array_new())
	schema = unsafe.Pointer(C.ferry_schema_new())
	n := C.CString(name)
	defer C.free(unsafe.Pointer(n))
	if rc := C.ferry_hostile_make(n, (*C.struct_ArrowDeviceArray)(array), (*C.struct_ArrowSchema)(schema)); rc != 0 {
		panic("ferry_hostile_make " + name + ": " + syscall.Errno(rc).Error())
	}
	return array, schema
}

// HostileStreamCase is one stream case of the catalogue of tests/hostile.
type HostileStreamCase struct {
	Name   string
	At     int // where a consumer meets the lie: 0 get_schema, n the n-th get_next
	Level  int // the validation level that finds it
	Code   syscall.Errno
	Needle string // a part of the consumer's error message
}

// HostileStreamCases is the stream catalogue, in order.
func HostileStreamCases() []HostileStreamCase {
	return catalogue(int(C.ferry_hostile_stream_count()), func(k C.int32_t) HostileStreamCase {
		return HostileStreamCase{C.GoString(C.ferry_hostile_stream_name(k)), int(C.ferry_hostile_stream_at(k)),
			int(C.ferry_hostile_stream_level(k)), syscall.Errno(C.ferry_hostile_stream_code(k)),
			C.GoString(C.ferry_hostile_stream_needle(k))}
	})
}

// HostileStreamMake fills the released stream at out with the stream case
// called name.
func HostileStreamMake(out unsafe.Pointer, name string) {
	n := C.CString(name)
	defer C.free(unsafe.Pointer(n))
	if rc := C.ferry_hostile_stream_make(n, (*C.struct_ArrowDeviceArrayStream)(out)); rc != 0 {
		panic("ferry_hostile_stream_make " + name + ": " + syscall.Errno(rc).Error())
	}
}

// Buf is one buffer of a hostile node: its bytes, or nil for a NULL buffer.
type Buf []byte

// Int32s is a buffer of int32 values (native order).
func Int32s(values ...int32) Buf {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		*(*int32)(unsafe.Pointer(&b[4*i])) = v
	}
	return b
}

// Node is a hand-made ArrowArray in C memory (ferry_hostile_node), for the
// tests that need one particular lie the catalogue does not hold.
type Node struct{ c *C.struct_ArrowArray }

// HostileNode makes a node with these buffers, declaring len(buffers)
// buffers (see Node.DeclareBuffers).
func HostileNode(length, nullCount, offset int64, buffers ...Buf) Node {
	var blob []byte
	sizes := make([]C.int64_t, len(buffers)+1)
	for i, b := range buffers {
		if b == nil {
			sizes[i] = -1
			continue
		}
		sizes[i] = C.int64_t(len(b))
		blob = append(blob, b...)
	}
	blob = append(blob, 0) // never empty: &blob[0] is valid
	return Node{C.ferry_hostile_node(C.int64_t(length), C.int64_t(nullCount), C.int64_t(offset),
		C.int64_t(len(buffers)), (*C.uint8_t)(&blob[0]), &sizes[0], C.int64_t(len(buffers)))}
}

// DeclareBuffers makes the node claim n buffers (a lie about its table).
func (n Node) DeclareBuffers(k int64) Node { n.c.n_buffers = C.int64_t(k); return n }

// Child appends an owned child.
func (n Node) Child(c Node) Node {
	C.ferry_hostile_add_child(n.c, c.c, C.FERRY_HOSTILE_CHILD_NODE)
	return n
}

// NullChild appends a NULL pointer to the children table.
func (n Node) NullChild() Node {
	C.ferry_hostile_add_child(n.c, nil, C.FERRY_HOSTILE_CHILD_NULL)
	return n
}

// ReleasedChild appends a child whose release is NULL.
func (n Node) ReleasedChild() Node {
	C.ferry_hostile_add_child(n.c, nil, C.FERRY_HOSTILE_CHILD_RELEASED)
	return n
}

// SelfChild appends the node itself as its child (a cycle).
func (n Node) SelfChild() Node {
	C.ferry_hostile_add_child(n.c, nil, C.FERRY_HOSTILE_CHILD_SELF)
	return n
}

// Dictionary sets the node's dictionary.
func (n Node) Dictionary(d Node) Node { C.ferry_hostile_set_dictionary(n.c, d.c); return n }

// DeviceOptions are the device fields of a hostile device array.
type DeviceOptions struct {
	DeviceType int32
	DeviceID   int64
	Event      bool  // a bogus sync_event
	Reserved1  int64 // reserved[1]
}

// HostileDeviceArray moves n into a new ArrowDeviceArray in C memory; the
// caller moves it out (ferry.ImportDeviceArray) and frees the struct with
// ferry.FreeRawDeviceArray.
func HostileDeviceArray(n Node, o DeviceOptions) unsafe.Pointer {
	return unsafe.Pointer(C.ferry_hostile_device_array(n.c, C.int32_t(o.DeviceType), C.int64_t(o.DeviceID),
		boolInt32(o.Event), C.int64_t(o.Reserved1)))
}

// HostileCPUArray is HostileDeviceArray on the CPU.
func HostileCPUArray(n Node) unsafe.Pointer {
	return HostileDeviceArray(n, DeviceOptions{DeviceType: C.ARROW_DEVICE_CPU, DeviceID: -1})
}

// HostileSchema fills the released ArrowSchema at out with any format and
// name.
func HostileSchema(out unsafe.Pointer, format, name string) {
	f, n := C.CString(format), C.CString(name)
	defer C.free(unsafe.Pointer(f))
	defer C.free(unsafe.Pointer(n))
	C.ferry_hostile_schema((*C.struct_ArrowSchema)(out), f, n)
}

// Behaviours of HostileStream: each a stream of tests/hostile.
const (
	StreamReleasedSchema = iota + 1 // get_schema succeeds, its schema released
	StreamBadSchema                 // get_schema gives format "q"
	StreamBadBatch                  // one struct<s: utf8> batch whose offsets decrease (0, 2, 1, 5)
	StreamWrongDevice               // a batch on the sim device, the stream on the CPU
	StreamFails                     // get_next returns `code`, no message
	StreamFillsAndFails             // get_next fills `out`, then returns EIO
)

// HostileStream fills the released stream at out with a stream of
// tests/hostile that misbehaves as `behaviour` says.
func HostileStream(out unsafe.Pointer, behaviour int, code int32) {
	schema, batch := "good_struct_utf8", "" // a record batch's schema, struct<s: utf8>
	switch behaviour {
	case StreamReleasedSchema:
		schema = "released_schema"
	case StreamBadSchema:
		schema = "bad_format"
	case StreamBadBatch:
		batch = "struct_decreasing_offsets"
	case StreamWrongDevice:
		batch = "other_device"
	case StreamFails:
		batch = "fails_silently:" + strconv.Itoa(int(code))
	case StreamFillsAndFails:
		batch = "fills_and_fails"
	}
	s, b := C.CString(schema), C.CString(batch)
	defer C.free(unsafe.Pointer(s))
	defer C.free(unsafe.Pointer(b))
	if rc := C.ferry_hostile_stream(s, b, 0, (*C.struct_ArrowDeviceArrayStream)(out)); rc != 0 {
		panic("ferry_hostile_stream: " + syscall.Errno(rc).Error())
	}
}

// HostileLive counts hostile nodes, schemas and streams not released.
func HostileLive() int64 { return int64(C.ferry_hostile_live()) }

// HostileReleasedAgain counts releases of hostile nodes already released.
func HostileReleasedAgain() int64 { return int64(C.ferry_hostile_released_again()) }

func boolInt32(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// ---- the user's own driver library (native.c) ---------------------------------

// Native is the CUDA or HIP driver library the user's own code calls
// (FERRY_CUDA_LIBRARY / FERRY_HIP_LIBRARY: the driver emulations in tests).
type Native int32

const (
	NativeCUDA Native = C.CHELPER_NATIVE_CUDA
	NativeHIP  Native = C.CHELPER_NATIVE_HIP
)

func nativeError(rc C.int, msg *C.char) error {
	if rc == 0 {
		return nil
	}
	return errors.New(C.GoString(msg))
}

// Stream creates a stream on device 0 with the driver's own API.
func (n Native) Stream() (unsafe.Pointer, error) {
	var s unsafe.Pointer
	var msg [256]C.char
	rc := C.chelper_native_stream(C.int32_t(n), &s, &msg[0], 256)
	return s, nativeError(rc, &msg[0])
}

// Event creates an event on device 0 with the driver's own API; the result
// points at the native handle, as an Arrow sync_event does.
func (n Native) Event() (unsafe.Pointer, error) {
	var e unsafe.Pointer
	var msg [256]C.char
	rc := C.chelper_native_event(C.int32_t(n), &e, &msg[0], 256)
	return e, nativeError(rc, &msg[0])
}

func (n Native) DestroyStream(s unsafe.Pointer) int {
	return int(C.chelper_native_stream_destroy(C.int32_t(n), s))
}

func (n Native) DestroyEvent(e unsafe.Pointer) int {
	return int(C.chelper_native_event_destroy(C.int32_t(n), e))
}

// EventDone reports whether the event (a pointer to the handle) completed.
func (n Native) EventDone(e unsafe.Pointer) bool {
	return C.chelper_native_event_done(C.int32_t(n), e) == 1
}

// CloseGate holds the work queued on s from now on until OpenGates.
func (n Native) CloseGate(s unsafe.Pointer) int {
	return int(C.chelper_native_gate_close(C.int32_t(n), s))
}

func (n Native) OpenGates() { C.chelper_native_gates_open(C.int32_t(n)) }

// Pending counts the operations queued on s and not run.
func (n Native) Pending(s unsafe.Pointer) int64 {
	return int64(C.chelper_native_stream_pending(C.int32_t(n), s))
}

// FillStatic fills the released structs with a static int32 array of 256
// values (element 0 holds 256) and its schema: a C producer at the floor.
func FillStatic(schema, array unsafe.Pointer) {
	C.chelper_fill_static((*C.struct_ArrowSchema)(schema), (*C.struct_ArrowDeviceArray)(array))
}

// FloorConsume is the consumer floor over FillStatic's structs: element 0
// read from C memory in Go, then both released in one cgo call.
func FloorConsume(schema, array unsafe.Pointer) int32 {
	a := (*C.struct_ArrowDeviceArray)(array)
	first := int32(0)
	if a.array.length > 0 {
		values := (*C.int32_t)(unsafe.Slice((*unsafe.Pointer)(unsafe.Pointer(a.array.buffers)), 2)[1])
		first = int32(unsafe.Slice(values, a.array.offset+1)[a.array.offset])
	}
	C.chelper_release_pair((*C.struct_ArrowSchema)(schema), a)
	return first
}
