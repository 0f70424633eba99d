package devcluster

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTwoClustersKeepTheirOwnState: a second cluster on another port base
// must neither overwrite the first one's state nor, when it stops, remove
// it; and with both running, a tool that is not told which one must refuse
// to guess.
func TestTwoClustersKeepTheirOwnState(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	first := State{PortBase: 7101, PID: os.Getpid(), DSN: "postgres://first", Secret: "aa"}
	second := State{PortBase: 7301, PID: os.Getpid(), DSN: "postgres://second", Secret: "bb"}
	for _, st := range []State{first, second} {
		if err := WriteState(StatePath(st.PortBase), st); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []State{first, second} {
		got, err := FindState(want.PortBase)
		if err != nil || got.DSN != want.DSN {
			t.Errorf("FindState(%d) = %q, %v; want %q", want.PortBase, got.DSN, err, want.DSN)
		}
	}
	_, err := FindState(0)
	if err == nil || !strings.Contains(err.Error(), "7101, 7301") || !strings.Contains(err.Error(), "--port-base") {
		t.Errorf("FindState(0) with two running = %v; want a refusal naming both port bases and --port-base", err)
	}

	// The second one stops: the first one's state is untouched and is
	// now the only one.
	if err := os.Remove(StatePath(second.PortBase)); err != nil {
		t.Fatal(err)
	}
	got, err := FindState(0)
	if err != nil || got.DSN != first.DSN {
		t.Errorf("FindState(0) after the second stopped = %q, %v; want the first (%q)", got.DSN, err, first.DSN)
	}
	if _, err := FindState(second.PortBase); err == nil || !strings.Contains(err.Error(), "running: --port-base 7101") {
		t.Errorf("FindState(%d) after it stopped = %v; want an error naming the one still running", second.PortBase, err)
	}
}

// TestStateOfAKilledClusterIsIgnored: a cluster killed without Ctrl-C
// leaves its file behind; tools must not send tokens or repairs to it.
func TestStateOfAKilledClusterIsIgnored(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if _, err := FindState(0); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("FindState(0) with no state = %v, want ErrNoCluster", err)
	}
	gone := State{PortBase: 7101, PID: 1 << 30, DSN: "postgres://gone"} // no such process
	live := State{PortBase: 7401, PID: os.Getpid(), DSN: "postgres://live"}
	for _, st := range []State{gone, live} {
		if err := WriteState(StatePath(st.PortBase), st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Running()
	if err != nil {
		t.Fatal(err)
	}
	var dsns []string
	for _, st := range got {
		dsns = append(dsns, st.DSN)
	}
	if diff := cmp.Diff([]string{"postgres://live"}, dsns); diff != "" {
		t.Errorf("Running (-want +got):\n%s", diff)
	}
	if _, err := FindState(gone.PortBase); err == nil {
		t.Errorf("FindState(%d) of a killed cluster succeeded", gone.PortBase)
	}
}
