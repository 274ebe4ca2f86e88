package main

import (
	"fmt"
	"os"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// pickDevice returns a GPU when one works (CUDA, then ROCm), else the
// simulated device, which is always there.
func pickDevice() (*ferry.Device, string, error) {
	for _, t := range []ferry.DeviceType{ferry.DeviceCUDA, ferry.DeviceROCm} {
		dev, err := ferry.ResolveDevice(t, 0)
		if err == nil {
			return dev, "", nil
		}
		fmt.Fprintf(os.Stderr, "note: no %s here (%v)\n", t, err)
	}
	dev, err := ferry.ResolveDevice(ferry.DeviceSim, 0)
	return dev, " (no GPU: the simulated device)", err
}

// deviceRoundTrip produces the column on a device the way GPU code does
// (buffers on the device, filled by copies queued on the producer's stream,
// exported with an event recorded on that stream) and hands it to the
// consumer, which brings it back to the host.
func deviceRoundTrip(values []int32, valid []bool) (string, error) {
	dev, note, err := pickDevice()
	if err != nil {
		return "", err
	}
	cpu, err := ferry.ResolveDevice(ferry.DeviceCPU, -1)
	if err != nil {
		return "", err
	}
	stream, err := dev.StreamCreate()
	if err != nil {
		return "", err
	}
	data := &ferry.ArrayData{Format: "i", Length: int64(len(values)),
		// Runs when the consumer releases the array: the queued copies read
		// the staging buffers (Keep), so the stream is drained first.
		OnRelease: func() { _ = dev.StreamSynchronize(stream); _ = dev.StreamDestroy(stream) }}
	staging, column, err := ferry.AllocSlice[int32](len(values))
	if err != nil {
		data.Free()
		return "", err
	}
	copy(column, values)
	validity, nulls, err := bitmap(valid)
	if err != nil {
		staging.Free()
		data.Free()
		return "", err
	}
	data.NullCount = nulls
	data.Keep = []ferry.Buffer{validity, staging}
	for _, host := range data.Keep {
		buf, err := dev.AllocBuffer(host.Size())
		if err == nil {
			err = ferry.Memcpy(dev, buf.Ptr(), cpu, host.Ptr(), host.Size(), stream) // queued
		}
		data.Buffers = append(data.Buffers, buf)
		if err != nil {
			data.Free()
			return "", err
		}
	}
	a, err := ferry.ExportArray(data, &ferry.ExportOptions{Device: dev, ProducerStream: stream,
		Policy: ferry.SyncRecordEvent})
	if err != nil {
		return "", err
	}

	schema, array := ferry.NewRawSchema(), ferry.NewRawDeviceArray()
	defer ferry.FreeRawSchema(schema)
	defer ferry.FreeRawDeviceArray(array)
	if err := a.ExportTo(array, schema); err != nil {
		a.Release()
		return "", err
	}
	got, cameFrom, err := consume(schema, array)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("device: %s%s -> host %s", cameFrom, note, show(got)), nil
}
