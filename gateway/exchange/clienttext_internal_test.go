package exchange

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestClientTextDropsOnlyPackagePrefixes checks that clientText drops the
// package prefixes at the start and after each wrapping ": ", and leaves
// other words before a colon alone.
func TestClientTextDropsOnlyPackagePrefixes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"idempotency: key missing", "key missing"},
		{"idempotency: key contains a character outside visible ASCII: at byte 4",
			"key contains a character outside visible ASCII: at byte 4"},
		{"gateway: malformed multipart/form-data body: multipart: NextPart: EOF",
			"malformed multipart/form-data body: NextPart: EOF"},
		{"sqlstore: config: store down", "store down"},
		{"wait: must not be negative, got -1s", "wait: must not be negative, got -1s"},
		{"shard 3: owner \"eu\" is failed; nothing was executed", "shard 3: owner \"eu\" is failed; nothing was executed"},
		{"nothing was executed; retry with the same key", "nothing was executed; retry with the same key"},
		{"idempotency:no space stays", "idempotency:no space stays"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := clientText(tt.in); got != tt.want {
			t.Errorf("clientText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorPrefixesCoverGatewayImports checks that every package of this
// module that the gateway imports, directly or not, is in errorPrefixes:
// its errors can reach a problem detail, and a new one must not bring its
// prefix to clients unnoticed.
func TestErrorPrefixesCoverGatewayImports(t *testing.T) {
	const module = "github.com/idemcoord/idemcoord"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if !slices.Contains(errorPrefixes, pkg.Name) {
			t.Errorf("package %s (%s) is imported by the gateway but its prefix %q is not in errorPrefixes",
				pkg.Name, dir, pkg.Name+": ")
		}
		for _, imp := range pkg.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && !strings.HasPrefix(rel, "internal/") {
				visit(filepath.Join(root, filepath.FromSlash(rel)))
			}
		}
	}
	visit(filepath.Join(root, "gateway"))
}
