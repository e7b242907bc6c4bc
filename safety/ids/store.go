package ids

import (
	"sync"
	"time"

	"github.com/bastion-mcp/bastion/safety/result"
)

// Refusals of Store.Take and Store.Peek.
var (
	ErrMalformed = result.New(result.InvalidRequest, "malformed id: ids look like f-<24 hex digits> and come only from a scan")
	ErrUnknown   = result.New(result.NotFound, "unknown id: it was never issued by this server (ids do not survive a restart); scan again")
	ErrUsed      = result.New(result.Stale, "this id was already used; scan again for a fresh one")
	ErrExpired   = result.New(result.Stale, "this id has expired; scan again for a fresh one")
)

// Store issues single-use, expiring ids that stand for values of type T.
// It refuses unknown, malformed, used and expired ids, and never lets a
// caller choose an id.
type Store[T any] struct {
	mu     sync.Mutex
	prefix string
	ttl    time.Duration
	max    int
	items  map[string]*entry[T]
	order  []string
	now    func() time.Time
}

type entry[T any] struct {
	v      T
	issued time.Time
	used   bool
}

// NewStore returns a store for ids with prefix, valid for ttl, holding at
// most max live entries (the oldest are forgotten first).
func NewStore[T any](prefix string, ttl time.Duration, max int) *Store[T] {
	return &Store[T]{prefix: prefix, ttl: ttl, max: max, items: map[string]*entry[T]{}, now: time.Now}
}

// Issue stores v and returns its new id.
func (s *Store[T]) Issue(v T) string {
	id := New(s.prefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[id] = &entry[T]{v: v, issued: s.now()}
	s.order = append(s.order, id)
	s.evictLocked()
	return id
}

func (s *Store[T]) evictLocked() {
	now := s.now()
	for len(s.order) > 0 {
		id := s.order[0]
		e, ok := s.items[id]
		if ok && len(s.items) <= s.max && now.Sub(e.issued) <= 2*s.ttl {
			break
		}
		delete(s.items, id)
		s.order = s.order[1:]
	}
}

func (s *Store[T]) lookupLocked(id string) (*entry[T], error) {
	if !Valid(s.prefix, id) {
		return nil, ErrMalformed
	}
	e, ok := s.items[id]
	if !ok {
		return nil, ErrUnknown
	}
	if e.used {
		return nil, ErrUsed
	}
	if s.now().Sub(e.issued) > s.ttl {
		return nil, ErrExpired
	}
	return e, nil
}

// Peek returns the value for id without using it up.
func (s *Store[T]) Peek(id string) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		var zero T
		return zero, err
	}
	return e.v, nil
}

// Take returns the value for id and marks it used: a second Take of the
// same id is refused with ErrUsed.
func (s *Store[T]) Take(id string) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		var zero T
		return zero, err
	}
	e.used = true
	return e.v, nil
}
