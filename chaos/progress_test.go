package chaos

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/traffic"
)

func TestProgressPrinterPlainLinesOnFaultChangeAndEveryTenSeconds(t *testing.T) {
	var b bytes.Buffer
	show := ProgressPrinter(&b, false)
	for s := 1; s <= 25; s++ {
		p := Progress{Elapsed: time.Duration(s) * time.Second,
			Progress: traffic.Progress{Requests: s * 10, Acked: s * 9, Errors: map[string]int{"503": s}}}
		if s >= 12 && s < 15 {
			p.Fault = "kill_region us-east for 3s"
		}
		show(p)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// 10s, the fault at 12s, its end at 15s, 25s.
	if len(lines) != 4 || !strings.Contains(lines[1], "fault: kill_region us-east") || !strings.Contains(lines[0], "503=10") {
		t.Fatalf("plain progress:\n%s", b.String())
	}
	if strings.Contains(b.String(), "\r") {
		t.Error("plain progress rewrites lines")
	}
}

func TestProgressPrinterRewritesOneLineOnATerminal(t *testing.T) {
	var b bytes.Buffer
	show := ProgressPrinter(&b, true)
	show(Progress{Elapsed: time.Second})
	show(Progress{Elapsed: 2 * time.Second})
	if strings.Count(b.String(), "\r\033[K") != 2 || strings.Contains(b.String(), "\n") {
		t.Fatalf("terminal progress = %q", b.String())
	}
}
