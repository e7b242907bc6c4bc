package sandbox

// The boundary tests (issue 9, "Tests"): each one is an attack run as
// arbitrary code inside the sandbox, started through an allowed program
// (python3 or sh running a script written into the jail, or git running a
// program its repository's configuration names), in both isolations. Each
// proof is taken on the host: files outside the jail, listeners that count
// connections, the host's process table, the test process's own signals.
// TestAttacksUnprivileged runs the whole suite again with the server as
// uid 65534.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
	"github.com/bastion-mcp/bastion/safety/testfs"
)

// bndShortDir is a fresh directory with a short path (UNIX socket paths are
// limited to 107 bytes), removed at the end of the test.
func bndShortDir(t *testing.T, name string) string {
	t.Helper()
	base, err := os.MkdirTemp("", "bnd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if name == "" {
		return base
	}
	d := filepath.Join(base, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// bndDirNames lists a directory's entries.
func bndDirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

const shWrite = `out=$1; victim=$2
echo evil > "$out/created-sh"
echo evil >> "$victim"
cat /dev/null > "$victim"
echo evil > evil-sh
mv evil-sh "$victim"
cp evil-sh "$out/copied-sh"
cp evil-sh "$victim"
ln -s "$victim" sh-link && echo evil > sh-link
ln "$victim" sh-hard && echo evil > sh-hard
mv "$victim" stolen-sh
touch "$out/touched-sh"
mkdir "$out/dir-sh"
tee "$victim" < evil-sh
dd if=evil-sh of="$victim" conv=notrunc
echo evil > planted-link
echo evil > planted-dir/created-sh2
: > done-sh-write
`

// slipTar is an archive whose entries leave the directory it is extracted
// in: through a symbolic link it plants, by an absolute name and by "..".
func slipTar(t *testing.T, outside string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []*tar.Header{
		{Name: "slip", Typeflag: tar.TypeSymlink, Linkname: outside, Mode: 0o777},
		{Name: "slip/created-tar", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: filepath.Join(outside, "created-abs"), Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "../../../../../../../../.." + filepath.Join(outside, "created-dotdot"), Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "hard", Typeflag: tar.TypeLink, Linkname: filepath.Join(outside, "victim")},
		{Name: "slip/victim", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
	}
	for _, h := range entries {
		h.ModTime = time.Now()
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte("evil")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestAttackWriteOutsideJail(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		victim := filepath.Join(b.away, "victim")
		if err := os.WriteFile(victim, []byte("original"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A read path the command may read but never write.
		roDir := t.TempDir()
		roVictim := filepath.Join(roDir, "ro-victim")
		if err := os.WriteFile(roVictim, []byte("read-only original"), 0o644); err != nil {
			t.Fatal(err)
		}
		hostTmp := filepath.Join(os.TempDir(), bndToken("escape"))
		t.Cleanup(func() { os.Remove(hostTmp) })
		b.plant(t, "planted-link", victim)
		b.plant(t, "planted-dir", b.away)

		check := func(what string) {
			t.Helper()
			if got, _ := os.ReadFile(victim); string(got) != "original" {
				t.Errorf("%s (%s): the file outside the jail now holds %q\n%s", what, iso, got, b.transcript())
			}
			if names := bndDirNames(t, b.away); !slices.Equal(names, []string{"victim"}) {
				t.Errorf("%s (%s): the directory outside the jail now holds %q\n%s", what, iso, names, b.transcript())
			}
			if got, _ := os.ReadFile(roVictim); string(got) != "read-only original" {
				t.Errorf("%s (%s): a file in a read path now holds %q", what, iso, got)
			}
			if names := bndDirNames(t, roDir); !slices.Equal(names, []string{"ro-victim"}) {
				t.Errorf("%s (%s): a read path now holds %q", what, iso, names)
			}
			if _, err := os.Lstat(hostTmp); err == nil {
				t.Errorf("%s (%s): %s was created in the host's temporary directory", what, iso, hostTmp)
			}
		}

		s := b.py(t, "write", b.away, victim, roVictim, hostTmp)
		s.ReadPaths = append(slices.Clone(DefaultReadPaths), roDir)
		b.run(t, s)
		b.mustHaveRun(t, b.jail, "write")
		check("python")

		b.reset()
		s = b.sh(t, shWrite, b.away, victim)
		s.ReadPaths = append(slices.Clone(DefaultReadPaths), roDir)
		b.run(t, s)
		b.mustHaveRun(t, b.jail, "sh-write")
		check("sh")

		// An archive that plants a link to the outside and then writes
		// through it, extracted by the allowed tar.
		b.reset()
		b.write(t, "slip.tar", slipTar(t, b.away))
		b.run(t, b.spec(t, "tar", "-xf", "slip.tar"))
		b.run(t, b.spec(t, "tar", "-xPf", "slip.tar"))
		check("tar")
	})
}

// Landlock (ABI 7 and below) does not handle chmod, utime or setxattr, so
// in landlock isolation a path outside the jail is still reachable for
// them; this test holds the "outside file unchanged" proof to its mode,
// times and extended attributes too.
func TestAttackChangeMetadataOutsideJail(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		victim := filepath.Join(b.away, "authorized_keys")
		if err := os.WriteFile(victim, []byte("ssh-ed25519 AAAA operator"), 0o600); err != nil {
			t.Fatal(err)
		}
		past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
		if err := os.Chtimes(victim, past, past); err != nil {
			t.Fatal(err)
		}
		// And a file in a read path (a stand-in for /usr/bin/...), which the
		// command may open for reading.
		roDir := t.TempDir()
		roVictim := filepath.Join(roDir, "tool")
		if err := os.WriteFile(roVictim, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(roVictim, past, past); err != nil {
			t.Fatal(err)
		}
		before, roBefore := bndStateOf(t, victim), bndStateOf(t, roVictim)
		b.plant(t, "planted-link", victim)
		for _, target := range []string{victim, "planted-link", roVictim} {
			s := b.py(t, "meta", target)
			s.ReadPaths = append(slices.Clone(DefaultReadPaths), roDir)
			b.run(t, s)
		}
		b.mustHaveRun(t, b.jail, "meta")
		if after := bndStateOf(t, victim); after != before {
			t.Errorf("%s: a file outside the jail was changed by the command: before %+v, after %+v\n%s",
				iso, before, after, b.transcript())
		}
		if after := bndStateOf(t, roVictim); after != roBefore {
			t.Errorf("%s: a file in a read path was changed by the command: before %+v, after %+v",
				iso, roBefore, after)
		}
	})
}

const shRead = `canary=$1
cat "$canary"
cat planted-canary
head -c 200 planted-dir/id_ed25519
cp "$canary" copy-sh
ln "$canary" hard-sh && cat hard-sh
tar -cf loot.tar "$canary" planted-dir/
grep -r . "$(dirname "$canary")"
cat "$canary" > loot-sh
: > done-sh-read
`

func TestAttackReadCanaryOutsideJail(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		canaryPath, canary := bndCanaryFile(t)
		b.plant(t, "planted-canary", canaryPath)
		b.plant(t, "planted-dir", filepath.Dir(canaryPath))
		b.run(t, b.py(t, "read", canaryPath))
		b.mustHaveRun(t, b.jail, "read")
		b.assertNoCanary(t, canary)

		b.reset()
		b.run(t, b.sh(t, shRead, canaryPath))
		b.mustHaveRun(t, b.jail, "sh-read")
		b.assertNoCanary(t, canary)
	})
}

func TestAttackConnectHostUnixSocket(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		// A container engine's socket in a temporary directory, and the
		// same in a /run-like directory with a datagram (syslog-like) and a
		// seqpacket socket next to it.
		engine := filepath.Join(bndShortDir(t, ""), "engine.sock")
		run := bndShortDir(t, "run")
		docker := filepath.Join(run, "docker.sock")
		logSock := filepath.Join(run, "log.sock")
		seq := filepath.Join(run, "seq.sock")
		_, c1 := bndListenStream(t, "unix", engine)
		_, c2 := bndListenStream(t, "unix", docker)
		_, c3 := bndListenPacket(t, "unixgram", logSock)
		_, c4 := bndListenStream(t, "unixpacket", seq)
		b.plant(t, "planted-sock", docker)
		b.plant(t, "planted-run", run)
		b.run(t, b.py(t, "unix", engine, docker, logSock, seq, "planted-sock", "planted-run/docker.sock"))
		b.mustHaveRun(t, b.jail, "unix")
		for name, c := range map[string]*bndCounter{engine: c1, docker: c2, logSock: c3, seq: c4} {
			if n := c.count(); n != 0 {
				t.Errorf("%s: the host socket %s received %d connection(s) or datagram(s)\n%s", iso, name, n, b.transcript())
			}
		}
	})
}

func TestAttackConnectHostAbstractSocket(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		name := bndToken("abstract")
		_, c1 := bndListenStream(t, "unix", "@"+name)
		_, c2 := bndListenPacket(t, "unixgram", "@"+name+"-dgram")
		_, c3 := bndListenStream(t, "unixpacket", "@"+name+"-seq")
		b.run(t, b.py(t, "abstract", name, name+"-dgram", name+"-seq"))
		b.mustHaveRun(t, b.jail, "abstract")
		for what, c := range map[string]*bndCounter{"stream": c1, "dgram": c2, "seqpacket": c3} {
			if n := c.count(); n != 0 {
				t.Errorf("%s: the host's abstract %s socket received %d connection(s) or datagram(s)\n%s", iso, what, n, b.transcript())
			}
		}
	})
}

// bndHostAddr is a non-loopback IPv4 address of this machine, "" if none.
func bndHostAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// bndHostListeners listens on every host address a command could try
// (loopback v4, this machine's other IPv4 address, loopback v6) with
// listen, and returns the addresses with their counters.
func bndHostListeners(t *testing.T, v4, v6 string, listen func(t *testing.T, network, addr string) (net.Addr, *bndCounter)) map[string]*bndCounter {
	counts := map[string]*bndCounter{}
	a, c := listen(t, v4, "127.0.0.1:0")
	counts[a.String()] = c
	if ip := bndHostAddr(); ip != "" {
		a, c := listen(t, v4, "0.0.0.0:0")
		_, port, _ := net.SplitHostPort(a.String())
		counts[net.JoinHostPort(ip, port)] = c
	}
	if l, err := net.ListenPacket("udp6", "[::1]:0"); err == nil { // the host has IPv6 loopback
		l.Close()
		a, c := listen(t, v6, "[::1]:0")
		counts[a.String()] = c
	}
	return counts
}

// bndHostListenerAttack runs the attack script's mode against every host
// listener and requires that none was reached.
func bndHostListenerAttack(t *testing.T, mode, v4, v6, what string, listen func(t *testing.T, network, addr string) (net.Addr, *bndCounter)) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		counts := bndHostListeners(t, v4, v6, listen)
		var targets []string
		for a := range counts {
			targets = append(targets, a)
		}
		sort.Strings(targets)
		b.run(t, b.py(t, mode, targets...))
		b.mustHaveRun(t, b.jail, mode)
		for a, c := range counts {
			if n := c.count(); n != 0 {
				t.Errorf("%s: the host listener %s %s %d time(s)\n%s", iso, a, what, n, b.transcript())
			}
		}
	})
}

func TestAttackTCPToHostListener(t *testing.T) {
	bndHostListenerAttack(t, "tcp", "tcp4", "tcp6", "accepted a connection", func(t *testing.T, network, addr string) (net.Addr, *bndCounter) {
		ln, c := bndListenStream(t, network, addr)
		return ln.Addr(), c
	})
}

func TestAttackUDPToHostListener(t *testing.T) {
	bndHostListenerAttack(t, "udp", "udp4", "udp6", "received a datagram", func(t *testing.T, network, addr string) (net.Addr, *bndCounter) {
		pc, c := bndListenPacket(t, network, addr)
		return pc.LocalAddr(), c
	})
}

func TestAttackRawSocket(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		b.run(t, b.py(t, "raw"))
		b.mustHaveRun(t, b.jail, "raw")
		if hits := b.escapes("raw "); len(hits) != 0 {
			t.Errorf("%s: raw sockets were not refused: %q", iso, hits)
		}
	})
}

// The command tries to read the /proc entries of the server that started
// it (a server subprocess whose environment holds a canary), of the test
// process, and of another host process holding the canary, then every
// environ /proc shows it.
func TestAttackReadOtherProcessesProc(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		canary := bndToken("envcanary")
		other := exec.Command(bndProgram(t, "sleep"), "30")
		other.Env = []string{"BASTION_HOST_SECRET=" + canary}
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Process.Kill(); other.Wait() })
		otherPid := strconv.Itoa(other.Process.Pid)
		testPid := strconv.Itoa(os.Getpid())

		srv := bndStartServer(t, b.py(t, "proc", bndServerPid, testPid, otherPid, "1"),
			"BASTION_SERVER_SECRET="+canary)
		serverPid := strconv.Itoa(srv.cmd.Process.Pid)
		r := srv.wait(t)
		b.stdout.Write([]byte(r.Stdout))
		b.stderr.Write([]byte(r.Stderr))
		if r.Err != "" {
			t.Fatalf("%s: Run in the server: %s %s\n%s", iso, r.Code, r.Err, b.transcript())
		}
		b.mustHaveRun(t, b.jail, "proc")
		b.assertNoCanary(t, canary)
		for _, pid := range []string{serverPid, testPid, otherPid} {
			for _, what := range []string{"proc read /proc/" + pid + "/", "proc list /proc/" + pid + "/"} {
				if hits := b.escapes(what); len(hits) != 0 {
					t.Errorf("%s: the host process %s's /proc entries were readable: %q", iso, pid, hits)
				}
			}
		}
		if iso == IsolationNamespaces {
			// The command's own PID namespace: no host pid is listed.
			for _, line := range strings.Split(b.stdout.String(), "\n") {
				if pids, ok := strings.CutPrefix(line, "PIDS "); ok {
					for _, p := range strings.Fields(pids) {
						if p == serverPid || p == testPid || p == otherPid {
							t.Errorf("the command's /proc lists the host pid %s", p)
						}
					}
				}
			}
		}
	})
}

const shSignal = `for sig in TERM USR1 HUP 0; do
  kill -$sig "$1" && echo "ok signal sh-kill-$sig"
done
kill -USR1 -- "-$2" && echo "ok signal sh-killpg"
: > done-sh-signal
`

// The test process stands for the server: the command is given its pid
// and process group and tries to signal and trace it every way it knows.
func TestAttackSignalOrPtraceServer(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGIO)
	defer signal.Stop(sigs)
	// Sequential, so that a signal that arrives is the attack's in hand.
	for _, iso := range bndIsolations {
		t.Run(string(iso), func(t *testing.T) {
			b := newBndBox(t, iso)
			b.run(t, b.py(t, "signal", strconv.Itoa(os.Getpid()), strconv.Itoa(syscall.Getpgrp())))
			b.mustHaveRun(t, b.jail, "signal")
			b.run(t, b.sh(t, shSignal, strconv.Itoa(os.Getpid()), strconv.Itoa(syscall.Getpgrp())))
			b.mustHaveRun(t, b.jail, "sh-signal")
			time.Sleep(200 * time.Millisecond)
			for done := false; !done; {
				select {
				case s := <-sigs:
					t.Errorf("%s: the command delivered %v to the server", iso, s)
				default:
					done = true
				}
			}
			if hits := b.escapes("signal "); len(hits) != 0 {
				t.Errorf("%s: the command could signal or trace the server: %q\n%s", iso, hits, b.transcript())
			}
			st, _ := os.ReadFile("/proc/self/status")
			if !bytes.Contains(st, []byte("TracerPid:\t0\n")) {
				t.Errorf("%s: the server is being traced:\n%s", iso, st)
			}
		})
	}
}

// A setsid descendant, a double-forked one and one that keeps forking away
// into new sessions; the command then exits, or runs into its timeout.
func TestAttackDescendantsOutliveCommand(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"exit", "timeout"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			bndEachIsolation(t, func(t *testing.T, iso Isolation) {
				b := newBndBox(t, iso)
				token := bndToken("daemon")
				arg := "exit"
				if mode == "timeout" {
					arg = "stay"
				}
				s := b.py(t, "daemon", arg, token)
				if mode == "timeout" {
					s.Timeout = 3 * time.Second
				}
				out, err := Run(context.Background(), s)
				switch {
				case mode == "exit" && (err != nil || out.ExitCode != 0):
					t.Errorf("%s: the command failed: %v %+v\n%s", iso, err, out, b.transcript())
				case mode == "timeout" && result.CodeOf(err) != result.Timeout:
					t.Errorf("%s: want TIMEOUT, got %v %+v\n%s", iso, err, out, b.transcript())
				}
				for _, m := range []string{"alive-setsid", "alive-double", "alive-runner", "done-daemon"} {
					if _, err := os.Stat(filepath.Join(b.jail, m)); err != nil {
						t.Fatalf("%s: %s is missing: the descendants were never started, the test proves nothing\n%s",
							iso, m, b.transcript())
					}
				}
				bndAssertNoneSurvive(t, token, 2*time.Second, fmt.Sprintf("%s, after %s", iso, mode))
			})
		})
	}
}

// The server is killed with SIGKILL while its command runs. With
// namespaces nothing of the command may survive (setsid, double-fork and
// runaway descendants included). With landlock isolation, descendants
// that leave a force-killed helper are stated open (Isolation's doc), so
// only the command itself is held to dying.
func TestAttackKillServerWhileCommandRuns(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		token := bndToken("orphan")
		var s Spec
		var markers []string
		if iso == IsolationNamespaces {
			s = b.py(t, "daemon", "stay", token)
			markers = []string{"alive-setsid", "alive-double", "alive-runner", "done-daemon"}
		} else {
			s = b.py(t, "sleep", token)
			markers = []string{"done-sleep"}
		}
		s.Timeout = time.Minute
		srv := bndStartServer(t, s)
		for i := range markers {
			markers[i] = filepath.Join(b.jail, markers[i])
		}
		bndAwaitFiles(t, 15*time.Second, markers...)
		if len(bndProcsWith(token)) == 0 {
			t.Fatalf("%s: no process of the command is visible on the host: the test proves nothing", iso)
		}
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = srv.cmd.Wait()
		bndAssertNoneSurvive(t, token, 2*time.Second, fmt.Sprintf("%s, after kill -9 of the server", iso))
	})
}

func TestAttackForkBomb(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		token := bndToken("bomb")
		// Bounded at 400 processes, so that a sandbox that does not stop it
		// cannot take the machine down with it.
		s := b.py(t, "bomb", "400", token)
		s.Limits = Limits{MaxProcesses: 64}
		s.Timeout = 8 * time.Second
		out, err := bndRunGuarded(t, s, token, 15*time.Second)
		bndLimitCheck(t, b, out, err, LimitProcesses)
		bndAssertNoneSurvive(t, token, 2*time.Second, string(iso)+", after the fork bomb")
		bndStillServes(t, b)
	})
}

func TestAttackMemoryHog(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		t.Run("python", func(t *testing.T) {
			b := newBndBox(t, iso)
			token := bndToken("hog")
			s := b.py(t, "hog", "512", token)
			s.Limits = Limits{MemoryMB: 64}
			s.Timeout = 10 * time.Second
			out, err := bndRunGuarded(t, s, token, 17*time.Second)
			bndLimitCheck(t, b, out, err, LimitMemory)
			bndStillServes(t, b)
		})
		t.Run("sh", func(t *testing.T) {
			b := newBndBox(t, iso)
			token := bndToken("shhog")
			s := b.sh(t, `x=$(head -c 268435456 /dev/zero | tr '\0' x); echo ${#x}`, token)
			s.Limits = Limits{MemoryMB: 64}
			s.Timeout = 10 * time.Second
			out, err := bndRunGuarded(t, s, token, 17*time.Second)
			bndLimitCheck(t, b, out, err, LimitMemory)
			bndStillServes(t, b)
		})
	})
}

// Memory held in memfd files is mapped by no process, so it is in no
// resident set; 256 MiB of it against a 64 MiB limit.
func TestAttackMemoryHogInMemfd(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		token := bndToken("memfd")
		s := b.py(t, "memfd", "256", token)
		s.Limits = Limits{MemoryMB: 64}
		s.Timeout = 10 * time.Second
		out, err := bndRunGuarded(t, s, token, 17*time.Second)
		// Either memfd_create is refused outright (the seccomp filter) and
		// the memory is never held, or the watchdog stops the command.
		if strings.Contains(b.stdout.String(), "memfd held") {
			t.Errorf("%s: %s MiB held in memfds against a 64 MiB limit\n%s", b.iso, "256", b.transcript())
		} else if err != nil && out.Limit != LimitMemory {
			bndLimitCheck(t, b, out, err, LimitMemory)
		}
		bndStillServes(t, b)
	})
}

func TestAttackDiskFiller(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		for _, how := range []string{"sh", "python-ignores-SIGXFSZ"} {
			t.Run(how, func(t *testing.T) {
				b := newBndBox(t, iso)
				token := bndToken("fill")
				var s Spec
				if how == "sh" {
					s = b.sh(t, "head -c 67108864 /dev/zero > big\n", token)
				} else {
					// Python ignores SIGXFSZ: its writes fail with EFBIG.
					s = b.py(t, "fill", "big", "64", token)
				}
				s.Limits = Limits{MaxFileMB: 4}
				s.Timeout = 10 * time.Second
				out, err := bndRunGuarded(t, s, token, 17*time.Second)
				if fi, serr := os.Stat(filepath.Join(b.jail, "big")); serr != nil || fi.Size() > 4<<20 {
					t.Errorf("%s: the filler's file: %v (size %d, limit %d)", iso, serr, bndSizeOf(fi), 4<<20)
				}
				bndLimitCheck(t, b, out, err, LimitFileSize)
				bndStillServes(t, b)
			})
		}
	})
}

func bndSizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

func TestAttackCPUSpinner(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		for _, how := range []string{"sh", "python", "python-ignores-SIGXCPU"} {
			t.Run(how, func(t *testing.T) {
				b := newBndBox(t, iso)
				token := bndToken("spin")
				var s Spec
				switch how {
				case "sh":
					s = b.sh(t, "while :; do :; done\n", token)
				case "python":
					s = b.py(t, "spin", "no", token)
				default:
					s = b.py(t, "spin", "ignore", token)
				}
				s.Limits = Limits{CPUSeconds: 1}
				// The hard limit ends it after 2 s of CPU; the timeout is
				// only a guard, wide enough that a loaded machine (the
				// spinner got 1.6 s of CPU in 10 s with three test
				// processes at once) still lets it reach the limit.
				s.Timeout = 30 * time.Second
				out, err := bndRunGuarded(t, s, token, 37*time.Second)
				bndLimitCheck(t, b, out, err, LimitCPU)
				bndStillServes(t, b)
			})
		}
	})
}

func TestAttackFileDescriptorHog(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		token := bndToken("fds")
		s := b.py(t, "fds", token)
		s.Limits = Limits{MaxOpenFiles: 64}
		s.Timeout = 10 * time.Second
		out, err := bndRunGuarded(t, s, token, 17*time.Second)
		bndLimitCheck(t, b, out, err, LimitOpenFiles)
		bndStillServes(t, b)
	})
}

const shSetuid = `touch f
chmod u+s f; chmod g+s f; chmod 6755 f
cp --preserve=all /usr/bin/passwd passwd-cp
cp -a /usr/bin/passwd passwd-a
install -m 4755 /usr/bin/true inst-4755
install -m 2755 /usr/bin/true inst-2755
install -d -m 2755 inst-dir
mkdir -m 2755 mkd
tar -xpf suid.tar
mkdir other && tar --same-owner -xpf suid.tar -C other
ln /usr/bin/passwd passwd-ln
: > done-sh-setuid
`

// suidTar is an archive of set-user-ID and set-group-ID files owned by
// root and by another user, as an agent would plant for tar -xp.
func suidTar(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name     string
		mode     int64
		uid, gid int
		dir      bool
	}{
		{"t-root-4755", 0o4755, 0, 0, false},
		{"t-root-2755", 0o2755, 0, 0, false},
		{"t-other-6755", 0o6755, 1234, 1234, false},
		{"t-dir-2775", 0o2775, 0, 0, true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: time.Now(),
			Typeflag: tar.TypeReg, Size: 10}
		if e.dir {
			h.Typeflag, h.Size, h.Name = tar.TypeDir, 0, e.name+"/"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if !e.dir {
			if _, err := tw.Write([]byte("#!/bin/sh\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestAttackSetuidFileInJail(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/passwd"); err != nil {
		t.Fatalf("/usr/bin/passwd (a set-user-ID program to copy) is missing: %v", err)
	}
	groups, _ := os.Getgroups()
	groups = append(groups, os.Getgid())
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		b.run(t, b.py(t, "setuid"))
		b.mustHaveRun(t, b.jail, "setuid")
		b.write(t, "suid.tar", suidTar(t))
		b.run(t, b.sh(t, shSetuid))
		b.mustHaveRun(t, b.jail, "sh-setuid")
		files := 0
		for _, root := range []string{b.jail, b.tmp, b.home} {
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					t.Errorf("%s: walking %s: %v", iso, p, err)
					return nil
				}
				fi, err := os.Lstat(p)
				if err != nil {
					return nil
				}
				files++
				st := fi.Sys().(*syscall.Stat_t)
				if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					t.Errorf("%s: %s carries %v (owner %d)", iso, p, fi.Mode(), st.Uid)
				}
				if int(st.Uid) != os.Getuid() {
					t.Errorf("%s: %s belongs to uid %d, not the server's %d", iso, p, st.Uid, os.Getuid())
				}
				if !slices.Contains(groups, int(st.Gid)) {
					t.Errorf("%s: %s belongs to gid %d, none of the server's %v", iso, p, st.Gid, groups)
				}
				buf := make([]byte, 64)
				if n, err := syscall.Getxattr(p, "security.capability", buf); err == nil && n > 0 {
					t.Errorf("%s: %s carries file capabilities", iso, p)
				}
				return nil
			})
		}
		if files < 10 {
			t.Errorf("%s: only %d files in the jail: the attacks did not get far enough\n%s", iso, files, b.transcript())
		}
	})
}

// gitConfigFor is a repository configuration whose filter and diff
// drivers run the attack program.
func gitConfigFor(args []string) string {
	cmd := "python3 attack.py git " + strings.Join(args, " ") + " >&2; cat"
	return fmt.Sprintf("[filter \"pwn\"]\n\tclean = \"%s\"\n\tsmudge = cat\n[diff \"pwn\"]\n\ttextconv = \"%s\"\n", cmd, cmd)
}

// repoTar is an archive of a whole planted repository (a minimal .git with
// the driver configuration, the attributes, a file and the program).
func repoTar(t *testing.T, config string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name, content string, dir bool) {
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: time.Now(), Typeflag: tar.TypeReg, Size: int64(len(content))}
		if dir {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if !dir {
			if _, err := tw.Write([]byte(content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{"repo/", "repo/.git/", "repo/.git/objects/", "repo/.git/refs/", "repo/.git/refs/heads/", "repo/.git/refs/tags/"} {
		add(d, "", true)
	}
	add("repo/.git/HEAD", "ref: refs/heads/main\n", false)
	add("repo/.git/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"+config, false)
	add("repo/.gitattributes", "*.txt filter=pwn diff=pwn\n", false)
	add("repo/a.txt", "hello\n", false)
	add("repo/attack.py", attackPy, false)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// The repository's own configuration and attributes make git run a
// program of the agent's choosing (a clean filter on git add, a textconv
// driver on git diff); that program tries to write outside the jail, read
// a canary, connect to a host UNIX socket and to a host TCP listener.
func TestAttackGitConfigRunsProgram(t *testing.T) {
	t.Parallel()
	for _, plant := range []string{"files", "tar"} {
		t.Run(plant, func(t *testing.T) {
			t.Parallel()
			bndEachIsolation(t, func(t *testing.T, iso Isolation) {
				b := newBndBox(t, iso)
				victim := filepath.Join(b.away, "victim")
				if err := os.WriteFile(victim, []byte("original"), 0o644); err != nil {
					t.Fatal(err)
				}
				canaryPath, canary := bndCanaryFile(t)
				sock := filepath.Join(bndShortDir(t, "run"), "engine.sock")
				_, sockCount := bndListenStream(t, "unix", sock)
				ln, tcpCount := bndListenStream(t, "tcp4", "127.0.0.1:0")
				config := gitConfigFor([]string{b.away, victim, canaryPath, sock, ln.Addr().String()})
				repo := filepath.Join(b.jail, "repo")

				git := func(dir string, args ...string) {
					t.Helper()
					s := b.spec(t, append([]string{"git"}, args...)...)
					s.Dir = dir
					s.Env = MergeEnv(ProgramEnv("git"), nil)
					if out := b.run(t, s); out.ExitCode != 0 {
						t.Fatalf("%s: git %q: exit %d\n%s", iso, args, out.ExitCode, b.transcript())
					}
				}
				switch plant {
				case "files":
					// The agent's own file tools made the repository (with
					// landlock isolation git init cannot run in the sandbox:
					// it sets file modes, which that mode refuses).
					if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
						t.Fatalf("git init on the host: %v %s", err, out)
					}
					b.write(t, "repo/.gitattributes", "*.txt filter=pwn diff=pwn\n")
					b.write(t, "repo/a.txt", "hello\n")
					b.write(t, "repo/attack.py", attackPy)
					f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.WriteString(config); err != nil {
						t.Fatal(err)
					}
					f.Close()
				case "tar":
					b.write(t, "plant.tar", repoTar(t, config))
					// Keep modes, owners and times as extracted: landlock
					// isolation refuses setting them.
					s := b.spec(t, "tar", "--no-same-owner", "--no-same-permissions", "-m", "-xf", "plant.tar")
					if out := b.run(t, s); out.ExitCode != 0 {
						t.Fatalf("%s: tar -xf: exit %d\n%s", iso, out.ExitCode, b.transcript())
					}
				}

				git(repo, "add", "a.txt")
				b.mustHaveRun(t, repo, "git")
				if err := os.Remove(filepath.Join(repo, "done-git")); err != nil {
					t.Fatal(err)
				}
				b.write(t, "repo/a.txt", "hello, changed\n")
				git(repo, "diff")
				b.mustHaveRun(t, repo, "git")

				if got, _ := os.ReadFile(victim); string(got) != "original" {
					t.Errorf("%s: the file outside the jail now holds %q", iso, got)
				}
				if names := bndDirNames(t, b.away); !slices.Equal(names, []string{"victim"}) {
					t.Errorf("%s: the directory outside the jail now holds %q", iso, names)
				}
				b.assertNoCanary(t, canary)
				if n := sockCount.count(); n != 0 {
					t.Errorf("%s: the host UNIX socket accepted %d connection(s)", iso, n)
				}
				if n := tcpCount.count(); n != 0 {
					t.Errorf("%s: the host TCP listener accepted %d connection(s)", iso, n)
				}
			})
		})
	}
}

// The helper's control socket to the server is the command's fd 3 unless
// the helper closes it: whatever the command writes there is taken for the
// helper's answer, and the real one is lost. The forged status and error
// text reach the caller, and Run returns (saying every process of the
// command is gone) while the command still runs.
func TestAttackForgeOutcomeThroughInheritedDescriptor(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		for name, fake := range map[string]string{
			"exit-status": `{"started":true,"exit_code":0}`,
			"setup-error": `{"setup_code":"POLICY_DENIED","setup_reason":"FORGED-BY-THE-COMMAND"}`,
		} {
			b := newBndBox(t, iso)
			out, err := Run(context.Background(), b.py(t, "forge", fake))
			b.mustHaveRun(t, b.jail, "forge")
			if err != nil || out.ExitCode != 7 {
				t.Errorf("%s, forged %s: the command exited 7; Run reported exit %d, err %v\n%s",
					iso, name, out.ExitCode, err, b.transcript())
			}
		}
		// Forge, then keep running: when Run returns, nothing may be left.
		b := newBndBox(t, iso)
		token := bndToken("forge")
		s := b.py(t, "forge", `{"started":true,"exit_code":0}`, "stay", token)
		s.Timeout = 3 * time.Second
		start := time.Now()
		out, err := Run(context.Background(), s)
		el := time.Since(start)
		if left := bndProcsWith(token); len(left) != 0 {
			t.Errorf("%s: Run returned after %v (exit %d, err %v) while the command still ran: %v",
				iso, el.Round(time.Millisecond), out.ExitCode, err, left)
		}
		if result.CodeOf(err) != result.Timeout {
			t.Errorf("%s: a command that forged its answer and ran into its timeout: exit %d, err %v, want TIMEOUT",
				iso, out.ExitCode, err)
		}
		bndWaitGone(token, 2*time.Second)
	})
}

// TestAttacksUnprivileged runs every TestAttack again with the server as
// uid 65534 (nobody): the test binary, copied where that user can run
// it, re-executed under setpriv.
// unprivilegedTests are the boundary tests the unprivileged pass runs:
// every attack, and the sandbox tests that prove a part of the boundary
// (what the command sees, what outlives it, what it holds).
const unprivilegedTests = "^(TestAttack|TestCommandHoldsNoCapabilities|TestNoGrandchild|TestGrandchildHoldingPipe|" +
	"TestProxyMode|TestRunsDir|TestChildDiesWithServer|TestAllowedProgram|TestCannot|TestHomeIsPrivate|" +
	"TestEnvironmentIsScrubbed|TestStdinIsDevNull|TestTimeout|TestConcurrentRun|TestNetworkDenialHolds|" +
	"TestSCTP|TestNetworkAllowLetsConnect|TestMemoryCgroup|TestStdinPipe|TestTerminateSignals|TestTTYIsTheCommandsTerminal|TestAttackDescriptorInherited|" +
	"TestKeptHelper|TestGateHolds|TestWalkBeneath)"

func TestAttacksUnprivileged(t *testing.T) {
	if os.Getenv(boundaryUnprivEnv) != "" {
		return // this is the unprivileged pass itself
	}
	if os.Getuid() != 0 {
		t.Logf("the server already runs unprivileged (uid %d): the suite above is the unprivileged pass", os.Getuid())
		return
	}
	t.Parallel()
	setpriv := bndProgram(t, "setpriv")
	base, err := os.MkdirTemp("", "bnd-unpriv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "sandbox.test")
	testfs.CopyExecutable(t, os.Args[0], bin)
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "TMPDIR", "HOME", "GOCOVERDIR", boundaryModeEnv, boundarySpecEnv:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TMPDIR="+tmp, "HOME="+tmp, boundaryUnprivEnv+"=1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run="+unprivilegedTests, "-test.count=1", "-test.v", "-test.timeout=170s")
	cmd.Env = env
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var summary []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--- ") {
			summary = append(summary, line)
		}
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("the unprivileged pass could not run: %v\n%s", err, out.String())
		}
		var shown []string
		for _, line := range strings.Split(out.String(), "\n") {
			if !strings.HasPrefix(line, "=== ") {
				shown = append(shown, line)
			}
		}
		t.Fatalf("the unprivileged pass (uid 65534) failed: %v\n%s", err, strings.Join(shown, "\n"))
	}
	if !strings.Contains(out.String(), "--- PASS: TestAttackWriteOutsideJail") ||
		!strings.Contains(out.String(), "--- PASS: TestCommandHoldsNoCapabilities") {
		t.Fatalf("the unprivileged pass ran no attack:\n%s", out.String())
	}
	t.Logf("unprivileged pass (uid 65534):\n%s", strings.Join(summary, "\n"))
}

// The command's rlimits are applied to the helper process around the fork
// and must be put back afterwards: a helper left under the command's
// limits (a 64 MiB memory limit is below the Go helper's own data segment)
// cannot start a thread and dies mid-command. The command's outcome is then
// lost; in landlock isolation its setsid and double-forked descendants
// outlive it, and because they hold the helper's control socket (see
// TestAttackForgeOutcomeThroughInheritedDescriptor) Run never returns. An
// ordinary command that leaves descendants, under small limits, must
// simply succeed, promptly, and leave nothing behind.
func TestAttackCommandLimitsStarveTheHelper(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		var fails []string
		for i := 0; i < 6; i++ {
			b := newBndBox(t, iso)
			token := bndToken("starve")
			s := b.py(t, "daemon", "exit", token)
			s.Limits = Limits{MemoryMB: 64, MaxProcesses: 128, MaxOpenFiles: 64, CPUSeconds: 2, MaxFileMB: 4}
			s.Timeout = 5 * time.Second
			start := time.Now()
			out, err := bndRunGuarded(t, s, token, 12*time.Second)
			if time.Since(start) > 12*time.Second {
				break // runGuarded reported the hang; once is proof enough
			}
			if err != nil || out.ExitCode != 0 {
				fails = append(fails, fmt.Sprintf("run %d: err %v, exit %d", i, err, out.ExitCode))
			}
			if left := bndWaitGone(token, 2*time.Second); len(left) != 0 {
				fails = append(fails, fmt.Sprintf("run %d: %d process(es) of the command survived: %v", i, len(left), left))
			}
		}
		if len(fails) != 0 {
			t.Errorf("%s: ordinary runs under small limits failed:\n%s", iso, strings.Join(fails, "\n"))
		}
	})
}

// bndHeldMiB is the most the attack reported holding: the sum over its
// workers of the last "held W MiB" each printed.
func bndHeldMiB(stdout string) int {
	last := map[string]int{}
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "held" {
			if n, err := strconv.Atoi(f[2]); err == nil {
				last[f[1]] = n
			}
		}
	}
	total := 0
	for _, n := range last {
		total += n
	}
	return total
}

// bndMemAvailableKB is the host's MemAvailable.
func bndMemAvailableKB(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatal("no MemAvailable in /proc/meminfo")
	return 0
}

// bndHiddenMemory runs the attack cmd args asking for 3x a 64 MiB memory
// limit of memory no resident set shows, sampling the host's MemAvailable
// meanwhile, and returns the outcome, what the attack reported holding and
// the largest drop of MemAvailable seen (MiB).
func bndHiddenMemory(t *testing.T, b *bndBox, cmd string, args ...string) (Outcome, error, int, int64) {
	t.Helper()
	token := bndToken(cmd)
	s := b.py(t, cmd, append(args, token)...)
	s.Limits = Limits{MemoryMB: 64}
	s.Timeout = 15 * time.Second
	base := bndMemAvailableKB(t)
	low := base
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			low = min(low, bndMemAvailableKB(t))
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	out, err := bndRunGuarded(t, s, token, 25*time.Second)
	close(stop)
	<-sampled
	bndAssertNoneSurvive(t, token, 2*time.Second, string(b.iso)+", after "+cmd)
	return out, err, bndHeldMiB(b.stdout.String()), (base - low) >> 10
}

// The command holds 3x memory_mb in AF_UNIX socket-pair buffers (kernel
// memory, in no resident set; issue 18: 1.5 GiB held against 512 MiB).
// It is stopped near the limit and named "memory", whether a memory
// cgroup (a root server) or the watchdog's socket count (unprivileged: the
// command's own network namespace, or with landlock isolation the sockets
// its processes hold) stops it.
func TestAttackHideMemoryInSocketBuffers(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		out, err, held, drop := bndHiddenMemory(t, b, "sockhold", "1", "192")
		bndLimitCheck(t, b, out, err, LimitMemory)
		want := "memory: watchdog (rss+"
		if kind, _ := memcgAvailable(); kind != memcgNone {
			want = "memory: memcg v"
		}
		if !strings.Contains(out.Confinement, want) {
			t.Errorf("%s: the confinement %q does not name %q", iso, out.Confinement, want)
		}
		t.Logf("%s: held %d MiB in socket buffers; host MemAvailable fell by at most %d MiB (%s)", iso, held, drop, out.Confinement)
		if held > 64+16 {
			t.Errorf("%s: the command held %d MiB in socket buffers against a 64 MiB limit\n%s", iso, held, b.transcript())
		}
		bndHostDropCheck(t, iso, drop, func() int64 {
			_, _, _, d := bndHiddenMemory(t, b, "sockhold", "1", "192")
			return d
		})
		bndStillServes(t, b)
	})
}

// bndHostDropCheck fails the test when the host's MemAvailable fell by
// more than a limit that holds allows during an attack run: this bound
// catches a limit that does not hold (3x it would be lost), not the exact
// amount. Other work on the machine moves MemAvailable too: the other
// packages of a parallel `go test ./...` (a server test peaks at 190 MiB
// resident) once took it 356 MiB down during the pipe attack, in both
// isolations at the same moment, while the limit held. So a drop past the
// bound is measured once more with a second run of the attack (again),
// and only a second drop past it fails: a limit that does not hold loses
// the memory on every run.
func bndHostDropCheck(t *testing.T, iso Isolation, drop int64, again func() int64) {
	t.Helper()
	const bound = 3*64 + 128
	if drop <= bound {
		return
	}
	t.Logf("%s: the host's MemAvailable fell by %d MiB during the run; measured again", iso, drop)
	if d := again(); d > bound {
		t.Errorf("%s: the host's MemAvailable fell by %d, then %d MiB during two runs (limit 64 MiB)", iso, drop, d)
	}
}

// The command holds 3x memory_mb in pipe buffers, from four processes
// (each process has at most max_open_files descriptors, and the kernel lets
// an unprivileged user enlarge pipes only up to fs.pipe-user-pages-soft):
// stopped near the limit and named "memory", by the memory cgroup (which
// charges pipe buffers) or by the watchdog's count of the pipes held.
func TestAttackHideMemoryInPipeBuffers(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		out, err, _, drop := bndHiddenMemory(t, b, "pipehold", "4", "192")
		bndLimitCheck(t, b, out, err, LimitMemory)
		t.Logf("%s: host MemAvailable fell by at most %d MiB (%s)", iso, drop, out.Confinement)
		bndHostDropCheck(t, iso, drop, func() int64 {
			_, _, _, d := bndHiddenMemory(t, b, "pipehold", "4", "192")
			return d
		})
		if strings.Contains(b.stdout.String(), "held 3 48") {
			t.Errorf("%s: a worker held its whole share of 3x memory_mb in pipes\n%s", iso, b.transcript())
		}
		bndStillServes(t, b)
	})
}

// The command fills /dev/shm (tmpfs pages, in no resident set) with 3x
// memory_mb. With namespaces isolation its private /dev/shm is counted by
// the watchdog (and charged to the memory cgroup): stopped and named
// "memory". With landlock isolation /dev/shm is not writable at all.
func TestAttackHideMemoryInDevShm(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		out, err, held, drop := bndHiddenMemory(t, b, "shmhold", "192")
		t.Logf("%s: held %d MiB in /dev/shm; host MemAvailable fell by at most %d MiB (%s)", iso, held, drop, out.Confinement)
		if iso == IsolationLandlock {
			if !strings.Contains(b.stdout.String(), "shmhold refused") || held != 0 {
				t.Errorf("landlock: /dev/shm was writable (held %d MiB)\n%s", held, b.transcript())
			}
			return
		}
		bndLimitCheck(t, b, out, err, LimitMemory)
		if held > 64+16 {
			t.Errorf("%s: the command held %d MiB in /dev/shm against a 64 MiB limit\n%s", iso, held, b.transcript())
		}
		bndHostDropCheck(t, iso, drop, func() int64 {
			_, _, _, d := bndHiddenMemory(t, b, "shmhold", "192")
			return d
		})
		bndStillServes(t, b)
	})
}

// Many files, each under max_file_mb, past disk_mb (issue 18: 960 MiB
// written with max_file_mb = 64 and no total): stopped and named "disk",
// and the jail gained about disk_mb.
func TestAttackFillDiskWithManySmallFiles(t *testing.T) {
	t.Parallel()
	bndEachIsolation(t, func(t *testing.T, iso Isolation) {
		b := newBndBox(t, iso)
		token := bndToken("diskhold")
		s := b.py(t, "diskhold", "40", "3", token)
		s.Limits = Limits{MaxFileMB: 4, DiskMB: 32}
		s.Timeout = 30 * time.Second
		out, err := bndRunGuarded(t, s, token, 40*time.Second)
		bndLimitCheck(t, b, out, err, LimitDisk)
		var size int64
		_ = filepath.WalkDir(b.jail, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
		t.Logf("%s: the jail gained %d MiB against disk_mb = 32", iso, size>>20)
		// The watchdog looks every 25 ms and the kernel counts dirtied
		// pages as they are written back: a loaded machine overshoots by
		// up to about 16 MiB (docs/terminald.md, Disk); twice the limit
		// would mean the total is not enforced.
		if size > 64<<20 {
			t.Errorf("%s: the jail gained %d MiB against disk_mb = 32\n%s", iso, size>>20, b.transcript())
		}
		if !strings.Contains(err.Error(), "disk_mb") {
			t.Errorf("%s: the refusal does not name disk_mb: %v", iso, err)
		}
		bndStillServes(t, b)
	})
}
