package mcpkittest

import (
	"bytes"
	"os"
	"strconv"
)

// Carrying returns the live processes of this host whose command line
// holds tok (zombies, which are dead, are not counted). Tests put a unique
// token in the command lines of what a sandboxed command starts, because
// pids inside the command's PID namespace are not host pids.
func Carrying(tok string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cl, []byte(tok)) || Gone(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// Gone reports whether pid has exited (no such process, or a zombie
// waiting to be reaped).
func Gone(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(st, ')')
	if i < 0 || i+2 >= len(st) {
		return false
	}
	return st[i+2] == 'Z' || st[i+2] == 'X'
}
