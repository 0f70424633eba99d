package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/pgtest"
)

func TestEveryCommandTakesOutput(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// A group (op, dev, drill...) runs only to name a misspelt
		// subcommand: it prints nothing to format.
		if c.Runnable() && !c.HasSubCommands() && c.Name() != "help" && c.Name() != "completion" && c.Parent() != nil &&
			c.Parent().Name() != "completion" {
			if c.Flags().Lookup("output") == nil {
				t.Errorf("%q has no --output", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd())
}

func TestStoreCommandsNeverMigrate(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	for _, args := range [][]string{
		{"op", "get", "00000000-0000-0000-0000-000000000001"},
		{"op", "find", "--actor", "demo/demo", "--endpoint", "create-payment", "--key", "k"},
		{"op", "cleanup", "--reason", "test"},
		{"op", "purge", "--actor", "demo/demo", "--reason", "test"},
	} {
		_, err := idemctl(t, append(args, "--dsn", dsn)...)
		if err == nil || !strings.Contains(err.Error(), "run idemctl migrate") {
			t.Errorf("%v on an unmigrated store: %v, want an error saying to run idemctl migrate", args, err)
		}
	}
	out, err := idemctl(t, "migrate", "--dsn", dsn, "-o", "json")
	if err != nil || !strings.Contains(out, `"migrated": true`) {
		t.Fatalf("migrate: %q %v", out, err)
	}
	if _, err := idemctl(t, "op", "cleanup", "--reason", "test", "--dsn", dsn); err != nil {
		t.Errorf("op cleanup after migrate: %v", err)
	}
}

func TestOpFindByKey(t *testing.T) {
	dsn, _, rec := storeWithRecord(t, "demo/demo")
	out, err := idemctl(t, "op", "find", "--actor", "demo/demo", "--endpoint", "create-payment", "--key", "order-1",
		"--dsn", dsn, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		OperationID string `json:"operation_id"`
		State       string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.OperationID != rec.OperationID.String() || got.State != "COMPLETED" {
		t.Fatalf("op find: %q (%v), want operation %s COMPLETED", out, err, rec.OperationID)
	}
	// The same key as an sf-string is the same key; the store comes from
	// $IDEMCOORD_DSN (no dev cluster, no --dsn).
	t.Setenv("IDEMCOORD_DSN", dsn)
	out, err = idemctl(t, "op", "find", "--actor", "demo/demo", "--endpoint", "create-payment", "--key", `"order-1"`)
	if err != nil || !strings.Contains(out, rec.OperationID.String()) {
		t.Errorf("op find with an sf-string key: %q %v", out, err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"other key", []string{"--actor", "demo/demo", "--endpoint", "create-payment", "--key", "order-2"}, "no record"},
		{"other endpoint", []string{"--actor", "demo/demo", "--endpoint", "refund", "--key", "order-1"}, "no record"},
		{"bare subject", []string{"--actor", "demo", "--endpoint", "create-payment", "--key", "order-1"}, "TENANT/SUBJECT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idemctl(t, append(append([]string{"op", "find"}, tt.args...), "--dsn", dsn)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("op find %v: %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestVersionNamesModuleAndCommit(t *testing.T) {
	out, err := idemctl(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Module, Version, Commit string
		GoVersion               string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Module != "github.com/idemcoord/idemcoord" || v.GoVersion == "" {
		t.Errorf("version: %q (%v)", out, err)
	}
}

// TestOpFindNamesAnEndpointTheConfigurationLacks: op find whose --endpoint
// is not an endpoint of the configuration says so, with the ones it has,
// instead of only "no record" (a misspelt endpoint never finds anything).
func TestOpFindNamesAnEndpointTheConfigurationLacks(t *testing.T) {
	dsn, _, _ := storeWithRecord(t, "demo/demo")
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	cfgPath := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(cfgPath, []byte(config.Example), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := idemctl(t, "op", "find", "--actor", "demo/demo", "--endpoint", "create-paymnt", "--key", "order-1",
		"--config", cfgPath, "--dsn", dsn)
	want := `--endpoint "create-paymnt" is not an endpoint of the configuration (create-payment, capture-payment, update-profile, create-export)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("op find with a misspelt endpoint: %v, want %q", err, want)
	}
	if _, err := idemctl(t, "op", "find", "--actor", "demo/demo", "--endpoint", "create-payment", "--key", "order-1",
		"--config", cfgPath, "--dsn", dsn); err != nil {
		t.Errorf("op find of the record with --config: %v", err)
	}
}

// TestReconcileAndGetNameTheOperationWhenTheyDoNothing: op reconcile of an
// operation that is not OUTCOME_UNKNOWN says which operation, its state,
// and that nothing changed (--ran and --not-run alike), and op get of an
// unknown id names the id.
func TestReconcileAndGetNameTheOperationWhenTheyDoNothing(t *testing.T) {
	dsn, _, rec := storeWithRecord(t, "demo/demo")
	id := rec.OperationID.String()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"op", "reconcile", id, "--ran", "--status", "201", "--reason", "t"}, []string{id, "is COMPLETED, not OUTCOME_UNKNOWN", "nothing changed"}},
		{[]string{"op", "reconcile", id, "--not-run", "--reason", "t"}, []string{id, "not in OUTCOME_UNKNOWN", "nothing changed"}},
		{[]string{"op", "get", "01a2355d-3aff-738e-a7ab-000000000000"}, []string{"operation 01a2355d-3aff-738e-a7ab-000000000000", "not found"}},
	} {
		_, err := idemctl(t, append(tt.args, "--dsn", dsn)...)
		for _, want := range tt.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("idemctl %s: %v, want an error saying %q", strings.Join(tt.args, " "), err, want)
			}
		}
	}
	out, err := idemctl(t, "op", "get", id, "--dsn", dsn, "-o", "json")
	if err != nil || !strings.Contains(out, `"COMPLETED"`) {
		t.Errorf("op get after the refused reconciles: %q %v, want it still COMPLETED", out, err)
	}
}

// TestOpListSaysWhenNothingIsLeftInFlight: op list that selects nothing
// says so in words (which states, which shards), not with an empty table;
// -o json still gives an empty list.
func TestOpListSaysWhenNothingIsLeftInFlight(t *testing.T) {
	dsn, _, _ := storeWithRecord(t, "demo/demo") // COMPLETED: not in flight
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	cfgPath := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(cfgPath, []byte(config.Example), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := idemctl(t, "op", "list", "--region", "us-east", "--config", cfgPath, "--dsn", dsn)
	if want := "no operation IN_PROGRESS or OUTCOME_UNKNOWN on the shards whose home is us-east\n"; err != nil || out != want {
		t.Errorf("op list --region: %q (%v), want %q", out, err, want)
	}
	out, err = idemctl(t, "op", "list", "--shard", "3", "--state", "PENDING", "--config", cfgPath, "--dsn", dsn)
	if want := "no operation PENDING on shard 3\n"; err != nil || out != want {
		t.Errorf("op list --shard: %q (%v), want %q", out, err, want)
	}
	out, err = idemctl(t, "op", "list", "--region", "us-east", "--config", cfgPath, "--dsn", dsn, "-o", "json")
	if err != nil || !strings.Contains(out, `"operations": []`) {
		t.Errorf("op list -o json: %q (%v), want an empty operations list", out, err)
	}
}
