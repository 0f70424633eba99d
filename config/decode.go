package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder fills a Config from a YAML node tree and records every mistake
// under the field path an operator reads in the file ("endpoints[2].lease"),
// instead of stopping at the first one or naming Go types. A field that
// cannot be decoded keeps its zero value, so defaults still apply and the
// rest of the file is still checked.
type decoder struct {
	p problems
}

// Types with their own YAML spelling.
var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
)

// decode decodes n into v (a pointer's target) reported under path.
func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isNull(n) {
		return // "ttl:" with nothing after it: unset, default applies
	}
	switch {
	case v.Type() == durationType:
		d.duration(path, n, v)
	case v.Type() == byteSizeType:
		d.size(path, n, v)
	case v.Kind() == reflect.Struct:
		d.mapping(path, n, v)
	case v.Kind() == reflect.Slice:
		d.sequence(path, n, v)
	case v.Kind() == reflect.String:
		if d.scalar(path, n, "a string") {
			v.SetString(n.Value)
		}
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int32 || v.Kind() == reflect.Int64:
		if !d.scalar(path, n, "a whole number") {
			return
		}
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || n.ShortTag() != "!!int" || v.OverflowInt(i) {
			d.add(path, n, "must be a whole number, got %q", n.Value)
			return
		}
		v.SetInt(i)
	case v.Kind() == reflect.Bool:
		if !d.scalar(path, n, "true or false") {
			return
		}
		if n.ShortTag() != "!!bool" {
			d.add(path, n, "must be true or false, got %q", n.Value)
			return
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(b)
	default:
		// Every field type of Config is handled above; this is a
		// programming error, reported rather than ignored.
		d.add(path, n, "cannot be set from YAML (field of kind %s)", v.Kind())
	}
}

// mapping decodes a YAML mapping into the struct v, field by yaml tag.
// Unknown and repeated keys are reported: a misspelt "leese: 5s" would
// otherwise be ignored and its default used, the worst kind of config bug.
func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.add(path, n, "must be a mapping of fields (name: value), got %s", describe(n))
		return
	}
	fields := yamlFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			// A merge key (<<: *defaults) is set first and overridden by
			// the keys written beside it.
			d.merge(path, val, v, seen)
			continue
		}
		at := join(path, k.Value)
		idx, ok := fields[k.Value]
		switch {
		case !ok:
			d.add(at, k, "unknown field%s", suggest(k.Value, fields))
			continue
		case seen[k.Value]:
			d.add(at, k, "set twice in the same mapping")
			continue
		}
		seen[k.Value] = true
		d.decode(at, val, v.Field(idx))
	}
}

// merge decodes the mapping (or list of mappings) of a merge key into v,
// skipping keys set explicitly in the enclosing mapping.
func (d *decoder) merge(path string, n *yaml.Node, v reflect.Value, explicit map[string]bool) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	srcs := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		srcs = n.Content
	}
	for _, src := range srcs {
		for src.Kind == yaml.AliasNode {
			src = src.Alias
		}
		if src.Kind != yaml.MappingNode {
			d.add(path, src, "<< must merge a mapping, got %s", describe(src))
			continue
		}
		rest := &yaml.Node{Kind: yaml.MappingNode, Line: src.Line, Column: src.Column}
		for i := 0; i+1 < len(src.Content); i += 2 {
			if !explicit[src.Content[i].Value] {
				rest.Content = append(rest.Content, src.Content[i], src.Content[i+1])
			}
		}
		d.mapping(path, rest, v)
	}
}

// sequence decodes a YAML list into the slice v, element by element.
func (d *decoder) sequence(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.add(path, n, "must be a list ([a, b] or one \"- item\" per line), got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(fmt.Sprintf("%s[%d]", path, i), item, s.Index(i))
	}
	v.Set(s)
}

// duration decodes a Go duration ("300ms", "1h30m").
func (d *decoder) duration(path string, n *yaml.Node, v reflect.Value) {
	if !d.scalar(path, n, "a duration") {
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		if _, numErr := strconv.ParseFloat(n.Value, 64); numErr == nil {
			d.add(path, n, "%q has no unit; write a duration such as %s", n.Value, unitHint(path, n.Value))
		} else {
			d.add(path, n, "%q is not a duration; write a number with a unit: 300ms, 30s, 5m, 24h", n.Value)
		}
		return
	}
	v.SetInt(int64(dur))
}

// unitHint suggests units for a bare number given to the duration at
// path, by the field's scale: a retention (ttl, replay_ttl: "24" meant
// hours) in hours, anything else in seconds or milliseconds.
func unitHint(path, value string) string {
	field := path[strings.LastIndex(path, ".")+1:]
	if strings.HasSuffix(field, "ttl") || strings.Contains(field, "retention") {
		return value + "h (hours) or " + value + "m"
	}
	return value + "s or " + value + "ms"
}

// size decodes a ByteSize.
func (d *decoder) size(path string, n *yaml.Node, v reflect.Value) {
	if !d.scalar(path, n, "a size") {
		return
	}
	b, err := ParseByteSize(n.Value)
	if err != nil {
		d.add(path, n, "%v", err)
		return
	}
	v.SetInt(int64(b))
}

// scalar reports n if it is not a single value; what names the expected
// value.
func (d *decoder) scalar(path string, n *yaml.Node, what string) bool {
	if n.Kind != yaml.ScalarNode {
		d.add(path, n, "must be %s, got %s", what, describe(n))
		return false
	}
	return true
}

// add records a problem at path, remembering n's line.
func (d *decoder) add(path string, n *yaml.Node, format string, args ...any) {
	d.p = append(d.p, FieldError{Path: path, Reason: fmt.Sprintf(format, shortDurations(args)...), Line: n.Line})
}

// isNull reports an explicit or empty null.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what n is, in YAML terms.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// join appends a field name to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// yamlFields maps the yaml tag names of struct type t to field indexes.
func yamlFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

// suggest returns "; did you mean X?" for the known field closest to key
// (at most two edits away), or the list of known fields.
func suggest(key string, fields map[string]int) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	best, bestDist := "", 3
	for _, n := range names {
		if dist := editDistance(strings.ToLower(key), n); dist < bestDist {
			best, bestDist = n, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %s?", best)
	}
	return "; known fields: " + strings.Join(names, ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
