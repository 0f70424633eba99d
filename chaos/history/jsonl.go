package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrFormat is wrapped by ReadJSONL for input that is not a history file.
var ErrFormat = errors.New("history: not a history file")

// header is the first line of a history file.
type header struct {
	Format string    `json:"format"`
	Start  time.Time `json:"start"`
}

const formatName = "idemcoord-chaos-history/v1"

// WriteJSONL writes h as JSON lines: a header line with the start time,
// then one operation per line, so a run can be checked again later.
func WriteJSONL(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(header{Format: formatName, Start: h.Start}); err != nil {
		return fmt.Errorf("history: write: %w", err)
	}
	for _, op := range h.Ops {
		if err := enc.Encode(op); err != nil {
			return fmt.Errorf("history: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("history: write: %w", err)
	}
	return nil
}

// ReadJSONL reads a history WriteJSONL wrote. Errors name the line.
func ReadJSONL(r io.Reader) (History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var h History
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			var hd header
			if err := json.Unmarshal(sc.Bytes(), &hd); err != nil || hd.Format != formatName {
				return History{}, fmt.Errorf("line 1: %w", ErrFormat)
			}
			h.Start = hd.Start
			continue
		}
		var op Operation
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return History{}, fmt.Errorf("history: line %d: %w", line, err)
		}
		h.Ops = append(h.Ops, op)
	}
	if err := sc.Err(); err != nil {
		return History{}, fmt.Errorf("history: read: %w", err)
	}
	if line == 0 {
		return History{}, fmt.Errorf("empty input: %w", ErrFormat)
	}
	h.Sort()
	return h, nil
}
