package ferry

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"iter"
	"sync"
	"syscall"
	"unsafe"
)

// Async device streams (the Arrow C Device Data Interface's
// ArrowAsyncDeviceStreamHandler; docs/async.md): the producer pushes batches
// as they are ready and the consumer controls the flow. Both sides are the
// core's state machines (FerryAsyncConsumer, FerryAsyncSender); Go adds
// contexts, iterators and channels over them.

// AsyncConsumer is the consuming side of an async device stream: a handler
// (Handler) to hand to any producer, in any runtime, and a reader of what
// the producer pushes. It keeps at most window batches queued (it requests
// window batches from on_schema, then one more for each batch read), and
// validates each batch against the stream's schema when it is read (the
// import's default, ValidateDefault; ImportOptions.Validate changes it). A
// producer that breaks the protocol is refused (EPROTO naming the rule).
//
// Threads: every method may be called from any goroutine, Next from several
// at once (each batch goes to one caller); Close cancels the stream, waits
// for the reads in flight and frees the consumer.
type AsyncConsumer struct {
	mu      sync.RWMutex // reads hold it shared; Close exclusively
	c       *C.struct_FerryAsyncConsumer
	handler *C.struct_ArrowAsyncDeviceStreamHandler
	closed  bool
	close   sync.Once
	leak    int64
}

// NewAsyncConsumer makes a consumer that keeps at most window (>= 1)
// batches queued; opts as for ImportStream (the validation level; a
// prepared schema is not used). Hand Handler() to the producer, then read
// with Next or All; Close when done.
func NewAsyncConsumer(window int64, opts ...ImportOptions) (*AsyncConsumer, error) {
	o, err := importOptions("NewAsyncConsumer", opts)
	if err != nil {
		return nil, err
	}
	if window < 1 {
		return nil, errorf(syscall.EINVAL, "NewAsyncConsumer: window %d is below 1", window)
	}
	h := C.ferry_async_handler_new()
	if h == nil {
		return nil, errorf(syscall.ENOMEM, "NewAsyncConsumer: out of memory")
	}
	a := &AsyncConsumer{handler: h}
	err = call(func(e *C.struct_FerryError) C.int {
		return C.ferry_async_consumer_create(C.int64_t(window), C.int32_t(o.Validate), h, &a.c, e)
	})
	if err != nil {
		C.ferry_async_handler_free(h)
		return nil, err
	}
	if leakReportOn {
		a.leak = leakTrack("AsyncConsumer from NewAsyncConsumer never closed")
	}
	return a, nil
}

// Handler returns the struct ArrowAsyncDeviceStreamHandler* to hand to a
// producer (borrowed: the consumer owns its memory, which stays valid until
// the producer has released it, also after Close).
func (a *AsyncConsumer) Handler() unsafe.Pointer { return unsafe.Pointer(a.handler) }

var errConsumerClosed = &Error{Code: syscall.EINVAL, Message: "AsyncConsumer: the consumer is closed"}

// Schema waits for the producer's schema (or ctx) and returns an owned copy
// (the caller releases it); the producer's error when it failed first.
func (a *AsyncConsumer) Schema(ctx context.Context) (*Schema, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return nil, errConsumerClosed
	}
	sc := C.ferry_schema_new()
	if sc == nil {
		return nil, errorf(syscall.ENOMEM, "AsyncConsumer.Schema: out of memory")
	}
	err := a.wait(ctx, func(e *C.struct_FerryError) C.int {
		return C.ferry_async_consumer_get_schema(a.c, sc, -1, e)
	})
	if err != nil {
		C.ferry_schema_free(sc)
		return nil, err
	}
	return newOwnedSchema(sc), nil
}

// wait runs a blocking consumer call that ctx can interrupt: when ctx is
// done the stream is cancelled (for good: the producer is told to stop), the
// call returns ECANCELED, and wait returns ctx's error. Called with a.mu
// held shared.
func (a *AsyncConsumer) wait(ctx context.Context, f func(e *C.struct_FerryError) C.int) error {
	stop := context.AfterFunc(ctx, func() {
		a.mu.RLock() // never after Close freed the consumer
		if !a.closed {
			C.ferry_async_consumer_cancel(a.c)
		}
		a.mu.RUnlock()
	})
	err := call(f)
	stop()
	if err != nil && ctx.Err() != nil && errors.Is(err, syscall.ECANCELED) {
		return ctx.Err()
	}
	return err
}

// Next waits for the next batch (or ctx) and returns it, owned by the caller
// with its own copy of the stream's schema: nil, nil at the end of the
// stream. The batch keeps its sync event (Host and Wait honour it). A
// failure (the producer's on_error, a batch that fails validation, a
// protocol violation, a cancel) is returned by this and every later call.
// When ctx is done the stream is cancelled and ctx's error returned.
func (a *AsyncConsumer) Next(ctx context.Context) (*DeviceArray, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return nil, errConsumerClosed
	}
	out := C.ferry_device_array_new()
	if out == nil {
		return nil, errorf(syscall.ENOMEM, "AsyncConsumer.Next: out of memory")
	}
	err := a.wait(ctx, func(e *C.struct_FerryError) C.int {
		return C.ferry_async_consumer_next(a.c, out, -1, e)
	})
	if err != nil || abiDeviceArray(out).Array.Release == nil { // a failure, or the end
		C.ferry_device_array_free(out)
		return nil, err
	}
	sc := C.ferry_schema_new()
	if sc == nil {
		C.ferry_device_array_free(out)
		return nil, errorf(syscall.ENOMEM, "AsyncConsumer.Next: out of memory")
	}
	if err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_async_consumer_get_schema(a.c, sc, 0, e) // here once a batch came
	}); err != nil {
		C.ferry_schema_free(sc)
		C.ferry_device_array_free(out)
		return nil, err
	}
	return newLeftover("AsyncConsumer.Next", out, newOwnedSchema(sc)), nil
}

// All iterates over the batches until the end, a failure (yielded once,
// with a nil batch) or ctx; each batch is the caller's to release.
// Breaking out of the loop leaves the stream where it is (Close stops it).
func (a *AsyncConsumer) All(ctx context.Context) iter.Seq2[*DeviceArray, error] {
	return func(yield func(*DeviceArray, error) bool) {
		for {
			b, err := a.Next(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if b == nil || !yield(b, nil) {
				return
			}
		}
	}
}

// Cancel asks the producer to stop (idempotent); queued batches are
// released and reads return ECANCELED from now on.
func (a *AsyncConsumer) Cancel() {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.closed {
		C.ferry_async_consumer_cancel(a.c)
	}
}

// Close cancels the stream if it still runs, waits for the reads in flight,
// and gives the consumer up; the handler's memory is freed once the
// producer has released it (at once when no producer ever took it).
// Harmless twice.
func (a *AsyncConsumer) Close() {
	if a == nil {
		return
	}
	a.close.Do(func() {
		a.Cancel() // wakes reads blocked in C before taking the lock
		a.mu.Lock()
		defer a.mu.Unlock()
		a.closed = true
		leakUntrack(a.leak)
		c, h := a.c, a.handler
		if C.ferry_async_handler_is_released(h) == 0 && C.ferry_async_handler_producer(h) != nil {
			// A producer holds the handler: free both after its release,
			// which a cancelled producer makes soon. The wait runs on its
			// own goroutine so that Close never blocks on the producer.
			go func() {
				C.ferry_async_consumer_wait_released(c, -1)
				C.ferry_async_consumer_free(c)
				C.ferry_async_handler_free(h)
			}()
			return
		}
		C.ferry_async_consumer_free(c)
		C.ferry_async_handler_free(h) // releases it first when no producer took it
	})
}

// AsyncBatch is one message of the channel ExportAsync reads: a batch
// (moved to the consumer), or an error that ends the stream.
type AsyncBatch struct {
	Batch *DeviceArray
	Err   error
}

// ExportAsync is the producing side: it drives handler (a consumer's struct
// ArrowAsyncDeviceStreamHandler*, in any runtime; borrowed until ferry
// releases it) with schema (moved in; owned) and then each batch received
// from batches (of deviceType; each moved to the consumer), as the consumer
// requests them, until the channel is closed (the end of the stream), a
// message carries an error (on_error with its code, EIO for a plain Go
// error, and message), or ctx is done (on_error ECANCELED). It blocks until
// the handler is released and returns nil at the end, ECANCELED when the
// consumer cancelled or refused, else the error the consumer was given. A
// consumer's cancel is seen at the next batch or at the channel's close.
// Batches not sent (after a cancel, say) are released; the channel is not
// drained. The core's sender enforces the protocol: serialized callbacks,
// never more tasks than requested, release last and exactly once, the
// producer and tasks kept alive until every task is extracted (arrow-go
// extracts after the release).
func ExportAsync(ctx context.Context, handler unsafe.Pointer, schema *Schema, deviceType DeviceType,
	batches <-chan AsyncBatch) error {
	h := (*C.struct_ArrowAsyncDeviceStreamHandler)(handler)
	if h == nil || C.ferry_async_handler_is_released(h) != 0 {
		schema.Release()
		return errorf(syscall.EINVAL, "ExportAsync: NULL or released handler")
	}
	if schema.IsReleased() || !schema.owned {
		msg := "ExportAsync: the schema is released or borrowed"
		failHandler(h, syscall.EINVAL, msg)
		return errorf(syscall.EINVAL, "%s", msg)
	}
	var sender *C.struct_FerryAsyncSender
	if err := call(func(e *C.struct_FerryError) C.int {
		return C.ferry_async_sender_create(h, C.ArrowDeviceType(deviceType), nil, &sender, e)
	}); err != nil {
		schema.Release()
		return err // the handler was failed and released by the core
	}
	err := call(func(e *C.struct_FerryError) C.int { return C.ferry_async_sender_send_schema(sender, schema.c, e) })
	schema.Release() // moved in by the sender (only the struct is left)
	for err == nil {
		var m AsyncBatch
		var ok bool
		select {
		case m, ok = <-batches:
		case <-ctx.Done():
			err = &Error{Code: syscall.ECANCELED, Message: "ExportAsync: " + ctx.Err().Error()}
			continue
		}
		if !ok {
			break
		}
		if m.Err != nil {
			m.Batch.Release()
			err = m.Err
			continue
		}
		err = sendAsync(ctx, sender, m.Batch, deviceType)
	}
	if err == nil && C.ferry_async_sender_is_cancelled(sender) != 0 {
		err = &Error{Code: syscall.ECANCELED, Message: "ExportAsync: the consumer cancelled the stream"}
	}
	code, message := C.int(0), ""
	if err != nil {
		code, message = C.int(codeOf(err)), messageOf(err)
	}
	msg := C.CString(message)
	defer C.free(unsafe.Pointer(msg))
	rc := C.ferry_async_sender_finish(sender, code, msg)
	if err == nil && rc != 0 {
		return errorf(syscall.Errno(rc), "ExportAsync: the consumer refused the end of the stream")
	}
	return err
}

// sendAsync hands one batch to the sender, waiting for demand in slices so
// that ctx is seen; the batch is moved in, or released when it cannot be.
func sendAsync(ctx context.Context, sender *C.struct_FerryAsyncSender, b *DeviceArray, deviceType DeviceType) error {
	if b.IsReleased() {
		return errorf(syscall.EINVAL, "ExportAsync: a released batch came through the channel")
	}
	if t := b.DeviceType(); t != deviceType {
		b.Release()
		return errorf(syscall.EINVAL, "ExportAsync: a batch on %s in a stream of %s", t, deviceType)
	}
	b.lock()
	defer b.unlock()
	for {
		err := call(func(e *C.struct_FerryError) C.int {
			return C.ferry_async_sender_send(sender, b.c, nil, asyncWaitSliceMs, e)
		})
		if !errors.Is(err, syscall.ETIMEDOUT) {
			if err != nil && !b.released() {
				b.releaseLocked()
			} else if b.batchOf == nil {
				b.emptied() // moved in: only the Go side is left
			}
			return err
		}
		if ctx.Err() != nil {
			b.releaseLocked()
			return &Error{Code: syscall.ECANCELED, Message: "ExportAsync: " + ctx.Err().Error()}
		}
	}
}

// asyncWaitSliceMs bounds each wait for the consumer's demand, so that a
// done context is seen within it.
const asyncWaitSliceMs = 50

// failHandler gives a handler that will not be served on_error and its
// release.
func failHandler(h *C.struct_ArrowAsyncDeviceStreamHandler, code syscall.Errno, message string) {
	m := C.CString(message)
	defer C.free(unsafe.Pointer(m))
	C.ferry_async_handler_fail(h, C.int(code), m)
}
