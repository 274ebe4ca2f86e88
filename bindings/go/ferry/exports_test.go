package ferry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExportRecoversPanics checks the rule that no panic may unwind
// through a C frame: every //export function of the module begins with a
// deferred function that calls recover().
func TestEveryExportRecoversPanics(t *testing.T) {
	files := []string{}
	for _, dir := range []string{".", "../plugin", "../internal/chelper"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	exports := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Doc == nil || !hasExport(fn.Doc) {
				continue
			}
			exports++
			if !startsWithDeferredRecover(fn) {
				t.Errorf("%s: //export %s does not start with a deferred recover()", f, fn.Name.Name)
			}
		}
	}
	if exports < 8 {
		t.Fatalf("found only %d //export functions: the scan is broken", exports)
	}
}

func hasExport(doc *ast.CommentGroup) bool {
	for _, c := range doc.List {
		if strings.HasPrefix(c.Text, "//export ") {
			return true
		}
	}
	return false
}

func startsWithDeferredRecover(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	d, ok := fn.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	found := false
	ast.Inspect(d, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "recover" {
				found = true
			}
		}
		return true
	})
	return found
}
