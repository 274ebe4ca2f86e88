package main

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ferryarrow/ferry/bindings/go/ferry"
	"github.com/ferryarrow/ferry/bindings/go/ferryarrow"
)

// arrowRoundTrip exports an arrow-go Int32 array to ferry without a copy
// (its Go memory pinned until the consumer releases) and imports it back
// (validated first).
func arrowRoundTrip(values []int32, valid []bool) (string, error) {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(values, valid)
	input := b.NewInt32Array()
	defer input.Release()

	d, err := ferryarrow.FromArrow(input)
	if err != nil {
		return "", err
	}
	output, err := ferryarrow.ToArrow(d) // d is consumed
	if err != nil {
		d.Release()
		return "", err
	}
	defer output.Release()
	if !array.Equal(input, output) {
		return "", fmt.Errorf("the round trip changed %v into %v", input, output)
	}
	return "arrow: " + output.String(), nil
}

// streamRoundTrip exports an arrow-go RecordReader as a ferry stream,
// through its C struct, and reads it back as a RecordReader.
func streamRoundTrip() (string, error) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	var batches []arrow.RecordBatch
	for _, names := range [][]string{{"a", "b"}, {"c"}, {"d", "e", "f"}} {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		rb.Field(0).(*array.StringBuilder).AppendValues(names, nil)
		batches = append(batches, rb.NewRecordBatch())
		rb.Release()
	}
	reader, err := array.NewRecordReader(schema, batches)
	for _, rec := range batches {
		rec.Release()
	}
	if err != nil {
		return "", err
	}
	out, err := ferryarrow.ExportRecordReader(reader) // the stream owns the reader
	if err != nil {
		return "", err
	}
	raw := ferry.NewRawStream() // what a consumer in another runtime hands us
	defer ferry.FreeRawStream(raw)
	if err := out.ExportTo(raw); err != nil {
		out.Release()
		return "", err
	}

	in, err := ferry.ImportStream(raw)
	if err != nil {
		return "", err
	}
	back, err := ferryarrow.NewRecordReader(in) // owns the stream
	if err != nil {
		return "", err
	}
	defer back.Release()
	n, names := 0, []string{}
	for back.Next() {
		column := back.RecordBatch().Column(0).(*array.String)
		for i := 0; i < column.Len(); i++ {
			names = append(names, column.Value(i))
		}
		n++
	}
	if err := back.Err(); err != nil {
		return "", err
	}
	return fmt.Sprintf("stream: %d batches, %d rows: %s", n, len(names), strings.Join(names, ",")), nil
}
