package report

import (
	"bytes"
	"os"
	"testing"
)

func TestWriteForScreenshot(t *testing.T) {
	in := synthetic()
	r := Build(in)
	r.Meta.Command = "idemctl drill run --scenario region-loss-reject --seed 42"
	r.Meta.Commit, r.Meta.Cluster = "0123abcdef0123abcdef+modified", "process"
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/tmp/report.html", b.Bytes(), 0o644)
}
