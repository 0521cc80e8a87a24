package acmecert

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/acme/autocert"
)

// RedisCache is an autocert.Cache in Redis, so that replicas share one
// ACME account and one certificate per domain: the first replica to need
// a certificate orders it, the others (and every restart) read it.
//
// Values are what autocert stores: the account key, and per domain the
// PEM private key followed by the certificate chain. The private keys are
// in Redis in the clear: use a Redis only the replicas can reach, with a
// password and TLS (rediss://) where the network is shared, as for the
// sessions.
//
// Two replicas that both miss the cache at the same moment may each order
// a certificate (autocert holds no lock across processes); the last one
// stored wins and both are valid.
type RedisCache struct {
	rdb     redis.UniversalClient
	prefix  string
	timeout time.Duration
}

var _ autocert.Cache = (*RedisCache)(nil)

// DefaultRedisTimeout bounds each call of a RedisCache to Redis. A TLS
// handshake waits for it on a certificate not yet in memory.
const DefaultRedisTimeout = 2 * time.Second

// NewRedisCache returns a cache over rdb whose keys are prefix + autocert's
// key (a domain name, or "acme_account+key").
func NewRedisCache(rdb redis.UniversalClient, prefix string) *RedisCache {
	return &RedisCache{rdb: rdb, prefix: prefix, timeout: DefaultRedisTimeout}
}

// ConnectRedisCache returns a RedisCache over a new client for the Redis
// at url ("redis://[:password@]host:port/db", "rediss://" for TLS),
// connecting on use. Only a malformed url is an error. Close it.
func ConnectRedisCache(url, prefix string) (*RedisCache, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("acmecert: %w", err)
	}
	// Without it go-redis ignores the calls' deadlines (see redisstore).
	opts.ContextTimeoutEnabled = true
	return NewRedisCache(redis.NewClient(opts), prefix), nil
}

// Close closes the Redis client.
func (c *RedisCache) Close() error { return c.rdb.Close() }

func (c *RedisCache) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// Get returns the value of key, or autocert.ErrCacheMiss.
func (c *RedisCache) Get(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	b, err := c.rdb.Get(ctx, c.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, autocert.ErrCacheMiss
	}
	if err != nil {
		return nil, fmt.Errorf("acmecert: redis get %s: %w", key, err)
	}
	return b, nil
}

// Put stores data under key, without expiry: autocert renews certificates
// and overwrites them.
func (c *RedisCache) Put(ctx context.Context, key string, data []byte) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := c.rdb.Set(ctx, c.prefix+key, data, 0).Err(); err != nil {
		return fmt.Errorf("acmecert: redis set %s: %w", key, err)
	}
	return nil
}

// Delete removes key.
func (c *RedisCache) Delete(ctx context.Context, key string) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := c.rdb.Del(ctx, c.prefix+key).Err(); err != nil {
		return fmt.Errorf("acmecert: redis del %s: %w", key, err)
	}
	return nil
}
