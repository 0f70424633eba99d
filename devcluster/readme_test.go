package devcluster

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTheREADMENamesEveryDevClusterEndpoint: README.md's "A two-minute
// tour" of the dev cluster shows every endpoint the dev cluster's regions
// serve, so a newcomer can try each (the async, cancellable
// /v1/held-payments included).
func TestTheREADMENamesEveryDevClusterEndpoint(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## A two-minute tour\n")
	if !ok {
		t.Fatal(`README.md has no "## A two-minute tour" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	paths := regexp.MustCompile(`(?m)^\s+path: (\S+)$`).FindAllStringSubmatch(regionTemplate.Tree.Root.String(), -1)
	if len(paths) < 3 {
		t.Fatalf("found %d endpoint paths in the region template", len(paths))
	}
	for _, m := range paths {
		if !strings.Contains(section, m[1]) {
			t.Errorf("README's two-minute tour does not show the dev cluster's endpoint %s", m[1])
		}
	}
}
