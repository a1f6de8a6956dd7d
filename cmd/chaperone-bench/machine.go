package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// raiseFDLimit lifts the soft limit on open files to at least need where the hard limit
// allows (Go raises it to the hard limit by itself on Linux; this only checks).
func raiseFDLimit(need uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur >= need {
		return l.Cur, nil
	}
	if l.Max < need {
		return l.Cur, fmt.Errorf("the open-files limit is %d (hard %d), below the %d the benchmark needs; lower -waiters or raise it (ulimit -n)", l.Cur, l.Max, need)
	}
	l.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	return need, nil
}

// loadAverage is the 1-minute load average: other work on the machine shares its cores
// with the benchmark.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// selfCPU is the CPU time this process has used, user and system: the load generator's
// share of the machine.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
