package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docBlock returns the first fenced block of the document at path (from
// the repository root) after heading whose fence line is fence ("```yaml",
// "```").
func docBlock(t *testing.T, path, heading, fence string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", path, heading)
	}
	_, block, ok := strings.Cut(section, "\n"+fence+"\n")
	if !ok {
		t.Fatalf("%s section %q has no %s block", path, heading, fence)
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	return block + "\n"
}

// TestDocExampleConfigsPassCheckConfig follows the README's small example
// and docs/configuration.md's complete one as a new user would: set the
// environment variable the document says to set, save the example it
// shows, run check-config on it.
func TestDocExampleConfigsPassCheckConfig(t *testing.T) {
	for _, doc := range []struct{ path, heading string }{
		{"README.md", "## Configuration"},
		{"docs/configuration.md", "# Configuration"},
	} {
		t.Run(doc.path, func(t *testing.T) { checkDocExample(t, doc.path, doc.heading) })
	}
}

func checkDocExample(t *testing.T, path, heading string) {
	example := docBlock(t, path, heading, "```yaml")
	env := regexp.MustCompile(`(?m)^\s*hs256_secret_env:\s*(\S+)`).FindStringSubmatch(example)
	if env == nil {
		t.Fatalf("%s example has no hs256_secret_env", path)
	}
	steps := docBlock(t, path, heading, "```")
	if !strings.Contains(steps, "export "+env[1]+"=") {
		t.Fatalf("%s never says to set %s, which its example reads the secret from:\n%s", path, env[1], steps)
	}
	// $(openssl rand -hex 32): 64 characters.
	t.Setenv(env[1], strings.Repeat("5f", 32))
	file := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(file, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "check-config", file)
	if err != nil || !strings.Contains(out, ": ok (region ") {
		t.Fatalf("check-config on the %s example: %v\nstdout %s\nstderr %s", path, err, out, stderr)
	}
}

// TestREADMEReferencesOnlyFilesInTheRepository: a document the README
// points to must ship with the repository, so whoever carries the project
// on has it (the design once lived outside, in ../shared/DESIGN.md).
func TestREADMEReferencesOnlyFilesInTheRepository(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile("\\]\\(([^)#\\s]+)\\)|`([^`\\s]+\\.md)`").FindAllStringSubmatch(string(readme), -1)
	seen := map[string]bool{}
	for _, m := range refs {
		ref := m[1] + m[2]
		if strings.Contains(ref, "://") || seen[ref] {
			continue
		}
		seen[ref] = true
		clean := filepath.Clean(ref)
		if strings.HasPrefix(clean, "..") || filepath.IsAbs(clean) {
			t.Errorf("README references %s, outside the repository", ref)
			continue
		}
		if _, err := os.Stat(filepath.Join("../..", clean)); err != nil {
			t.Errorf("README references %s: %v", ref, err)
		}
	}
	if !seen["docs/architecture.md"] {
		t.Errorf("README does not link docs/architecture.md (references: %v)", seen)
	}
}
