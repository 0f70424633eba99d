package ownership_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/ownership"
)

// TestLivenessCloseAndLeaveRemoveTheKeyAtOnce: Close and Leave revoke the
// lease before they return, so the key is gone at once rather than one
// TTL (here a minute) later. The revoke must not run on the loop's
// lifetime: the loop returns as soon as the orphaned session is done,
// which would cancel the revoke under it. Several rounds, since that
// race is lost only some of the time.
func TestLivenessCloseAndLeaveRemoveTheKeyAtOnce(t *testing.T) {
	ctx := ctxT(t)
	cli := client(t, cluster(t).Endpoints())
	pfx := prefix(t)
	for i := range 10 {
		for _, stop := range []string{"Close", "Leave"} {
			cfg := ownership.DefaultLivenessConfig()
			cfg.Client, cfg.Prefix, cfg.Region, cfg.Instance = cli, pfx, "us-east", fmt.Sprintf("%s-%d", stop, i)
			cfg.TTL, cfg.Logger = time.Minute, quiet()
			l, err := startLiveness(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if stop == "Close" {
				l.Close()
			} else {
				l.Leave()
			}
			got, err := cli.Get(ctx, l.Key())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Kvs) != 0 {
				t.Fatalf("round %d: the key is still there after %s (lease %x)", i, stop, got.Kvs[0].Lease)
			}
		}
	}
}
