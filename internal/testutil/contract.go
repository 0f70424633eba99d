package testutil

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// ContractProblemTypes returns the problem types listed in the HTTP
// contract at path (docs/http-contract.md, its "Problem types: ..."
// paragraph), in the order listed: what clients look up a type in, and
// what the gateway's source and idemctl openapi are held to.
func ContractProblemTypes(t testing.TB, path string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(doc), "\nProblem types: ")
	if !ok {
		t.Fatalf(`%s has no "Problem types: " list`, path)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(list, -1) {
		listed = append(listed, m[1])
	}
	return listed
}
