package chaos

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// IsTerminal reports whether f is a terminal (a character device), which
// decides between a live progress line and plain lines.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// plainEvery is how often ProgressPrinter writes a plain line when w is
// not a terminal: often enough to follow a CI log, rare enough to read it.
const plainEvery = 10 * time.Second

// ProgressPrinter returns an Options.Progress that shows elapsed time,
// requests, acknowledged successes, errors by class and the fault in
// force: on a terminal as one line rewritten in place, otherwise as a
// plain line every ten seconds and whenever the fault changes.
func ProgressPrinter(w io.Writer, terminal bool) func(Progress) {
	var last time.Duration
	lastFault := ""
	return func(p Progress) {
		line := progressLine(p)
		if terminal {
			fmt.Fprintf(w, "\r\033[K%s", line)
			return
		}
		if p.Elapsed-last >= plainEvery || p.Fault != lastFault {
			last, lastFault = p.Elapsed, p.Fault
			fmt.Fprintln(w, line)
		}
	}
}

func progressLine(p Progress) string {
	keys := make([]string, 0, len(p.Errors))
	for k := range p.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	errs := make([]string, len(keys))
	for i, k := range keys {
		errs[i] = fmt.Sprintf("%s=%d", k, p.Errors[k])
	}
	fault := p.Fault
	if fault == "" {
		fault = "none"
	}
	return fmt.Sprintf("%6s  requests %d  acked %d  errors [%s]  fault: %s",
		p.Elapsed.Truncate(time.Second), p.Requests, p.Acked, strings.Join(errs, " "), fault)
}
