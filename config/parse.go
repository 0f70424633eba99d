package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
)

// Load reads, parses and validates the file at path. See Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes one YAML document, fills in defaults and validates the
// result. Every problem in the file (an unknown or repeated field, a value
// of the wrong kind, a bad duration or size, an invalid setting) is reported
// at once, as a *ValidationError whose entries name the field path
// ("endpoints[1].lease") and say why. Only a file that is not YAML at all
// is another error.
func Parse(data []byte) (*Config, error) {
	c, err := parse(data)
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return nil, err // its lines start with field paths
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// parse is Parse without the package prefix on decoding errors.
func parse(data []byte) (*Config, error) {
	root, err := document(data)
	if err != nil {
		return nil, err
	}
	var c Config
	d := decoder{}
	d.decode("", root, reflect.ValueOf(&c).Elem())
	c.fillDefaults()
	verr := c.Validate()
	var ve *ValidationError
	if errors.As(verr, &ve) {
		for i := range ve.Errors {
			ve.Errors[i].Line = lineOf(root, ve.Errors[i].Path)
		}
	}
	if len(d.p) == 0 {
		return &c, verr
	}
	// A field that could not be decoded was left unset; what Validate
	// says about it (or about what lies under it) would only repeat the
	// decoding error in other words.
	p := d.p
	if ve != nil {
		for _, fe := range ve.Errors {
			if !shadowed(fe.Path, d.p) {
				p = append(p, fe)
			}
		}
	}
	return nil, p.err()
}

// document parses data as exactly one YAML document and returns its root
// node. Syntax errors carry only a line: there is no field to name yet.
func document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document")
		}
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document; idemd reads exactly one")
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("empty document")
	}
	return doc.Content[0], nil
}

// shadowed reports whether path is one of the decoding problems' paths or
// lies under one of them.
func shadowed(path string, decoding problems) bool {
	for _, fe := range decoding {
		if path == fe.Path || under(path, fe.Path) {
			return true
		}
	}
	return false
}

// lineOf returns the line of the field at path ("endpoints[1].lease") in
// the document, or of the nearest enclosing field that is written there
// (an inherited or missing field has no line of its own), or 0.
func lineOf(root *yaml.Node, path string) int {
	n, line := root, 0
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' }) {
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		var next *yaml.Node
		if idx, ok := strings.CutSuffix(part, "]"); ok {
			if i, err := strconv.Atoi(idx); err == nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
				next = n.Content[i]
			}
		} else if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					next = n.Content[i+1]
					line = n.Content[i].Line
				}
			}
		}
		if next == nil {
			return line
		}
		if next.Line > 0 && next.Kind != yaml.ScalarNode {
			line = next.Line
		}
		n = next
	}
	return line
}

// under reports whether path is a field or element inside parent.
func under(path, parent string) bool {
	rest, ok := strings.CutPrefix(path, parent)
	return ok && rest != "" && (rest[0] == '.' || rest[0] == '[')
}

// fillDefaults sets every unset field that has a default. Endpoint fields
// inherit Defaults, which are filled first.
func (c *Config) fillDefaults() {
	setDuration(&c.Etcd.DialTimeout, DefaultDialTimeout)
	setDuration(&c.Store.ConnectTimeout, DefaultConnectTimeout)
	c.fillProduction()
	if c.Shards == 0 {
		c.Shards = shard.DefaultCount
	}
	if c.Routing == "" {
		c.Routing = RoutingForward
	}
	setDuration(&c.Auth.Leeway, authn.DefaultLeeway)
	if c.Store.MaxConns == 0 {
		c.Store.MaxConns = DefaultMaxConns
	}
	setDuration(&c.Defaults.TTL, idempotency.DefaultTTL)
	setDuration(&c.Defaults.Lease, idempotency.DefaultLease)
	setDuration(&c.Defaults.UpstreamTimeout, DefaultUpstreamTimeout)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		if e.Key == "" {
			e.Key = KeyRequired
		}
		setDuration(&e.TTL, c.Defaults.TTL)
		setDuration(&e.Lease, c.Defaults.Lease)
		setDuration(&e.UpstreamTimeout, c.Defaults.UpstreamTimeout)
		if e.MaxRequestBytes == 0 {
			e.MaxRequestBytes = idempotency.DefaultMaxRequestBytes
		}
		if e.MaxResponseBytes == 0 {
			e.MaxResponseBytes = idempotency.DefaultMaxResponseBytes
		}
		if e.Failover == "" {
			e.Failover = policy.Default
		}
	}
}

// setDuration sets *d to def if it is zero. A zero duration is never a
// useful setting for these fields, so zero means "unset".
func setDuration(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}
