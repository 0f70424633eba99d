package sqlstore

import "testing"

func TestRetryRateSwitchesWithHysteresis(t *testing.T) {
	var r retryRate
	for range 200 {
		r.observe("e", false)
	}
	if r.readFirst("e") {
		t.Fatal("read-first after 200 first runs")
	}
	n := 0
	for !r.readFirst("e") {
		r.observe("e", true)
		if n++; n > 500 {
			t.Fatal("never switched to read-first under retries only")
		}
	}
	if n < 50 || n > 150 {
		t.Fatalf("switched after %d retries, want about 64-110 (EWMA over ~64)", n)
	}
	// A few first runs do not flip it back (hysteresis).
	for range 10 {
		r.observe("e", false)
	}
	if !r.readFirst("e") {
		t.Fatal("flipped back after 10 first runs")
	}
	for range 200 {
		r.observe("e", false)
	}
	if r.readFirst("e") {
		t.Fatal("still read-first after 200 first runs")
	}
	if r.readFirst("other") {
		t.Fatal("another endpoint inherited the mode")
	}
}
