package main

import (
	"fmt"
	"unsafe"

	"github.com/ferryarrow/ferry/bindings/go/ferry"
)

// consume takes ownership of what a producer filled in, brings the array to
// the host if it lives on a device, and reads it through the checked
// accessors. It also says where the array came from.
func consume(schema, array unsafe.Pointer) ([]*int32, string, error) {
	a, err := ferry.ImportDeviceArray(array, schema) // moved in: a owns both now
	if err != nil {
		return nil, "", err
	}
	defer a.Release()
	cameFrom := fmt.Sprintf("%s:%d", a.DeviceType(), a.DeviceID())
	if a.DeviceType() != ferry.DeviceCPU {
		// Device memory the host may not read: moved without a copy when the
		// host can reach it, copied otherwise, after the producer's event.
		onHost, err := a.ToHost()
		if err != nil {
			return nil, "", err
		}
		defer onHost.Release()
		a = onHost
	}
	h, err := a.Host() // waits on the producer's event; every read is checked
	if err != nil {
		return nil, "", err
	}
	out := make([]*int32, h.Len())
	for i := range out {
		valid, err := h.IsValid(int64(i))
		if err != nil {
			return nil, "", err
		}
		if !valid {
			continue
		}
		v, err := ferry.Value[int32](h, int64(i))
		if err != nil {
			return nil, "", err
		}
		out[i] = &v
	}
	return out, cameFrom, nil
}
