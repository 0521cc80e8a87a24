package session

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Backend is idp.SessionBackend (see there): sessions kept server-side.
type Backend interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	Delete(ctx context.Context, keys ...string) error
	AddToSet(ctx context.Context, key, member string, ttl time.Duration) error
	SetMembers(ctx context.Context, key string) ([]string, error)
}

// ErrNotFound is idp.ErrSessionNotFound: Backend.Get of an absent key.
var ErrNotFound = errors.New("idp: session not found")

// NewMemoryBackend returns a Backend that keeps everything in this
// process's memory: for a single replica and for tests. Sessions do not
// survive a restart; use a shared backend (pkg/idp/redisstore) for
// several replicas.
func NewMemoryBackend() Backend {
	return &memoryBackend{vals: map[string]memoryValue{}, sets: map[string]memorySet{}}
}

type memoryValue struct {
	b   []byte
	exp time.Time
}

type memorySet struct {
	members map[string]struct{}
	exp     time.Time
}

type memoryBackend struct {
	mu   sync.Mutex
	vals map[string]memoryValue
	sets map[string]memorySet
}

func (m *memoryBackend) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vals[key]
	if !ok || !time.Now().Before(v.exp) {
		delete(m.vals, key)
		return nil, ErrNotFound
	}
	return append([]byte(nil), v.b...), nil
}

func (m *memoryBackend) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	m.vals[key] = memoryValue{b: append([]byte(nil), value...), exp: time.Now().Add(ttl)}
	return nil
}

func (m *memoryBackend) SetNX(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.vals[key]; ok && time.Now().Before(v.exp) {
		return false, nil
	}
	m.vals[key] = memoryValue{b: append([]byte(nil), value...), exp: time.Now().Add(ttl)}
	return true, nil
}

func (m *memoryBackend) Delete(_ context.Context, keys ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.vals, k)
		delete(m.sets, k)
	}
	return nil
}

func (m *memoryBackend) AddToSet(_ context.Context, key, member string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sets[key]
	if !ok || !time.Now().Before(s.exp) {
		s = memorySet{members: map[string]struct{}{}}
	}
	s.members[member] = struct{}{}
	if exp := time.Now().Add(ttl); exp.After(s.exp) {
		s.exp = exp
	}
	m.sets[key] = s
	return nil
}

func (m *memoryBackend) SetMembers(_ context.Context, key string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sets[key]
	if !ok || !time.Now().Before(s.exp) {
		return nil, nil
	}
	out := make([]string, 0, len(s.members))
	for k := range s.members {
		out = append(out, k)
	}
	return out, nil
}

// sweepLocked drops expired values once the map has grown, so that a
// long-running process does not keep every session it ever had.
func (m *memoryBackend) sweepLocked() {
	if len(m.vals) < 1024 || len(m.vals)%1024 != 0 {
		return
	}
	now := time.Now()
	for k, v := range m.vals {
		if !now.Before(v.exp) {
			delete(m.vals, k)
		}
	}
	for k, s := range m.sets {
		if !now.Before(s.exp) {
			delete(m.sets, k)
		}
	}
}
