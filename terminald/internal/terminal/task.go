package terminal

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// run_command as an MCP task (runAsTask) follows its session to the end
// and stops it when the task is cancelled. mcp-go v1.2.1 runs a task's
// handler under a context derived from the tools/call request's, which
// ends as soon as the call has answered with the task: that context
// cannot say "cancelled". taskRouter therefore gives the handler a context
// of its own that only tasks/cancel (the OnTaskCancelled hook) or the
// server's close ends, and finds the handler's task id the one way mcp-go
// leaves: the OnTaskCreated hook hands it over, per MCP session, to the
// handler's middleware, one at a time, so that two tasks started at once
// cannot swap ids.
type taskRouter struct {
	mu        sync.Mutex
	handover  map[string]chan string        // by MCP session id: the created task's id
	cancels   map[string]context.CancelFunc // by task id
	cancelled map[string]bool               // tasks cancelled before their handler registered
}

// taskIDKey carries the task id from the middleware to runAsTask.
type taskIDKey struct{}

// handoverWait bounds how long a created task's id waits for its handler
// (which mcp-go starts right after creating it).
const handoverWait = 5 * time.Second

func newTaskRouter() *taskRouter {
	return &taskRouter{handover: map[string]chan string{}, cancels: map[string]context.CancelFunc{}, cancelled: map[string]bool{}}
}

func (tr *taskRouter) slot(session string) chan string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ch, ok := tr.handover[session]
	if !ok {
		ch = make(chan string, 1)
		tr.handover[session] = ch
	}
	return ch
}

// hooks are the task hooks of the server.
func (tr *taskRouter) hooks() *server.TaskHooks {
	h := &server.TaskHooks{}
	h.AddOnTaskCreated(func(_ context.Context, m server.TaskMetrics) {
		if m.ToolName != runAction {
			return
		}
		select {
		case tr.slot(m.SessionID) <- m.TaskID:
		case <-time.After(handoverWait):
		}
	})
	h.AddOnTaskCancelled(func(_ context.Context, m server.TaskMetrics) {
		tr.mu.Lock()
		cancel := tr.cancels[m.TaskID]
		if cancel == nil {
			tr.cancelled[m.TaskID] = true
		}
		tr.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	})
	return h
}

// middleware hands a task-augmented run_command its task id.
func (tr *taskRouter) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Task != nil && req.Params.Name == runAction {
			session := ""
			if cs := server.ClientSessionFromContext(ctx); cs != nil {
				session = cs.SessionID()
			}
			select {
			case id := <-tr.slot(session):
				ctx = context.WithValue(ctx, taskIDKey{}, id)
			case <-time.After(handoverWait):
			}
		}
		return next(ctx, req)
	}
}

// taskContext returns the context a task's run follows: ended by the
// task's cancellation only (or at once if it was cancelled already), and
// the function that forgets the task.
func (tr *taskRouter) taskContext(ctx context.Context) (context.Context, func()) {
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	id, _ := ctx.Value(taskIDKey{}).(string)
	if id == "" {
		return tctx, cancel
	}
	tr.mu.Lock()
	tr.cancels[id] = cancel
	if tr.cancelled[id] {
		delete(tr.cancelled, id)
		cancel()
	}
	tr.mu.Unlock()
	return tctx, func() {
		tr.mu.Lock()
		delete(tr.cancels, id)
		tr.mu.Unlock()
		cancel()
	}
}
