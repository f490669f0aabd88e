package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

// The console's forms carry a per-session CSRF token (double submit): the
// first page a browser gets sets it in the cookie csrfCookie (HttpOnly,
// SameSite=Strict, under Prefix), every form of the pages holds it in the
// hidden field csrfField, and every post that changes something (an action,
// the token form) must send both, equal. A page of another site can make
// the browser post, but can neither read the cookie nor the pages, so it
// cannot fill the field. The SameSite cookie, the Origin check and the Host
// check (hosts.go) each stop such a post too; the token does not depend on
// the browser doing them.
//
// A token is 128 random bits and their HMAC under a key this console draws
// at start, so a value set in the cookie by anyone else (another port of
// the same host can set cookies for it) is not one the console issued and
// is refused; tokens of an earlier run of the node are refused likewise,
// and the page then shown sets a fresh one.
const (
	csrfCookie = "taskd_csrf"
	csrfField  = "csrf"
	csrfRandom = 16 // bytes of randomness in a token
	csrfMAC    = 16 // bytes of HMAC-SHA256 kept
)

// csrfKeys issues and checks CSRF tokens.
type csrfKeys struct {
	key [32]byte
}

// newCSRFKeys draws the key of a console.
func newCSRFKeys() (*csrfKeys, error) {
	k := &csrfKeys{}
	if _, err := rand.Read(k.key[:]); err != nil {
		return nil, err
	}
	return k, nil
}

// mac is the HMAC of a token's random part.
func (k *csrfKeys) mac(random []byte) []byte {
	m := hmac.New(sha256.New, k.key[:])
	m.Write(random)
	return m.Sum(nil)[:csrfMAC]
}

// issue returns a new token.
func (k *csrfKeys) issue() string {
	b := make([]byte, csrfRandom, csrfRandom+csrfMAC)
	if _, err := rand.Read(b); err != nil {
		panic("console: no randomness for a CSRF token: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return base64.RawURLEncoding.EncodeToString(append(b, k.mac(b)...))
}

// valid reports whether tok is a token this console issued.
func (k *csrfKeys) valid(tok string) bool {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != csrfRandom+csrfMAC {
		return false
	}
	return hmac.Equal(b[csrfRandom:], k.mac(b[:csrfRandom]))
}

// csrfToken returns the viewer's CSRF token for the page being drawn: the
// cookie's when it is one this console issued, else a new one, set in the
// cookie of the answer.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && c.csrf.valid(ck.Value) {
		return ck.Value
	}
	tok := c.csrf.issue()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: Prefix, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return tok
}

// checkCSRF refuses a post whose form does not carry the token of the
// viewer's cookie (403).
func (c *Console) checkCSRF(r *http.Request) error {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || !c.csrf.valid(ck.Value) {
		return &httpError{status: http.StatusForbidden, msg: csrfField + ": this browser has no CSRF token of this console (cookie " + csrfCookie +
			"): load the page again and repeat"}
	}
	form := r.PostFormValue(csrfField)
	if subtle.ConstantTimeCompare([]byte(form), []byte(ck.Value)) != 1 {
		return &httpError{status: http.StatusForbidden, msg: csrfField + ": the form does not carry this browser's CSRF token: " +
			"post the console's own form (load the page again and repeat)"}
	}
	return nil
}
