package patronilocal

// reaperPy runs Patroni (argv[1:]) as a child subreaper that reaps every
// orphan at once, as Patroni itself does when it is a container's PID 1
// (patroni/__main__.py) or as tini does.
//
// Patroni starts each postmaster through a short-lived helper, so the
// postmaster is an orphan: reparented to the nearest subreaper, else to
// PID 1. A graceful demotion (a switchover) stops PostgreSQL and then
// polls, once a second, until the postmaster is gone: an exited postmaster
// that nobody reaps stays a zombie, which psutil reports as running, so
// Patroni takes the slow branch (pg_control says "shut down" while the
// postmaster "runs": sleep 1 s more, ask the candidates again over REST)
// before it releases the leader key. Measured on this machine: about 1 s
// of every switchover. A reaping parent lets Patroni see the postmaster
// exit at its next poll and release the key there.
//
// Signals are passed on to Patroni; the wrapper exits with Patroni's
// status.
const reaperPy = `import ctypes, os, signal, sys
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
def forward(signo, frame):
    try:
        os.kill(pid, signo)
    except ProcessLookupError:
        pass
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, forward)
while True:
    try:
        p, status = os.wait()
    except ChildProcessError:
        sys.exit(0)
    if p == pid:
        sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
`

// reaperFile is the wrapper's file name in the cluster directory.
const reaperFile = "reaper.py"
