package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"iter"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// DeviceArrayStream is an ArrowDeviceArrayStream in C memory owned by Go:
// imported from any producer, or made by ExportStream. Read it with
//
//	for s.Next() { b := s.Batch(); ... }
//	if err := s.Err(); err != nil { ... }
//
// or `for b, err := range s.All()`. The batch is owned by the stream and
// released by the following Next (use Batch().Move() to keep it). Release the
// stream when done; a cleanup reports and releases forgotten streams.
//
// Each batch is validated (ValidateDefault unless ImportOptions say
// otherwise, against the stream's schema prepared once) before Next hands
// it out; a refused batch is released and ends the stream with the finding.
// After a failure (the producer's, or a refusal) the producer's get_next
// is never called again and Err reports that same failure every time.
//
// Threads: every method may be called from any goroutine; calls run one at
// a time (a second caller waits for the first), so Release waits for a Next
// in flight, and the producer's callbacks never overlap and release comes
// last, exactly once. Next after Release returns false with Err "the
// stream is released". The batch of Batch() (and of All) is released by
// the next Next of any goroutine: goroutines that share a stream take
// batches of their own with NextBatch.
type DeviceArrayStream struct {
	// mu serializes every call, and the reads of the current batch.
	mu       sync.Mutex
	level    ValidateLevel   // each batch's validation (ValidateNone: none)
	prepared *PreparedSchema // the schema batches are validated against
	ownPrep  bool            // prepared was made here (freed with the stream)
	c        *C.struct_ArrowDeviceArrayStream
	batchC   *C.struct_ArrowDeviceArray
	errC     *C.struct_FerryError // C memory: no allocation per Next
	batch    DeviceArray
	schema   *Schema
	err      error
	done     bool
	guard    leakGuard // see guard.go
	leak     int64     // the core's leak-report token (FERRY_LEAK_REPORT), 0 when untracked
}

type streamMemory struct {
	c      *C.struct_ArrowDeviceArrayStream
	batchC *C.struct_ArrowDeviceArray
	errC   *C.struct_FerryError
	leak   int64
}

func (m streamMemory) free() {
	leakUntrack(m.leak)
	C.ferry_device_array_free(m.batchC)
	C.ferry_array_stream_free(m.c)
	C.ferry_error_free(m.errC)
}

// newStream allocates the C side of a stream; the caller fills s.c. The
// stream holds the leak-report token leak (0: none) from now on, also on
// failure (it is forgotten then).
func newStream(leak int64) (*DeviceArrayStream, error) {
	m := streamMemory{C.ferry_array_stream_new(), C.ferry_device_array_new(), C.ferry_error_new(), leak}
	if m.c == nil || m.batchC == nil || m.errC == nil {
		m.free()
		return nil, errorf(syscall.ENOMEM, "stream: out of memory")
	}
	s := &DeviceArrayStream{c: m.c, batchC: m.batchC, errC: m.errC, leak: leak}
	s.batch.c, s.batch.batchOf = m.batchC, s
	track(s)
	return s, nil
}

func (s *DeviceArrayStream) guardState() *leakGuard { return &s.guard }

func (s *DeviceArrayStream) addCleanup() runtime.Cleanup {
	return runtime.AddCleanup(s, func(m streamMemory) {
		reportLeak("DeviceArrayStream")
		m.free()
	}, streamMemory{s.c, s.batchC, s.errC, s.leak})
}

// ImportStream takes ownership of the live ArrowDeviceArrayStream at ptr
// (moved out, leaving ptr released); the caller releases the result. Its
// batches are validated at ValidateDefault (opts: another level,
// ValidateNone to trust the producer, a prepared schema to validate
// against instead of the stream's own).
func ImportStream(ptr unsafe.Pointer, opts ...ImportOptions) (*DeviceArrayStream, error) {
	if RawStreamIsReleased(ptr) {
		return nil, errorf(syscall.EINVAL, "ImportStream: NULL or released stream")
	}
	o, err := importOptions("ImportStream", opts)
	if err != nil {
		return nil, err
	}
	if o.Prepared != nil && o.Prepared.c == nil {
		return nil, errorf(syscall.EINVAL, "ImportStream: ImportOptions.Prepared is freed")
	}
	var leak int64
	if leakReportOn {
		leak = leakTrack(fmt.Sprintf("DeviceArrayStream from ImportStream never released (%s)",
			DeviceType(C.ferry_array_stream_device_type((*C.struct_ArrowDeviceArrayStream)(ptr)))))
	}
	s, err := newStream(leak)
	if err != nil {
		return nil, err
	}
	s.level, s.prepared = o.Validate, o.Prepared
	C.ferry_array_stream_move((*C.struct_ArrowDeviceArrayStream)(ptr), s.c)
	return s, nil
}

// Release releases the current batch, the schema and the stream (calling the
// producer's release, after any call in flight), and frees the C memory;
// harmless twice.
func (s *DeviceArrayStream) Release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release()
}

// release is Release under s.mu.
func (s *DeviceArrayStream) release() {
	if s.c == nil {
		return
	}
	s.guard.disarm()
	s.schema.Release()
	s.schema = nil
	if s.ownPrep {
		s.prepared.Free()
	}
	s.prepared, s.ownPrep = nil, false
	streamMemory{s.c, s.batchC, s.errC, s.leak}.free()
	s.c, s.batchC, s.errC, s.leak = nil, nil, nil, 0
	s.batch.c = nil
	s.done = true
}

// Move returns a stream owning what s owned (the current batch is released
// first) and leaves s released.
func (s *DeviceArrayStream) Move() (*DeviceArrayStream, error) {
	if s == nil {
		return nil, errorf(syscall.EINVAL, "DeviceArrayStream.Move: the stream is released")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released() {
		return nil, errorf(syscall.EINVAL, "DeviceArrayStream.Move: the stream is released")
	}
	t, err := newStream(s.leak)
	if err != nil {
		return nil, err
	}
	s.guard.disarm() // before s.leak changes: a collection arming s reads it
	s.leak = 0       // t holds it now
	C.ferry_array_stream_move(s.c, t.c)
	t.schema, s.schema = s.schema, nil
	t.level, t.prepared, t.ownPrep = s.level, s.prepared, s.ownPrep
	s.prepared, s.ownPrep = nil, false
	t.err, t.done = s.err, s.done
	s.release()
	return t, nil
}

// ExportTo moves the stream into the released ArrowDeviceArrayStream at dst
// (a consumer's struct) and leaves s released. The batch Go holds is
// released first; batches already read are not replayed.
func (s *DeviceArrayStream) ExportTo(dst unsafe.Pointer) error {
	if s == nil {
		return errorf(syscall.EINVAL, "DeviceArrayStream.ExportTo: the stream is released")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released() {
		return errorf(syscall.EINVAL, "DeviceArrayStream.ExportTo: the stream is released")
	}
	if dst == nil {
		return errorf(syscall.EINVAL, "DeviceArrayStream.ExportTo: NULL destination")
	}
	if rc := C.ferry_array_stream_move(s.c, (*C.struct_ArrowDeviceArrayStream)(dst)); rc != 0 {
		return errorf(syscall.Errno(rc), "DeviceArrayStream.ExportTo: destination is not released")
	}
	s.release()
	return nil
}

// Ptr returns the address of the ArrowDeviceArrayStream (valid while live).
func (s *DeviceArrayStream) Ptr() unsafe.Pointer { return unsafe.Pointer(s.c) }

// IsReleased reports whether the stream is gone.
func (s *DeviceArrayStream) IsReleased() bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released()
}

// released is IsReleased under s.mu.
func (s *DeviceArrayStream) released() bool {
	return s == nil || RawStreamIsReleased(unsafe.Pointer(s.c))
}

// DeviceType returns the device type every batch has (0 once released).
func (s *DeviceArrayStream) DeviceType() DeviceType {
	s.mu.Lock()
	defer s.mu.Unlock()
	return DeviceType(C.ferry_array_stream_device_type(s.c))
}

// Schema calls get_schema once and keeps the result (owned by the stream,
// released with it); later calls return the same schema.
func (s *DeviceArrayStream) Schema() (*Schema, error) {
	if s == nil {
		return nil, errorf(syscall.EINVAL, "DeviceArrayStream.Schema: the stream is released")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadSchema()
}

// cloneSchema is an owned copy of the stream's schema, for a batch leaving
// the stream (under s.mu).
func (s *DeviceArrayStream) cloneSchema(where string) (*Schema, error) {
	sc, err := s.loadSchema()
	if err != nil {
		return nil, &Error{Code: codeOf(err), Message: where + ": the stream's schema: " + messageOf(err)}
	}
	return sc.Clone()
}

// loadSchema is Schema under s.mu.
func (s *DeviceArrayStream) loadSchema() (*Schema, error) {
	if s.schema != nil {
		return &Schema{c: s.schema.c}, nil
	}
	if s.released() {
		return nil, errorf(syscall.EINVAL, "DeviceArrayStream.Schema: the stream is released")
	}
	c := C.ferry_schema_new()
	if c == nil {
		return nil, errorf(syscall.ENOMEM, "DeviceArrayStream.Schema: out of memory")
	}
	s.errC.message[0] = 0
	if rc := C.ferry_array_stream_get_schema(s.c, c, s.errC); rc != 0 {
		C.ferry_schema_free(c)
		return nil, codeError(rc, s.errC)
	}
	s.schema = newOwnedSchema(c)
	return &Schema{c: c}, nil
}

// Next releases the current batch and fetches the next one; false at the end
// of the stream or on failure (then Err says why). The batch may still be
// pending on its device: use NextOn, or the batch's Wait, before reading
// device memory.
func (s *DeviceArrayStream) Next() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next(nil, false)
}

// NextBatch fetches the next batch and returns it moved out of the stream
// (owned by the caller, with its own copy of the schema; see Move): nil,
// nil at the end, nil and Err's error on failure. It is Next and
// Batch().Move() as one call, so goroutines sharing a stream each get
// batches of their own.
func (s *DeviceArrayStream) NextBatch() (*DeviceArray, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.next(nil, false) {
		return nil, s.err
	}
	b, err := s.batch.move()
	if err != nil {
		// The batch cannot leave the stream (no memory for its schema):
		// the stream ends with that error rather than skip a batch.
		s.releaseBatch()
		s.err, s.done = err, true
	}
	return b, err
}

// next is Next (NextOn when on) under s.mu.
func (s *DeviceArrayStream) next(consumerStream unsafe.Pointer, on bool) bool {
	if s.c == nil {
		if s.err == nil {
			s.err = errorf(syscall.EINVAL, "DeviceArrayStream.Next: the stream is released")
		}
		return false
	}
	if s.done {
		s.releaseBatch()
		return false
	}
	var pc *C.struct_FerryPreparedSchema
	if s.level != ValidateNone {
		if s.prepared == nil {
			if err := s.prepare(); err != nil {
				s.releaseBatch()
				s.err, s.done = err, true
				return false
			}
		}
		pc = s.prepared.c
	}
	var rc C.int
	if on {
		rc = C.ferrygo_stream_next_on(s.c, s.batchC, consumerStream, pc, C.int32_t(s.level), s.errC)
	} else {
		rc = C.ferrygo_stream_next(s.c, s.batchC, pc, C.int32_t(s.level), s.errC)
	}
	return s.stepped(rc)
}

// prepare prepares the stream's schema for validating its batches (once):
// a get_schema failure or a schema the validator refuses ends the stream.
func (s *DeviceArrayStream) prepare() error {
	sc, err := s.loadSchema()
	if err != nil {
		return err
	}
	p, err := sc.Prepare()
	if err != nil {
		return &Error{Code: codeOf(err), Message: "the stream's schema fails validation: " + messageOf(err)}
	}
	s.prepared, s.ownPrep = p, true
	return nil
}

// NextOn is Next, then hands the batch to consumerStream, a stream of the
// batch's device: that stream is made to wait on the batch's sync event, so
// work queued on it afterwards sees the data, and the host does not block.
// With consumerStream nil the host waits for the event instead, so the
// batch can be read at once. A batch whose wait cannot be queued is released
// and ends the stream with the error (never handed out unordered).
func (s *DeviceArrayStream) NextOn(consumerStream unsafe.Pointer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next(consumerStream, true)
}

func (s *DeviceArrayStream) releaseBatch() {
	if s.batchC != nil && abiDeviceArray(s.batchC).Array.Release != nil {
		C.ferry_device_array_release(s.batchC)
	}
}

func (s *DeviceArrayStream) stepped(rc C.int) bool {
	switch {
	case rc == 0 && abiDeviceArray(s.batchC).Array.Release != nil:
		return true
	case rc == 0: // the end: the batch stayed released
		s.done = true
		return false
	default:
		s.err = codeError(rc, s.errC)
		s.done = true
		return false
	}
}

// Batch returns the current batch, owned by the stream until the next call
// of Next (Move it to keep it).
func (s *DeviceArrayStream) Batch() *DeviceArray { return &s.batch }

// Err returns the failure that ended the stream (the same one every time),
// nil after a clean end.
func (s *DeviceArrayStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// All returns an iterator over the batches (each valid for one iteration
// unless moved); a failure is yielded once as the error, with a nil batch.
func (s *DeviceArrayStream) All() iter.Seq2[*DeviceArray, error] {
	return s.iterate(s.Next)
}

// AllOn is All with every batch handed to consumerStream as NextOn does
// (nil: the host waits for each batch's event).
func (s *DeviceArrayStream) AllOn(consumerStream unsafe.Pointer) iter.Seq2[*DeviceArray, error] {
	return s.iterate(func() bool { return s.NextOn(consumerStream) })
}

func (s *DeviceArrayStream) iterate(next func() bool) iter.Seq2[*DeviceArray, error] {
	return func(yield func(*DeviceArray, error) bool) {
		for next() {
			if !yield(s.Batch(), nil) {
				return
			}
		}
		if err := s.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// NewStreamFromArrays makes a stream of deviceType that yields schema and
// then the arrays, in order (the core's ferry_array_stream_init_from_arrays). On
// success the schema and every array are moved in (left released; a schema
// attached to an array is released, since the stream's describes them all);
// on failure nothing is moved and all stay the caller's. Every array must be
// live, on deviceType, and given once.
func NewStreamFromArrays(schema *Schema, deviceType DeviceType, arrays ...*DeviceArray) (*DeviceArrayStream, error) {
	if schema.IsReleased() || !schema.owned {
		return nil, errorf(syscall.EINVAL, "NewStreamFromArrays: the schema is released or borrowed")
	}
	addrs := make([]C.uintptr_t, len(arrays))
	seen := make(map[*C.struct_ArrowDeviceArray]int, len(arrays))
	for i, a := range arrays {
		if a.IsReleased() {
			return nil, errorf(syscall.EINVAL, "NewStreamFromArrays: arrays[%d] is released", i)
		}
		if j, dup := seen[a.c]; dup {
			return nil, errorf(syscall.EINVAL, "NewStreamFromArrays: arrays[%d] and arrays[%d] are the same array", j, i)
		}
		seen[a.c] = i
		addrs[i] = C.uintptr_t(uintptr(unsafe.Pointer(a.c)))
	}
	s, err := newStream(0)
	if err != nil {
		return nil, err
	}
	var first *C.uintptr_t
	if len(addrs) > 0 {
		first = &addrs[0]
	}
	s.errC.message[0] = 0
	if rc := C.ferrygo_stream_init_from_arrays(s.c, C.ArrowDeviceType(deviceType), schema.c, first, C.int64_t(len(addrs)), s.errC); rc != 0 {
		err := codeError(rc, s.errC)
		s.Release()
		return nil, err
	}
	schema.Release() // moved in: only the struct is freed
	for _, a := range arrays {
		if a.batchOf == nil {
			C.ferry_device_array_free(a.handOver()) // moved in: only freed
		}
	}
	return s, nil
}

// ---- producing streams from Go -------------------------------------------

// streamProducer is the Go side of a stream exported by ExportStream,
// reached from C through a handle.
type streamProducer struct {
	data     func() (*ArrayData, error) // used instead of next when set
	opts     *ExportOptions
	field    Field
	schemaFn func() (*Schema, error) // used instead of field when set
	next     func() (*DeviceArray, error)
	stop     func()
}

// getSchema fills the released out with the stream's schema.
func (p *streamProducer) getSchema(out *C.struct_ArrowSchema) error {
	if p.schemaFn == nil {
		if err := p.field.fill(out); err != nil {
			C.ferry_schema_release(out)
			return err
		}
		return nil
	}
	s, err := p.schemaFn()
	if err != nil {
		return err
	}
	if s == nil || !s.owned || s.IsReleased() {
		return errorf(syscall.EINVAL, "get_schema: the Go producer returned no owned schema")
	}
	C.ferry_schema_move(s.c, out)
	s.Release()
	return nil
}

// ExportStream makes a stream of deviceType whose schema is field and whose
// batches come from next (called from whatever thread the consumer uses;
// return nil, nil at the end). An error from next reaches the consumer as
// its errno code (EIO unless it is an *Error or a syscall.Errno) and message;
// a panic becomes EIO. The result is owned by the caller: consume it in Go or
// hand it to a C consumer with ExportTo.
func ExportStream(field Field, deviceType DeviceType, next func() (*DeviceArray, error)) (*DeviceArrayStream, error) {
	return exportStream(&streamProducer{field: field, next: next}, deviceType)
}

// ExportDataStream is ExportStream for producers that describe each batch
// as ArrayData: each batch is exported straight into the consumer's struct
// (one cgo call for a leaf array, no Go object per batch), the fastest way
// to produce a stream from Go. opts (may be nil: the CPU) places the
// batches; next returns nil, nil at the end.
func ExportDataStream(field Field, deviceType DeviceType, opts *ExportOptions, next func() (*ArrayData, error)) (*DeviceArrayStream, error) {
	if opts != nil && (opts.SyncEvent != nil || opts.ReleaseEvent != nil) {
		return nil, errorf(syscall.EINVAL, "ExportDataStream: ExportOptions.SyncEvent cannot serve every batch "+
			"(use ProducerStream with SyncRecordEvent, or ExportStream with arrays exported one by one)")
	}
	return exportStream(&streamProducer{field: field, data: next, opts: opts}, deviceType)
}

// ExportStreamWithSchema is ExportStream with the schema made by a function
// at each get_schema (it returns an owned Schema, which the stream moves to
// the consumer, or an error that the consumer receives).
func ExportStreamWithSchema(schema func() (*Schema, error), deviceType DeviceType, next func() (*DeviceArray, error)) (*DeviceArrayStream, error) {
	return exportStream(&streamProducer{schemaFn: schema, next: next}, deviceType)
}

// BatchReader is a source of batches for ExportReader, such as an adapter
// over another library's record reader.
type BatchReader interface {
	// Schema returns an owned schema describing every batch; the stream
	// moves it to the consumer (it may be called more than once).
	Schema() (*Schema, error)
	// Next returns the next batch, owned (the stream moves it to the
	// consumer), or nil, nil at the end.
	Next() (*DeviceArray, error)
	// Release is called exactly once: when the consumer releases the
	// stream, or when ExportReader fails.
	Release()
}

// ExportReader makes a stream of deviceType over r (see ExportStream for
// threads, errors and panics); the stream owns r from now on, and releases
// it with itself.
func ExportReader(r BatchReader, deviceType DeviceType) (*DeviceArrayStream, error) {
	s, err := exportStream(&streamProducer{schemaFn: r.Schema, next: r.Next, stop: r.Release}, deviceType)
	if err != nil {
		r.Release()
	}
	return s, err
}

// ExportSeq makes a stream from an iterator of batches (see ExportStream);
// the first error the iterator yields ends the stream with that error, and
// the iterator is stopped when the consumer releases the stream.
//
// The iterator runs on its own goroutine, driven batch by batch through
// channels: iter.Pull cannot be used here, because get_next runs in a cgo
// callback, whose goroutine is locked to the C thread, and the runtime
// refuses to switch coroutines across thread locking.
func ExportSeq(field Field, deviceType DeviceType, seq iter.Seq2[*DeviceArray, error]) (*DeviceArrayStream, error) {
	pump := startPump(seq)
	s, err := exportStream(&streamProducer{field: field, next: pump.next, stop: pump.stop}, deviceType)
	if err != nil {
		pump.stop()
	}
	return s, err
}

type pumpItem struct {
	array *DeviceArray
	err   error
}

// seqPump runs an iterator on a goroutine that yields one item per request.
type seqPump struct {
	req, stopCh, done chan struct{}
	res               chan pumpItem
	stopOnce          sync.Once
}

func startPump(seq iter.Seq2[*DeviceArray, error]) *seqPump {
	p := &seqPump{req: make(chan struct{}), stopCh: make(chan struct{}), done: make(chan struct{}),
		res: make(chan pumpItem)}
	go func() {
		defer close(p.done)
		defer func() {
			if r := recover(); r != nil {
				p.serveEnd(pumpItem{err: fmt.Errorf("panic in Go iterator: %v", r)})
			}
		}()
		if !p.wait() {
			return
		}
		seq(func(a *DeviceArray, err error) bool {
			select {
			case p.res <- pumpItem{a, err}:
			case <-p.stopCh:
				a.Release()
				return false
			}
			return p.wait()
		})
		p.serveEnd(pumpItem{})
	}()
	return p
}

// wait blocks until the next request (true) or the stop (false).
func (p *seqPump) wait() bool {
	select {
	case <-p.req:
		return true
	case <-p.stopCh:
		return false
	}
}

// serveEnd answers every later request with item (the end, or a failure).
func (p *seqPump) serveEnd(item pumpItem) {
	for {
		select {
		case p.res <- item:
		case <-p.stopCh:
			return
		}
		if !p.wait() {
			return
		}
	}
}

func (p *seqPump) next() (*DeviceArray, error) {
	select {
	case p.req <- struct{}{}:
	case <-p.done:
		return nil, errorf(syscall.EIO, "the Go iterator has stopped")
	}
	it := <-p.res
	return it.array, it.err
}

// stop ends the iterator and waits for its goroutine to finish.
func (p *seqPump) stop() {
	p.stopOnce.Do(func() { close(p.stopCh) })
	<-p.done
}

func exportStream(p *streamProducer, deviceType DeviceType) (*DeviceArrayStream, error) {
	s, err := newStream(0)
	if err != nil {
		return nil, err
	}
	h := handles.put(p)
	if rc := C.ferrygo_stream_init(s.c, C.ArrowDeviceType(deviceType), C.uintptr_t(h), s.errC); rc != 0 {
		handles.take(h)
		err := codeError(rc, s.errC)
		s.Release()
		return nil, err
	}
	return s, nil
}
