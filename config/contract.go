package config

import (
	"fmt"
	"math"
	"mime"
	"strconv"
	"strings"
	"time"
)

// Mode says whether the gateway enforces an endpoint's idempotency or only
// watches it.
type Mode string

// Modes.
const (
	// ModeEnforce replays, refuses (409, 422) and limits as the contract
	// says. The default.
	ModeEnforce Mode = "enforce"
	// ModeShadow runs fingerprints, claims and records but passes every
	// request upstream as if the gateway were not there, counting what
	// enforcement would have done (idemcoord.shadow.decisions). For
	// rolling idempotency out on an endpoint whose clients may reuse keys
	// wrongly: watch the numbers, then switch to enforce.
	ModeShadow Mode = "shadow"
)

// Limit is a per-actor, per-endpoint token bucket over the answers the
// gateway gives without the upstream: replays and in-progress hits. It
// keeps a key from being a way around the upstream's quota. The bucket is
// local to one instance: N instances let an actor through up to N times
// the rate.
type Limit struct {
	// Rate is the refill rate, "N/unit" with a duration unit: "10/s",
	// "600/m", "5/30s". Empty means no limit.
	Rate string `yaml:"rate"`
	// Burst is the bucket's size. Default DefaultLimitBurst.
	Burst int `yaml:"burst"`
}

// DefaultLimitBurst is the bucket size when only a rate is set: one
// answer at a time, so a limit of "1/s" means what it says.
const DefaultLimitBurst = 1

// Enabled reports whether a limit is configured.
func (l Limit) Enabled() bool { return l.Rate != "" }

// PerSecond returns the refill rate in tokens per second.
func (l Limit) PerSecond() (float64, error) {
	n, unit, ok := strings.Cut(l.Rate, "/")
	if !ok {
		return 0, fmt.Errorf("%q: want N/unit, such as 10/s or 600/m", l.Rate)
	}
	count, err := strconv.ParseFloat(n, 64)
	// NaN compares false with everything, so "NaN/s" would pass a plain
	// count <= 0 check and give a bucket that never refills or never
	// empties; Inf would be no limit at all.
	if err != nil || count <= 0 || math.IsNaN(count) || math.IsInf(count, 0) {
		return 0, fmt.Errorf("%q: the count must be a finite positive number", l.Rate)
	}
	if unit != "" && (unit[0] < '0' || unit[0] > '9') {
		unit = "1" + unit
	}
	per, err := time.ParseDuration(unit)
	if err != nil || per <= 0 {
		return 0, fmt.Errorf("%q: the unit must be a positive duration (s, m, 30s)", l.Rate)
	}
	rate := count / per.Seconds()
	if rate <= 0 || math.IsInf(rate, 0) {
		return 0, fmt.Errorf("%q: the rate in tokens per second is out of range", l.Rate)
	}
	return rate, nil
}

// BurstOrDefault returns Burst, or DefaultLimitBurst when it is unset.
func (l Limit) BurstOrDefault() int {
	if l.Burst == 0 {
		return DefaultLimitBurst
	}
	return l.Burst
}

// Shadow reports whether the endpoint runs in shadow mode.
func (e Endpoint) Shadow() bool { return e.Mode == ModeShadow }

// checkContract validates the contract fields of one endpoint (mode and
// limit), reported under at.
func (e Endpoint) checkContract(p *problems, at string) {
	if e.Mode != "" && e.Mode != ModeEnforce && e.Mode != ModeShadow {
		p.add(at+".mode", "must be %q or %q, got %q", ModeEnforce, ModeShadow, e.Mode)
	}
	if e.Mode == ModeShadow && e.Async {
		// Without the gateway the client would get the upstream's own
		// answer, not a 202 the gateway makes up: no shadow of that.
		p.add(at+".mode", "shadow is for synchronous endpoints; async endpoints depend on the gateway's 202")
	}
	if e.Limit.Burst < 0 {
		p.add(at+".limit.burst", "must be positive, got %d", e.Limit.Burst)
	}
	if e.Limit.Enabled() {
		if _, err := e.Limit.PerSecond(); err != nil {
			p.add(at+".limit.rate", "%v", err)
		}
	} else if e.Limit.Burst != 0 {
		p.add(at+".limit.rate", "required with limit.burst")
	}
}

// BodyMultipart takes multipart/form-data bodies (Content-Type
// multipart/form-data with a boundary), fingerprinted part by part: parts
// in field-name order, each field by its name and value, each file by its
// field name, file name, declared Content-Type and the SHA-256 of its
// content, and any part by its other headers (Content-Transfer-Encoding
// changes what the upstream reads). A non-empty body of another media type is refused with 415.
const BodyMultipart BodyType = "multipart"

// IsMultipartForm reports whether contentType is multipart/form-data with
// a boundary parameter.
func IsMultipartForm(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "multipart/form-data" && params["boundary"] != ""
}
