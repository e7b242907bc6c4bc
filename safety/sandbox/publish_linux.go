package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Publishing a port (Spec.Publish) joins the two network namespaces
// without opening either to the other. The server and the helper share a
// SOCK_SEQPACKET pair (the helper's end travels with the command message).
// The helper, the only process of the server's in the command's network
// namespace, watches its /proc/net/tcp{,6} and reports each port the
// command listens on ("port N", "gone N"); the server listens on the
// host's 127.0.0.1 for it, and for each connection it accepts asks the
// helper for one ("connect ID N"), which the helper makes to the
// command's loopback and passes back ("conn ID" with the descriptor, or
// "failed ID"); the server joins the two. Nothing but the published
// ports is reachable, and only from the host's loopback.

// publishEvery is how often the helper looks for new listening ports.
const publishEvery = 200 * time.Millisecond

// publishing reports whether a run of s publishes ports: asked for, and
// the command has a network namespace of its own.
func publishing(s *Spec, cfg *helperConfig) bool {
	return s.Publish != nil && cfg.Isolation == IsolationNamespaces && cfg.Net != NetAllow
}

// publishPorts is the helper's side (see above), on fd until the helper
// exits.
func (h *helper) publishPorts(fd int) {
	var mu sync.Mutex
	send := func(msg string, rights []byte) {
		mu.Lock()
		defer mu.Unlock()
		_ = unix.Sendmsg(fd, []byte(msg), rights, nil, 0)
	}
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return
			}
			var id uint64
			var port int
			if _, err := fmt.Sscanf(string(buf[:n]), "connect %d %d", &id, &port); err != nil || port <= 0 || port > 65535 {
				continue
			}
			go func() {
				c, err := dialLoopback(port)
				if err != nil {
					send(fmt.Sprintf("failed %d", id), nil)
					return
				}
				send(fmt.Sprintf("conn %d", id), unix.UnixRights(c))
				unix.Close(c)
			}()
		}
	}()
	known := map[int]bool{}
	for {
		now := listeningPorts()
		if h.cfg.Net == NetProxy {
			delete(now, ProxyPort) // the proxy relay's own
		}
		for p := range now {
			if !known[p] {
				send(fmt.Sprintf("port %d", p), nil)
			}
		}
		for p := range known {
			if !now[p] {
				send(fmt.Sprintf("gone %d", p), nil)
			}
		}
		known = now
		time.Sleep(publishEvery)
	}
}

// dialLoopback connects to port on the namespace's loopback, IPv4 first.
func dialLoopback(port int) (int, error) {
	for _, sa := range []unix.Sockaddr{&unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}},
		&unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}} {
		family := unix.AF_INET
		if _, ok := sa.(*unix.SockaddrInet6); ok {
			family = unix.AF_INET6
		}
		c, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if err := unix.Connect(c, sa); err == nil {
			return c, nil
		}
		unix.Close(c)
	}
	return -1, unix.ECONNREFUSED
}

// listeningPorts reads the TCP ports listened on at the loopback or the
// wildcard address of this network namespace.
func listeningPorts() map[int]bool {
	ports := map[int]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 4 || fl[3] != "0A" { // TCP_LISTEN
				continue
			}
			addr, port, ok := strings.Cut(fl[1], ":")
			if !ok {
				continue
			}
			switch addr {
			case "0100007F", "00000000", "00000000000000000000000001000000", "00000000000000000000000000000000",
				"0000000000000000FFFF00000100007F":
			default:
				continue
			}
			if p, err := strconv.ParseUint(port, 16, 16); err == nil && p > 0 {
				ports[int(p)] = true
			}
		}
	}
	return ports
}

// publisher is the server's side (see above) for one run.
type publisher struct {
	mine, theirs int
	hook         func(PortEvent) error
	mu           sync.Mutex
	next         uint64
	pending      map[uint64]chan int
	listeners    map[int]*hostListener // by inside port
	done         chan struct{}
	wg           sync.WaitGroup
}

// hostListener is one published port on the host's loopback.
type hostListener struct {
	fd  int
	url string
}

// newPublisher makes the socket pair of a run that publishes to hook.
func newPublisher(hook func(PortEvent) error) (*publisher, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, result.Wrap(result.InternalError, errSetup+": the port-publishing socket could not be created", err)
	}
	return &publisher{mine: pair[0], theirs: pair[1], hook: hook, pending: map[uint64]chan int{},
		listeners: map[int]*hostListener{}, done: make(chan struct{})}, nil
}

// start closes the server's copy of the helper's end (it has it now) and
// serves the helper's reports.
func (p *publisher) start() {
	unix.Close(p.theirs)
	p.theirs = -1
	p.wg.Add(1)
	go p.serve()
}

// serve reads the helper's reports until the run ends.
func (p *publisher) serve() {
	defer p.wg.Done()
	buf := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(p.mine, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		var fds []int
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if f, ferr := unix.ParseUnixRights(&m); ferr == nil {
					fds = append(fds, f...)
				}
			}
		}
		verb, arg, _ := strings.Cut(string(buf[:n]), " ")
		num, _ := strconv.ParseUint(arg, 10, 64)
		switch verb {
		case "port":
			p.open(int(num))
		case "gone":
			p.gone(int(num))
		case "conn", "failed":
			fd := -1
			if verb == "conn" && len(fds) > 0 {
				fd, fds = fds[0], fds[1:]
			}
			p.mu.Lock()
			ch := p.pending[num]
			delete(p.pending, num)
			p.mu.Unlock()
			if ch != nil {
				ch <- fd
			} else if fd >= 0 {
				unix.Close(fd)
			}
		}
		for _, f := range fds {
			unix.Close(f)
		}
	}
}

// open publishes inside: a host listener on 127.0.0.1, announced to the
// hook before it accepts anything.
func (p *publisher) open(inside int) {
	p.mu.Lock()
	_, dup := p.listeners[inside]
	p.mu.Unlock()
	if dup || inside <= 0 || inside > 65535 {
		return
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	if unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil || unix.Listen(ln, 64) != nil {
		unix.Close(ln)
		return
	}
	sa, err := unix.Getsockname(ln)
	in4, ok := sa.(*unix.SockaddrInet4)
	if err != nil || !ok {
		unix.Close(ln)
		return
	}
	l := &hostListener{fd: ln, url: fmt.Sprintf("http://127.0.0.1:%d", in4.Port)}
	if p.hook(PortEvent{Inside: inside, URL: l.url, Open: true}) != nil {
		unix.Close(ln)
		return
	}
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		unix.Close(ln)
		return
	default:
	}
	p.listeners[inside] = l
	p.wg.Add(1)
	p.mu.Unlock()
	go p.accept(inside, l)
}

// gone ends the publication of inside.
func (p *publisher) gone(inside int) {
	p.mu.Lock()
	l := p.listeners[inside]
	delete(p.listeners, inside)
	p.mu.Unlock()
	if l != nil {
		_ = unix.Shutdown(l.fd, unix.SHUT_RDWR) // wakes accept, which closes it
		_ = p.hook(PortEvent{Inside: inside, URL: l.url})
	}
}

// accept serves one host listener until it is shut down.
func (p *publisher) accept(inside int, l *hostListener) {
	defer p.wg.Done()
	defer unix.Close(l.fd)
	for {
		c, _, err := unix.Accept4(l.fd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != nil {
			return
		}
		go p.join(c, inside)
	}
}

// join asks the helper for a connection to inside and splices c to it.
func (p *publisher) join(c, inside int) {
	defer unix.Close(c)
	ch := make(chan int, 1)
	p.mu.Lock()
	p.next++
	id := p.next
	p.pending[id] = ch
	p.mu.Unlock()
	if _, err := unix.Write(p.mine, []byte(fmt.Sprintf("connect %d %d", id, inside))); err != nil {
		return
	}
	select {
	case fd := <-ch:
		if fd < 0 {
			return
		}
		defer unix.Close(fd)
		splice(c, fd)
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// close ends every publication (the run is over): the listeners close,
// the hook hears of each, and the helper's socket closes.
func (p *publisher) close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	ports := make([]int, 0, len(p.listeners))
	for inside := range p.listeners {
		ports = append(ports, inside)
	}
	p.mu.Unlock()
	for _, inside := range ports {
		p.gone(inside)
	}
	_ = unix.Shutdown(p.mine, unix.SHUT_RDWR)
	p.wg.Wait()
	unix.Close(p.mine)
	if p.theirs >= 0 {
		unix.Close(p.theirs)
	}
}
