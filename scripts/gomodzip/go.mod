// The release tool that builds the Go module's zip (scripts/release.sh); its
// own module, so golang.org/x/mod is never a requirement of ferry's.
module github.com/ferryarrow/ferry/scripts/gomodzip

go 1.26.0

require golang.org/x/mod v0.43.0
