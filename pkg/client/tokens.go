package client

import (
	"context"
	"strings"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TokenSpec is a bearer token to store in the cluster (docs/security.md).
type TokenSpec struct {
	// ID is the part before the dot of "ID.SECRET": letters, digits, _ and
	// -, at most 64; empty, the node picks a random one.
	ID string
	// Verbs the token may use: schedule, read, control, admin (at least
	// one).
	Verbs []string
	// Identities the token may touch: exact identities, and prefixes
	// ending in "*". Empty: every identity.
	Identities []string
	// Description is free text for people (at most 256 bytes).
	Description string
}

// Token is a bearer token the cluster honours, without its secret.
type Token struct {
	ID          string
	Verbs       []string
	Identities  []string
	Description string
	// Source is where the token is defined: "etcd" (stored by CreateToken)
	// or "file" (a line of the answering node's --tokens-file).
	Source string
	// CreatedAt and CreatedBy (the id of the token that created it) are
	// set for stored tokens only.
	CreatedAt time.Time
	CreatedBy string
	// Proto is the token as the API returned it.
	Proto *taskdv1.Token
}

// CreateToken stores a token and returns it with its bearer "ID.SECRET",
// which is shown only now: the cluster keeps the secret's SHA-256. The
// calls of this and the other token methods need the admin verb. It is not
// retried once it may have reached a node: a retry after a lost answer
// would store a second token (a random ID) or be refused as
// ErrAlreadyExists by the one the first attempt stored, whose secret is
// lost either way. After ErrUnavailable, look with Tokens and revoke what
// the first attempt may have stored.
func (c *Client) CreateToken(ctx context.Context, spec TokenSpec) (token *Token, bearer string, err error) {
	req := &taskdv1.CreateTokenRequest{Id: spec.ID, Verbs: spec.Verbs, Identities: spec.Identities, Description: spec.Description}
	resp, err := sendTo(ctx, c, "CreateToken", once, c.tokens, taskdv1.TokenServiceClient.CreateToken, req, asIs)
	return tokenFromProto(resp.GetToken()), resp.GetBearer(), err
}

// Tokens lists the tokens stored in the cluster and those of the answering
// node's tokens file, by ID.
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	return sendTo(ctx, c, "Tokens", idempotent, c.tokens, taskdv1.TokenServiceClient.ListTokens, &taskdv1.ListTokensRequest{},
		func(resp *taskdv1.ListTokensResponse) []Token {
			return each(resp.GetTokens(), func(p *taskdv1.Token) Token { return *tokenFromProto(p) })
		})
}

// RevokeToken deletes a stored token: the answering node refuses it once
// the call returns, the others as soon as they see the deletion
// (milliseconds). An unknown ID is ErrNotFound, a token of a tokens file
// ErrFailedPrecondition. It is retried like Delete: a retry that finds the
// token gone after an attempt whose answer was lost returns nil.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return remove(ctx, c, "RevokeToken", c.tokens, taskdv1.TokenServiceClient.RevokeToken, &taskdv1.RevokeTokenRequest{Id: id})
}

func tokenFromProto(p *taskdv1.Token) *Token {
	if p == nil {
		return nil
	}
	return &Token{
		ID:          p.GetId(),
		Verbs:       p.GetVerbs(),
		Identities:  p.GetIdentities(),
		Description: p.GetDescription(),
		Source:      strings.ToLower(enumName(p.GetSource().String(), "TOKEN_SOURCE_")),
		CreatedAt:   timeOf(p.GetCreatedAt()),
		CreatedBy:   p.GetCreatedBy(),
		Proto:       p,
	}
}
