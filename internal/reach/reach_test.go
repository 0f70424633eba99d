package reach

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestStepNamesAPeerThatAcceptsButNeverAnswers: a step against a silent
// peer ends at its timeout with the part, the address and what a TCP
// connect found; a DSN's password never appears.
func TestStepNamesAPeerThatAcceptsButNeverAnswers(t *testing.T) {
	s, err := ListenSilent()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = Store(context.Background(), "postgres://idemd:hunter2@"+s.Addr()+"/idemcoord", 200*time.Millisecond)
	var e *Error
	if !errors.As(err, &e) || e.Part != "store" {
		t.Fatalf("Store on a silent peer: %v, want a *reach.Error for the store", err)
	}
	want := "store " + s.Addr() + "/idemcoord: no answer within 200ms (" + s.Addr() + ": TCP connects, nothing answers)"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the password: %q", err)
	}
}

func TestStoreAddrsNeverQuotesTheDSN(t *testing.T) {
	_, _, err := StoreAddrs("postgres://idemd:hunter2@db:5432/x?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt")
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "/nonexistent/ca.crt") {
		t.Errorf("StoreAddrs with an unreadable CA: %v; want the cause without the DSN", err)
	}
	addrs, db, err := StoreAddrs("postgres://u@h1:26257,h2:26258/idemcoord")
	if err != nil || strings.Join(addrs, ",") != "h1:26257,h2:26258" || db != "idemcoord" {
		t.Errorf("StoreAddrs = %v %q %v", addrs, db, err)
	}
}
