package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/bastion-mcp/bastion/safety/mcpkit/mcpkittest"
)

// startTask calls run_command as an MCP task and returns the new task's
// id.
func startTask(t *testing.T, c *client.Client, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := c.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatalf("tasks/list: %v", err)
	}
	seen := map[string]bool{}
	for _, tk := range before.Tasks {
		seen[tk.TaskId] = true
	}
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments, req.Params.Task = "run_command", map[string]any{"command": line}, &mcp.TaskParams{}
	// mcp-go v1.2.1's client has no call that decodes the CreateTaskResult
	// of a task-augmented tools/call (CallTool reads it as a tool result
	// and finds no content); the new task is found through tasks/list.
	if _, err := c.CallTool(ctx, req); err != nil && !strings.Contains(err.Error(), "content is missing") {
		t.Fatalf("run_command as a task: %v", err)
	}
	after, err := c.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatalf("tasks/list: %v", err)
	}
	for _, tk := range after.Tasks {
		if !seen[tk.TaskId] {
			return tk.TaskId
		}
	}
	t.Fatalf("no new task after run_command as a task: %+v", after.Tasks)
	return ""
}

// TestRunCommandAsATaskCompletesAndCancelKillsTheTree: a task-aware client
// (mcp-go's, over stdio) runs run_command as a task, polls it to
// completion and reads its result (the session's output); a second task,
// cancelled while it runs, leaves no process behind; as root and as an
// unprivileged server.
func TestRunCommandAsATaskCompletesAndCancelKillsTheTree(t *testing.T) {
	for _, unpriv := range []bool{false, true} {
		name := "root"
		if unpriv {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) { taskRound(t, unpriv) })
	}
}

func taskRound(t *testing.T, unpriv bool) {
	c := startSessionServer(t, unpriv).c
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	id := startTask(t, c, `sh -c 'sleep 0.3; echo finished-as-a-task'`)
	got, err := c.WaitForTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}}, 50*time.Millisecond)
	if err != nil || got.Status != mcp.TaskStatusCompleted {
		t.Fatalf("the task: %+v, %v", got, err)
	}
	res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		t.Fatalf("tasks/result: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r struct {
		Code   string `json:"code"`
		Detail struct {
			Output  string         `json:"output"`
			Session map[string]any `json:"session"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Code != "OK" || r.Detail.Output != "finished-as-a-task\n" ||
		r.Detail.Session["state"] != "exited" || r.Detail.Session["exit_code"] != float64(0) {
		t.Fatalf("tasks/result: %s", b)
	}

	tok := fmt.Sprintf("bastion-task-%d", time.Now().UnixNano())
	id = startTask(t, c, `sh -c "setsid sh -c 'sleep 300; : `+tok+`' & sleep 300; : `+tok+`"`)
	for deadline := time.Now().Add(20 * time.Second); len(mcpkittest.Carrying(tok)) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the task's processes never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}}); err != nil || st.Status != mcp.TaskStatusWorking {
		t.Fatalf("tasks/get while it runs: %+v, %v", st, err)
	}
	if _, err := c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}}); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	waitGone(t, tok)
	for deadline := time.Now().Add(10 * time.Second); ; {
		l := call(t, c, "list_sessions", map[string]any{})
		if l.Detail["running"] == float64(0) && strings.Contains(fmt.Sprint(l.Detail["sessions"]), "stopped") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled task's session is not listed as stopped: %v", l.Detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
