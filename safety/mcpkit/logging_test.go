package mcpkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestLogNotificationsOnlyWhenTheClientAsks: a client that never sent
// logging/setLevel hears nothing about ordinary calls; after setLevel "info"
// each call produces one notifications/message with its code and reason,
// refusals at level "warning", and never the result's detail.
func TestLogNotificationsOnlyWhenTheClientAsks(t *testing.T) {
	c := startClient(t, testServer(io.Discard))
	var mu sync.Mutex
	var got []mcp.JSONRPCNotification
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	call(t, c, "echo", map[string]any{"path": "a"})
	time.Sleep(50 * time.Millisecond)
	if n := count(); n != 0 {
		t.Fatalf("%d log notifications before the client asked for any", n)
	}
	var lv mcp.SetLevelRequest
	lv.Params.Level = mcp.LoggingLevelInfo
	if err := c.SetLevel(context.Background(), lv); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	call(t, c, "echo", map[string]any{"path": "a"})
	call(t, c, "echo", map[string]any{"bogus": 1})
	deadline := time.Now().Add(2 * time.Second)
	for count() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d log notifications after setLevel info, want 2", len(got))
	}
	levels := []string{fmt.Sprint(got[0].Params.AdditionalFields["level"]), fmt.Sprint(got[1].Params.AdditionalFields["level"])}
	if levels[0] != "info" || levels[1] != "warning" {
		t.Fatalf("levels %v, want [info warning]", levels)
	}
	data, _ := json.Marshal(got[1].Params.AdditionalFields["data"])
	if !strings.Contains(string(data), `"code":"INVALID_REQUEST"`) || strings.Contains(string(data), `"detail"`) {
		t.Fatalf("refusal notification data %v", data)
	}
}
