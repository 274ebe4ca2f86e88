package itcase

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// builder allocates the host buffers of one exported array and, on a device,
// their device copies queued on a producer stream. Everything it allocates is
// handed to the ArrayData tree (or freed by abandon).
type builder struct {
	dev     *ferry.Device // nil: the CPU
	cpu     *ferry.Device
	stream  unsafe.Pointer
	staging []ferry.Buffer
	made    []ferry.Buffer // buffers not yet in a tree, for abandon
	err     error
}

func newBuilder(dev *ferry.Device) (*builder, error) {
	b := &builder{dev: dev}
	if dev == nil {
		return b, nil
	}
	var err error
	if b.cpu, err = ferry.ResolveDevice(ferry.DeviceCPU, -1); err != nil {
		return nil, err
	}
	if b.stream, err = dev.StreamCreate(); err != nil {
		return nil, err
	}
	return b, nil
}

// host allocates a zeroed host buffer of at least size bytes (at least 8, as
// a device allocation of 0 bytes may fail) and returns it with its bytes.
func (b *builder) host(size int64) (ferry.Buffer, []byte) {
	if b.err != nil {
		return ferry.Buffer{}, nil
	}
	alloc := (size + 7) &^ 7
	if alloc < 8 {
		alloc = 8
	}
	buf, err := ferry.AllocBuffer(alloc)
	if err != nil {
		b.err = err
		return ferry.Buffer{}, nil
	}
	bytes := buf.Bytes()
	clear(bytes)
	b.made = append(b.made, buf)
	return buf, bytes
}

// place returns the buffer to export for a filled host buffer: itself on the
// CPU; on a device a device copy queued on the stream (the host buffer
// becomes staging, kept until release).
func (b *builder) place(hostBuf ferry.Buffer) ferry.Buffer {
	if b.err != nil || b.dev == nil {
		return hostBuf
	}
	devBuf, err := b.dev.AllocBuffer(hostBuf.Size())
	if err != nil {
		b.err = err
		return hostBuf
	}
	b.made = append(b.made, devBuf)
	if err := ferry.Memcpy(b.dev, devBuf.Ptr(), b.cpu, hostBuf.Ptr(), hostBuf.Size(), b.stream); err != nil {
		b.err = err
	}
	b.staging = append(b.staging, hostBuf)
	return devBuf
}

// abandon gives back everything made so far (failure before export).
func (b *builder) abandon() {
	if b.stream != nil {
		_ = b.dev.StreamSynchronize(b.stream)
		_ = b.dev.StreamDestroy(b.stream)
		b.stream = nil
	}
	for i := range b.made {
		b.made[i].Free()
	}
	b.made = nil
}

// validity builds the bitmap of `slots` physical slots for the top level
// (nil when the case has no nulls): logical i sits at slot i + offset.
func (b *builder) validity(c *Case) (ferry.Buffer, int64) {
	if c.Nulls == 0 {
		return ferry.Buffer{}, 0
	}
	slots := c.Offset + c.Length
	buf, bits := b.host((slots + 7) / 8)
	if bits == nil {
		return buf, 0
	}
	for i := int64(0); i < c.Length; i++ {
		if !IsNull(c.Nulls, i) {
			p := i + c.Offset
			bits[p/8] |= 1 << (p % 8)
		}
	}
	return b.place(buf), NullCount(c.Nulls, c.Length)
}

// fixed builds a values buffer of a fixed-width type (or bool) with `slots`
// slots, slot p holding the value of index p - shift (slots below shift are
// left zero).
func (b *builder) fixed(t Type, seed uint32, slots, shift int64) ferry.Buffer {
	if t == Bool {
		buf, bits := b.host((slots + 7) / 8)
		for p := shift; bits != nil && p < slots; p++ {
			if Bits(t, seed, p-shift) != 0 {
				bits[p/8] |= 1 << (p % 8)
			}
		}
		return b.place(buf)
	}
	w := int64(Width(t))
	buf, bytes := b.host(slots * w)
	for p := shift; bytes != nil && p < slots; p++ {
		v := Bits(t, seed, p-shift)
		switch w {
		case 1:
			bytes[p] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(bytes[p*2:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(bytes[p*4:], uint32(v))
		case 8:
			binary.LittleEndian.PutUint64(bytes[p*8:], v)
		}
	}
	return b.place(buf)
}

// strings builds the offsets and data buffers of a utf8/binary array with
// `slots` slots (slot p holds value(p - shift), slots below shift are empty).
func (b *builder) strings(slots, shift int64, value func(i int64) string) (ferry.Buffer, ferry.Buffer) {
	total := int64(0)
	for p := shift; p < slots; p++ {
		total += int64(len(value(p - shift)))
	}
	offBuf, offBytes := b.host((slots + 1) * 4)
	dataBuf, data := b.host(total)
	if offBytes != nil && data != nil {
		pos := int64(0)
		for p := int64(0); p < slots; p++ {
			binary.LittleEndian.PutUint32(offBytes[p*4:], uint32(pos))
			if p >= shift {
				pos += int64(copy(data[pos:], value(p-shift)))
			}
		}
		binary.LittleEndian.PutUint32(offBytes[slots*4:], uint32(pos))
	}
	return b.place(offBuf), b.place(dataBuf)
}

// ExportArray produces the case's array with the given seed as an owned
// DeviceArray with its schema attached (fail=export is the caller's business).
func ExportArray(c *Case, seed uint32, dev *ferry.Device) (*ferry.DeviceArray, error) {
	b, err := newBuilder(dev)
	if err != nil {
		return nil, err
	}
	data := b.build(c, seed)
	if b.err != nil {
		b.abandon()
		return nil, b.err
	}
	b.made = nil // all in the tree now, which ExportArray takes
	opts := &ferry.ExportOptions{}
	if dev != nil {
		opts.Device = dev
		opts.ProducerStream = b.stream
		opts.Policy = ferry.SyncRecordEvent
		// The staging buffers and the stream live until the consumer releases
		// the array: the queued copies read the staging memory, and in the
		// sim's strict mode they run only when someone waits.
		data.Keep = b.staging
		stream := b.stream
		data.OnRelease = func() {
			_ = dev.StreamSynchronize(stream)
			_ = dev.StreamDestroy(stream)
		}
	}
	return ferry.ExportArray(data, opts)
}

func (b *builder) build(c *Case, seed uint32) *ferry.ArrayData {
	slots := c.Offset + c.Length
	top := &ferry.ArrayData{Format: typeFormats[c.Type], Name: c.Type.String(), Flags: ferry.FlagNullable,
		Length: c.Length, Offset: c.Offset}
	validity, nulls := b.validity(c)
	top.NullCount = nulls
	field := func(format, name string, length int64, buffers ...ferry.Buffer) *ferry.ArrayData {
		return &ferry.ArrayData{Format: format, Name: name, Flags: ferry.FlagNullable, Length: length, Buffers: buffers}
	}
	switch c.Type {
	case UTF8, Binary:
		off, data := b.strings(slots, c.Offset, func(i int64) string { return String(seed, i) })
		top.Buffers = []ferry.Buffer{validity, off, data}
	case ListInt32:
		// List offsets over the physical slots; the child is indexed by its
		// own position j.
		offBuf, offBytes := b.host((slots + 1) * 4)
		total := int64(0)
		for p := int64(0); p < slots; p++ {
			if offBytes != nil {
				binary.LittleEndian.PutUint32(offBytes[p*4:], uint32(total))
			}
			if p >= c.Offset {
				total += ListLength(seed, p-c.Offset)
			}
		}
		if offBytes != nil {
			binary.LittleEndian.PutUint32(offBytes[slots*4:], uint32(total))
		}
		top.Buffers = []ferry.Buffer{validity, b.place(offBuf)}
		top.Children = []*ferry.ArrayData{field("i", "item", total, ferry.Buffer{}, b.fixed(Int32, seed, total, 0))}
	case StructInt32UTF8:
		top.Buffers = []ferry.Buffer{validity}
		a := field("i", "a", slots, ferry.Buffer{}, b.fixed(Int32, seed, slots, c.Offset))
		off, data := b.strings(slots, c.Offset, func(i int64) string { return String(seed+1, i) })
		top.Children = []*ferry.ArrayData{a, field("u", "b", slots, ferry.Buffer{}, off, data)}
	case DictInt32UTF8:
		top.Buffers = []ferry.Buffer{validity, b.fixed(DictInt32UTF8, seed, slots, c.Offset)}
		off, data := b.strings(int64(len(DictValues)), 0, func(i int64) string { return DictValues[i] })
		top.Dictionary = field("u", "", int64(len(DictValues)), ferry.Buffer{}, off, data)
	default:
		top.Buffers = []ferry.Buffer{validity, b.fixed(c.Type, seed, slots, c.Offset)}
	}
	return top
}

// injected is the error of fail=... cases.
func injected(where string) error {
	return &ferry.Error{Code: syscall.EIO, Message: fmt.Sprintf("injected failure at %s", where)}
}
