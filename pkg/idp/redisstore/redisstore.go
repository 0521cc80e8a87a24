// Package redisstore keeps pkg/idp's browser sessions in Redis, so that
// several replicas share them: a session started on one replica is known
// to all, a token is refreshed once across replicas, a login started on
// one replica completes on another, and a back-channel logout ends a
// session everywhere at once.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	cfg.Session = &idp.SessionConfig{Backend: redisstore.New(rdb, "")}
//
// Values are stored under Prefix + the key pkg/idp gives (which starts
// with "idp:"); they hold tokens: use a Redis that only the replicas can
// reach, with TLS and a password where the network is shared.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Store is an idp.SessionBackend over a Redis client.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

var (
	_ idp.SessionBackend       = (*Store)(nil)
	_ idp.SessionBackendPinger = (*Store)(nil)
)

// New returns a Store over rdb; prefix is put before every key ("" for
// none), to share one Redis database between deployments.
func New(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{rdb: rdb, prefix: prefix}
}

// Open connects to the Redis at url ("redis://[:password@]host:port/db" or
// "rediss://..." for TLS) and checks that it answers.
func Open(ctx context.Context, url, prefix string) (*Store, error) {
	s, err := Connect(url, prefix)
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Connect returns a Store for the Redis at url (as Open) without waiting
// for it: connections are made on use, so the Store works as soon as Redis
// answers, and its calls fail (Ping says why) while it does not. Only a
// malformed url is an error.
func Connect(url, prefix string) (*Store, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	return New(redis.NewClient(opts), prefix), nil
}

// Close closes the Redis client.
func (s *Store) Close() error { return s.rdb.Close() }

// Ping reports whether Redis answers (for readiness checks); it
// implements idp.SessionBackendPinger.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", s.addr(), err)
	}
	return nil
}

// addr is the Redis address, for errors.
func (s *Store) addr() string {
	if c, ok := s.rdb.(*redis.Client); ok {
		return c.Options().Addr
	}
	return "redis"
}

// Get implements idp.SessionBackend.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, idp.ErrSessionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: get: %w", err)
	}
	return b, nil
}

// Set implements idp.SessionBackend.
func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := s.rdb.Set(ctx, s.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redisstore: set: %w", err)
	}
	return nil
}

// SetNX implements idp.SessionBackend (SET key value NX PX ttl).
func (s *Store) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	err := s.rdb.SetArgs(ctx, s.prefix+key, value, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("redisstore: set nx: %w", err)
	}
	return true, nil
}

// Delete implements idp.SessionBackend.
func (s *Store) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = s.prefix + k
	}
	if err := s.rdb.Del(ctx, full...).Err(); err != nil {
		return fmt.Errorf("redisstore: delete: %w", err)
	}
	return nil
}

// AddToSet implements idp.SessionBackend: SADD, then the set's expiry
// raised to ttl (never lowered, so a set outlives its longest member).
func (s *Store) AddToSet(ctx context.Context, key, member string, ttl time.Duration) error {
	k := s.prefix + key
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, k, member)
		p.ExpireGT(ctx, k, ttl)
		p.ExpireNX(ctx, k, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: add to set: %w", err)
	}
	return nil
}

// SetMembers implements idp.SessionBackend.
func (s *Store) SetMembers(ctx context.Context, key string) ([]string, error) {
	m, err := s.rdb.SMembers(ctx, s.prefix+key).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: set members: %w", err)
	}
	return m, nil
}
