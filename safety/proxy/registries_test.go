package proxy

import (
	"net"
	"slices"
	"testing"
)

// TestRegistryPresetsOpenTheirHostsOnly runs the proxy with the hosts of
// every ecosystem preset, each resolved by the test resolver to a loopback
// listener: a CONNECT to each preset host on 443 is tunnelled to it, and a
// host of the same ecosystem no preset names (a code host, another
// registry's mirror) is refused before any lookup.
func TestRegistryPresetsOpenTheirHostsOnly(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	var hosts []string
	for _, name := range RegistryNames() {
		h, ok := RegistryHosts(name)
		if !ok || len(h) == 0 {
			t.Fatalf("preset %q has no hosts", name)
		}
		hosts = append(hosts, h...)
	}
	for _, want := range []string{"proxy.golang.org", "sum.golang.org", "registry.npmjs.org", "pypi.org",
		"files.pythonhosted.org", "crates.io", "index.crates.io", "static.crates.io"} {
		if !slices.Contains(hosts, want) {
			t.Fatalf("the presets leave out %s: %v", want, hosts)
		}
	}
	for _, h := range hosts {
		res.set(h, echo.addr)
	}
	res.set("github.com", echo.addr)
	h := startProxy(t, Options{AllowedHosts: hosts, Dial: res.Dial})
	for _, host := range hosts {
		c, _ := h.connect(net.JoinHostPort(host, "443"))
		c.Close()
	}
	resp, body, c, _ := h.raw("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n")
	c.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("github.com through the presets: %s %s", resp.Status, body)
	}
	for _, d := range res.dialed() {
		if d == "github.com:443" {
			t.Fatal("the refused host was dialled")
		}
	}
	for range hosts { // each tunnel's upstream connection ends once the client closed
		<-echo.ended
	}
	if n := echo.count(); n != len(hosts) {
		t.Fatalf("the upstream saw %d connections, want %d", n, len(hosts))
	}
}
