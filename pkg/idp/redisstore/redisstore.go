// Package redisstore keeps pkg/idp's browser sessions in Redis, so that
// several replicas share them: a session started on one replica is known
// to all, a token is refreshed once across replicas, a login started on
// one replica completes on another, and a back-channel logout ends a
// session everywhere at once.
//
//	st, err := redisstore.Connect("redis://127.0.0.1:6379/0", "")
//	cfg.Session = &idp.SessionConfig{Backend: st}
//
// Every call is bounded (DefaultTimeout, 1 s): a Redis that hangs fails
// the call, and the request that needed it answers 503 "the session store
// is unavailable", well within a readiness probe's timeout, instead of
// holding it for go-redis's 5 s read timeout and its pool wait.
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

// DefaultTimeout bounds every call of a Store to Redis: waiting for a
// pooled connection, connecting, sending the command and reading the
// answer, retries included. It is half the readiness probe's timeout of
// the shipped manifests (2 s), so that a frozen Redis is reported, not
// waited for.
const DefaultTimeout = time.Second

// Store is an idp.SessionBackend over a Redis client.
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	timeout time.Duration // 0: the caller's context only
}

var (
	_ idp.SessionBackend       = (*Store)(nil)
	_ idp.SessionBackendPinger = (*Store)(nil)
)

// New returns a Store over rdb; prefix is put before every key ("" for
// none), to share one Redis database between deployments. Each call is
// given a context deadline of DefaultTimeout, which go-redis honours only
// when rdb's options set ContextTimeoutEnabled (Connect's client does);
// otherwise rdb's own DialTimeout, ReadTimeout and PoolTimeout bound it.
func New(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{rdb: rdb, prefix: prefix, timeout: DefaultTimeout}
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
//
// Every call is bounded by DefaultTimeout, or by the url's read_timeout
// when it sets one (read_timeout=-1: no bound but the caller's context);
// dial_timeout, write_timeout and pool_timeout default to the same bound.
func Connect(url, prefix string) (*Store, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	timeout := DefaultTimeout
	switch {
	case opts.ReadTimeout > 0:
		timeout = opts.ReadTimeout
	case opts.ReadTimeout < 0:
		timeout = 0
	}
	if timeout > 0 {
		for _, d := range []*time.Duration{&opts.ReadTimeout, &opts.WriteTimeout, &opts.DialTimeout, &opts.PoolTimeout} {
			if *d == 0 {
				*d = timeout
			}
		}
	}
	// go-redis ignores context deadlines unless told otherwise: without
	// this, a frozen Redis holds each call for ReadTimeout after the
	// caller (a request, a readiness probe) has given up.
	opts.ContextTimeoutEnabled = true
	s := New(redis.NewClient(opts), prefix)
	s.timeout = timeout
	return s, nil
}

// Timeout is the bound of every call (0: the caller's context only).
func (s *Store) Timeout() time.Duration { return s.timeout }

// bound returns ctx limited to the Store's timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// Close closes the Redis client.
func (s *Store) Close() error { return s.rdb.Close() }

// Ping reports whether Redis answers (for readiness checks); it
// implements idp.SessionBackendPinger.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
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
	ctx, cancel := s.bound(ctx)
	defer cancel()
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
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.rdb.Set(ctx, s.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redisstore: set: %w", err)
	}
	return nil
}

// SetNX implements idp.SessionBackend (SET key value NX PX ttl).
func (s *Store) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
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
	ctx, cancel := s.bound(ctx)
	defer cancel()
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
	ctx, cancel := s.bound(ctx)
	defer cancel()
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
	ctx, cancel := s.bound(ctx)
	defer cancel()
	m, err := s.rdb.SMembers(ctx, s.prefix+key).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: set members: %w", err)
	}
	return m, nil
}
