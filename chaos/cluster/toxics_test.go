package cluster

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// echo is a real TCP server that echoes lines.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and reads it back, giving up after
// wait (a blackholed link never answers).
func roundTrip(addr string, wait time.Duration) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		return errors.New("garbled echo")
	}
	return err
}

func TestToxicsCutResetAndRestoreALink(t *testing.T) {
	ctx := context.Background()
	tx := NewToxics()
	defer tx.Close()
	addr, err := tx.Add("us-east", failpoint.LinkSQL, echo(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(addr, 10*time.Second); err != nil {
		t.Fatalf("healthy link: %v", err)
	}

	if err := tx.Cut(ctx, "us-east", failpoint.LinkSQL); err != nil {
		t.Fatal(err)
	}
	// A cut link answers nothing; the deadline only bounds the wait.
	if err := roundTrip(addr, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("cut link: %v, want no answer", err)
	}
	if err := tx.Restore(ctx, "us-east", failpoint.LinkSQL); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(addr, 10*time.Second); err != nil {
		t.Fatalf("restored link: %v", err)
	}

	if err := tx.Reset(ctx, "us-east", failpoint.LinkSQL); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(addr, 10*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("reset link: %v, want the connection reset", err)
	}
	if err := tx.Restore(ctx, "us-east", failpoint.LinkSQL); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(addr, 10*time.Second); err != nil {
		t.Fatalf("restored link: %v", err)
	}
	if err := tx.Cut(ctx, "eu-west", failpoint.LinkSQL); err == nil {
		t.Error("cut of a link without a proxy succeeded")
	}
}
