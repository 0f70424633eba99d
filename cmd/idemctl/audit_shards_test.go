package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// auditTotal returns the total of `idemctl audit -o json` with args.
func auditTotal(t *testing.T, conn []string, args ...string) (rows, total int) {
	t.Helper()
	r := runCtl(t, nil, append(append([]string{"audit", "-o", "json"}, args...), conn...)...)
	var page struct {
		Rows  []json.RawMessage `json:"rows"`
		Total int               `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); r.code != 0 || err != nil {
		t.Fatalf("audit %v: exit %d %v\n%s%s", args, r.code, err, r.stdout, r.stderr)
	}
	return len(page.Rows), page.Total
}

// TestAuditAndShardsSayHowMuchTheyShow: after a real failover of us-east
// (342 shard moves and the region's row in the audit), `idemctl audit`
// shows 100 rows and says how many there are and how to see the next
// ones, --action keeps one action, --offset pages; `idemctl shards`
// prints the counts only, --owner/--home/--state count the shards
// selected, saying how many of all, and --list lists them.
func TestAuditAndShardsSayHowMuchTheyShow(t *testing.T) {
	c := devCluster(t)
	conn := []string{"--config", c.Region("eu-west").ConfigPath}
	if err := c.StopRegion(t.Context(), "us-east"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		if _, n := auditTotal(t, conn, "--action", "region_failover"); n != 1 {
			return fmt.Sprintf("%d region_failover rows, want 1", n)
		}
		return ""
	})
	if rows, total := auditTotal(t, conn, "--action", "move_fence"); rows != 100 || total != 342 {
		t.Errorf("audit --action move_fence: %d rows of %d; want 100 of 342 (one per us-east shard)", rows, total)
	}
	_, all := auditTotal(t, conn)
	r := runCtl(t, nil, append([]string{"audit"}, conn...)...)
	if want := fmt.Sprintf("100 of %d shown (rows 1-100); next: --offset 100\n", all); !strings.HasSuffix(r.stdout, want) {
		t.Errorf("audit table ends %q; want %q", lastLine(r.stdout), want)
	}
	r = runCtl(t, nil, append([]string{"audit", "--action", "move_fence", "--offset", "300"}, conn...)...)
	if !strings.HasSuffix(r.stdout, "42 of 342 shown (rows 301-342)\n") || strings.Count(r.stdout, "move_fence") != 42 {
		t.Errorf("audit --action move_fence --offset 300: %q", lastLine(r.stdout))
	}

	r = runCtl(t, nil, append([]string{"shards"}, conn...)...)
	if r.code != 0 || strings.Count(r.stdout, "\n") > 8 || !strings.Contains(r.stdout, "1024 shards; list them with --list") {
		t.Errorf("shards without a filter: want the counts only\n%s%s", r.stdout, r.stderr)
	}
	r = runCtl(t, nil, append([]string{"shards", "--home", "us-east", "--state", "failed_over"}, conn...)...)
	if strings.Count(r.stdout, "\n") > 6 || !strings.HasSuffix(r.stdout, "342 of 1024 shards selected; list them with --list\n") ||
		regexp.MustCompile(`(?m)^(eu-west|ap-south|us-east)\s+ACTIVE`).MatchString(r.stdout) {
		t.Errorf("shards --home us-east --state failed_over: want the selection's counts only, ending with how many of all\n%s", r.stdout)
	}
	r = runCtl(t, nil, append([]string{"shards", "--home", "us-east", "--state", "failed_over", "--list"}, conn...)...)
	rows := regexp.MustCompile(`(?m)^\d+\s+us-east\s+\S+\s+2\s+FAILED_OVER\s*$`).FindAllString(r.stdout, -1)
	if len(rows) != 342 || !strings.HasSuffix(r.stdout, "342 of 1024 shards selected\n") {
		t.Errorf("shards --home us-east --state failed_over: %d FAILED_OVER rows at epoch 2, ending %q; want 342", len(rows), lastLine(r.stdout))
	}
	if r := runCtl(t, nil, append([]string{"shards", "--owner", "narnia"}, conn...)...); r.code != 1 || !strings.Contains(r.stderr, `--owner: "narnia"`) {
		t.Errorf("shards --owner narnia: exit %d %q", r.code, r.stderr)
	}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
