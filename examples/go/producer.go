package main

import (
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// produce exports values (valid[i] false: null) into the consumer's
// released structs, without copying them again: the buffers live outside
// the Go heap and are freed when the consumer releases the array.
func produce(values []int32, valid []bool, schemaOut, arrayOut unsafe.Pointer) error {
	data, column, err := ferry.AllocSlice[int32](len(values))
	if err != nil {
		return err
	}
	copy(column, values)
	validity, nulls, err := bitmap(valid)
	if err != nil {
		data.Free()
		return err
	}
	field := ferry.Field{Format: "i", Name: "n", Flags: ferry.FlagNullable}
	schema, err := field.Export()
	if err != nil {
		data.Free()
		validity.Free()
		return err
	}
	if err := schema.ExportTo(schemaOut); err != nil {
		schema.Release()
		data.Free()
		validity.Free()
		return err
	}
	// ExportArrayTo takes the buffers, on success and on failure alike.
	return ferry.ExportArrayTo(&ferry.ArrayData{Format: "i", Length: int64(len(values)), NullCount: nulls,
		Buffers: []ferry.Buffer{validity, data}}, nil, arrayOut)
}

// bitmap is the validity bitmap of valid (bit i set: element i is not
// null) and the null count.
func bitmap(valid []bool) (ferry.Buffer, int64, error) {
	buf, bits, err := ferry.AllocSlice[byte]((len(valid) + 7) / 8)
	if err != nil {
		return buf, 0, err
	}
	clear(bits)
	nulls := int64(0)
	for i, ok := range valid {
		if ok {
			bits[i/8] |= 1 << (i % 8)
		} else {
			nulls++
		}
	}
	return buf, nulls, nil
}
