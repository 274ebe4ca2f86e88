// Command ferry-example is ferry from Go, end to end: a producer hands an
// int32 column with a null to a consumer through the Arrow C Device Data
// Interface (the C structs any runtime in the process could be on the other
// side of), the same data goes to and from arrow-go, a stream of record
// batches crosses as an arrow-go RecordReader, and a device array is made on
// a GPU when there is one (CUDA, then ROCm), else on ferry's simulated
// device, and brought back to the host by the consumer.
package main

import (
	"fmt"
	"os"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-example:", err)
		os.Exit(1)
	}
}

func run() error {
	if err := ferry.CheckABI(); err != nil {
		return err
	}
	fmt.Println("ferry", ferry.Version())

	values := []int32{1, 0, 3, 4}
	valid := []bool{true, false, true, true}
	got, err := handOver(values, valid)
	if err != nil {
		return err
	}
	sum := int32(0)
	for _, v := range got {
		if v != nil {
			sum += *v
		}
	}
	fmt.Printf("consumer: %s, sum %d\n", show(got), sum)

	line, err := arrowRoundTrip(values, valid)
	if err != nil {
		return err
	}
	fmt.Println(line)

	if line, err = streamRoundTrip(); err != nil {
		return err
	}
	fmt.Println(line)

	if line, err = deviceRoundTrip(values, valid); err != nil {
		return err
	}
	fmt.Println(line)
	return nil
}

// handOver hands the column from the producer to the consumer through C
// structs, as two runtimes of one process would.
func handOver(values []int32, valid []bool) ([]*int32, error) {
	schema, array := ferry.NewRawSchema(), ferry.NewRawDeviceArray()
	defer ferry.FreeRawSchema(schema)
	defer ferry.FreeRawDeviceArray(array)
	if err := produce(values, valid, schema, array); err != nil {
		return nil, err
	}
	got, _, err := consume(schema, array)
	return got, err
}

func show(values []*int32) string {
	s := "["
	for i, v := range values {
		if i > 0 {
			s += " "
		}
		if v == nil {
			s += "null"
		} else {
			s += fmt.Sprint(*v)
		}
	}
	return s + "]"
}
