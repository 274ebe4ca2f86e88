package ferry

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/internal/abi"
)

// DeviceArray is an ArrowDeviceArray in C memory owned by Go: imported from a
// producer, exported by Go, or a batch of a stream. Release it exactly when
// done (a second Release is harmless); a cleanup releases forgotten arrays
// and reports them as leaks (SetLeakHook).
//
// Threads: the methods that read (Host, HostWith, Read, Validate, Findings,
// Schema, CopyTo, Wait, IsReleased, DeviceType, ...) may run from many
// goroutines at once, and Release (or a consuming call: Move, ExportTo,
// ToHost, MoveToDevice, ToDLPack) waits for those in flight; a read after
// it gets EINVAL "the array is released". Views (HostArray, ArrayView, the
// slices they return) are borrowed and not covered: a goroutine that reads
// through one while another may release the array does so inside Read. The
// lean accessors (Length, Offset, NullCount, NumBuffers, NumChildren,
// Buffer, Ptr) and Import take no lock, for hot loops that own the array. A
// stream's batch uses its stream's lock. See README.md, "Threads".
type DeviceArray struct {
	// mu holds off a Release (exclusive) while reads (shared) are in
	// flight; a batch uses its stream's mu instead.
	mu      sync.RWMutex
	c       *C.struct_ArrowDeviceArray
	schema  *Schema // may be nil; owned unless the array is a stream batch
	batchOf *DeviceArrayStream
	guard   leakGuard // owned arrays only (see guard.go)
	leak    int64     // the core's leak-report token (FERRY_LEAK_REPORT), 0 when untracked
	// ownSchema holds an imported schema in the array's own allocation
	// (schema points here then): one Go object per import, and the
	// array's guard covers both.
	ownSchema Schema
	// validated is the highest level the array is known to pass against its
	// own schema (validatedCode), so a conversion does not validate again
	// what its import already did; 0 when unknown. Reset at release.
	validated atomic.Int32
}

// validatedCode stores a ValidateLevel in DeviceArray.validated: 0 means
// not validated, so the zero DeviceArray needs no initialisation.
func validatedCode(level ValidateLevel) int32 {
	switch level {
	case ValidateDefault:
		return 1
	case ValidateFull:
		return 2
	}
	return 0
}

// markValidated records that d passed level against its own schema.
func (d *DeviceArray) markValidated(level ValidateLevel) {
	code := validatedCode(level)
	for {
		old := d.validated.Load()
		if old >= code || d.validated.CompareAndSwap(old, code) {
			return
		}
	}
}

// Validated returns the highest level d is known to pass against its own
// schema: the level its import validated it at (ImportDeviceArray, Import
// or ImportArray without ImportOptions.Prepared; a stream's batch, at its
// stream's level), or a level a Validate call passed; ValidateNone when
// none. Conversions (ferryarrow.ToArrow, ToRecord) skip a validation that
// was already done. Reading it takes no lock (a stream's batch: call it
// from the goroutine that reads the stream).
func (d *DeviceArray) Validated() ValidateLevel {
	if d == nil {
		return ValidateNone
	}
	if s := d.batchOf; s != nil {
		if s.ownPrep {
			return s.level
		}
		return ValidateNone
	}
	switch d.validated.Load() {
	case 1:
		return ValidateDefault
	case 2:
		return ValidateFull
	}
	return ValidateNone
}

// newOwnedDeviceArray wraps a C-allocated device array owned by Go, with
// schema (may be nil) attached.
func newOwnedDeviceArray(c *C.struct_ArrowDeviceArray, schema *Schema) *DeviceArray {
	return newTrackedDeviceArray(c, schema, 0)
}

// newTrackedDeviceArray is newOwnedDeviceArray for an array registered with
// the core's leak report under token leak (0: none), which it now holds.
func newTrackedDeviceArray(c *C.struct_ArrowDeviceArray, schema *Schema, leak int64) *DeviceArray {
	d := &DeviceArray{c: c, leak: leak}
	d.attach(schema)
	track(d)
	return d
}

// newLeftover wraps what leaves a stream or another array as a new owned
// array, registered with the leak report (when on) as how describes.
func newLeftover(how string, c *C.struct_ArrowDeviceArray, schema *Schema) *DeviceArray {
	var leak int64
	if leakReportOn {
		var sc *C.struct_ArrowSchema
		if schema != nil {
			sc = schema.c
		}
		leak = leakTrack(describeArray(how, sc, c))
	}
	return newTrackedDeviceArray(c, schema, leak)
}

// attach makes s d's schema; a schema held inside another array (ownSchema)
// moves into d's own slot.
func (d *DeviceArray) attach(s *Schema) {
	if s == nil || !s.embedded {
		d.schema = s
		return
	}
	d.ownSchema = Schema{c: s.c, owned: s.owned, embedded: true}
	s.c = nil
	d.schema = &d.ownSchema
}

func (d *DeviceArray) guardState() *leakGuard { return &d.guard }

// rlock holds d against a Release from another goroutine (shared); a batch
// takes its stream's lock, which Next takes too. Internal helpers called
// under it never lock again (sync.RWMutex is not reentrant).
func (d *DeviceArray) rlock()   { d.locker(true).Lock() }
func (d *DeviceArray) runlock() { d.locker(true).Unlock() }

// lock is the exclusive hold of Release and the consuming calls.
func (d *DeviceArray) lock()   { d.locker(false).Lock() }
func (d *DeviceArray) unlock() { d.locker(false).Unlock() }

// acquire starts a call named what that needs d live: it takes d's lock
// (shared for reads, else exclusive) and returns with it held, or returns
// an error naming what, holding nothing, when d is nil or released.
func (d *DeviceArray) acquire(what string, shared bool) error {
	if d == nil {
		return errorf(syscall.EINVAL, "%s: the array is released", what)
	}
	l := d.locker(shared)
	l.Lock()
	if d.released() {
		l.Unlock()
		return errorf(syscall.EINVAL, "%s: the array is released", what)
	}
	return nil
}

// locker is the lock rlock (shared) and lock take: a batch's stream lock,
// else d.mu's read or write side.
func (d *DeviceArray) locker(shared bool) sync.Locker {
	switch {
	case d.batchOf != nil:
		return &d.batchOf.mu
	case shared:
		return d.mu.RLocker()
	}
	return &d.mu
}

// arrayMemory is what a forgotten array's cleanup releases: the array and
// the schema held in its own slot.
type arrayMemory struct {
	array  *C.struct_ArrowDeviceArray
	schema *C.struct_ArrowSchema
	leak   int64
}

func (d *DeviceArray) addCleanup() runtime.Cleanup {
	// ownSchema.c is set before the array is tracked and cleared only after
	// its guard is disarmed; d.schema may be set later (ExportArray,
	// SetSchema) and is not read here.
	m := arrayMemory{array: d.c, schema: d.ownSchema.c, leak: d.leak}
	return runtime.AddCleanup(d, func(m arrayMemory) {
		reportLeak("DeviceArray")
		leakUntrack(m.leak)
		C.ferry_device_array_free(m.array)
		if m.schema != nil {
			C.ferry_schema_free(m.schema)
		}
	}, m)
}

// handOver ends Go's ownership of an owned array and returns its C struct
// (still live) for the caller to move and free; the schema is released.
func (d *DeviceArray) handOver() *C.struct_ArrowDeviceArray {
	d.guard.disarm()
	leakUntrack(d.leak)
	d.leak = 0
	d.validated.Store(0)
	c := d.c
	d.c = nil
	d.schema.Release()
	d.schema = nil
	return c
}

// ImportOptions tunes an import (ImportDeviceArray, DeviceArray.Import,
// ImportStream). The zero value (and no options at all) validates at
// ValidateDefault, as every ferry binding does on import.
type ImportOptions struct {
	// Validate is the level each imported array (each batch of a stream)
	// is validated at before it is accepted: ValidateDefault (the zero
	// value), ValidateFull, or ValidateNone, the explicit opt-out for
	// producers the caller trusts.
	Validate ValidateLevel
	// Prepared (may be nil; borrowed) is the schema to validate against,
	// prepared once with Schema.Prepare: an array imported without its
	// schema can then be validated, one imported with it skips the schema's
	// walk, and a stream uses it instead of preparing its own.
	Prepared *PreparedSchema
}

// importOptions is the one ImportOptions of a variadic list (the zero value
// when none is given); more than one is refused.
func importOptions(where string, opts []ImportOptions) (ImportOptions, error) {
	switch len(opts) {
	case 0:
		return ImportOptions{}, nil
	case 1:
		o := opts[0]
		if o.Validate != ValidateNone && o.Validate != ValidateDefault && o.Validate != ValidateFull {
			return o, errorf(syscall.EINVAL, "%s: unknown validation level %d", where, o.Validate)
		}
		return o, nil
	}
	return ImportOptions{}, errorf(syscall.EINVAL, "%s: %d ImportOptions given, at most one is accepted", where, len(opts))
}

// ImportDeviceArray takes ownership of the live ArrowDeviceArray at array
// (moved out; the struct is left released) and, when schema is not nil, of
// the ArrowSchema describing it (moved too), after validating the array at
// ValidateDefault (opts: another level, ValidateNone to trust the producer,
// a prepared schema). A refused array comes back as EINVAL "the array fails
// validation: <the validator's finding>". On failure nothing is moved and
// both structs are still the caller's.
func ImportDeviceArray(array unsafe.Pointer, schema unsafe.Pointer, opts ...ImportOptions) (*DeviceArray, error) {
	d := new(DeviceArray)
	if err := d.Import(array, schema, opts...); err != nil {
		return nil, err
	}
	return d, nil
}

// Import is ImportDeviceArray into d, which must hold nothing (the zero
// DeviceArray, or one released): a consumer that keeps one DeviceArray and
// imports every array it is handed into it allocates nothing per import
// (the lean path; ImportDeviceArray makes one Go object each time). It
// validates as ImportDeviceArray does (ImportOptions{Validate:
// ValidateNone} for the trusted hot loop). On failure nothing is moved and
// d stays empty. Import takes no lock: d is the caller's alone until it
// returns.
func (d *DeviceArray) Import(array unsafe.Pointer, schema unsafe.Pointer, opts ...ImportOptions) error {
	if d.c != nil || d.batchOf != nil {
		return errorf(syscall.EINVAL, "DeviceArray.Import: the DeviceArray holds an array (release it first) or is a stream's batch")
	}
	src := (*C.struct_ArrowDeviceArray)(array)
	if src == nil || abiDeviceArray(src).Array.Release == nil {
		return errorf(syscall.EINVAL, "ImportDeviceArray: NULL or released array")
	}
	srcSchema := (*C.struct_ArrowSchema)(schema)
	if srcSchema != nil && abiSchema(srcSchema).Release == nil {
		return errorf(syscall.EINVAL, "ImportDeviceArray: the schema is released")
	}
	o, err := importOptions("ImportDeviceArray", opts)
	if err != nil {
		return err
	}
	if o.Validate != ValidateNone {
		// Validated where the producer left it: a refusal moves nothing.
		if err := validateSource("ImportDeviceArray", o, srcSchema, src); err != nil {
			return err
		}
	}
	c := newArrayStruct()
	var sc *C.struct_ArrowSchema
	if srcSchema != nil {
		sc = newSchemaStruct()
	}
	if c == nil || (srcSchema != nil && sc == nil) {
		if c != nil {
			recycle(c)
		}
		return errorf(syscall.ENOMEM, "ImportDeviceArray: out of memory")
	}
	// Moved in Go: copies that mark the sources released (all C memory),
	// without a cgo call.
	*abiDeviceArray(c) = *abiDeviceArray(src)
	abiDeviceArray(src).Array.Release = nil
	d.c = c
	d.schema = nil
	if sc != nil {
		*abiSchema(sc) = *abiSchema(srcSchema)
		abiSchema(srcSchema).Release = nil
		d.ownSchema = Schema{c: sc, owned: true, embedded: true}
		d.schema = &d.ownSchema
	}
	if leakReportOn {
		d.leak = leakTrack(describeArray("ImportDeviceArray", sc, c))
	}
	d.validated.Store(0)
	if o.Prepared == nil && sc != nil {
		d.markValidated(o.Validate)
	}
	// The fields are set before the guard is live again: a collection that
	// finds d in the nursery arms it only from here on (guard.go).
	d.guard.state.Store(guardNew)
	track(d)
	return nil
}

// validateSource validates the producer's src (described by schema, or by
// o.Prepared) at o.Validate before anything is moved.
func validateSource(where string, o ImportOptions, schema *C.struct_ArrowSchema, src *C.struct_ArrowDeviceArray) error {
	var pc *C.struct_FerryPreparedSchema
	if o.Prepared != nil {
		if pc = o.Prepared.c; pc == nil {
			return errorf(syscall.EINVAL, "%s: ImportOptions.Prepared is freed", where)
		}
	} else if schema == nil {
		return errorf(syscall.EINVAL, "%s: no schema to validate the array against "+
			"(pass its schema, ImportOptions.Prepared, or ImportOptions{Validate: ValidateNone} to trust the producer)", where)
	}
	// One cgo call that never calls back into Go, its addresses as integers
	// (C memory: nothing for cgo to check), without a message buffer: only a
	// refusal (validation reads and never changes the array) is validated
	// again to word its finding.
	validate := func(e *C.struct_FerryError) C.int {
		return C.ferrygo_validate_quiet(C.uintptr_t(uintptr(unsafe.Pointer(pc))), C.uintptr_t(uintptr(unsafe.Pointer(schema))),
			C.uintptr_t(uintptr(unsafe.Pointer(src))), C.int32_t(o.Validate), e)
	}
	var err error
	if validate(nil) != 0 {
		e := getErrorBuffer()
		err = codeError(validate(e), e)
		putErrorBuffer(e)
	}
	runtime.KeepAlive(o.Prepared)
	runtime.KeepAlive(src) // ImportArray's view is Go memory, passed as an integer
	return refused(where, err)
}

// refused words a validator's finding as an import's refusal (nil stays nil).
func refused(where string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: codeOf(err), Message: where + ": the array fails validation: " + messageOf(err)}
}

// ImportArray takes ownership of a plain ArrowArray (the C data interface:
// CPU memory, no device fields) and of its ArrowSchema when schema is not
// nil, both moved out (left released), as a CPU DeviceArray. onRelease (may
// be nil) runs exactly once, after the array has been released by whoever
// ends up owning it: what a producer needs when the memory it exported must
// stay pinned or referenced until then. It validates as ImportDeviceArray
// does (opts). On failure nothing is moved and onRelease is not called.
func ImportArray(array unsafe.Pointer, schema unsafe.Pointer, onRelease func(), opts ...ImportOptions) (*DeviceArray, error) {
	src := (*C.struct_ArrowArray)(array)
	if src == nil || abiArray(src).Release == nil {
		return nil, errorf(syscall.EINVAL, "ImportArray: NULL or released array")
	}
	if schema != nil && RawSchemaIsReleased(schema) {
		return nil, errorf(syscall.EINVAL, "ImportArray: the schema is released")
	}
	o, err := importOptions("ImportArray", opts)
	if err != nil {
		return nil, err
	}
	if o.Validate != ValidateNone {
		// A CPU device array that borrows src's fields, for the validator
		// (C pointers only: cgo accepts its address).
		view := new(C.struct_ArrowDeviceArray)
		v := abiDeviceArray(view)
		v.Array = *abiArray(src)
		v.DeviceType, v.DeviceId = int32(DeviceCPU), -1
		if err := validateSource("ImportArray", o, (*C.struct_ArrowSchema)(schema), view); err != nil {
			return nil, err
		}
	}
	var s *Schema
	if schema != nil {
		if s, err = importSchema(schema, false); err != nil {
			return nil, err
		}
	}
	// giveBack undoes the schema's move on failure.
	giveBack := func(err error) (*DeviceArray, error) {
		if s != nil {
			C.ferry_schema_move(s.c, (*C.struct_ArrowSchema)(schema))
			s.Release()
		}
		return nil, err
	}
	c := newArrayStruct()
	if c == nil {
		return giveBack(errorf(syscall.ENOMEM, "ImportArray: out of memory"))
	}
	var h uintptr
	if onRelease != nil {
		h = handles.put(&exportState{releases: []func(){onRelease}})
	}
	err = call(func(e *C.struct_FerryError) C.int {
		return C.ferrygo_device_array_init_hook(c, src, C.ArrowDeviceType(DeviceCPU), -1, nil, C.uintptr_t(h), e)
	})
	if err != nil {
		handles.take(h)
		recycle(c)
		return giveBack(err)
	}
	d := newLeftover("ImportArray", c, s)
	if o.Prepared == nil && s != nil {
		d.markValidated(o.Validate)
	}
	return d, nil
}

// Release releases the array (its producer frees its buffers) and any schema
// it owns. For a stream batch it releases the batch early.
func (d *DeviceArray) Release() {
	if d == nil {
		return
	}
	d.lock()
	defer d.unlock()
	d.releaseLocked()
}

// emptied ends the Go side of an owned array whose C struct a consumer
// moved out (left released): the struct is kept for the next import.
func (d *DeviceArray) emptied() {
	recycle(d.handOver())
}

// releaseLocked is Release under d's lock.
func (d *DeviceArray) releaseLocked() {
	if d.c == nil {
		return
	}
	if d.batchOf != nil {
		C.ferry_device_array_release(d.c)
		return
	}
	d.guard.disarm()
	leakUntrack(d.leak)
	d.leak = 0
	d.validated.Store(0)
	c, s := d.c, d.schema
	d.c, d.schema = nil, nil
	if s != nil && s.owned && s.c != nil {
		// Both in one cgo call; the emptied structs serve the next imports.
		s.guard.disarm()
		C.ferrygo_release_both(C.uintptr_t(uintptr(unsafe.Pointer(c))), C.uintptr_t(uintptr(unsafe.Pointer(s.c))))
		recycleSchema(s.c)
		s.c = nil
	} else {
		C.ferry_device_array_release(c)
	}
	recycle(c)
}

// Move returns a new DeviceArray that owns what d owned, schema included,
// and leaves d released. A stream batch gets its own copy of the stream's
// schema, so everything that needs one (Host, CopyTo, ferryarrow.ToRecord,
// ExportTo with a schema) works on it: Move keeps a batch past the next
// call of Next.
func (d *DeviceArray) Move() (*DeviceArray, error) {
	if d == nil {
		return nil, errorf(syscall.EINVAL, "DeviceArray.Move: the array is released")
	}
	d.lock()
	defer d.unlock()
	return d.move()
}

// batchSchemaCopy is, for a stream batch, an owned copy of its stream's
// schema for a result that outlives the batch (nil for any other array).
func (d *DeviceArray) batchSchemaCopy(what string) (*Schema, error) {
	if d.batchOf == nil {
		return nil, nil
	}
	return d.batchOf.cloneSchema(what)
}

// move is Move under d's lock.
func (d *DeviceArray) move() (*DeviceArray, error) {
	if d.released() {
		return nil, errorf(syscall.EINVAL, "DeviceArray.Move: the array is released")
	}
	batchSchema, err := d.batchSchemaCopy("DeviceArray.Move")
	if err != nil {
		return nil, err
	}
	c := newArrayStruct()
	if c == nil {
		batchSchema.Release()
		return nil, errorf(syscall.ENOMEM, "DeviceArray.Move: out of memory")
	}
	*abiDeviceArray(c) = *abiDeviceArray(d.c) // a move: copy, then mark the source released
	abiDeviceArray(d.c).Array.Release = nil
	if d.batchOf != nil {
		out := newLeftover("a stream batch's Move", c, batchSchema)
		out.markValidated(d.Validated())
		return out, nil
	}
	// Disarmed before the schema leaves d: a collection must not arm d
	// while its memory changes hands.
	d.guard.disarm()
	schema, leak, validated := d.schema, d.leak, d.validated.Swap(0)
	d.schema, d.leak = nil, 0
	recycle(d.c) // released by the move: kept for the next import
	d.c = nil
	out := newTrackedDeviceArray(c, schema, leak)
	out.validated.Store(validated)
	return out, nil
}

// ExportTo moves the array into the released ArrowDeviceArray at dst (a
// consumer's struct, e.g. an out parameter of a C API) and leaves d released;
// the schema, if any, goes to schemaDst when it is not nil and is released
// otherwise.
func (d *DeviceArray) ExportTo(dst unsafe.Pointer, schemaDst unsafe.Pointer) error {
	if err := d.acquire("DeviceArray.ExportTo", false); err != nil {
		return err
	}
	defer d.unlock()
	if dst == nil {
		return errorf(syscall.EINVAL, "DeviceArray.ExportTo: NULL destination")
	}
	if schemaDst != nil {
		if d.schema == nil || d.batchOf != nil {
			return errorf(syscall.EINVAL, "DeviceArray.ExportTo: the array owns no schema")
		}
		if (*abi.ArrowSchema)(schemaDst).Release != nil { // read in Go: no cgo call
			return errorf(syscall.EINVAL, "DeviceArray.ExportTo: destination schema is not released")
		}
	}
	if d.batchOf != nil {
		if rc := C.ferry_device_array_move(d.c, (*C.struct_ArrowDeviceArray)(dst)); rc != 0 {
			return errorf(syscall.EINVAL, "DeviceArray.ExportTo: destination array is not released")
		}
		return nil
	}
	if (*abi.ArrowDeviceArray)(dst).Array.Release != nil {
		return errorf(syscall.EINVAL, "DeviceArray.ExportTo: destination array is not released")
	}
	if schemaDst != nil {
		// Disarmed before the schema leaves d: the cleanup a collection
		// may be registering reads the embedded schema's struct (as in
		// move).
		d.guard.disarm()
		_ = d.schema.ExportTo(schemaDst) // checked above: cannot fail
		d.schema = nil
	}
	// Moved in Go (both structs are C memory; a move is a copy that marks
	// the source released), without a cgo call; the emptied struct is kept
	// for the next export.
	c := d.handOver()
	*(*abi.ArrowDeviceArray)(dst) = *abiDeviceArray(c)
	abiDeviceArray(c).Array.Release = nil
	recycle(c)
	return nil
}

// Ptr returns the address of the ArrowDeviceArray (valid while d is live).
func (d *DeviceArray) Ptr() unsafe.Pointer { return unsafe.Pointer(d.c) }

// IsReleased reports whether the array is gone (released, moved or nil).
// (Read from Go: the struct is C memory, and a cgo call would cost more
// than the test.)
func (d *DeviceArray) IsReleased() bool {
	if d == nil {
		return true
	}
	d.rlock()
	defer d.runlock()
	return d.released()
}

// released is IsReleased under d's lock (or for an array nobody shares).
func (d *DeviceArray) released() bool {
	return d == nil || d.c == nil || abiDeviceArray(d.c).Array.Release == nil
}

// Schema returns the schema describing the array (owned by d, or by the
// stream for a batch), or nil when none is attached.
func (d *DeviceArray) Schema() *Schema {
	if d == nil {
		return nil
	}
	d.rlock()
	defer d.runlock()
	return d.schemaView()
}

// SchemaPtr returns the address of the ArrowSchema describing the array
// (borrowed: owned by d, or by the stream for a batch, and valid while d
// holds the array), or nil when none is attached: what Schema views,
// without making the view (for per-array paths that read a field or two).
func (d *DeviceArray) SchemaPtr() unsafe.Pointer {
	if d == nil {
		return nil
	}
	d.rlock()
	defer d.runlock()
	if d.batchOf == nil {
		if d.schema == nil {
			return nil
		}
		return unsafe.Pointer(d.schema.c)
	}
	if s := d.schemaView(); s != nil {
		return unsafe.Pointer(s.c)
	}
	return nil
}

// schemaView is Schema under d's lock.
func (d *DeviceArray) schemaView() *Schema {
	if d.batchOf != nil {
		s, _ := d.batchOf.loadSchema()
		return s
	}
	if d.schema == nil {
		return nil
	}
	return &Schema{c: d.schema.c}
}

// SetSchema attaches an owned schema to an array that has none (d takes it).
func (d *DeviceArray) SetSchema(s *Schema) error {
	d.lock()
	defer d.unlock()
	if d.schema != nil || d.batchOf != nil {
		return errorf(syscall.EINVAL, "DeviceArray.SetSchema: the array already has a schema")
	}
	d.schema = s
	d.validated.Store(0) // nothing was validated against this schema yet
	return nil
}

// DeviceType and DeviceID are where the array lives (0 once released).
func (d *DeviceArray) DeviceType() DeviceType {
	d.rlock()
	defer d.runlock()
	t, _ := deviceOf(d.c)
	return DeviceType(t)
}
func (d *DeviceArray) DeviceID() int64 {
	d.rlock()
	defer d.runlock()
	_, id := deviceOf(d.c)
	return int64(id)
}

// SyncEvent returns the producer's event (a pointer to the native event
// handle), nil when nothing is pending.
func (d *DeviceArray) SyncEvent() unsafe.Pointer {
	d.rlock()
	defer d.runlock()
	if d.c == nil {
		return nil
	}
	return abiDeviceArray(d.c).SyncEvent
}

// Wait makes the data safe to read: with consumerStream nil the calling
// thread blocks until the producer's event completes; otherwise that device
// stream waits for it and the host does not block.
func (d *DeviceArray) Wait(consumerStream unsafe.Pointer) error {
	d.rlock()
	defer d.runlock()
	return d.wait(consumerStream)
}

// wait is Wait under d's lock.
func (d *DeviceArray) wait(consumerStream unsafe.Pointer) error {
	if d.released() {
		return errorf(syscall.EINVAL, "DeviceArray.Wait: the array is released")
	}
	return call(func(e *C.struct_FerryError) C.int { return C.ferry_device_array_wait(d.c, consumerStream, e) })
}

// Root returns the top-level ArrowArray as a view (borrowed from d).
func (d *DeviceArray) Root() ArrayView {
	var s *C.struct_ArrowSchema
	if sc := d.schemaView(); sc != nil {
		s = sc.c
	}
	devType, devID := deviceOf(d.c)
	return ArrayView{c: embeddedArray(d.c), schema: s, devType: devType, devID: devID}
}

// RootWithSchema is Root described by schema s (borrowed), for arrays that
// carry no schema of their own, such as the result of CopyTo.
func (d *DeviceArray) RootWithSchema(s *Schema) ArrayView {
	v := d.Root()
	if s != nil {
		v.schema = s.c
	}
	return v
}

// The fields of the top-level ArrowArray as the producer declared them (0
// for a released array), read from C memory without a cgo call. They are
// the producer's word, unchecked: Host checks them before reading anything.
func (d *DeviceArray) Length() int64    { return d.rootC().length() }
func (d *DeviceArray) NullCount() int64 { return d.rootC().nullCount() }
func (d *DeviceArray) Offset() int64    { return d.rootC().offset() }
func (d *DeviceArray) NumBuffers() int  { return int(d.rootC().nBuffers()) }
func (d *DeviceArray) NumChildren() int { return int(d.rootC().nChildren()) }

// Buffer returns buffer i's address (nil when NULL, absent or out of range):
// the lean path for code that knows the layout. Reading through it is
// unchecked; Host gives checked reads.
func (d *DeviceArray) Buffer(i int) unsafe.Pointer { return d.rootC().buffer(i) }

// rootC is the top-level ArrowArray, nil when the array is gone.
func (d *DeviceArray) rootC() cArray {
	if d == nil || d.c == nil {
		return cArray{}
	}
	return cArray{embeddedArray(d.c)}
}

// BufferSize computes buffer i's size in bytes from the schema (which must be
// attached), the length and the offset.
func (d *DeviceArray) BufferSize(i int) (int64, error) { return d.Root().BufferSize(i) }

// Child returns child i as a view borrowed from d.
func (d *DeviceArray) Child(i int) ArrayView { return d.Root().Child(i) }

// Dictionary returns the dictionary as a view borrowed from d (IsNil when
// there is none).
func (d *DeviceArray) Dictionary() ArrayView { return d.Root().Dictionary() }

// CopyTo deep-copies the array (which needs its schema) to (deviceType,
// deviceID) after waiting on its event: CopyTo(DeviceCPU, -1) is the host
// copy that leaves d alone (ToHost moves instead). The copy has no pending
// work and carries a copy of d's schema; d stays owned by the caller, who
// releases both.
func (d *DeviceArray) CopyTo(deviceType DeviceType, deviceID int64) (*DeviceArray, error) {
	if err := d.acquire("DeviceArray.CopyTo", true); err != nil {
		return nil, err
	}
	defer d.runlock()
	s := d.schemaView()
	if s == nil {
		return nil, errorf(syscall.EINVAL, "DeviceArray.CopyTo: no schema attached")
	}
	schema, err := s.Clone()
	if err != nil {
		return nil, err
	}
	c, err := newArrayFrom("DeviceArray.CopyTo", schema, func(out *C.struct_ArrowDeviceArray, e *C.struct_FerryError) C.int {
		return C.ferry_device_array_copy(s.c, d.c, C.ArrowDeviceType(deviceType), C.int64_t(deviceID), out, e)
	})
	if err != nil {
		return nil, err
	}
	return newOwnedDeviceArray(c, schema), nil
}

// MoveToDevice moves the array to (deviceType, deviceID): without copying
// when the destination can reach the memory (the same device; cuda_host,
// rocm_host or cuda_managed memory to the CPU, after the host waited on the
// event; cuda_managed to cuda of the same id), else as a deep copy made after
// waiting on the event. schema describes the array; nil means the one
// attached to it. On success d is consumed (left released) and the result
// carries d's schema when d owned one; on failure d is untouched and still
// the caller's.
func (d *DeviceArray) MoveToDevice(schema *Schema, deviceType DeviceType, deviceID int64) (*DeviceArray, error) {
	if err := d.acquire("DeviceArray.MoveToDevice", false); err != nil {
		return nil, err
	}
	defer d.unlock()
	if schema == nil {
		if schema = d.schemaView(); schema == nil {
			return nil, errorf(syscall.EINVAL, "DeviceArray.MoveToDevice: no schema given or attached")
		}
	}
	// A batch's result gets its own copy of the stream's schema (made
	// first: a failure leaves d untouched).
	batchSchema, err := d.batchSchemaCopy("DeviceArray.MoveToDevice")
	if err != nil {
		return nil, err
	}
	out, err := newArrayFrom("DeviceArray.MoveToDevice", batchSchema, func(out *C.struct_ArrowDeviceArray, e *C.struct_FerryError) C.int {
		return C.ferry_device_array_move_to_device(schema.c, d.c, C.ArrowDeviceType(deviceType), C.int64_t(deviceID), out, e)
	})
	if err != nil {
		return nil, err
	}
	return d.consumedInto(out, batchSchema), nil
}

// newArrayFrom is a new device array filled by the core call fill; on
// failure nothing is left and carried (the schema the result was to carry;
// may be nil) is released.
func newArrayFrom(what string, carried *Schema,
	fill func(out *C.struct_ArrowDeviceArray, e *C.struct_FerryError) C.int) (*C.struct_ArrowDeviceArray, error) {
	out := C.ferry_device_array_new()
	if out == nil {
		carried.Release()
		return nil, errorf(syscall.ENOMEM, "%s: out of memory", what)
	}
	if err := call(func(e *C.struct_FerryError) C.int { return fill(out, e) }); err != nil {
		C.ferry_device_array_free(out)
		carried.Release()
		return nil, err
	}
	return out, nil
}

// consumedInto wraps out, which now holds what d held (d's struct was moved
// or released by the core), and leaves d released; d's schema goes along
// (batchSchema, the copy of the stream's, for a batch).
func (d *DeviceArray) consumedInto(out *C.struct_ArrowDeviceArray, batchSchema *Schema) *DeviceArray {
	if d.batchOf != nil {
		return newLeftover("a stream batch's ToHost/MoveToDevice", out, batchSchema)
	}
	// Disarmed before the fields change: a collection arming d reads them.
	d.guard.disarm()
	schema, leak := d.schema, d.leak
	d.schema, d.leak = nil, 0               // carried over, not untracked by handOver
	C.ferry_device_array_free(d.handOver()) // released already: only freed
	return newTrackedDeviceArray(out, schema, leak)
}

// ArrayView is a borrowed ArrowArray (the top level, a child or a
// dictionary) together with its schema and device: valid while the
// DeviceArray it came from is live.
type ArrayView struct {
	c       *C.struct_ArrowArray
	schema  *C.struct_ArrowSchema
	devType C.ArrowDeviceType
	devID   C.int64_t
}

// IsNil reports whether the view names no array (missing child/dictionary).
func (v ArrayView) IsNil() bool { return v.c == nil }

// Schema returns the view's schema (borrowed), or nil when unknown.
func (v ArrayView) Schema() *Schema {
	if v.schema == nil {
		return nil
	}
	return &Schema{c: v.schema}
}

func (v ArrayView) Length() int64    { return cArray{v.c}.length() }
func (v ArrayView) NullCount() int64 { return cArray{v.c}.nullCount() }
func (v ArrayView) Offset() int64    { return cArray{v.c}.offset() }
func (v ArrayView) NumBuffers() int  { return int(cArray{v.c}.nBuffers()) }
func (v ArrayView) NumChildren() int { return int(cArray{v.c}.nChildren()) }

// Buffer returns buffer i's address (nil when NULL, absent or out of range).
func (v ArrayView) Buffer(i int) unsafe.Pointer { return cArray{v.c}.buffer(i) }

// BufferSize computes buffer i's size in bytes (needs the schema).
func (v ArrayView) BufferSize(i int) (int64, error) {
	if v.schema == nil {
		return 0, errorf(syscall.EINVAL, "BufferSize: no schema attached to the array")
	}
	var size C.int64_t
	err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_array_buffer_size(v.schema, v.c, v.devType, v.devID, C.int64_t(i), &size, e)
	})
	return int64(size), err
}

// BufferBytes returns buffer i as a byte slice over the producer's memory
// (no copy) of the size the core computes from the schema, the length and
// the offset; nil for a NULL buffer. Memory the host cannot read is
// refused: EINVAL for device memory (bring the array over with ToHost
// first), ENODEV for a device ferry does not know. EINVAL past the last
// buffer. The host must have waited on the array's event (Wait, or Host).
func (v ArrayView) BufferBytes(i int) ([]byte, error) {
	if v.c == nil {
		return nil, errorf(syscall.EINVAL, "BufferBytes: no array")
	}
	if n := (cArray{v.c}).nBuffers(); i < 0 || int64(i) >= n {
		return nil, errorf(syscall.EINVAL, "BufferBytes: buffer %d is out of range for %d buffers", i, n)
	}
	if err := checkHostReadable(v.devType, v.devID); err != nil {
		return nil, err
	}
	p := v.Buffer(i)
	if p == nil {
		return nil, nil
	}
	n, err := v.BufferSize(i)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// Child returns child i (with its child schema when known); IsNil when out
// of range.
func (v ArrayView) Child(i int) ArrayView {
	c := ArrayView{c: cArray{v.c}.child(i), devType: v.devType, devID: v.devID}
	if v.schema != nil {
		c.schema = schemaChild(v.schema, int64(i))
	}
	return c
}

// Dictionary returns the dictionary; IsNil when there is none.
func (v ArrayView) Dictionary() ArrayView {
	c := ArrayView{c: cArray{v.c}.dictionary(), devType: v.devType, devID: v.devID}
	if v.schema != nil {
		c.schema = (*C.struct_ArrowSchema)(abiSchema(v.schema).Dictionary)
	}
	return c
}

// checkHostReadable refuses memory the host cannot dereference: ENODEV (the
// core's message) for a device type ferry does not know, EINVAL for device
// memory that is not host-accessible.
func checkHostReadable(devType C.ArrowDeviceType, devID C.int64_t) error {
	if devType == C.ArrowDeviceType(DeviceCPU) {
		return nil
	}
	dev, err := ResolveDevice(DeviceType(devType), int64(devID))
	if err != nil {
		return err
	}
	if !dev.HostAccessible() {
		return errorf(syscall.EINVAL, "the array lives in %s memory, which the host cannot read; "+
			"bring it over with DeviceArray.ToHost (or CopyTo) first", DeviceType(devType))
	}
	return nil
}
