module github.com/ferry-project/ferry/bindings/go

go 1.24
