package gateway_test

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoProblemDetailIsMadeFromAnErrorsText checks that no client text is
// an error's Error text: in the gateway and its stages, no problem's
// Detail calls an Error method (an error reaches a client only through
// exchange.Reason, its ClientReason).
func TestNoProblemDetailIsMadeFromAnErrorsText(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	checked := 0
	for _, f := range append(files, stages...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			var value ast.Expr
			switch n := n.(type) {
			case *ast.KeyValueExpr: // Problem{Detail: ...}
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Detail" {
					value = n.Value
				}
			case *ast.AssignStmt: // p.Detail = ...
				for i, l := range n.Lhs {
					if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == "Detail" && i < len(n.Rhs) {
						value = n.Rhs[i]
					}
				}
			}
			if value == nil {
				return true
			}
			checked++
			ast.Inspect(value, func(v ast.Node) bool {
				if call, ok := v.(*ast.CallExpr); ok {
					if s, ok := call.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Error" && len(call.Args) == 0 {
						t.Errorf("%s: a problem's detail is made from an error's text", fset.Position(call.Pos()))
					}
				}
				return true
			})
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("found only %d problem details to check", checked)
	}
}
