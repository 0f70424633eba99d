// Command firsttrace instruments a scratch checkout for the first-run
// trace of docs/architecture.md ("The gateway as stages"): it rewrites
// every non-test .go file under the named directories of root so that
// each function declared there records its entry and exit (package
// ztrace). run.sh makes the scratch checkout, instruments it, sends one
// first-run POST (testdata/ztrace_test.go.txt) and counts the stays, files
// and returns of the request's goroutine. Never run it on a working tree:
// it rewrites the sources.
//
//	internal/archmetrics/firsttrace/run.sh <commit>
package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	root := os.Args[1]
	for _, dir := range os.Args[2:] {
		walk(root, dir)
	}
}

func walk(root, dir string) {
	filepath.Walk(filepath.Join(root, dir), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.Contains(path, "firsttrace") || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, _ := os.ReadFile(path)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			panic(err)
		}
		rel, _ := filepath.Rel(root, path)
		var offs []int
		var names []string
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			offs = append(offs, fset.Position(fd.Body.Lbrace).Offset+1)
			names = append(names, fd.Name.Name)
		}
		if len(offs) == 0 {
			return nil
		}
		idx := make([]int, len(offs))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return offs[idx[a]] > offs[idx[b]] })
		out := string(src)
		for _, i := range idx {
			out = out[:offs[i]] + "defer ztrace.Enter(\"" + rel + ":" + names[i] + "\")();" + out[offs[i]:]
		}
		pkgEnd := fset.Position(f.Name.End()).Offset
		out = out[:pkgEnd] + "\nimport ztrace \"github.com/idemcoord/idemcoord/internal/archmetrics/firsttrace/ztrace\"\n" + out[pkgEnd:]
		return os.WriteFile(path, []byte(out), 0o644)
	})
}
