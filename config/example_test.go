package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/config"
)

func TestExample(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	c, err := config.Parse([]byte(config.Example))
	if err != nil {
		t.Fatalf("Parse(Example): %v", err)
	}
	if len(c.Endpoints) < 2 {
		t.Fatalf("Example has %d endpoints", len(c.Endpoints))
	}
	for _, e := range c.Endpoints {
		if err := e.Policy().Validate(); err != nil {
			t.Errorf("endpoint %s: policy: %v", e.Name, err)
		}
	}
	if _, err := c.AuthConfig(); err != nil {
		t.Errorf("AuthConfig: %v", err)
	}
}

// TestConfigurationDocShowsExampleByteForByte holds docs/configuration.md
// to its claim that the configuration it shows is config.Example: its
// first ```yaml block must be example.yaml, byte for byte, so what an
// operator copies from the document is the file the tests validate.
func TestConfigurationDocShowsExampleByteForByte(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "\n```yaml\n")
	if !ok {
		t.Fatal("docs/configuration.md has no ```yaml block")
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatal("docs/configuration.md's ```yaml block is not closed")
	}
	if diff := cmp.Diff(config.Example, block+"\n"); diff != "" {
		t.Errorf("docs/configuration.md's block differs from config/example.yaml (-example +doc):\n%s", diff)
	}
}
