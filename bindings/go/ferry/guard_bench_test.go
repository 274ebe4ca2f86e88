package ferry

import (
	"runtime"
	"testing"
)

// BenchmarkGuard compares the leak safety nets for one owned object made and
// released at once (run with -benchmem):
//
//	none        the object alone (no safety net: the floor)
//	addcleanup  runtime.AddCleanup at creation, Cleanup.Stop at release
//	finalizer   runtime.SetFinalizer, cleared at release
//	nursery     what the package does (guard.go): a nursery slot, a cleanup
//	            only for objects that outlive it
//
// Each object's cleanup would free a C pointer; here it only counts.
type guardBenchObject struct {
	c     uintptr
	guard leakGuard
}

func (o *guardBenchObject) guardState() *leakGuard { return &o.guard }
func (o *guardBenchObject) addCleanup() runtime.Cleanup {
	return runtime.AddCleanup(o, func(c uintptr) { reportLeak("guardBenchObject") }, o.c)
}

var guardBenchSink *guardBenchObject

func BenchmarkGuard(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o := &guardBenchObject{c: uintptr(i)}
			guardBenchSink = o
			o.c = 0
		}
	})
	b.Run("addcleanup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o := &guardBenchObject{c: uintptr(i)}
			o.guard.cleanup = o.addCleanup()
			guardBenchSink = o
			o.guard.cleanup.Stop()
		}
	})
	b.Run("finalizer", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o := &guardBenchObject{c: uintptr(i)}
			runtime.SetFinalizer(o, func(o *guardBenchObject) { reportLeak("guardBenchObject") })
			guardBenchSink = o
			runtime.SetFinalizer(o, nil)
		}
	})
	b.Run("nursery", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o := &guardBenchObject{c: uintptr(i)}
			track(o)
			guardBenchSink = o
			o.guard.disarm()
		}
	})
}
