package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/client"
)

// tokenCookie holds the viewer's bearer token ("ID.SECRET") once set on the
// token page. It is HttpOnly (no script reads it) and SameSite=Strict (no
// other site's form posts with it), and scoped to the console's paths.
const tokenCookie = "taskd_token"

// bearer returns the viewer's token: from the Authorization header
// ("Bearer ID.SECRET"), else from the cookie; "" when there is none.
func bearer(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(tok)
		}
	}
	if ck, err := r.Cookie(tokenCookie); err == nil {
		return ck.Value
	}
	return ""
}

// tokenID is the public half of a token, for showing who the viewer is.
func tokenID(tok string) string {
	id, _, _ := strings.Cut(tok, ".")
	return id
}

// call returns the context of one API call made for r: r's, bounded by the
// console's timeout, carrying the viewer's token as the API expects it.
func (c *Console) call(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), c.timeout)
	return withToken(ctx, r), cancel
}

// withToken makes the calls of ctx carry r's bearer token, and no token
// when r has none: the token belongs to this request's context, not to the
// client every viewer shares.
func withToken(ctx context.Context, r *http.Request) context.Context {
	return client.ContextWithToken(ctx, bearer(r))
}

// httpError is a failure with the HTTP status it is shown with.
type httpError struct {
	status int
	code   string // the API's code, if the API refused
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// Status, Code and Msg are for the error page.
func (e *httpError) Status() int  { return e.status }
func (e *httpError) Code() string { return e.code }
func (e *httpError) Msg() string  { return e.msg }

// badInput names the request field that is wrong.
func badInput(field, format string, args ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, msg: field + ": " + fmt.Sprintf(format, args...)}
}

// apiError turns an API call's error into what the viewer is shown: the
// API's code and message, with the HTTP status that means the same.
func apiError(what string, err error) *httpError {
	var he *httpError
	if errors.As(err, &he) {
		return he
	}
	st := status.Convert(err)
	hs := http.StatusBadGateway
	switch st.Code() {
	case codes.Unauthenticated:
		hs = http.StatusUnauthorized
	case codes.PermissionDenied:
		hs = http.StatusForbidden
	case codes.NotFound:
		hs = http.StatusNotFound
	case codes.InvalidArgument, codes.OutOfRange:
		hs = http.StatusBadRequest
	case codes.FailedPrecondition, codes.Aborted, codes.AlreadyExists:
		hs = http.StatusConflict
	case codes.DeadlineExceeded:
		hs = http.StatusGatewayTimeout
	case codes.Unavailable, codes.ResourceExhausted:
		hs = http.StatusServiceUnavailable
	case codes.Canceled:
		hs = 499 // the viewer went away; nobody reads the page
	}
	return &httpError{status: hs, code: st.Code().String(), msg: what + ": " + st.Message()}
}

// code is err's gRPC code name.
func code(err error) string { return status.Code(err).String() }

// checkPost refuses a form post that is not this console's own: one sent
// by another origin's page (a browser sends Origin on every POST, and
// Sec-Fetch-Site when it knows it; the Host is checked already), or one
// without the viewer's CSRF token.
func (c *Console) checkPost(r *http.Request) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return &httpError{status: http.StatusForbidden, msg: "Sec-Fetch-Site: the form was posted from a " + s + " page, not from this console"}
	}
	o := r.Header.Get("Origin")
	if o != "" && !(o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin") && !c.hosts.originAllowed(o, r.Host) {
		return &httpError{status: http.StatusForbidden, msg: "Origin: the form was posted from " + printableHost(o) + ", not from this console"}
	}
	return c.checkCSRF(r)
}

// localPath keeps a redirect target inside the console, so that a crafted
// "back" field cannot send the viewer elsewhere.
func localPath(p, fallback string) string {
	if !strings.HasPrefix(p, Prefix) || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return fallback
	}
	return p
}
