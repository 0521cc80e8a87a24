package idp

import (
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// tokenTimes are the rules a kind of token follows on its NumericDates.
// Access, ID and logout tokens are all judged by checkTimes, through
// token.NumericTime, which never overflows: an nbf of 1e19 seconds is
// far in the future, never (as an int64 conversion would make it) in the
// far past.
type tokenTimes struct {
	needExp bool          // exp required (access and ID tokens)
	needIat bool          // iat required (ID and logout tokens)
	maxAge  time.Duration // iat at most this long before now; 0: any age
}

// checkTimes applies rules to c at now with Config.Leeway: exp not
// passed, nbf reached, iat not in the future and, with maxAge, not older.
func (p *Plugin) checkTimes(c *token.Claims, now time.Time, rules tokenTimes) error {
	leeway := p.cfg.Leeway
	if p.cfg.NoLeeway {
		leeway = 0
	}
	switch {
	case rules.needExp && !c.HasExp:
		return invalid("missing required claim exp", nil)
	case rules.needIat && !c.HasIat:
		return invalid("missing required claim iat", nil)
	case c.HasExp && now.After(token.NumericTime(c.Exp).Add(leeway)):
		return invalid("token expired", nil)
	case c.HasNbf && now.Before(token.NumericTime(c.Nbf).Add(-leeway)):
		return invalid("token not yet valid", nil)
	case c.HasIat && now.Before(token.NumericTime(c.Iat).Add(-leeway)):
		return invalid("token not yet valid (issued in the future)", nil)
	case rules.maxAge > 0 && c.HasIat && now.After(token.NumericTime(c.Iat).Add(rules.maxAge+leeway)):
		return invalid("token too old", nil)
	}
	return nil
}
