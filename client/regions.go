package client

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Region is one region of a multi-region deployment: its gateway's base
// URL and, optionally, its name.
type Region struct {
	// Name is the region's name as the gateway spells it in
	// X-Idempotency-Region (such as "eu-west"). Optional: without it the
	// client cannot prefer the region an answer named as the owner of the
	// caller's actor, and keeps to the list's order.
	Name string
	// URL is the region's API root, as Config.BaseURL: http or https, with
	// a host and no query or fragment. Required.
	URL string
}

// regionNameRE is the gateway's rule for region names.
var regionNameRE = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// ParseRegions reads a regions list in the form `idemd dev` prints and
// IDEMCOORD_REGIONS holds: comma-separated entries, each "name=URL" or a
// bare URL, in the order the client should try them (nearest first). The
// result is checked as Config.Regions is.
func ParseRegions(s string) ([]Region, error) {
	var out []Region
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("%w: Regions: entry %d is empty", ErrInvalidConfig, i)
		}
		var r Region
		if name, u, ok := strings.Cut(entry, "="); ok && !strings.Contains(name, "/") {
			r = Region{Name: name, URL: u}
		} else {
			r = Region{URL: entry}
		}
		out = append(out, r)
	}
	if err := checkRegions(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkRegions validates a regions list: every URL usable as a base URL
// and distinct, every name (when given) a gateway region name, distinct.
func checkRegions(rs []Region) error {
	urls, names := map[string]int{}, map[string]int{}
	for i, r := range rs {
		field := fmt.Sprintf("Regions[%d]", i)
		if err := checkBaseURL(r.URL); err != nil {
			return fmt.Errorf("%w: %s.URL: %s", ErrInvalidConfig, field, err)
		}
		u := strings.TrimSuffix(r.URL, "/")
		if j, dup := urls[u]; dup {
			return fmt.Errorf("%w: %s.URL: the same URL as Regions[%d]", ErrInvalidConfig, field, j)
		}
		urls[u] = i
		if r.Name == "" {
			continue
		}
		if !regionNameRE.MatchString(r.Name) {
			return fmt.Errorf("%w: %s.Name: must be 1 to 32 of [a-z0-9-], as the gateway's region names, got %q", ErrInvalidConfig, field, r.Name)
		}
		if j, dup := names[r.Name]; dup {
			return fmt.Errorf("%w: %s.Name: %q is already Regions[%d]", ErrInvalidConfig, field, r.Name, j)
		}
		names[r.Name] = i
	}
	return nil
}

// checkBaseURL says why u cannot be an API root, or nil.
func checkBaseURL(u string) error {
	if u == "" {
		return fmt.Errorf("required")
	}
	p, err := url.Parse(u)
	switch {
	case err != nil:
		// The url.Error would repeat the URL, userinfo and all.
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return fmt.Errorf("not a URL: %v", err)
	case p.Scheme != "http" && p.Scheme != "https":
		return fmt.Errorf("scheme %q is not http or https", p.Scheme)
	case p.Host == "":
		return fmt.Errorf("no host")
	case p.RawQuery != "" || p.Fragment != "":
		return fmt.Errorf("has a query or fragment; put those in Intent.Path")
	}
	return nil
}
