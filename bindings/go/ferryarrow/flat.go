package ferryarrow

import (
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// The direct import of flat layouts: a validated CPU leaf whose buffers are
// a validity bitmap and fixed-width values, or a validity bitmap, offsets
// and bytes (utf8, binary and their large forms), becomes arrow-go's array
// by wrapping its buffers where they are. cdata's import does the same work
// but first allocates a C struct, moves the array into it and releases it
// through C at the end (three cgo calls where this takes one, at the
// release), and parses the format string (a cached type here). Every other
// layout goes through cdata.

// flatOwner holds the moved array (an ArrowDeviceArray struct in C
// memory, raw) and its schema (rawSchema, or nil) while arrow-go buffers
// point into the array: each buffer's Free counts down and the last
// releases both through their producer (one cgo call) and keeps the
// emptied structs for the next conversion. The buffers are immutable views,
// so arrow-go never asks it to allocate.
type flatOwner struct {
	raw, rawSchema unsafe.Pointer
	live           atomic.Int32
	buffers        [3]*memory.Buffer // the Data's buffer list: one allocation with the owner
}

func (*flatOwner) Allocate(int) []byte {
	panic("ferryarrow: a buffer imported from C cannot allocate")
}

func (*flatOwner) Reallocate(int, []byte) []byte {
	panic("ferryarrow: a buffer imported from C cannot grow")
}

func (o *flatOwner) Free([]byte) {
	if o.live.Add(-1) == 0 {
		ferry.ReleaseRawPair(o.raw, o.rawSchema)
		giveRaw(o.raw)
		if o.rawSchema != nil {
			giveRawSchema(o.rawSchema)
		}
	}
}

// flatShape describes how a flat type's buffers are sized: bits per value
// of buffer 1 (fixed width), or the width of the offsets in bytes (4 or 8)
// of a binary layout whose bytes are buffer 2.
type flatShape struct {
	bits        int64
	offsetBytes int64
}

// flatShapeOf returns dt's shape, or false when dt is not a flat layout the
// direct import handles.
func flatShapeOf(dt arrow.DataType) (flatShape, bool) {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY:
		return flatShape{offsetBytes: 4}, true
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return flatShape{offsetBytes: 8}, true
	case arrow.BOOL, arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32,
		arrow.INT64, arrow.UINT64, arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32,
		arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY:
		return flatShape{bits: int64(dt.(arrow.FixedWidthDataType).BitWidth())}, true
	}
	return flatShape{}, false
}

// maxFlatBytes bounds a buffer the conversion wraps (ferry.MaxReadBytes): a
// larger declaration is refused by name rather than handed to arrow-go,
// which would read it.
const maxFlatBytes = ferry.MaxReadBytes

// flatPlan is what the direct import needs to know of an array: how many
// buffers it wraps and their sizes in bytes.
type flatPlan struct {
	n     int
	sizes [3]int64
}

// planFlat returns the plan for the CPU array at v of type dt; ok is false
// when dt is not a flat layout or a buffer it needs is NULL (cdata then
// decides), and err names a declaration over maxFlatBytes. The array is
// validated (DEFAULT at least), so offsets are in order.
func planFlat(where string, dt arrow.DataType, v *cArray) (p flatPlan, ok bool, err error) {
	s, ok := flatShapeOf(dt)
	if !ok || v.Length <= 0 || v.Offset < 0 || v.Buffers == nil {
		return p, false, nil
	}
	end := v.Offset + v.Length
	tooLarge := func(i int, bytes string) error {
		return invalid("%s: buffer %d declares %s bytes (offset %d + length %d), more than any buffer ferry reads (2^48)",
			where, i, bytes, v.Offset, v.Length)
	}
	if end < 0 || end > maxFlatBytes {
		return p, false, tooLarge(1, "over 2^48")
	}
	bufs := unsafe.Slice((*unsafe.Pointer)(v.Buffers), v.NBuffers)
	p.sizes[0] = (end + 7) / 8
	if s.offsetBytes == 0 {
		p.n, p.sizes[1] = 2, (end*s.bits+7)/8 // end <= 2^48, bits <= 256: no overflow
		if p.sizes[1] > maxFlatBytes {
			return p, false, tooLarge(1, strconv.FormatInt(p.sizes[1], 10))
		}
		return p, v.NBuffers == 2 && bufs[1] != nil, nil
	}
	if v.NBuffers != 3 || bufs[1] == nil {
		return p, false, nil
	}
	var last int64
	if s.offsetBytes == 4 {
		last = int64(unsafe.Slice((*int32)(bufs[1]), end+1)[end])
	} else {
		last = unsafe.Slice((*int64)(bufs[1]), end+1)[end]
	}
	if last > maxFlatBytes {
		return p, false, tooLarge(2, strconv.FormatInt(last, 10))
	}
	p.n, p.sizes[1], p.sizes[2] = 3, (end+1)*s.offsetBytes, last
	return p, last >= 0 && (last == 0 || bufs[2] != nil), nil
}

// wrapFlat builds arrow-go's array of type dt over the array moved into raw
// (an ArrowDeviceArray struct in C memory, planned by planFlat), whose
// buffers then own raw and rawSchema (its schema moved into a struct of
// takeRawSchema, or nil).
func wrapFlat(dt arrow.DataType, raw, rawSchema unsafe.Pointer, p flatPlan) arrow.Array {
	v := (*cArray)(raw)
	ptrs := unsafe.Slice((*unsafe.Pointer)(v.Buffers), p.n)
	owner := &flatOwner{raw: raw, rawSchema: rawSchema}
	owner.live.Store(1) // held until every buffer is wrapped
	buffers := owner.buffers[:p.n]
	for i := range buffers {
		switch {
		case i == 0 && (v.NullCount == 0 || ptrs[0] == nil):
			// no bitmap: every value is valid (arrow-go takes nil)
		case p.sizes[i] == 0:
			buffers[i] = memory.NewBufferBytes(nil)
		default:
			owner.live.Add(1)
			buffers[i] = memory.NewBufferWithAllocator(unsafe.Slice((*byte)(ptrs[i]), p.sizes[i]), owner)
		}
	}
	data := array.NewData(dt, int(v.Length), buffers, nil, int(v.NullCount), int(v.Offset))
	for _, b := range buffers {
		if b != nil {
			b.Release() // the data holds them now
		}
	}
	owner.Free(nil) // the hold taken above
	out := array.MakeFromData(data)
	data.Release()
	return out
}
