// Command archmetrics measures how the gateway's code is laid out, for
// the figures of issue 27 ("the gateway as stages") and the plan in
// docs/architecture.md ("The gateway as stages"). Run it from the
// repository root:
//
//	go run ./internal/archmetrics            # the gateway and its sub-packages
//	go run ./internal/archmetrics -dir failover
//
// For every package under dir it prints the non-test files and lines and
// the share of its file-to-file references that run both ways (file A
// uses a name declared in file B, and B one declared in A: a field, a
// method, a function, a type, a constant or a variable, resolved by
// go/types); for the whole tree the methods on *Gateway and the files they
// are in, the same share inside packages and over the whole tree (a file
// of one package using a name declared in a file of another package of the
// tree counts too: such a pair can only run one way, since packages do not
// import each other both ways), and the length and branch count of the
// function named by -func (a branch is an if, an else-if, a non-default
// case of a switch or select, a for or range loop, and each && or ||).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("dir", "gateway", "the tree to measure, from the repository root")
	fn := flag.String("func", "decide", "the function whose length and branches to report (any package in the tree)")
	recv := flag.String("recv", "Gateway", "the type whose methods to count")
	flag.Parse()
	if err := run(os.Stdout, *dir, *fn, *recv); err != nil {
		fmt.Fprintln(os.Stderr, "archmetrics:", err)
		os.Exit(1)
	}
}

// pkgInfo is what go list says of one package.
type pkgInfo struct {
	path, dir string
	files     []string
}

func run(w io.Writer, dir, fn, recv string) error {
	pkgs, exports, err := list("./" + filepath.ToSlash(dir) + "/...")
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var totalFiles, totalLines, methods int
	methodFiles := map[string]bool{}
	var pairs, both, uses, usesBoth, typeErrs int
	tree := map[[2]string]int{} // file-to-file references over the whole tree
	root := ""
	if len(pkgs) > 0 {
		root = pkgs[0].path
	}
	inTree := func(p *types.Package) bool {
		return p != nil && (p.Path() == root || strings.HasPrefix(p.Path(), root+"/"))
	}
	fmt.Fprintf(w, "%-52s %6s %7s %s\n", "package", "files", "lines", "file pairs referring both ways (inside the package)")
	for _, p := range pkgs {
		var files []*ast.File
		lines := 0
		for _, name := range p.files {
			path := filepath.Join(p.dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			files = append(files, f)
			n, err := countLines(path)
			if err != nil {
				return err
			}
			lines += n
		}
		totalFiles += len(files)
		totalLines += lines

		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp.(types.ImporterFrom), Error: func(error) { typeErrs++ }}
		pkg, _ := conf.Check(p.path, fset, files, info)
		refs := map[[2]string]int{}
		for id, obj := range info.Uses {
			if obj == nil || !inTree(obj.Pkg()) || !obj.Pos().IsValid() {
				continue
			}
			if obj.Pkg().Path() != pkg.Path() {
				// Declared in another package of the tree (export data:
				// its position names the declaring file).
				if _, isPkg := obj.(*types.PkgName); !isPkg {
					from := fset.Position(id.Pos()).Filename
					to := fset.Position(obj.Pos()).Filename
					if from != to && to != "" {
						tree[[2]string{from, to}]++
					}
				}
				continue
			}
			if v, ok := obj.(*types.Var); ok && !v.IsField() && v.Parent() != pkg.Scope() {
				continue // a local variable
			}
			if c, ok := obj.(*types.Const); ok && c.Parent() != pkg.Scope() && c.Parent() != nil {
				continue
			}
			if tn, ok := obj.(*types.TypeName); ok && tn.Parent() != pkg.Scope() {
				continue
			}
			from := fset.Position(id.Pos()).Filename
			to := fset.Position(obj.Pos()).Filename
			if from != to {
				refs[[2]string{from, to}]++
				tree[[2]string{from, to}]++
			}
		}
		pkgPairs, pkgBoth := 0, 0
		for r := range refs {
			pkgPairs++
			if refs[[2]string{r[1], r[0]}] > 0 {
				pkgBoth++
			}
		}
		fmt.Fprintf(w, "%-52s %6d %7d %d of %d (%.0f%%)\n", p.path, len(files), lines, pkgBoth, pkgPairs, percent(pkgBoth, pkgPairs))
		for r, n := range refs {
			pairs++
			uses += n
			if refs[[2]string{r[1], r[0]}] > 0 {
				both++
				usesBoth += n
			}
		}
		for _, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				if fd.Recv != nil && recvName(fd.Recv) == recv {
					methods++
					methodFiles[fset.Position(fd.Pos()).Filename] = true
				}
				if fd.Name.Name == fn && fd.Body != nil {
					start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
					fmt.Fprintf(w, "func %s (%s:%d): %d lines, %d branches\n", fn,
						filepath.ToSlash(relPath(start.Filename)), start.Line, end.Line-start.Line+1, branches(fd.Body))
				}
			}
		}
	}
	fmt.Fprintf(w, "%-52s %6d %7d\n", "total", totalFiles, totalLines)
	fmt.Fprintf(w, "methods on *%s: %d in %d files\n", recv, methods, len(methodFiles))
	pct := 0.0
	if pairs > 0 {
		pct = 100 * float64(both) / float64(pairs)
	}
	fmt.Fprintf(w, "file-to-file references inside a package (file A uses a name of file B): %d, of which both ways: %d (%.0f%%)\n", pairs, both, pct)
	pct = 0
	if uses > 0 {
		pct = 100 * float64(usesBoth) / float64(uses)
	}
	fmt.Fprintf(w, "the same counted by uses of a name: %d, of which between files that refer both ways: %d (%.0f%%)\n", uses, usesBoth, pct)
	var tPairs, tBoth, tUses, tUsesBoth, cross int
	for r, n := range tree {
		tPairs++
		tUses += n
		if filepath.Dir(r[0]) != filepath.Dir(r[1]) {
			cross++
		}
		if tree[[2]string{r[1], r[0]}] > 0 {
			tBoth++
			tUsesBoth += n
		}
	}
	fmt.Fprintf(w, "file-to-file references over the whole tree (across its packages too): %d (%d between packages), of which both ways: %d (%.0f%%)\n",
		tPairs, cross, tBoth, percent(tBoth, tPairs))
	fmt.Fprintf(w, "the same counted by uses of a name: %d, of which between files that refer both ways: %d (%.0f%%)\n",
		tUses, tUsesBoth, percent(tUsesBoth, tUses))
	if typeErrs > 0 {
		return fmt.Errorf("%d type errors: the references are incomplete", typeErrs)
	}
	return nil
}

// list returns the packages matching pattern (non-test Go files) and the
// export data of every package they depend on, building it as needed.
func list(pattern string) ([]pkgInfo, map[string]string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", pattern).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list %s: %w", pattern, err)
	}
	var pkgs []pkgInfo
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) < 3 {
			continue
		}
		pkgs = append(pkgs, pkgInfo{path: parts[0], dir: parts[1], files: strings.Fields(parts[2])})
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].path < pkgs[j].path })
	out, err = exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", pattern).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -export %s: %w", pattern, err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return pkgs, exports, nil
}

// recvName returns the name of a method's receiver type, without its
// pointer or type parameters.
func recvName(fl *ast.FieldList) string {
	if len(fl.List) == 0 {
		return ""
	}
	t := fl.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch t := t.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}

// branches counts the branches of body: ifs (each else-if too), the
// non-default cases of switches and selects, loops, and each && or ||.
func branches(body *ast.BlockStmt) int {
	n := 0
	ast.Inspect(body, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// percent is 100*n/of, 0 when of is 0.
func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		n++
	}
	return n, s.Err()
}

func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil {
		return r
	}
	return p
}
