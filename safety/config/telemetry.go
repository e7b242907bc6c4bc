package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Telemetry is the [telemetry] section: whether and where the server sends
// traces, metrics and logs over OTLP to an OpenTelemetry Collector
// (docs/telemetry.md). Off unless enabled here or configured by the
// standard OTEL_* environment variables, which win over these keys:
// OTEL_EXPORTER_OTLP_ENDPOINT turns telemetry on and names the endpoint,
// OTEL_EXPORTER_OTLP_PROTOCOL the transport, OTEL_SDK_DISABLED=true turns
// it off; headers, TLS, service name and resource attributes come from
// the environment only (OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES).
type Telemetry struct {
	// Enabled turns telemetry on (default false).
	Enabled bool `toml:"enabled" json:"enabled"`
	// Endpoint is the Collector's OTLP base URL, http:// or https://
	// (default: http://localhost:4318 for http/protobuf, localhost:4317 for
	// grpc). For http/protobuf the signal paths /v1/traces, /v1/metrics and
	// /v1/logs are added to it, as to $OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string `toml:"endpoint" json:"endpoint"`
	// Protocol is "grpc" or "http/protobuf" (default).
	Protocol string `toml:"protocol" json:"protocol"`
	// Traces sends one span per MCP request, with child spans for the
	// steps that cost time. When none of traces, metrics and logs is set,
	// all three are sent; set one or more to true to send only those.
	Traces bool `toml:"traces" json:"traces"`
	// Metrics sends mcp.server.operation.duration and Bastion's counters
	// (see traces for the default).
	Metrics bool `toml:"metrics" json:"metrics"`
	// Logs sends every audit record as a log record (see traces for the
	// default).
	Logs bool `toml:"logs" json:"logs"`
}

// TelemetryProtocols are the values [telemetry] protocol takes.
var TelemetryProtocols = []string{"grpc", "http/protobuf"}

// validate refuses a protocol or endpoint that cannot work.
func (t Telemetry) validate() error {
	switch t.Protocol {
	case "", "grpc", "http/protobuf":
	default:
		return Fatalf("[telemetry] protocol must be \"grpc\" or \"http/protobuf\", not %q", t.Protocol)
	}
	if t.Endpoint != "" && !strings.HasPrefix(t.Endpoint, "http://") && !strings.HasPrefix(t.Endpoint, "https://") {
		return Fatalf("[telemetry] endpoint must be an http:// or https:// URL, not %q", t.Endpoint)
	}
	return nil
}

// TelemetryPlan is where telemetry goes, as Setup would send it; `check` prints it.
type TelemetryPlan struct {
	On       bool
	Why      string // why it is off, or where the settings came from
	Endpoint string // "" = the exporter's default for Protocol
	Protocol string
	Traces   bool
	Metrics  bool
	Logs     bool
}

// String is the plan in one line.
func (p TelemetryPlan) String() string {
	if !p.On {
		return "off (" + p.Why + ")"
	}
	var sig []string
	for _, s := range []struct {
		on   bool
		name string
	}{{p.Traces, "traces"}, {p.Metrics, "metrics"}, {p.Logs, "logs"}} {
		if s.on {
			sig = append(sig, s.name)
		}
	}
	ep := p.Endpoint
	if u, err := url.Parse(ep); err == nil && u.User != nil {
		u.User = url.User("REDACTED") // never print a password
		ep = u.String()
	}
	if ep == "" {
		ep = "the OTLP default (" + defaultEndpoint(p.Protocol) + ")"
	}
	return fmt.Sprintf("%s to %s over OTLP %s (%s)", strings.Join(sig, ", "), ep, p.Protocol, p.Why)
}

func defaultEndpoint(protocol string) string {
	if protocol == "grpc" {
		return "localhost:4317"
	}
	return "http://localhost:4318"
}

// Resolve decides from the policy and the environment whether telemetry
// is on and where it goes. The environment wins over the policy, as for
// every other key: OTEL_SDK_DISABLED=true turns it off, an
// OTEL_EXPORTER_OTLP_ENDPOINT (or a per-signal one) turns it on and names
// the endpoint, OTEL_EXPORTER_OTLP_PROTOCOL names the transport.
func (p Telemetry) Resolve(getenv func(string) string) (TelemetryPlan, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	plan := TelemetryPlan{Protocol: "http/protobuf", Traces: true, Metrics: true, Logs: true}
	if p.Traces || p.Metrics || p.Logs {
		plan.Traces, plan.Metrics, plan.Logs = p.Traces, p.Metrics, p.Logs
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		plan.Why = "OTEL_SDK_DISABLED=true"
		return plan, nil
	}
	envEndpoint := ""
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			envEndpoint = k
			break
		}
	}
	switch {
	case envEndpoint != "":
		plan.On, plan.Why = true, "from $"+envEndpoint
		plan.Endpoint = strings.TrimSpace(getenv(envEndpoint))
	case p.Enabled:
		plan.On, plan.Why = true, "[telemetry] enabled"
		plan.Endpoint = p.Endpoint
	default:
		plan.Why = "set [telemetry] enabled = true or $OTEL_EXPORTER_OTLP_ENDPOINT to send"
		return plan, nil
	}
	// The standard per-signal switches: OTEL_TRACES_EXPORTER=none and so on.
	for _, sig := range []struct {
		env string
		on  *bool
	}{{"OTEL_TRACES_EXPORTER", &plan.Traces}, {"OTEL_METRICS_EXPORTER", &plan.Metrics}, {"OTEL_LOGS_EXPORTER", &plan.Logs}} {
		if strings.TrimSpace(getenv(sig.env)) == "none" {
			*sig.on = false
		}
	}
	if !plan.Traces && !plan.Metrics && !plan.Logs {
		plan.On, plan.Why = false, "every signal's exporter is none"
		return plan, nil
	}
	if p.Protocol != "" {
		plan.Protocol = p.Protocol
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); v != "" {
		plan.Protocol = v
	}
	if plan.Protocol != "grpc" && plan.Protocol != "http/protobuf" {
		return plan, Fatalf("OTLP protocol %q is not supported: want grpc or http/protobuf", plan.Protocol)
	}
	if plan.Endpoint != "" {
		if u, err := url.Parse(plan.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return plan, Fatalf("OTLP endpoint %q is not an http:// or https:// URL", plan.Endpoint)
		}
	}
	return plan, nil
}
