package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a size in bytes. In YAML it is an integer (bytes) or a string
// with a binary unit: "512B", "64KiB", "1MiB", "2GiB".
type ByteSize int64

// Binary size units.
const (
	KiB ByteSize = 1 << 10
	MiB ByteSize = 1 << 20
	GiB ByteSize = 1 << 30
)

// units maps the accepted suffixes to their multiplier.
var units = map[string]ByteSize{"": 1, "B": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB}

// ParseByteSize parses an integer number of bytes, optionally followed by
// B, KiB, MiB or GiB. Decimal units (KB, MB) are refused rather than
// guessed: "1MB" means 10^6 to some and 2^20 to others.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	mult, ok := units[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("%q is not a size: want bytes, or a whole number followed by B, KiB, MiB or GiB", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/int64(mult) {
		return 0, fmt.Errorf("%q is not a size: out of range", s)
	}
	return ByteSize(n) * mult, nil
}

// UnmarshalYAML decodes an integer or a ParseByteSize string. Errors name
// the line.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a size must be a scalar", n.Line)}}
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		// A TypeError lets the decoder go on and report every bad field.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*b = v
	return nil
}

// MarshalYAML encodes the size as String does.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// String returns the size in the largest binary unit that divides it
// exactly ("64KiB"), or in bytes ("1000").
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		size ByteSize
	}{{"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if b != 0 && b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10)
}
