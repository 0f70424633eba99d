package gateway_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuUse is a sample of the CPU time the benchmark's two sides cost: this
// process's (client, proxy or gateway, upstream: Go) and the PostgreSQL
// backends' serving the gateway's store.
type cpuUse struct {
	goCPU time.Duration
	pg    map[int]time.Duration // by backend pid
}

// userHZ is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// Linux).
const userHZ = 100

// sampleCPU reads the CPU time used so far by this process and by every
// backend of pool's database. The PostgreSQL side is empty where /proc
// cannot be read (not Linux, or another machine's database).
func sampleCPU(pool *pgxpool.Pool) cpuUse {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	u := cpuUse{goCPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), pg: map[int]time.Duration{}}
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return u
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state is
		// the first (field 3), utime and stime fields 14 and 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		u.pg[pid] = time.Duration(ut+st) * time.Second / userHZ
	}
	return u
}

// since returns the Go and PostgreSQL CPU time used between then and u
// (backends present in both samples).
func (u cpuUse) since(then cpuUse) (goCPU, pg time.Duration) {
	for pid, t := range u.pg {
		if t0, ok := then.pg[pid]; ok {
			pg += t - t0
		}
	}
	return u.goCPU - then.goCPU, pg
}
