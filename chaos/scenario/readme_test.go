package scenario

import (
	"os"
	"strings"
	"testing"
)

// TestTheREADMENamesEveryShippedScenario: README.md's "Chaos drills"
// names every scenario idemctl drill run accepts, so a reader who picks
// one from the README can run it and sees them all.
func TestTheREADMENamesEveryShippedScenario(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, drills, ok := strings.Cut(string(readme), "\n## Chaos drills\n")
	if !ok {
		t.Fatal(`README.md has no "## Chaos drills" section`)
	}
	drills, _, _ = strings.Cut(drills, "\n## ")
	for _, name := range Names() {
		if !strings.Contains(drills, "`"+name+"`") {
			t.Errorf("README's Chaos drills section does not name scenario %q", name)
		}
	}
}
