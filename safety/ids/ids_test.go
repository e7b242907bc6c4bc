package ids

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

func TestIdsAreUnguessableShape(t *testing.T) {
	seen := make(map[string]bool, 10000)
	for i := 0; i < 10000; i++ {
		id := New("f")
		rest, ok := strings.CutPrefix(id, "f-")
		if !ok || len(rest) != 24 {
			t.Fatalf("id %q: want f- and 24 hex digits", id)
		}
		if strings.Trim(rest, "0123456789abcdef") != "" {
			t.Fatalf("id %q is not lowercase hex", id)
		}
		if !Valid("f", id) {
			t.Fatalf("Valid refuses New's own id %q", id)
		}
		if seen[id] {
			t.Fatalf("id %q issued twice in %d", id, i)
		}
		seen[id] = true
	}
}

func TestValidRefusesMalformed(t *testing.T) {
	good := New("f")
	hex := good[2:]
	for _, s := range []string{
		"",
		"f-",
		"p-" + hex,                       // wrong prefix
		"ff-" + hex,                      // prefix is not a prefix match
		hex,                              // no prefix
		"f" + hex,                        // no dash
		"F-" + hex,                       // uppercase prefix
		"f-" + strings.ToUpper(hex),      // uppercase hex
		"f-" + hex[:23],                  // short
		"f-" + hex + "0",                 // long
		"f-" + hex[:23] + "g",            // non-hex
		"f-" + hex[:23] + "\x00",         // NUL
		good + "\x00",                    // trailing NUL
		"f-" + hex[:22] + "é",            // multibyte that keeps the byte length
		"f-" + hex[:12] + " " + hex[13:], // space
		"f-../../" + hex[8:],             // path-looking
		" f-" + hex[1:],
	} {
		if Valid("f", s) {
			t.Errorf("Valid accepts %q", s)
		}
	}
}

// clock is a settable time source for a Store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newTestStore(ttl time.Duration, max int) (*Store[string], *clock) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := NewStore[string]("f", ttl, max)
	s.now = c.now
	return s, c
}

func TestStoreRefusesUnknownUsedExpired(t *testing.T) {
	s, c := newTestStore(time.Hour, 100)
	id := s.Issue("node_modules")
	if _, err := s.Take(New("f")); !errors.Is(err, ErrUnknown) || result.CodeOf(err) != result.NotFound {
		t.Fatalf("a well-formed id never issued: %v", err)
	}
	if _, err := s.Take("f-../../etc"); !errors.Is(err, ErrMalformed) || result.CodeOf(err) != result.InvalidRequest {
		t.Fatalf("a malformed id: %v", err)
	}
	if _, err := s.Take(strings.ToUpper(id)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("an upper-cased id: %v", err)
	}
	if v, err := s.Take(id); err != nil || v != "node_modules" {
		t.Fatalf("first Take = %q, %v", v, err)
	}
	if _, err := s.Take(id); !errors.Is(err, ErrUsed) || result.CodeOf(err) != result.Stale {
		t.Fatalf("second Take (replay): %v", err)
	}
	if _, err := s.Peek(id); !errors.Is(err, ErrUsed) {
		t.Fatalf("Peek after Take: %v", err)
	}

	late := s.Issue("target")
	c.add(time.Hour)
	if _, err := s.Peek(late); err != nil {
		t.Fatalf("an id exactly ttl old is still valid: %v", err)
	}
	c.add(time.Second)
	if _, err := s.Take(late); !errors.Is(err, ErrExpired) || result.CodeOf(err) != result.Stale {
		t.Fatalf("an expired id: %v", err)
	}
	if _, err := s.Peek(late); !errors.Is(err, ErrExpired) {
		t.Fatalf("Peek of an expired id: %v", err)
	}
	// Long after, the expired entry is forgotten: unknown, not valid again.
	c.add(48 * time.Hour)
	s.Issue("later")
	if _, err := s.Take(late); !errors.Is(err, ErrUnknown) {
		t.Fatalf("a long-expired id: %v", err)
	}
}

func TestStoreIdsFromOtherPrefixAreMalformed(t *testing.T) {
	plans, _ := newTestStore(time.Hour, 10)
	other := NewStore[string]("p", time.Hour, 10)
	id := other.Issue("x")
	if _, err := plans.Take(id); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a p- id in an f- store: %v", err)
	}
}

func TestStorePeekDoesNotUseUp(t *testing.T) {
	s, _ := newTestStore(time.Hour, 10)
	id := s.Issue("v")
	for i := 0; i < 3; i++ {
		if v, err := s.Peek(id); err != nil || v != "v" {
			t.Fatalf("Peek %d = %q, %v", i, v, err)
		}
	}
	if v, err := s.Take(id); err != nil || v != "v" {
		t.Fatalf("Take after Peeks = %q, %v", v, err)
	}
}

func TestStoreEvictsBeyondMax(t *testing.T) {
	s, _ := newTestStore(time.Hour, 3)
	var issued []string
	for i := 0; i < 5; i++ {
		issued = append(issued, s.Issue(fmt.Sprint(i)))
	}
	for i, id := range issued {
		v, err := s.Peek(id)
		if i < 2 {
			if !errors.Is(err, ErrUnknown) {
				t.Errorf("id %d beyond max: %q, %v; want ErrUnknown", i, v, err)
			}
			continue
		}
		if err != nil || v != fmt.Sprint(i) {
			t.Errorf("id %d within max: %q, %v", i, v, err)
		}
	}
	s.mu.Lock()
	n, o := len(s.items), len(s.order)
	s.mu.Unlock()
	if n != 3 || o != 3 {
		t.Fatalf("store holds %d items, %d ordered; want 3", n, o)
	}
}

func TestStoreIsSafeForConcurrentUse(t *testing.T) {
	s := NewStore[int]("f", time.Hour, 100000)
	const workers, per = 8, 200
	ids := make(chan string, workers*per)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ids <- s.Issue(w*per + i)
			}
		}(w)
	}
	wg.Wait()
	close(ids)
	all := make([]string, 0, workers*per)
	for id := range ids {
		all = append(all, id)
	}
	// Every id is taken by many goroutines at once: exactly one wins.
	wins := make([]int, len(all))
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, id := range all {
				_, _ = s.Peek(id)
				if _, err := s.Take(id); err == nil {
					mu.Lock()
					wins[i]++
					mu.Unlock()
				} else if !errors.Is(err, ErrUsed) {
					t.Errorf("Take: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	for i, n := range wins {
		if n != 1 {
			t.Fatalf("id %d was taken %d times", i, n)
		}
	}
}
