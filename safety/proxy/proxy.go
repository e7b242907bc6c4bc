package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// DefaultConfigKey is the configuration key refusals name when
// Options.ConfigKey is empty.
const DefaultConfigKey = "[terminal.sandbox] allowed_hosts"

// Defaults of the Options limits.
const (
	// DefaultMaxHeaderBytes is the default Options.MaxHeaderBytes.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultHeaderTimeout is the default Options.HeaderTimeout.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout is the default Options.IdleTimeout.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultDialTimeout is the default Options.DialTimeout.
	DefaultDialTimeout = 30 * time.Second
	// DefaultResponseHeaderTimeout is the default Options.ResponseHeaderTimeout.
	DefaultResponseHeaderTimeout = 2 * time.Minute
	// DefaultMaxConns is the default Options.MaxConns.
	DefaultMaxConns = 256
)

// defaultPorts are the ports admitted when Options.Ports is empty.
var defaultPorts = []int{80, 443}

// Kinds of Refusal.
const (
	// RefusedHost: the host name matches no allowed_hosts entry.
	RefusedHost = "host_not_allowed"
	// RefusedIPLiteral: the target is an IP address that is not listed
	// itself, or a numeric spelling of one.
	RefusedIPLiteral = "ip_literal"
	// RefusedPort: the host is allowed but the port is not.
	RefusedPort = "port_not_allowed"
	// RefusedAddress: the host is allowed but resolved to an address the
	// dialer refuses (loopback, private, link-local...).
	RefusedAddress = "non_public_address"
)

// Options configures a Proxy. Zero values mean the documented defaults.
type Options struct {
	// AllowedHosts are the host patterns admitted (see ValidatePattern):
	// "example.com", "*.example.org" (any subdomain at any depth, not the
	// apex), or an IP address listed as itself. Case-insensitive; one
	// trailing dot is ignored. Empty admits nothing.
	AllowedHosts []string
	// Ports are the destination ports admitted, for CONNECT and plain HTTP
	// alike; empty means 80 and 443.
	Ports []int
	// Dial connects to an allowed upstream. Nil means DefaultDial, which
	// refuses loopback, private, link-local, multicast, unspecified, CGNAT
	// and reserved addresses after resolution. An error wrapping
	// ErrNonPublicAddress is answered 403 and reported to OnRefuse.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnRefuse is called once per request refused by policy (host, IP
	// literal, port or address), for the audit log. Malformed requests are
	// answered 400 and only logged.
	OnRefuse func(Refusal)
	// OnAllow is called once per admitted request whose upstream connection
	// was made: when a tunnel is established, or when a forwarded request
	// got its upstream connection. Optional.
	OnAllow func(host string, port int)
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// ConfigKey names the setting refusals tell the user to edit; empty
	// means DefaultConfigKey.
	ConfigKey string
	// MaxHeaderBytes caps a request's header (request line included; the
	// HTTP server allows 4 KiB of slack). Default 64 KiB; larger gets 431.
	MaxHeaderBytes int
	// HeaderTimeout is how long a client may take to send a request's
	// header before its connection is closed. Default 10 s.
	HeaderTimeout time.Duration
	// IdleTimeout ends a tunnel that carried no byte in either direction,
	// and a kept-alive client connection with no request, for this long.
	// Default 5 min.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting to an upstream. Default 30 s.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a forwarded request's
	// response header. Default 2 min.
	ResponseHeaderTimeout time.Duration
	// MaxConns caps concurrent client connections, tunnels included; the
	// next one is answered 503 and closed. Default 256.
	MaxConns int
}

// Refusal describes one request refused by policy, for the audit log.
type Refusal struct {
	// Host is the requested host, lower case, without trailing dot.
	Host string
	// Port is the requested port.
	Port int
	// Method is the request's method (CONNECT, GET, ...).
	Method string
	// Reason is the message sent to the client, naming the host and what
	// would allow it.
	Reason string
	// Kind is one of RefusedHost, RefusedIPLiteral, RefusedPort and
	// RefusedAddress.
	Kind string
	// PeerPID is the process id (in the server's PID namespace) of the
	// process that connected to the proxy's UNIX socket (SO_PEERCRED; on
	// Linux only, 0 otherwise or over TCP). terminald's client is the
	// sandbox helper's relay, so the id says which run asked.
	PeerPID int
}

// peerKey is the context key of a client connection's peer process id.
type peerKey struct{}

// Proxy is a filtering HTTP/CONNECT forward proxy. Create it with New,
// run it with Serve and stop it with Close. It is safe for concurrent use.
type Proxy struct {
	m         *matcher
	ports     map[int]bool
	portList  string
	key       string
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	onRefuse  func(Refusal)
	onAllow   func(host string, port int)
	log       *slog.Logger
	idle      time.Duration
	dialLimit time.Duration
	maxConns  int64

	srv       *http.Server
	transport *http.Transport
	baseCtx   context.Context
	cancel    context.CancelFunc

	active    atomic.Int64 // client connections open
	rejecting atomic.Int64 // connections being answered 503

	mu      sync.Mutex
	closed  bool
	tunnels map[*tunnel]struct{}
	wg      sync.WaitGroup // requests being served
}

// New checks o and returns a Proxy. A bad pattern, port or limit is a
// *result.Error with code INVALID_REQUEST.
func New(o Options) (*Proxy, error) {
	m, err := newMatcher(o.AllowedHosts)
	if err != nil {
		return nil, err
	}
	p := &Proxy{m: m, key: o.ConfigKey, dial: o.Dial,
		onRefuse: o.OnRefuse, onAllow: o.OnAllow, log: o.Logger, tunnels: map[*tunnel]struct{}{}}
	if p.ports, err = portSet(o.Ports); err != nil {
		return nil, err
	}
	p.portList = listPorts(p.ports)
	if p.key == "" {
		p.key = DefaultConfigKey
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	l, err := limitsOf(o)
	if err != nil {
		return nil, err
	}
	p.idle, p.dialLimit, p.maxConns = l.idle, l.dial, int64(l.maxConns)
	if p.dial == nil {
		p.dial = DefaultDial(p.dialLimit)
	}

	p.baseCtx, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		Proxy:                  nil, // never the environment's proxy
		DialContext:            p.dialUpstream,
		DisableCompression:     true, // pass Accept-Encoding and bodies through untouched
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  l.respHeader,
		MaxResponseHeaderBytes: 1 << 20,
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: l.header,
		IdleTimeout:       p.idle,
		MaxHeaderBytes:    l.maxHeader,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return p.baseCtx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if cc, ok := c.(*clientConn); ok {
				c = cc.Conn
			}
			return context.WithValue(ctx, peerKey{}, peerPID(c))
		},
		DisableGeneralOptionsHandler: true,
		Protocols:                    &protocols,
	}
	return p, nil
}

// portSet is the set of ports admitted: ports, or 80 and 443 when empty.
func portSet(ports []int) (map[int]bool, error) {
	if len(ports) == 0 {
		ports = defaultPorts
	}
	set := map[int]bool{}
	for _, port := range ports {
		if port < 1 || port > 65535 {
			return nil, result.New(result.InvalidRequest, fmt.Sprintf("proxy port %d is not a TCP port (1-65535)", port))
		}
		set[port] = true
	}
	return set, nil
}

// limits are the Options limits with the defaults filled in.
type limits struct {
	header, idle, dial, respHeader time.Duration
	maxHeader, maxConns            int
}

// limitsOf fills in o's zero limits with the defaults and refuses negative
// ones, naming every one that is negative.
func limitsOf(o Options) (limits, error) {
	var bad []string
	pick := func(name string, v, def time.Duration) time.Duration {
		if v < 0 {
			bad = append(bad, name)
		}
		if v <= 0 {
			return def
		}
		return v
	}
	l := limits{
		header:     pick("HeaderTimeout", o.HeaderTimeout, DefaultHeaderTimeout),
		idle:       pick("IdleTimeout", o.IdleTimeout, DefaultIdleTimeout),
		dial:       pick("DialTimeout", o.DialTimeout, DefaultDialTimeout),
		respHeader: pick("ResponseHeaderTimeout", o.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		maxHeader:  o.MaxHeaderBytes,
		maxConns:   o.MaxConns,
	}
	if l.maxHeader < 0 {
		bad = append(bad, "MaxHeaderBytes")
	} else if l.maxHeader == 0 {
		l.maxHeader = DefaultMaxHeaderBytes
	}
	if l.maxConns < 0 {
		bad = append(bad, "MaxConns")
	} else if l.maxConns == 0 {
		l.maxConns = DefaultMaxConns
	}
	if len(bad) > 0 {
		return l, result.New(result.InvalidRequest, "proxy limits must not be negative: "+strings.Join(bad, ", "))
	}
	return l, nil
}

func listPorts(ports map[int]bool) string {
	list := make([]string, 0, len(ports))
	for _, port := range slices.Sorted(maps.Keys(ports)) {
		list = append(list, strconv.Itoa(port))
	}
	if len(list) == 1 {
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

// Serve accepts client connections on l and serves them until Close; it
// then returns nil (and at once if Close was already called). Any other
// error from l is returned. l is closed when Serve returns. Serve may be
// called on several listeners; MaxConns counts across all of them.
func (p *Proxy) Serve(l net.Listener) error {
	err := p.srv.Serve(&limitListener{Listener: l, p: p})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, closes every client connection and tunnel and the
// idle upstream connections, and waits for the requests being served to
// return. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	tunnels := make([]*tunnel, 0, len(p.tunnels))
	for t := range p.tunnels {
		tunnels = append(tunnels, t)
	}
	p.mu.Unlock()

	p.cancel()
	err := p.srv.Close()
	for _, t := range tunnels {
		t.close()
	}
	p.wg.Wait()
	p.transport.CloseIdleConnections()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Allowed reports whether host (a name or IP address as a client writes it,
// without port) matches AllowedHosts. An IP address is allowed only when
// listed itself; anything that is not a valid host is not allowed. The
// port and the resolved address are checked separately, when a request
// comes.
func (p *Proxy) Allowed(host string) bool { return p.m.allowed(host) }

// ServeHTTP implements http.Handler: CONNECT opens a tunnel, any other
// method is forwarded if its target is an absolute http:// URL.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.Header().Set("Connection", "close")
		http.Error(w, "the proxy is shutting down", http.StatusServiceUnavailable)
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()

	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	p.serveForward(w, r)
}
