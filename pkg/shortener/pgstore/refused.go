package pgstore

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrRefused: PostgreSQL answered, and refused the store for a reason that
// trying again will not fix (a configuration error, unlike a server that
// does not answer): the database or the role does not exist, the password
// is wrong, the role may not log in or lacks a privilege, the server's
// certificate is not trusted, the schema is newer than this binary's.
// Open's error matches it, and its text is PostgreSQL's own reason.
var ErrRefused = errors.New("shortener: pgstore: PostgreSQL refused the store")

// errSchemaNewer: the database was migrated by a newer binary.
var errSchemaNewer = errors.New("the database's schema is newer than this binary's")

// permanentSQLStates are the SQLSTATEs (or their two-character classes)
// that no retry fixes: invalid authorization (28000 no such role or no
// pg_hba.conf entry, 28P01 wrong password), 3D000 no such database,
// 3F000 no such schema, 42501 insufficient privilege. Everything else
// (57P03 starting up, 53300 too many connections, network errors) may
// pass.
var permanentSQLStates = []string{"28", "3D000", "3F000", "42501"}

// refusedError is an Open failure that matches ErrRefused.
type refusedError struct {
	what   string // "connect", "migrate"
	reason string
	err    error
}

func (e *refusedError) Error() string {
	return "shortener: pgstore: PostgreSQL refused to " + e.what + ": " + e.reason
}

func (e *refusedError) Unwrap() []error { return []error{ErrRefused, e.err} }

// openError wraps an error of Open's step what ("connect", "migrate"): a
// refusedError when it is permanent, else an error that only says what
// failed.
func openError(what string, err error) error {
	if reason, ok := refusalReason(err); ok {
		return &refusedError{what: what, reason: reason, err: err}
	}
	return fmt.Errorf("shortener: pgstore: %s: %w", what, err)
}

// refusalReason returns the reason of a permanent failure, in
// PostgreSQL's words, or false when err may pass.
func refusalReason(err error) (string, bool) {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && isPermanent(pgErr.Code) {
		reason := pgErr.Message
		if pgErr.Detail != "" {
			reason += "; " + pgErr.Detail
		}
		if pgErr.Hint != "" {
			reason += " (" + pgErr.Hint + ")"
		}
		return reason + " (SQLSTATE " + pgErr.Code + ")", true
	}
	if certErr, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return "its TLS certificate is not trusted: " + certErr.Err.Error(), true
	}
	if errors.Is(err, errSchemaNewer) {
		return err.Error(), true
	}
	return "", false
}

func isPermanent(code string) bool {
	for _, p := range permanentSQLStates {
		if len(code) >= len(p) && code[:len(p)] == p {
			return true
		}
	}
	return false
}
