// Package tokens is taskd's bearer-token authorization: the tokens a node
// accepts, each with the verbs it may use (schedule, read, control, admin)
// and the identities it may touch, and the gRPC interceptors that check
// every call against them.
//
// Tokens come from two places. A tokens file (ParseFile) lists the tokens an
// operator configures by hand; it is how the first admin token is made. The
// TokenService (Server) stores more in etcd, where every node follows them
// (Follower). A client sends "authorization: Bearer ID.SECRET"; only the
// secret's SHA-256 is ever kept, in the file or in etcd.
//
// Guarantees: a call is served only when its token is known, its secret
// matches, the token holds the verb of the method, and its identity scopes
// cover every identity the request names (a request across all identities
// needs an unscoped token). A method without a verb is refused to every
// token. A token revoked through the TokenService is refused by the node
// that answered the revocation once the call returns, and by every other
// node as soon as its follower sees the deletion. A token of the file
// shadows a stored one of the same id.
//
// A caller creates, lists and revokes only tokens within its own verbs and
// identity scopes (Within). A stream is ended with UNAUTHENTICATED as soon
// as the node applies a change after which its token no longer grants it
// (revoked, removed from the file, secret, verbs or scopes changed): on
// the revoking node, before RevokeToken returns.
//
// Lock: the Follower's mutex guards the tokens it knows and its change
// signal, and is released before its hooks run (a hook looks tokens up);
// the set of revoked tokens and the registry of open streams have leaf
// locks of their own.
package tokens
