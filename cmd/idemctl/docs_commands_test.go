package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docCommands returns the idemctl command lines a document shows: inline
// code that starts with "idemctl " (or "go run ./cmd/idemctl "), and such
// lines in code blocks (after an optional "$ ").
func docCommands(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`(?:go run \\./cmd/)?(idemctl [^`]+)`").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:\$ )?(?:go run \./cmd/)?(idemctl [^\n#]+?)\s*(?:#.*)?$`).FindAllStringSubmatch(text, -1) {
		out = append(out, strings.TrimSuffix(m[1], `\`))
	}
	return out
}

// shellWords splits a command line as a shell would for these examples:
// on spaces, with '...' and "..." kept as one word.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\n' || r == '\t':
			if in || cur.Len() > 0 {
				words = append(words, cur.String())
			}
			cur.Reset()
			in = false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// TestEveryIdemctlCommandTheDocsShowExists: every idemctl command line in
// README.md, docs/ and deploy/ names a command that exists and only flags
// it has, so a reader who copies one is not told "unknown command".
// Placeholders (NAME, N) may stand for values; alternatives written with
// "|" or "/" are skipped.
func TestEveryIdemctlCommandTheDocsShowExists(t *testing.T) {
	files := []string{"../../README.md"}
	for _, pat := range []string{"../../docs/*.md", "../../deploy/*.md", "../../deploy/*/*.md"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range docCommands(string(b)) {
			words := shellWords(line)[1:]
			if len(words) == 0 || strings.ContainsAny(strings.Join(words, " "), "|<>") ||
				strings.Contains(words[0], "/") || strings.HasSuffix(line, "...") {
				continue
			}
			root := rootCmd()
			c, rest, err := root.Find(words)
			if err != nil {
				t.Errorf("%s: `%s`: %v", filepath.Base(f), line, err)
				continue
			}
			if err := c.ParseFlags(rest); err != nil && (strings.Contains(err.Error(), "unknown flag") ||
				strings.Contains(err.Error(), "unknown shorthand")) {
				t.Errorf("%s: `%s`: %v", filepath.Base(f), line, err)
				continue
			}
			if c == root && len(c.Flags().Args()) > 0 {
				t.Errorf("%s: `%s`: %q is not an idemctl command", filepath.Base(f), line, c.Flags().Args()[0])
			}
			checked++
		}
	}
	if checked < 30 {
		t.Fatalf("checked only %d command lines", checked)
	}
}
