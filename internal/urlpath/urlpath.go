// Package urlpath holds the URL path relations that pkg/idp and pkg/proxy
// both decide on, so that the library and the proxy agree on them.
package urlpath

import "strings"

// Under reports whether path is prefix itself or a path below it
// ("/auth" and "/auth/login" are under "/auth"; "/authx" is not).
func Under(path, prefix string) bool {
	return path == prefix || (len(path) > len(prefix) && strings.HasPrefix(path, prefix) && path[len(prefix)] == '/')
}
