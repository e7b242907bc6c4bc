// Command traceview prints what the test Collector's file exporter wrote
// (OTLP JSON lines) for a person: each trace as an indented tree of spans
// with durations and their notable attributes, then the metric points,
// then the audit log records with their hash chain checked.
//
// Usage:
//
//	traceview FILE
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

type attr struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

func attrs(as []attr) map[string]string {
	m := map[string]string{}
	for _, a := range as {
		for _, v := range a.Value {
			m[a.Key] = fmt.Sprint(v)
		}
	}
	return m
}

type span struct {
	svc, name, trace, id, parent string
	start, end                   int64
	attrs                        map[string]string
}

type file struct {
	ResourceSpans []struct {
		Resource   struct{ Attributes []attr } `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				Name         string `json:"name"`
				TraceID      string `json:"traceId"`
				SpanID       string `json:"spanId"`
				ParentSpanID string `json:"parentSpanId"`
				Start        string `json:"startTimeUnixNano"`
				End          string `json:"endTimeUnixNano"`
				Attributes   []attr `json:"attributes"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
	ResourceLogs []struct {
		Resource  struct{ Attributes []attr } `json:"resource"`
		ScopeLogs []struct {
			LogRecords []struct {
				Attributes []attr `json:"attributes"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
	ResourceMetrics []struct {
		Resource     struct{ Attributes []attr } `json:"resource"`
		ScopeMetrics []struct {
			Metrics []struct {
				Name string `json:"name"`
				Sum  *struct {
					DataPoints []struct {
						Attributes []attr   `json:"attributes"`
						AsInt      string   `json:"asInt"`
						AsDouble   *float64 `json:"asDouble"`
					} `json:"dataPoints"`
				} `json:"sum"`
				Histogram *struct {
					DataPoints []struct {
						Attributes []attr   `json:"attributes"`
						Count      string   `json:"count"`
						Sum        *float64 `json:"sum"`
					} `json:"dataPoints"`
				} `json:"histogram"`
			} `json:"metrics"`
		} `json:"scopeMetrics"`
	} `json:"resourceMetrics"`
}

// shown are the span attributes worth a person's eye.
var shown = []string{"error.type", "jsonrpc.request.id", "mcp.session.id", "process.exit.code", "bastion.limit", "bastion.answer", "bastion.kind", "bastion.bytes"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: traceview FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	var spans []span
	type logRec struct {
		svc       string
		seq       int64
		prev, sum string
		action    string
		code      string
	}
	var logs []logRec
	metrics := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l file
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		for _, rs := range l.ResourceSpans {
			svc := attrs(rs.Resource.Attributes)["service.name"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					st, _ := strconv.ParseInt(s.Start, 10, 64)
					en, _ := strconv.ParseInt(s.End, 10, 64)
					spans = append(spans, span{svc, s.Name, s.TraceID, s.SpanID, s.ParentSpanID, st, en, attrs(s.Attributes)})
				}
			}
		}
		for _, rl := range l.ResourceLogs {
			svc := attrs(rl.Resource.Attributes)["service.name"]
			for _, sl := range rl.ScopeLogs {
				for _, r := range sl.LogRecords {
					a := attrs(r.Attributes)
					seq, _ := strconv.ParseInt(a["bastion.audit.seq"], 10, 64)
					logs = append(logs, logRec{svc, seq, a["bastion.audit.prev"], a["bastion.audit.hash"], a["bastion.audit.action"], a["bastion.audit.code"]})
				}
			}
		}
		for _, rm := range l.ResourceMetrics {
			svc := attrs(rm.Resource.Attributes)["service.name"]
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Sum != nil {
						for _, dp := range m.Sum.DataPoints {
							v := dp.AsInt
							if dp.AsDouble != nil {
								v = fmt.Sprint(*dp.AsDouble)
							}
							metrics[fmt.Sprintf("%-11s %-28s %s", svc, m.Name, kv(attrs(dp.Attributes)))] = v // the last (cumulative) value
						}
					}
					if m.Histogram != nil {
						for _, dp := range m.Histogram.DataPoints {
							mean := ""
							if n, _ := strconv.ParseFloat(dp.Count, 64); n > 0 && dp.Sum != nil {
								mean = fmt.Sprintf(", mean %.1f ms", *dp.Sum/n*1000)
							}
							metrics[fmt.Sprintf("%-11s %-28s %s", svc, m.Name, kv(attrs(dp.Attributes)))] = dp.Count + " calls" + mean
						}
					}
				}
			}
		}
	}
	printTraces(spans)
	fmt.Println("\n== metrics (cumulative)")
	keys := make([]string, 0, len(metrics))
	for k := range metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %s = %s\n", k, metrics[k])
	}
	fmt.Println("\n== audit log records (OpenTelemetry logs), chain checked per server")
	sort.Slice(logs, func(i, j int) bool {
		if logs[i].svc != logs[j].svc {
			return logs[i].svc < logs[j].svc
		}
		return logs[i].seq < logs[j].seq
	})
	for i, r := range logs {
		link := "chain ok"
		if i > 0 && logs[i-1].svc == r.svc && logs[i-1].seq == r.seq-1 && logs[i-1].sum != r.prev {
			link = "CHAIN BROKEN"
		} else if i > 0 && logs[i-1].svc == r.svc && logs[i-1].seq != r.seq-1 {
			link = "gap before this record"
		}
		fmt.Printf("  %-11s seq %-4d %-22s %-22s hash %s…  %s\n", r.svc, r.seq, r.action, r.code, short(r.sum), link)
	}
}

func kv(m map[string]string) string {
	var s []string
	for k, v := range m {
		s = append(s, k+"="+v)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func printTraces(spans []span) {
	byID := map[string]bool{}
	children := map[string][]span{}
	for _, s := range spans {
		byID[s.id] = true
	}
	traces := map[string][]span{}
	var order []string
	for _, s := range spans {
		if s.parent != "" && byID[s.parent] {
			children[s.parent] = append(children[s.parent], s)
			continue
		}
		if _, ok := traces[s.trace]; !ok {
			order = append(order, s.trace)
		}
		traces[s.trace] = append(traces[s.trace], s)
	}
	for _, t := range order {
		roots := traces[t]
		sort.Slice(roots, func(i, j int) bool { return roots[i].start < roots[j].start })
		fmt.Printf("== trace %s", t)
		if roots[0].parent != "" {
			fmt.Printf(" (continues the client's span %s)", roots[0].parent)
		}
		fmt.Println()
		for _, r := range roots {
			printSpan(r, children, 1)
		}
	}
}

func printSpan(s span, children map[string][]span, depth int) {
	var notes []string
	for _, k := range shown {
		if v, ok := s.attrs[k]; ok && v != "" {
			notes = append(notes, k+"="+v)
		}
	}
	label := strings.Repeat("  ", depth) + s.svc + "  " + s.name
	fmt.Printf("%-52s %8.1f ms  %s\n", label, float64(s.end-s.start)/1e6, strings.Join(notes, " "))
	kids := children[s.id]
	sort.Slice(kids, func(i, j int) bool { return kids[i].start < kids[j].start })
	for _, k := range kids {
		printSpan(k, children, depth+1)
	}
}
