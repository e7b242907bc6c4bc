// Package proxy is the filtering HTTP/HTTPS forward proxy of terminald's
// network mode "proxy" (DESIGN §4b, issue 9 §3): a sandboxed command's only
// way out of its network namespace. It listens wherever it is given a
// listener (terminald uses a UNIX socket in its state directory) and speaks
// two things: CONNECT host:port, answered with a byte tunnel, and plain HTTP
// requests in absolute form (GET http://host/path), forwarded and streamed
// back.
//
// A target is admitted only when all of these hold, checked in this order:
//
//   - its host is a valid DNS name or IP literal (otherwise 400);
//   - the host matches Options.AllowedHosts: an exact name, or "*.domain"
//     for any subdomain of domain at any depth (never domain itself),
//     compared in lower case and without one trailing dot;
//   - an IP literal target (203.0.113.7, [2001:db8::1], and numeric
//     spellings such as 127.1 or 2130706433) is refused unless that
//     address itself is listed; no wildcard ever matches an address;
//   - its port is 80 or 443, or one of Options.Ports when they are given:
//     80 and 443 are where HTTP and HTTPS live, and a port such as 22,
//     25 or 6379 would turn an allowed name into a way to reach a mail,
//     SSH or database service on the same machine;
//   - the address connected to is public: the default dialer checks each
//     address it is about to connect to (in the dialer's Control hook, after
//     resolution; of several, only public ones are used), so a name that
//     resolves, or is
//     rebound, to loopback, RFC 1918, ULA, link-local (including the cloud
//     metadata address 169.254.169.254), multicast, unspecified, CGNAT,
//     reserved or NAT64/6to4 forms of those cannot reach host or LAN
//     services.
//
// Each refusal of policy is answered 403 with a text body that names the
// host and what would allow it (for a host, the allowed_hosts key), and is
// reported once to Options.OnRefuse for the audit log.
//
// The proxy refuses to:
//
//   - resolve a name it has refused: the allowlist is checked before any
//     DNS lookup, so a refused name never leaves the machine as a query;
//   - forward origin-form requests (GET /path, OPTIONS *), absolute URLs of
//     any scheme but http (https goes through CONNECT), or a request whose
//     host or port it cannot parse: each gets 400;
//   - read more than Options.MaxHeaderBytes of request header (431), wait
//     longer than Options.HeaderTimeout for it (the connection is closed),
//     or hold more than Options.MaxConns client connections at once (the
//     next one is answered 503 and closed);
//   - let the Host header pick the upstream: a forwarded request's Host is
//     rewritten to the host of its URL, the one that was checked;
//   - forward hop-by-hop headers (Connection and the headers it names,
//     Proxy-Connection, Keep-Alive, Proxy-Authorization, Proxy-Authenticate,
//     TE, Trailer, Transfer-Encoding, Upgrade) in either direction, so a
//     plain-HTTP request cannot be upgraded into a WebSocket or other
//     protocol (clients tunnel those through CONNECT, which is checked);
//   - follow redirects (a redirect goes back to the client, whose next
//     request is checked like any other) or use the proxy settings of its
//     own environment;
//   - keep a tunnel that has carried no byte in either direction for
//     Options.IdleTimeout, or any tunnel at all once Close is called.
//
// Known limits: the proxy checks the name the client asks for, not what is
// said inside a CONNECT tunnel. It does not terminate TLS, so the SNI and
// Host a client sends inside the tunnel are not inspected; a shared front
// end (a CDN) behind an allowed name may route such a request to another
// site ("domain fronting"). Allow the names of services you trust, not of
// shared front ends. The proxy does not authenticate its clients: whoever
// can reach the listener may use it, so give the socket to the sandbox
// only. Policy refusals go to OnRefuse; malformed requests, connections over
// the cap and upstream failures (502) are only logged.
package proxy
