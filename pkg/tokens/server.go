package tokens

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/etcdstatus"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Server is the TokenService: it stores tokens in etcd, lists them and
// revokes them. It answers a change only once the node's own checks see it
// (Follower.WaitSeen).
type Server struct {
	taskdv1.UnimplementedTokenServiceServer

	cli      *clientv3.Client
	keys     pending.Keys
	stored   *Follower
	fileToks func() map[string]*Token
	now      func() time.Time
}

// NewServer returns the TokenService over the tokens stored under prefix,
// followed by stored; fileTokens returns the node's file tokens (nil: none).
func NewServer(cli *clientv3.Client, prefix string, stored *Follower, fileTokens func() map[string]*Token) *Server {
	if fileTokens == nil {
		fileTokens = func() map[string]*Token { return nil }
	}
	return &Server{cli: cli, keys: pending.NewKeys(prefix), stored: stored, fileToks: fileTokens, now: time.Now}
}

// CreateToken stores a new token and returns its secret once.
func (s *Server) CreateToken(ctx context.Context, req *taskdv1.CreateTokenRequest) (*taskdv1.CreateTokenResponse, error) {
	id := req.GetId()
	if id == "" {
		id = NewID()
	}
	if err := ValidateID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "id: %v", err)
	}
	if err := ValidateVerbs(req.GetVerbs()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "verbs: %v", err)
	}
	if err := ValidateScopes(req.GetIdentities()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "identities: %v", err)
	}
	if len(req.GetDescription()) > MaxDescription || !utf8.ValidString(req.GetDescription()) {
		return nil, status.Errorf(codes.InvalidArgument, "description: %d bytes, at most %d of UTF-8", len(req.GetDescription()), MaxDescription)
	}
	if s.fileToks()[id] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "id: token %q is defined in this node's tokens file", id)
	}
	secret := NewSecret()
	t := &Token{
		ID:          id,
		Hash:        HashSecret(secret),
		Verbs:       verbSet(req.GetVerbs()),
		Scopes:      slices.Clone(req.GetIdentities()),
		Source:      taskdv1.TokenSource_TOKEN_SOURCE_ETCD,
		Description: req.GetDescription(),
		CreatedAt:   s.now().UTC().Truncate(time.Millisecond),
	}
	if c := Caller(ctx); c != nil {
		t.CreatedBy = c.ID
	}
	value, err := encodeRecord(t)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode token: %v", err)
	}
	key := s.keys.Token(id)
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).Commit()
	if err != nil {
		return nil, etcdstatus.Of(fmt.Errorf("store the token: %w", err))
	}
	if !resp.Succeeded {
		return nil, status.Errorf(codes.AlreadyExists, "id: a token %q is already stored", id)
	}
	if err := s.stored.WaitSeen(ctx, resp.Header.Revision); err != nil {
		return nil, status.Errorf(codes.Unavailable, "token %q is stored, but this node does not accept it yet: %v", id, err)
	}
	return &taskdv1.CreateTokenResponse{Token: t.Proto(), Bearer: id + "." + secret}, nil
}

// ListTokens lists the stored tokens and the node's file tokens, by id.
func (s *Server) ListTokens(context.Context, *taskdv1.ListTokensRequest) (*taskdv1.ListTokensResponse, error) {
	out := &taskdv1.ListTokensResponse{}
	file := s.fileToks()
	for _, t := range file {
		out.Tokens = append(out.Tokens, t.Proto())
	}
	for _, t := range s.stored.List() {
		if file[t.ID] == nil { // the file's token shadows it
			out.Tokens = append(out.Tokens, t.Proto())
		}
	}
	sort.Slice(out.Tokens, func(i, j int) bool { return out.Tokens[i].GetId() < out.Tokens[j].GetId() })
	return out, nil
}

// RevokeToken deletes a stored token.
func (s *Server) RevokeToken(ctx context.Context, req *taskdv1.RevokeTokenRequest) (*taskdv1.RevokeTokenResponse, error) {
	id := req.GetId()
	if err := ValidateID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "id: %v", err)
	}
	if s.fileToks()[id] != nil {
		return nil, status.Errorf(codes.FailedPrecondition,
			"id: token %q is defined in this node's tokens file: remove its line there and send the nodes SIGHUP", id)
	}
	resp, err := s.cli.Delete(ctx, s.keys.Token(id))
	if err != nil {
		return nil, etcdstatus.Of(fmt.Errorf("delete the token: %w", err))
	}
	if resp.Deleted == 0 {
		return nil, status.Errorf(codes.NotFound, "id: no token %q is stored", id)
	}
	if err := s.stored.WaitSeen(ctx, resp.Header.Revision); err != nil {
		return nil, status.Errorf(codes.Unavailable, "token %q is deleted, but this node may still accept it: %v", id, err)
	}
	return &taskdv1.RevokeTokenResponse{}, nil
}
