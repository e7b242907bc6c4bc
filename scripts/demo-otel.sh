#!/usr/bin/env bash
# make demo-otel: the test Collector on loopback, the three servers driven by
# the demo client with a traceparent in every call, then what the Collector
# received, printed as trace trees, metrics and audit log records.
# usage: scripts/demo-otel.sh BIN_DIR OTELCOL
set -euo pipefail
bin=$1 otelcol=$2
here=$(cd "$(dirname "$0")/.." && pwd)
d=$(bash "$here/scripts/make_demo_sandbox.sh")
rm -f "$d/dev-policy.toml" # the sandbox profile's go test step is slow and shows nothing more
t=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$d" "$t"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
grpc=$(port) http=$(port)
cat > "$t/otelcol.yaml" <<YAML
receivers:
  otlp:
    protocols:
      grpc: {endpoint: 127.0.0.1:$grpc}
      http: {endpoint: 127.0.0.1:$http}
exporters:
  file: {path: $t/otlp.json, flush_interval: 100ms}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [otlp], exporters: [file]}
    metrics: {receivers: [otlp], exporters: [file]}
    logs: {receivers: [otlp], exporters: [file]}
YAML
"$otelcol" --config "$t/otelcol.yaml" > "$t/otelcol.log" 2>&1 &
pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$http") 2>/dev/null && break; sleep 0.1; done
echo "Collector: OTLP gRPC 127.0.0.1:$grpc, HTTP 127.0.0.1:$http, file exporter $t/otlp.json"
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$http" OTEL_RESOURCE_ATTRIBUTES="deployment.environment=demo" \
  go run ./scripts/democlient -bin "$bin" -sandbox "$d" \
  -traceparent 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 > "$t/demo.log" || { cat "$t/demo.log"; exit 1; }
echo "demo client: $(tail -1 "$t/demo.log")"
sleep 1 # the file exporter flushes every 100 ms
go run ./scripts/democlient/cmd/traceview "$t/otlp.json"
