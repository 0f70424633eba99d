package patronilocal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
)

// frozenStandbyCommitBound bounds one commit while a standby is frozen.
// It is not a latency figure: in synchronous_mode on, a commit whose
// named synchronous standby froze waits until that member's key runs out
// (ttl, 20 s) and Patroni names the other one; in quorum commit the other
// standby acknowledges it at once. Any bound well under the ttl tells the
// two apart on a loaded machine.
const frozenStandbyCommitBound = 10 * time.Second

// TestAQuorumClusterCommitsWithEitherStandbyFrozenAndFailsOverWithoutLoss
// runs a real cluster in quorum commit (synchronous_mode: quorum, strict,
// ANY 1 of the two standbys), as idemd dev --store ha and the drills run
// theirs: both standbys are quorum standbys; with either of them frozen
// (a region lost with the member in it) a write still commits, on the
// other; and when the primary is killed the member Patroni promotes holds
// every acknowledged write.
func TestAQuorumClusterCommitsWithEitherStandbyFrozenAndFailsOverWithoutLoss(t *testing.T) {
	c := patronitest.Start(t, patronitest.WithConfig(func(c *patronilocal.Config) { c.Quorum = true }))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.WaitSynced(ctx, 1); err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, c.DSN(), `CREATE TABLE w (id int PRIMARY KEY)`)

	primary := memberWithRole(t, ctx, c, patronilocal.RoleLeader)
	ms, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var standbys []string
	for _, m := range ms {
		if m.Role == patronilocal.RoleQuorumStandby {
			standbys = append(standbys, m.Name)
		}
	}
	if len(standbys) != 2 {
		t.Fatalf("members %+v: want both standbys in the quorum", ms)
	}
	var names string
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SHOW synchronous_standby_names`).Scan(&names)
	conn.Close(ctx)
	if err != nil || !strings.HasPrefix(names, "ANY 1 (") {
		t.Fatalf("synchronous_standby_names on the primary = %q (%v), want ANY 1 (...)", names, err)
	}

	rows := 0
	for _, frozen := range standbys {
		if err := c.Pause(frozen); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, frozenStandbyCommitBound)
		err := insert(wctx, c.DSN(), rows+1)
		wcancel()
		if rerr := c.Resume(frozen); rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			t.Fatalf("with %s frozen a commit did not return within %v: %v", frozen, frozenStandbyCommitBound, err)
		}
		rows++
		if err := c.WaitSynced(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.Kill(primary.Name); err != nil {
		t.Fatal(err)
	}
	now, err := c.WaitNewPrimary(ctx, primary.Name)
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := c.MemberDSN(now.Name)
	if err != nil {
		t.Fatal(err)
	}
	waitRows(t, ctx, dsn, rows)
}

// insert commits row n in its own connection.
func insert(ctx context.Context, dsn string, n int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `INSERT INTO w VALUES ($1)`, n); err != nil {
		return fmt.Errorf("insert %d: %w", n, err)
	}
	return nil
}
