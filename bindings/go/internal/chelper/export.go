package chelper

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"os"
)

// chelperNoop is the cheapest C -> Go callback, the floor for callback
// costs. Like every export it recovers panics (none can happen here; the
// deferred recover costs a few nanoseconds and keeps the rule uniform).
//
//export chelperNoop
func chelperNoop(x C.int64_t) C.int64_t {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(os.Stderr, "chelperNoop: recovered panic:", r)
		}
	}()
	return x + 1
}
