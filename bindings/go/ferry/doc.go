// Package ferry binds libferry, which hands Apache Arrow device arrays and
// streams (the Arrow C Device Data Interface) between the runtimes of one
// process without copying.
//
// Consumers import what a producer filled in (ImportDeviceArray,
// ImportStream) and read it through the core's accessors; producers export
// Go-made data (ExportArray, ExportArrayTo, ExportStream, ExportDataStream,
// ExportSeq) whose buffers stay valid until the consumer releases them.
// Every owned object has Release and Move; a cleanup only reports and
// releases what was forgotten. Errors are *Error values carrying the errno
// code and the message. See README.md for the memory model, the threading
// rules and measurements.
package ferry
