package gateway_test

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestTheContractListsEveryProblemType: every problem type the gateway can
// answer (a problem literal's Type in its source) is in the list of
// docs/http-contract.md ("Problem types: ..."), where clients look up what
// a type means.
func TestTheContractListsEveryProblemType(t *testing.T) {
	listed := map[string]bool{}
	for _, name := range testutil.ContractProblemTypes(t, "../docs/http-contract.md") {
		listed[name] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := filepath.Glob("*/*.go") // the stages' packages
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, stages...)
	used := map[string]string{} // type -> file
	fset := gotoken.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			switch tp := lit.Type.(type) {
			case *ast.Ident: // inside package exchange
				if tp.Name != "Problem" {
					return true
				}
			case *ast.SelectorExpr: // exchange.Problem
				if tp.Sel.Name != "Problem" {
					return true
				}
			default:
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if k, isID := kv.Key.(*ast.Ident); !ok || !isID || k.Name != "Type" {
					continue
				}
				v := kv.Value
				if b, ok := v.(*ast.BinaryExpr); ok { // exchange.ProblemBase + "name"
					v = b.Y
				}
				if s, ok := v.(*ast.BasicLit); ok && s.Kind == gotoken.STRING {
					name, _ := strconv.Unquote(s.Value)
					used[name] = f
				}
			}
			return true
		})
	}
	if len(used) < 20 {
		t.Fatalf("found only %d problem types in the source: %v", len(used), used)
	}
	for name, f := range used {
		if !listed[name] {
			t.Errorf("problem type %q (%s) is not in docs/http-contract.md's list of problem types", name, f)
		}
	}
}
