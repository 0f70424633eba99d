package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../.."

// pendingRefs are citations of documents the project does not have that
// are known and left for a change that owns the file (path from the root
// -> the citation). The test fails once one is fixed, so the entry goes.
var pendingRefs = map[string]string{}

// mdRef matches a cited Markdown file: a path ending in .md that does not
// continue a longer path or URL.
var mdRef = regexp.MustCompile(`(?:^|[^A-Za-z0-9_/.-])([A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b`)

// TestEveryCitedDocumentShipsWithTheRepository: a Go file or a document
// that cites a .md file cites one the repository has (found from the
// root, the citing file's directory or docs/), so whoever carries the
// project on can read what the comment relies on.
func TestEveryCitedDocumentShipsWithTheRepository(t *testing.T) {
	missing := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if path == filepath.Join(root, "internal", "doccheck") {
				return filepath.SkipDir // this package names the missing documents it allows
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range mdRef.FindAllStringSubmatch(string(data), -1) {
			ref := m[1]
			found := false
			for _, base := range []string{root, filepath.Dir(path), filepath.Join(root, "docs")} {
				if _, err := os.Stat(filepath.Join(base, ref)); err == nil {
					found = true
					break
				}
			}
			if !found {
				missing[filepath.ToSlash(rel)] = ref
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, ref := range missing {
		if pendingRefs[file] == ref {
			continue
		}
		t.Errorf("%s cites %s, which the repository does not have", file, ref)
	}
	for file, ref := range pendingRefs {
		if missing[file] != ref {
			t.Errorf("%s no longer cites the missing %s: remove it from pendingRefs", file, ref)
		}
	}
}

// testedWhere returns the section "What is tested where" of
// docs/architecture.md.
func testedWhere(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "\n## What is tested where\n")
	if start < 0 {
		t.Fatal(`docs/architecture.md has no section "What is tested where"`)
	}
	section := doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	return section
}

// testFuncs returns the name of every test, benchmark, example and fuzz
// function of the repository, and of every contract test store/storetest
// registers by name (they run as subtests of a backend's TestStore).
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	top := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)\w*)\(`)
	method := regexp.MustCompile(`(?m)^func \(\w+ suite\) (Test\w*)\(`)
	registered := regexp.MustCompile(`\{"(Test\w*)", \w+\.(Test\w*)\}`)
	found := map[string]bool{}
	methods, registrations := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(data)
		if strings.HasSuffix(path, "_test.go") {
			for _, m := range top.FindAllStringSubmatch(src, -1) {
				found[m[1]] = true
			}
		}
		if filepath.Base(filepath.Dir(path)) == "storetest" {
			for _, m := range method.FindAllStringSubmatch(src, -1) {
				methods[m[1]] = true
			}
			for _, m := range registered.FindAllStringSubmatch(src, -1) {
				if m[1] == m[2] {
					registrations[m[1]] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A contract test counts when both its method and its registration
	// under its own name exist.
	for name := range registrations {
		if methods[name] {
			found[name] = true
		}
	}
	return found
}

// namedTests returns the test names (Test..., Benchmark..., Example...,
// Fuzz...) that text quotes in backticks; a subtest path counts by its
// top-level test.
func namedTests(text string) []string {
	var names []string
	for _, m := range regexp.MustCompile("`((?:Test|Benchmark|Example|Fuzz)[A-Za-z0-9_]*)[^`]*`").FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// TestEveryTestNamedInWhatIsTestedWhereExists: each test that
// docs/architecture.md's "What is tested where" names is a test function
// of the repository (or a store contract test registered by that name),
// so the table cannot point a reader at a test that was renamed or
// removed.
func TestEveryTestNamedInWhatIsTestedWhereExists(t *testing.T) {
	names := namedTests(testedWhere(t))
	if len(names) < 20 {
		t.Fatalf("found %d test names in the section; the check would not see the table", len(names))
	}
	funcs := testFuncs(t)
	for _, name := range names {
		if !funcs[name] {
			t.Errorf(`docs/architecture.md "What is tested where" names %s, which no test file defines`, name)
		}
	}
}

func TestNamedTestsReadsBacktickedTestNamesOnce(t *testing.T) {
	got := namedTests("`TestA` and `TestB/sub`, `TestA` again, `ExampleX`, not `Tester`s `testC` or TestD")
	want := []string{"TestA", "TestB", "ExampleX", "Tester"}
	if !slices.Equal(got, want) {
		t.Errorf("namedTests = %v, want %v", got, want)
	}
}
