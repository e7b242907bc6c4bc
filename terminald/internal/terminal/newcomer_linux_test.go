package terminal

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
	"github.com/bastion-mcp/bastion/safety/proxy"
	"github.com/bastion-mcp/bastion/safety/risk"
	"github.com/bastion-mcp/bastion/safety/runner"
)

const devExamplePolicy = "../../../policies/dev.example.toml"

// registryModule is the one dependency of the newcomer's project, served
// by the stand-in for proxy.golang.org.
const (
	registryModule  = "example.com/greet"
	registryVersion = "v1.0.0"
)

// moduleProxy is a Go module proxy (the GOPROXY protocol) holding
// registryModule, served over HTTPS with a certificate for
// proxy.golang.org that the returned PEM (a root the sandboxed go
// trusts through SSL_CERT_FILE) signs. It counts the requests it served.
func moduleProxy(t *testing.T) (*httptest.Server, []byte, func() int) {
	t.Helper()
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	prefix := registryModule + "@" + registryVersion + "/"
	for name, body := range map[string]string{
		"go.mod":   "module " + registryModule + "\n\ngo 1.21\n",
		"greet.go": "package greet\n\n// Hello greets.\nfunc Hello(n string) string { return \"hello, \" + n }\n",
	} {
		w, err := zw.Create(prefix + name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/" + registryModule + "/@v/list":                         []byte(registryVersion + "\n"),
		"/" + registryModule + "/@v/" + registryVersion + ".info": []byte(`{"Version":"` + registryVersion + `","Time":"2026-01-01T00:00:00Z"}`),
		"/" + registryModule + "/@v/" + registryVersion + ".mod":  []byte("module " + registryModule + "\n\ngo 1.21\n"),
		"/" + registryModule + "/@v/" + registryVersion + ".zip":  zbuf.Bytes(),
		"/" + registryModule + "/@latest":                         []byte(`{"Version":"` + registryVersion + `"}`),
	}
	var mu sync.Mutex
	served := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		served++
		mu.Unlock()
		_, _ = w.Write(b)
	}))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "proxy.golang.org"},
		DNSNames: []string{"proxy.golang.org"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), func() int { mu.Lock(); defer mu.Unlock(); return served }
}

// TestNewcomerDevProfileBuildsGoModuleAndCommits is the newcomer's first
// hour, offline: a fresh copy of policies/dev.example.toml in another
// folder, its relative jail next to it, a Go module with one dependency
// and a fresh git repository. Through the proxy and the shipped Go
// registry preset (a local module proxy on loopback stands in for
// proxy.golang.org, reached through the proxy's resolver hook), go test
// downloads the dependency, builds and passes; git commit records the
// person's identity from their global git configuration (git_identity),
// git config --get user.email answers it, and git config user.email x is
// refused naming the key. A host outside the presets is refused, and the
// refusal is in that run's answer.
func TestNewcomerDevProfileBuildsGoModuleAndCommits(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Fatalf("the dev profile's PATH names /usr/local/go/bin, where this machine has no go: %v", err)
	}
	// The person: a home with their git identity (and a helper that must
	// not travel), a state directory of their own.
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"),
		[]byte("[user]\n\tname = New Comer\n\temail = newcomer@example.invalid\n[credential]\n\thelper = store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	os.Unsetenv("GIT_CONFIG_GLOBAL")

	// A fresh copy of the example policy, placed in another folder, with
	// the folders its relative paths name.
	base := runnertestCanonDir(t)
	b, err := os.ReadFile(devExamplePolicy)
	if err != nil {
		t.Fatal(err)
	}
	polPath := filepath.Join(base, "policies", "dev.toml")
	jailDir := filepath.Join(base, ".demo", "sandbox", "dev")
	for _, d := range []string{filepath.Dir(polPath), jailDir, filepath.Join(base, ".demo", "sandbox", "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(polPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := config.Load(polPath)
	if err != nil {
		t.Fatalf("the copied dev.example.toml: %v", err)
	}
	if pol.Terminal.Sandbox.EffectiveNetwork() != config.NetworkProxy || !pol.Terminal.Sandbox.GitIdentity {
		t.Fatalf("dev.example.toml no longer ships the proxy and git_identity: %+v", pol.Terminal.Sandbox)
	}
	root, err := jail.OpenRoot(pol.Terminal.JailRoot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	rt, err := pol.Terminal.Runtime(root.Path(), audit.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	logPath, err := pol.AuditPath("terminald", audit.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	alog, err := audit.Open(audit.Options{Path: logPath, Server: "terminald", Roots: []string{root.Path()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })

	// The registry stand-in, and the proxy with the shipped hosts whose
	// resolver hook sends proxy.golang.org to it.
	reg, caPEM, served := moduleProxy(t)
	var srv *Server
	var mu sync.Mutex
	var admitted []string
	p, err := proxy.New(proxy.Options{AllowedHosts: pol.Terminal.Sandbox.ProxyHosts(),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			if host != "proxy.golang.org" {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return (&net.Dialer{}).DialContext(ctx, "tcp", reg.Listener.Addr().String())
		},
		OnAllow:  func(host string, port int) { mu.Lock(); admitted = append(admitted, host); mu.Unlock() },
		OnRefuse: func(r proxy.Refusal) { srv.NoteProxyRefusal(r) }})
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "nc") // a UNIX socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })

	// The stand-in's certificate is the one thing the real registry does
	// not need: the sandboxed go trusts it through SSL_CERT_FILE.
	ca := filepath.Join(jailDir, "registry-ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	rt.PassEnv = append(rt.PassEnv, "SSL_CERT_FILE="+ca)
	radar, err := risk.NewEngine(risk.Options{ScanBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err = New(Options{Options: runner.Options{TerminalRuntime: rt, Root: root, Audit: alog, ProxySocket: sock},
		Radar: radar, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c := mcpkittest.StartInProcess(t, srv.MCP())
	e := &env{srv: srv, c: c}

	// The project: one dependency, its go.sum as `go mod tidy` wrote it
	// on the person's machine (so no checksum database is asked).
	app := filepath.Join(jailDir, "app")
	writeTree(t, app, map[string]string{
		"go.mod":       "module example.com/app\n\ngo 1.21\n\nrequire " + registryModule + " " + registryVersion + "\n",
		"main.go":      "package main\n\nimport \"" + registryModule + "\"\n\nfunc main() { println(greet.Hello(\"you\")) }\n",
		"main_test.go": "package main\n\nimport (\n\t\"testing\"\n\n\t\"" + registryModule + "\"\n)\n\nfunc TestHello(t *testing.T) {\n\tif greet.Hello(\"a\") != \"hello, a\" {\n\t\tt.Fatal(\"greet\")\n\t}\n}\n",
	})
	tidy := exec.Command("/usr/local/go/bin/go", "mod", "download", "-json", registryModule+"@"+registryVersion)
	tidy.Dir = app
	tidy.Env = append(os.Environ(), "GOPROXY="+reg.URL, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOMODCACHE="+t.TempDir(),
		"SSL_CERT_FILE="+ca, "GOTOOLCHAIN=local", "GONOSUMCHECK=1")
	out, err := tidy.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod download on the host: %v\n%s", err, out)
	}
	var dl struct{ Sum, GoModSum string }
	if err := json.Unmarshal(out, &dl); err != nil || dl.Sum == "" || dl.GoModSum == "" {
		t.Fatalf("no checksums from go mod download (%v): %s", err, out)
	}
	sum := []string{registryModule + " " + registryVersion + " " + dl.Sum, registryModule + " " + registryVersion + "/go.mod " + dl.GoModSum}
	writeTree(t, app, map[string]string{"go.sum": strings.Join(sum, "\n") + "\n"})
	before := served()

	r := e.runIn(t, "go test ./...", "app")
	if r.Code != "OK" || r.exit() != 0 || !strings.Contains(r.str("stdout"), "ok") {
		t.Fatalf("go test through the proxy preset: %s", r.text)
	}
	if served() == before {
		t.Fatal("the dependency did not come through the registry stand-in")
	}
	mu.Lock()
	if len(admitted) == 0 || admitted[0] != "proxy.golang.org" {
		t.Fatalf("the proxy admitted %v", admitted)
	}
	mu.Unlock()
	if _, ok := r.Detail["sandbox_refused"]; ok {
		t.Fatalf("a run the sandbox refused nothing reports %v", r.Detail["sandbox_refused"])
	}

	// git in the sandbox, as the person expects. A repository's .git is a
	// protected path: one a command creates is undone (git init is the
	// person's), and the answer says the sandbox did it.
	r = e.runIn(t, "git init -q -b main", "app")
	if refused := refusalsIn(r.Detail["sandbox_refused"]); len(refused) == 0 || !strings.HasPrefix(refused[0], "protected_path=app/.git") {
		t.Fatalf("git init in the sandbox: %s", r.text)
	}
	hostGit := exec.Command("git", "init", "-q", "-b", "main")
	hostGit.Dir = app
	if out, err := hostGit.CombinedOutput(); err != nil {
		t.Fatalf("git init on the host: %v %s", err, out)
	}
	for _, line := range []string{"git add go.mod go.sum main.go main_test.go", "git commit -q -m first"} {
		if r := e.runIn(t, line, "app"); r.Code != "OK" || r.exit() != 0 {
			t.Fatalf("%s: %s", line, r.text)
		}
	}
	if r := e.runIn(t, "git log -1 --format=%an/%ae/%cn/%ce", "app"); r.str("stdout") != "New Comer/newcomer@example.invalid/New Comer/newcomer@example.invalid\n" {
		t.Fatalf("the commit's identity: %s", r.text)
	}
	if r := e.runIn(t, "git config --get user.email", "app"); r.Code != "OK" || r.str("stdout") != "newcomer@example.invalid\n" {
		t.Fatalf("git config --get user.email: %s", r.text)
	}
	if r := e.runIn(t, "git config --get credential.helper", "app"); r.str("stdout") != "\n" && r.str("stdout") != "" {
		t.Fatalf("the person's credential helper reached the sandbox: %s", r.text)
	}
	if r := e.runIn(t, "git config user.email x@example.invalid", "app"); r.Code != "POLICY_DENIED" || !strings.Contains(r.Reason, "git_identity") {
		t.Fatalf("git config user.email x: %s", r.text)
	}

	// A host no preset names: refused, and that run says so.
	r = e.runIn(t, `python3 -c "import urllib.request; urllib.request.urlopen('https://github.com/', timeout=10)"`, "app")
	if r.exit() == 0 || !strings.Contains(r.Reason, "the proxy refused github.com:443") {
		t.Fatalf("a host outside the presets: %s", r.text)
	}
}

// runnertestCanonDir is a fresh directory with its links resolved.
func runnertestCanonDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
