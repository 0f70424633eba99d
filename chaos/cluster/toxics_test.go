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

// TestToxicsLinkWithAProxyPerTargetIsCutWholeOrOneTargetAlone: a
// region's link to several targets (each etcd member, each other region)
// has a proxy per target: Cut blackholes every one of them, CutTo only
// the one to its target, so a forward from one region to one other can
// be cut alone.
func TestToxicsLinkWithAProxyPerTargetIsCutWholeOrOneTargetAlone(t *testing.T) {
	ctx := context.Background()
	tx := NewToxics()
	defer tx.Close()
	toEU, err := tx.AddTo("us-east", failpoint.LinkPeer, "eu-west", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	toAP, err := tx.AddTo("us-east", failpoint.LinkPeer, "ap-south", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	// reach reports, per proxy, whether a line comes back; the deadline
	// only bounds the wait on a cut one.
	reach := func() [2]bool {
		return [2]bool{roundTrip(toEU, 300*time.Millisecond) == nil, roundTrip(toAP, 300*time.Millisecond) == nil}
	}
	steps := []struct {
		name string
		act  func() error
		want [2]bool
	}{
		{"healthy", func() error { return nil }, [2]bool{true, true}},
		{"cut to eu-west alone", func() error { return tx.CutTo(ctx, "us-east", failpoint.LinkPeer, "eu-west") }, [2]bool{false, true}},
		{"restored to eu-west", func() error { return tx.RestoreTo(ctx, "us-east", failpoint.LinkPeer, "eu-west") }, [2]bool{true, true}},
		{"whole link cut", func() error { return tx.Cut(ctx, "us-east", failpoint.LinkPeer) }, [2]bool{false, false}},
		{"whole link restored", func() error { return tx.Restore(ctx, "us-east", failpoint.LinkPeer) }, [2]bool{true, true}},
	}
	for _, s := range steps {
		if err := s.act(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := reach(); got != s.want {
			t.Errorf("%s: reachable (eu-west, ap-south) = %v, want %v", s.name, got, s.want)
		}
	}
	if err := tx.CutTo(ctx, "us-east", failpoint.LinkPeer, "mars"); err == nil {
		t.Error("CutTo a target without a proxy succeeded")
	}
}

// TestToxicsCleanSaysWhetherALinkStillCarriesAFault: a region cut from
// etcd and SQL together heals one link after the other, and only once
// both are clean may it be waited on to serve again.
func TestToxicsCleanSaysWhetherALinkStillCarriesAFault(t *testing.T) {
	ctx := context.Background()
	tx := NewToxics()
	defer tx.Close()
	if _, err := tx.AddTo("us-east", failpoint.LinkEtcd, "m1", echo(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.AddTo("us-east", failpoint.LinkEtcd, "m2", echo(t)); err != nil {
		t.Fatal(err)
	}
	if !tx.Clean("us-east", failpoint.LinkEtcd) {
		t.Error("a link without toxics is not clean")
	}
	if err := tx.CutTo(ctx, "us-east", failpoint.LinkEtcd, "m2"); err != nil {
		t.Fatal(err)
	}
	if tx.Clean("us-east", failpoint.LinkEtcd) {
		t.Error("a link with one proxy cut is clean")
	}
	if err := tx.Restore(ctx, "us-east", failpoint.LinkEtcd); err != nil {
		t.Fatal(err)
	}
	if !tx.Clean("us-east", failpoint.LinkEtcd) {
		t.Error("a restored link is not clean")
	}
}
