package sandbox

import (
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The command's resolver (namespaces isolation, network "deny" or
// "proxy"): the view's /etc/resolv.conf names 127.0.0.1, where the helper
// answers every DNS query REFUSED and records the name asked for. Nothing
// is resolved and nothing leaves the network namespace (it has only its
// own loopback); a program that looks a name up fails at once instead of
// waiting for a server it cannot reach, and the answer can say which
// names the command tried (Outcome.Lookups). Names in the view's
// /etc/hosts (localhost) are resolved by the C library without asking.

// resolvConf is the view's /etc/resolv.conf: the helper's resolver only,
// no search domains (each would be another query for a name the command
// never wrote), one attempt.
const resolvConf = "# terminald: this sandbox resolves no names; the network is denied or only the proxy reaches it.\n" +
	"nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"

// maxLookups bounds the distinct names recorded per run.
const maxLookups = 32

// maxQueries bounds the queries the helper answers per run: a command
// flooding its resolver would otherwise keep the helper, whose CPU time
// no limit of the command counts, busy answering. Past it the socket is
// closed, and further lookups fail at once (connection refused).
const maxQueries = 10000

// resolverView replaces the view's /etc/resolv.conf (a copied file, or a
// link to the host's resolver configuration) with resolvConf. A read path
// that mounts all of /etc shows the host's file instead: the view is left
// as it is, and lookups go where the host's file says (unreachable).
func resolverView(binds []bind) []bind {
	const dst = "/etc/resolv.conf"
	if coveredByDir(binds, dst) {
		return binds
	}
	kept := binds[:0]
	for _, b := range binds {
		if b.dst == dst {
			if b.fd > 0 {
				unix.Close(b.fd)
			}
			continue
		}
		kept = append(kept, b)
	}
	return append(kept, bind{dst: dst, data: []byte(resolvConf), perm: 0o444})
}

// lookups records the names the command's DNS queries asked for.
type lookups struct {
	mu    sync.Mutex
	names []string
}

func (l *lookups) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.names) < maxLookups && !containsStr(l.names, name) {
		l.names = append(l.names, name)
	}
}

func (l *lookups) list() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names...)
}

// reset forgets the names of the last command (a helper serving another).
func (l *lookups) reset() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.names = nil
	l.mu.Unlock()
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startResolver listens on UDP 127.0.0.1:53 in the command's network
// namespace and answers each query REFUSED, recording its name. It is
// best effort: where the port cannot be bound, lookups fail as before
// (nothing listens) and none is recorded.
func (h *helper) startResolver() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	if unix.Bind(fd, &unix.SockaddrInet4{Port: 53, Addr: [4]byte{127, 0, 0, 1}}) != nil {
		unix.Close(fd)
		return
	}
	h.dns = &lookups{}
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 512)
		for answered := 0; answered < maxQueries; answered++ {
			n, from, err := unix.Recvfrom(fd, buf, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			name, reply, ok := refuseQuery(buf[:n])
			if !ok {
				continue
			}
			if name != "" && name != "localhost" && !strings.HasSuffix(name, ".localhost") {
				h.dns.add(name) // localhost names are this machine's, never the network's (RFC 6761)
			}
			_ = unix.Sendto(fd, reply, 0, from)
		}
	}()
}

// refuseQuery parses a DNS query (RFC 1035 §4.1) and returns the name of
// its first question, lower case and without the trailing dot, and the
// answer: the same id and question with QR set and RCODE 5 (REFUSED).
// It reports false for a message that is not a query it can answer.
func refuseQuery(q []byte) (string, []byte, bool) {
	if len(q) < 12 || q[2]&0x80 != 0 { // too short, or a response
		return "", nil, false
	}
	qd := int(q[4])<<8 | int(q[5])
	var labels []string
	end := 12
	if qd > 0 {
		i := 12
		for {
			if i >= len(q) {
				return "", nil, false
			}
			l := int(q[i])
			if l == 0 {
				i++
				break
			}
			if l > 63 || i+1+l > len(q) {
				return "", nil, false // compression or a cut label: not in a query's question
			}
			labels = append(labels, string(q[i+1:i+1+l]))
			i += 1 + l
		}
		if i+4 > len(q) {
			return "", nil, false
		}
		end = i + 4
	}
	reply := make([]byte, end)
	copy(reply, q[:end])
	reply[2] = 0x80 | q[2]&0x79 // QR, the query's opcode and RD
	reply[3] = 5                // RA clear, RCODE REFUSED
	reply[4], reply[5] = 0, 0
	if qd > 0 {
		reply[5] = 1 // the first question only
	}
	for i := 6; i < 12; i++ {
		reply[i] = 0
	}
	name := strings.ToLower(strings.Join(labels, "."))
	if !printableName(name) {
		name = ""
	}
	return name, reply, true
}

// printableName reports whether name is made of the characters a host
// name uses, so that what is recorded can be shown as it is.
func printableName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}
