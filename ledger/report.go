package ledger

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// Report formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatCSV   = "csv"
)

// tableBlock is how many rows the table aligns at a time: a tabwriter
// holds its rows until flushed, so the table is flushed every block and
// memory stays bounded whatever the window holds.
const tableBlock = 500

// Summary counts a report's entries by class.
type Summary struct {
	Count   map[Class]int `json:"-"`
	MustAct map[Class]int `json:"-"`
}

// ClassCount is one class's line of a summary.
type ClassCount struct {
	Class   Class `json:"class"`
	Count   int   `json:"count"`
	MustAct int   `json:"must_act"`
}

// Lines returns one ClassCount per class, in report order.
func (s Summary) Lines() []ClassCount {
	out := make([]ClassCount, 0, len(Classes))
	for _, c := range Classes {
		out = append(out, ClassCount{Class: c, Count: s.Count[c], MustAct: s.MustAct[c]})
	}
	return out
}

// Total returns the entries and how many of them a person must act on.
func (s Summary) Total() (entries, mustAct int) {
	for _, c := range Classes {
		entries += s.Count[c]
		mustAct += s.MustAct[c]
	}
	return entries, mustAct
}

// Text is the summary as lines of text, one per class and a total.
func (s Summary) Text() string {
	var b strings.Builder
	for _, l := range s.Lines() {
		fmt.Fprintf(&b, "%-12s %d", string(l.Class)+":", l.Count)
		if l.MustAct > 0 {
			fmt.Fprintf(&b, " (%d must act)", l.MustAct)
		}
		b.WriteByte('\n')
	}
	n, m := s.Total()
	fmt.Fprintf(&b, "%-12s %d intents, %d for a person to act on\n", "total:", n, m)
	return b.String()
}

// Header says what a report covers: its window and, when it is one, the
// incident.
type Header struct {
	Incident *Incident `json:"incident,omitempty"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Shards   []int     `json:"shards,omitempty"`
}

// Options shapes a report.
type Options struct {
	// Format is FormatTable (default), FormatJSON or FormatCSV.
	Format string
	// Page is the store's read size (store.LedgerScan.Page).
	Page int
	// Summary receives the CSV's summary lines, so that stdout stays one
	// CSV table (nil: they are not written). The table and the JSON carry
	// their summary themselves.
	Summary io.Writer
}

// Report streams the entries of window w from l to out and returns the
// summary. It holds one store page and one table block at a time.
func Report(ctx context.Context, l store.Ledger, w Window, h Header, o Options, out io.Writer) (Summary, error) {
	sum := Summary{Count: map[Class]int{}, MustAct: map[Class]int{}}
	bw := bufio.NewWriter(out)
	wr, err := newEntryWriter(o.Format, bw, h)
	if err != nil {
		return sum, err
	}
	err = l.ScanLedger(ctx, store.LedgerScan{From: w.From, To: w.To, EventsFrom: w.EventsFrom, Shards: w.Shards, Page: o.Page},
		func(row store.LedgerRow) error {
			e := Classify(row, w)
			sum.Count[e.Class]++
			if e.MustAct {
				sum.MustAct[e.Class]++
			}
			return wr.entry(e)
		})
	if err != nil {
		return sum, err
	}
	if err := wr.close(sum); err != nil {
		return sum, err
	}
	if o.Format == FormatCSV && o.Summary != nil {
		if _, err := io.WriteString(o.Summary, sum.Text()); err != nil {
			return sum, err
		}
	}
	return sum, bw.Flush()
}

type entryWriter interface {
	entry(Entry) error
	close(Summary) error
}

func newEntryWriter(format string, w io.Writer, h Header) (entryWriter, error) {
	switch format {
	case "", FormatTable:
		return newTableWriter(w, h), nil
	case FormatJSON:
		return newJSONWriter(w, h)
	case FormatCSV:
		c := csv.NewWriter(w)
		return &csvWriter{w: c}, c.Write(Columns)
	}
	return nil, fmt.Errorf("ledger: format %q: want table, json or csv", format)
}

// Columns are the CSV's header, one per Entry field.
var Columns = []string{"class", "actor", "endpoint", "key_hash", "operation_id", "shard", "state_at_start",
	"coordinator_action", "final_state", "must_act", "next_step", "updated_at"}

func (e Entry) fields() []string {
	return []string{string(e.Class), e.Actor, e.Endpoint, e.KeyHash, e.OperationID, strconv.Itoa(e.Shard),
		e.StateAtStart, e.Action, e.FinalState, strconv.FormatBool(e.MustAct), e.NextStep, e.UpdatedAt}
}

type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) entry(e Entry) error { return c.w.Write(e.fields()) }

func (c *csvWriter) close(Summary) error {
	c.w.Flush()
	return c.w.Error()
}

// jsonWriter writes {"window": ..., "entries": [...], "summary": [...]}
// an entry at a time.
type jsonWriter struct {
	w     io.Writer
	first bool
}

func newJSONWriter(w io.Writer, h Header) (*jsonWriter, error) {
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(w, "{\n  \"window\": %s,\n  \"entries\": [", head)
	return &jsonWriter{w: w, first: true}, err
}

func (j *jsonWriter) entry(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	sep := ",\n    "
	if j.first {
		sep, j.first = "\n    ", false
	}
	_, err = fmt.Fprintf(j.w, "%s%s", sep, b)
	return err
}

func (j *jsonWriter) close(s Summary) error {
	lines, err := json.Marshal(s.Lines())
	if err != nil {
		return err
	}
	n, m := s.Total()
	end := "\n  ]"
	if j.first {
		end = "]"
	}
	_, err = fmt.Fprintf(j.w, "%s,\n  \"summary\": %s,\n  \"total\": %d,\n  \"must_act\": %d\n}\n", end, lines, n, m)
	return err
}

// tableWriter aligns tableBlock rows at a time.
type tableWriter struct {
	out  io.Writer
	tw   *tabwriter.Writer
	rows int
}

var tableHeader = "CLASS\tOPERATION\tACTOR\tENDPOINT\tKEY_HASH\tSHARD\tAT_START\tFINAL\tMUST_ACT\tWHAT THE COORDINATOR DID\tNEXT STEP"

func newTableWriter(w io.Writer, h Header) *tableWriter {
	t := &tableWriter{out: w}
	fmt.Fprintln(w, windowLine(h))
	return t
}

// windowLine says what the table covers.
func windowLine(h Header) string {
	what := "window"
	if in := h.Incident; in != nil {
		what = fmt.Sprintf("incident %s: %s of %s by %s (%s)", in.ID, in.Kind, dash(in.Region), in.Operator, in.Reason)
	}
	to := h.To.UTC().Format(time.RFC3339)
	if h.Incident != nil && h.Incident.Open {
		to += " (still open)"
	}
	shards := "every shard"
	if h.Shards != nil {
		shards = fmt.Sprintf("%d shards", len(h.Shards))
	}
	return fmt.Sprintf("%s, %s to %s, %s", what, h.From.UTC().Format(time.RFC3339), to, shards)
}

func (t *tableWriter) entry(e Entry) error {
	if t.tw == nil {
		t.tw = tabwriter.NewWriter(t.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(t.tw, tableHeader)
	}
	must := "-"
	if e.MustAct {
		must = "YES"
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", e.Class, dash(e.OperationID), e.Actor, e.Endpoint,
		e.KeyHash[:16], e.Shard, e.StateAtStart, e.FinalState, must, e.Action, e.NextStep)
	t.rows++
	if t.rows%tableBlock == 0 {
		return t.tw.Flush()
	}
	return nil
}

func (t *tableWriter) close(s Summary) error {
	if t.tw != nil {
		if err := t.tw.Flush(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(t.out, "no intent was touched in this window")
	}
	_, err := fmt.Fprint(t.out, "\n"+s.Text())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Collect classifies window w's intents from l, keeping at most limit
// entries (the must-act ones first: a later must-act entry replaces a
// kept one that is not) and counting all of them: what a drill report
// embeds. omitted is how many entries were not kept.
func Collect(ctx context.Context, l store.Ledger, w Window, limit int) (entries []Entry, sum Summary, omitted int, err error) {
	sum = Summary{Count: map[Class]int{}, MustAct: map[Class]int{}}
	err = l.ScanLedger(ctx, store.LedgerScan{From: w.From, To: w.To, EventsFrom: w.EventsFrom, Shards: w.Shards}, func(row store.LedgerRow) error {
		e := Classify(row, w)
		sum.Count[e.Class]++
		if e.MustAct {
			sum.MustAct[e.Class]++
		}
		switch {
		case len(entries) < limit:
			entries = append(entries, e)
			return nil
		case e.MustAct:
			for i := range entries {
				if !entries[i].MustAct {
					entries[i] = e
					omitted++
					return nil
				}
			}
		}
		omitted++
		return nil
	})
	return entries, sum, omitted, err
}
