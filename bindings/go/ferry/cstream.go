package ferry

/*
#include <stdlib.h>
#include "shim.h"

static struct ArrowArrayStream* ferrygo_cstream_new(void) {
  return (struct ArrowArrayStream*)calloc(1, sizeof(struct ArrowArrayStream));
}
static void ferrygo_cstream_free(struct ArrowArrayStream* s) {
  if (s == NULL) return;
  if (s->release != NULL) s->release(s);
  free(s);
}
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// The plain C stream interface (struct ArrowArrayStream: CPU batches, no
// device fields), which DuckDB, ADBC drivers, Polars and arrow-go's
// cdata.ExportRecordReader produce and consume. Both directions are the
// core's adapters (ferry_array_stream_from_cpu_stream and
// ferry_array_stream_to_cpu_stream); Go adds ownership and options.

// NewRawCStream is a released struct ArrowArrayStream in C memory, for a
// C API (or arrow-go's cdata) that fills or consumes one by pointer; free it
// with FreeRawCStream, which releases it first if it is still live.
func NewRawCStream() unsafe.Pointer { return unsafe.Pointer(C.ferrygo_cstream_new()) }

// FreeRawCStream releases the ArrowArrayStream at p if it is live, then
// frees it (p from NewRawCStream; nil is accepted).
func FreeRawCStream(p unsafe.Pointer) { C.ferrygo_cstream_free((*C.struct_ArrowArrayStream)(p)) }

// RawCStreamIsReleased reports whether the ArrowArrayStream at p is released.
func RawCStreamIsReleased(p unsafe.Pointer) bool {
	return p == nil || abiCStream(p).Release == nil
}

// ImportCStream takes ownership of the live plain ArrowArrayStream at ptr
// (moved out, leaving ptr released) as a CPU DeviceArrayStream the caller
// releases; its batches are validated as ImportStream's are (opts). On a
// refusal (a released stream, bad options, the core's refusal) ptr is
// untouched and still the caller's; only running out of memory after the
// core took the stream releases it.
func ImportCStream(ptr unsafe.Pointer, opts ...ImportOptions) (*DeviceArrayStream, error) {
	src := (*C.struct_ArrowArrayStream)(ptr)
	if src == nil || abiCStream(ptr).Release == nil {
		return nil, errorf(syscall.EINVAL, "ImportCStream: NULL or released stream")
	}
	if _, err := importOptions("ImportCStream", opts); err != nil {
		return nil, err
	}
	tmp := C.ferry_array_stream_new()
	defer C.ferry_array_stream_free(tmp) // released by ImportStream's move
	if err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_array_stream_from_cpu_stream(src, tmp, e)
	}); err != nil {
		return nil, prefixed("ImportCStream", err)
	}
	s, err := ImportStream(unsafe.Pointer(tmp), opts...)
	if err != nil {
		return nil, err // tmp (and with it the producer's stream) is released by the free
	}
	return s, nil
}

// CStreamOptions tunes DeviceArrayStream.ExportToCStream. The zero value
// validates each batch at ValidateDefault and refuses a stream that is not
// on the CPU.
type CStreamOptions struct {
	// Validate is the level each batch is validated at (against the
	// stream's schema, prepared once) before the consumer sees it:
	// ValidateDefault (the zero value), ValidateFull, or ValidateNone.
	Validate ValidateLevel
	// CopyToHost brings batches on another device to the host (moved
	// without a copy where the host can reach the memory) instead of
	// refusing the stream.
	CopyToHost bool
	// RecordBatches presents a stream whose schema is not a struct as
	// record batches of one column, as arrow-go's, arrow-rs's and Arrow
	// Java's stream readers require.
	RecordBatches bool
}

// ExportToCStream moves the stream into the released plain ArrowArrayStream
// at dst (the C stream interface, CPU batches) and leaves s released; the
// consumer releases dst, which releases the stream. opts: at most one
// CStreamOptions. On failure s is untouched and still the caller's.
func (s *DeviceArrayStream) ExportToCStream(dst unsafe.Pointer, opts ...CStreamOptions) error {
	const where = "DeviceArrayStream.ExportToCStream"
	if len(opts) > 1 {
		return errorf(syscall.EINVAL, "%s: %d CStreamOptions given, at most one is accepted", where, len(opts))
	}
	var o CStreamOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.Validate != ValidateNone && o.Validate != ValidateDefault && o.Validate != ValidateFull {
		return errorf(syscall.EINVAL, "%s: unknown validation level %d", where, o.Validate)
	}
	out := (*C.struct_ArrowArrayStream)(dst)
	if out == nil {
		return errorf(syscall.EINVAL, "%s: NULL destination", where)
	}
	if abiCStream(dst).Release != nil {
		return errorf(syscall.EINVAL, "%s: destination is not released", where)
	}
	var flags C.int64_t
	if o.CopyToHost {
		flags |= C.FERRY_CPU_STREAM_COPY_TO_HOST
	}
	if o.RecordBatches {
		flags |= C.FERRY_CPU_STREAM_RECORD_BATCHES
	}
	if s == nil {
		return errorf(syscall.EINVAL, "%s: the stream is released", where)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released() {
		return errorf(syscall.EINVAL, "%s: the stream is released", where)
	}
	// The adapter moves s.c in only on success; on failure it is untouched.
	if err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_array_stream_to_cpu_stream(s.c, C.int(o.Validate), flags, out, e)
	}); err != nil {
		return prefixed(where, err)
	}
	s.release()
	return nil
}

// prefixed names where an error of the core came from.
func prefixed(where string, err error) error {
	return &Error{Code: codeOf(err), Message: where + ": " + messageOf(err)}
}
