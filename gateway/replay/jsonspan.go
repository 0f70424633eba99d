package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
)

// span is where the value a pointer names sits in a JSON document.
type span struct {
	field      int // index of the pointer in the list searched for
	start, end int
}

// findSpans returns the byte ranges of the values the pointers name in
// doc, in document order. A pointer that names nothing is absent; a value
// inside one already found is not searched. doc must be one JSON value.
func findSpans(doc []byte, pointers [][]string) ([]span, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []span
	if err := walkValue(dec, nil, pointers, &out); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("gateway: more than one JSON value")
	}
	return out, nil
}

func walkValue(dec *json.Decoder, path []string, pointers [][]string, out *[]span) error {
	for i, p := range pointers {
		if slices.Equal(p, path) {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			end := int(dec.InputOffset())
			*out = append(*out, span{field: i, start: end - len(raw), end: end})
			return nil
		}
	}
	if !underAny(path, pointers) {
		var skip json.RawMessage
		return dec.Decode(&skip)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			if err := walkValue(dec, append(path[:len(path):len(path)], k.(string)), pointers, out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, append(path[:len(path):len(path)], strconv.Itoa(i)), pointers, out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// underAny reports whether some pointer names a value below path.
func underAny(path []string, pointers [][]string) bool {
	for _, p := range pointers {
		if len(p) > len(path) && slices.Equal(p[:len(path)], path) {
			return true
		}
	}
	return false
}

// splice returns doc with each span's bytes replaced by repl(span).
func splice(doc []byte, spans []span, repl func(span) []byte) []byte {
	var out bytes.Buffer
	at := 0
	for _, s := range spans {
		out.Write(doc[at:s.start])
		out.Write(repl(s))
		at = s.end
	}
	out.Write(doc[at:])
	return out.Bytes()
}
