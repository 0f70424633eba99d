package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestARegionCutOffFromEtcdIsFailedOverOnItsOwnWord: a region cut from
// etcd but still answering its peers says so on /healthz once its
// requests have gone unanswered (ownership.Liveness.CutOff); when its
// liveness key expires, the other regions' probe reads that and fail it
// over without the confirmation delay, and the audit row says why. Before
// the self-report, the probe found it answering and the delay ran (the
// audit said "no liveness key for 500ms").
func TestARegionCutOffFromEtcdIsFailedOverOnItsOwnWord(t *testing.T) {
	ctx, p := transferCluster(t)
	const victim = "eu-west"
	if err := p.Cut(ctx, victim, failpoint.LinkEtcd); err != nil {
		t.Fatal(err)
	}
	defer p.Restore(context.WithoutCancel(ctx), victim, failpoint.LinkEtcd)
	conn, err := pgx.Connect(ctx, p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var reason string
	testutil.Eventually(t, time.Minute, func() error {
		err := conn.QueryRow(ctx, `SELECT reason FROM repair_audit WHERE action = 'region_failover'
			AND reason LIKE 'region '||$1||' failed%' ORDER BY at DESC LIMIT 1`, victim).Scan(&reason)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("no failover of %s audited yet", victim)
		}
		return err
	})
	if !strings.Contains(reason, "cannot reach etcd") {
		t.Fatalf("%s's failover audited %q; want it failed on its own word that it cannot reach etcd", victim, reason)
	}
}
