package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// maxResponseBytes bounds a token endpoint's answer.
const maxResponseBytes = 1 << 20

// errBadResponse: the provider answered 2xx with a document the client
// cannot use (an outage, for the caller).
var errBadResponse = errors.New("unusable token response")

// post sends the RFC 8693 §2.1 request and checks the §2.2.1 response.
func (e *Exchanger) post(ctx context.Context, subject string, t Target) (*oauth2.Token, error) {
	form := url.Values{
		"grant_type":           {GrantType},
		"subject_token":        {subject},
		"subject_token_type":   {TokenTypeAccessToken},
		"requested_token_type": {TokenTypeAccessToken},
	}
	if t.Audience != "" {
		form.Set("audience", t.Audience)
	}
	if len(t.Scopes) > 0 {
		form.Set("scope", strings.Join(t.Scopes, " "))
	}
	tokenURL, err := e.ep.get(ctx)
	if err != nil {
		return nil, err
	}
	doc, err := postForm(ctx, e.o.HTTPClient, tokenURL, e.o.ClientID, e.o.ClientSecret, e.o.AuthStyle, form)
	if err != nil {
		return nil, err
	}
	// RFC 8693 §2.2.1: issued_token_type is REQUIRED; the client asked
	// for an access token and sends it as one.
	if doc.IssuedTokenType != TokenTypeAccessToken {
		return nil, unavailable(nil, fmt.Errorf("%w: issued_token_type %q, want %s", errBadResponse, doc.IssuedTokenType, TokenTypeAccessToken))
	}
	return doc.token(e.o.Now()), nil
}

// tokenDoc is a token response (RFC 6749 §5.1, RFC 8693 §2.2.1).
type tokenDoc struct {
	AccessToken     string          `json:"access_token"`
	IssuedTokenType string          `json:"issued_token_type"`
	TokenType       string          `json:"token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	Scope           string          `json:"scope"`
	raw             map[string]any
	expiresIn       int64
}

// token is doc as an oauth2.Token issued at now; the response's other
// members are its Extra.
func (d *tokenDoc) token(now time.Time) *oauth2.Token {
	tok := &oauth2.Token{AccessToken: d.AccessToken, TokenType: "Bearer"}
	if d.expiresIn > 0 {
		tok.Expiry = now.Add(time.Duration(d.expiresIn) * time.Second)
		tok.ExpiresIn = d.expiresIn
	}
	return tok.WithExtra(d.raw)
}

// postForm POSTs form to the token endpoint with the client's
// authentication (RFC 6749 §2.3.1) and reads the answer: a usable Bearer
// token, an *oauth2.RetrieveError for an RFC 6749 §5.2 refusal, an
// *UnavailableError for the rest.
func postForm(ctx context.Context, c *http.Client, tokenURL, id, secret string, style oauth2.AuthStyle, form url.Values) (*tokenDoc, error) {
	if style == oauth2.AuthStyleInParams {
		form.Set("client_id", id)
		form.Set("client_secret", secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, unavailable(nil, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if style != oauth2.AuthStyleInParams {
		// RFC 6749 §2.3.1: both form-urlencoded before Basic.
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, unavailable(nil, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, unavailable(resp, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, refusal(resp, body)
	}
	return parseTokenDoc(body)
}

// refusal is the error of a non-200 answer: a refusal when it is a 4xx
// (not 408 or 429) with an RFC 6749 §5.2 error document, an outage
// otherwise.
func refusal(resp *http.Response, body []byte) error {
	var doc struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
		ErrorURI         string `json:"error_uri"`
	}
	s := resp.StatusCode
	if s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests &&
		json.Unmarshal(body, &doc) == nil && validErrorCode(doc.Error) {
		return &oauth2.RetrieveError{Response: resp, Body: body, ErrorCode: doc.Error,
			ErrorDescription: doc.ErrorDescription, ErrorURI: doc.ErrorURI}
	}
	return unavailable(resp, fmt.Errorf("token endpoint answered %s", resp.Status))
}

// validErrorCode: RFC 6749 §5.2 error codes are %x20-21 / %x23-5B /
// %x5D-7E, never empty; anything else is not an error document.
func validErrorCode(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// parseTokenDoc reads a 200 token response: access_token and token_type
// Bearer (RFC 6749 §5.1, §7.1; the token is sent as a Bearer token),
// expires_in a non-negative number (or a numeric string, as some
// providers send). Unknown members are kept, never refused (§5.1: the
// client MUST ignore unrecognized value names).
func parseTokenDoc(body []byte) (*tokenDoc, error) {
	var d tokenDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, unavailable(nil, fmt.Errorf("%w: %v", errBadResponse, err))
	}
	_ = json.Unmarshal(body, &d.raw)
	if d.AccessToken == "" {
		return nil, unavailable(nil, fmt.Errorf("%w: no access_token", errBadResponse))
	}
	if !tokenTypeBearer(d.TokenType) {
		return nil, unavailable(nil, fmt.Errorf("%w: token_type %q, want Bearer", errBadResponse, d.TokenType))
	}
	if len(d.ExpiresIn) > 0 && string(d.ExpiresIn) != "null" {
		s := strings.Trim(string(d.ExpiresIn), `"`)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > 1<<31 {
			return nil, unavailable(nil, fmt.Errorf("%w: expires_in %s", errBadResponse, d.ExpiresIn))
		}
		d.expiresIn = n
	}
	return &d, nil
}

// errorsJoin is base with a detail.
func errorsJoin(base error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", base, fmt.Sprintf(format, args...))
}
