package gateway_test

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// constructors are the functions of package gateway allowed to read
// Config's raw Store and Next: New decorates them once (tracing.go's
// decorate) and lets go of them; Wrap fills in Next before calling New.
var constructors = map[string]bool{"New": true, "Wrap": true}

// TestRequestCodeReachesNoRawHandle: every store and executor call the
// gateway makes goes through the one decorated handle (Gateway.store,
// Gateway.next), so no call bypasses its span. The check is on the source:
// a selector cfg.Store or cfg.Next (Config's raw handles) anywhere in the
// gateway's non-test code, its sub-packages included, outside New and
// Wrap fails it.
func TestRequestCodeReachesNoRawHandle(t *testing.T) {
	fset := gotoken.NewFileSet()
	var raw []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if ok && fn.Recv == nil && constructors[fn.Name.Name] && f.Name.Name == "gateway" {
				continue
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Store" && sel.Sel.Name != "Next") || !isCfg(sel.X) {
					return true
				}
				raw = append(raw, fset.Position(sel.Pos()).String()+": cfg."+sel.Sel.Name)
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		t.Errorf("raw handle used outside New: %s (use the decorated Gateway.store / Gateway.next)", r)
	}
}

// isCfg reports whether x names a Config value: cfg or something.cfg.
func isCfg(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "cfg"
	case *ast.SelectorExpr:
		return x.Sel.Name == "cfg"
	}
	return false
}
