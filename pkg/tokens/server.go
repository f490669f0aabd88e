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
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// etcdTimeout bounds each etcd call of the TokenService.
const etcdTimeout = 5 * time.Second

// Server is the TokenService: it stores tokens in etcd, lists them and
// revokes them. It answers a change only once the node's own checks see it
// (Follower.WaitSeen).
type Server struct {
	taskdv1.UnimplementedTokenServiceServer

	cli      *clientv3.Client
	keys     keyspace.Keys
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
	return &Server{cli: cli, keys: keyspace.New(prefix), stored: stored, fileToks: fileTokens, now: time.Now}
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
	caller := Caller(ctx)
	if caller != nil {
		// A token mints only what it holds: else a scoped admin token makes
		// an unscoped one and reaches every identity.
		if err := Within(req.GetVerbs(), req.GetIdentities(), caller); err != nil {
			return nil, status.Errorf(codes.PermissionDenied, "the new token is not within the caller's: %v", err)
		}
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
	if caller != nil {
		t.CreatedBy = caller.ID
	}
	value, err := encodeRecord(t)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode token: %v", err)
	}
	key := s.keys.Token(id)
	ectx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	err = s.commitSeen(ctx, ectx, writepath.CreateIfAbsent(key, string(value)), "store the token",
		status.Errorf(codes.AlreadyExists, "id: a token %q is already stored", id),
		func(err error) error {
			return status.Errorf(codes.Unavailable, "token %q is stored, but this node does not accept it yet: %v", id, err)
		})
	if err != nil {
		return nil, err
	}
	return &taskdv1.CreateTokenResponse{Token: t.Proto(), Bearer: id + "." + secret}, nil
}

// ListTokens lists the stored tokens and the node's file tokens, by id:
// those within the caller's verbs and scopes (the tokens it could have
// created), so a scoped admin sees nothing of other scopes.
func (s *Server) ListTokens(ctx context.Context, _ *taskdv1.ListTokensRequest) (*taskdv1.ListTokensResponse, error) {
	caller := Caller(ctx)
	visible := func(t *Token) bool { return caller == nil || within(t, caller) == nil }
	out := &taskdv1.ListTokensResponse{}
	file := s.fileToks()
	for _, t := range file {
		if visible(t) {
			out.Tokens = append(out.Tokens, t.Proto())
		}
	}
	for _, t := range s.stored.List() {
		if file[t.ID] == nil && visible(t) { // the file's token shadows it
			out.Tokens = append(out.Tokens, t.Proto())
		}
	}
	sort.Slice(out.Tokens, func(i, j int) bool { return out.Tokens[i].GetId() < out.Tokens[j].GetId() })
	return out, nil
}

// RevokeToken deletes a stored token within the caller's verbs and
// scopes. A token outside them is NOT_FOUND, with the same message as an
// unknown id: the caller cannot list it either.
func (s *Server) RevokeToken(ctx context.Context, req *taskdv1.RevokeTokenRequest) (*taskdv1.RevokeTokenResponse, error) {
	id := req.GetId()
	if err := ValidateID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "id: %v", err)
	}
	caller := Caller(ctx)
	notFound := status.Errorf(codes.NotFound, "id: no token %q is stored", id)
	if caller != nil {
		notFound = status.Errorf(codes.NotFound, "id: no token %q is stored within the verbs and identities of token %s", id, caller.ID)
	}
	visible := func(t *Token) bool { return caller == nil || within(t, caller) == nil }
	if ft := s.fileToks()[id]; ft != nil {
		if !visible(ft) {
			return nil, notFound
		}
		return nil, status.Errorf(codes.FailedPrecondition,
			"id: token %q is defined in this node's tokens file: remove its line there and send the nodes SIGHUP", id)
	}
	// The stored record decides, read from etcd rather than this node's
	// follower (which may lag), and deleted only if unchanged since: a token
	// replaced meanwhile by one outside the caller is not deleted.
	key := s.keys.Token(id)
	ectx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	got, err := s.cli.Get(ectx, key)
	if err != nil {
		return nil, etcdstatus.Of(fmt.Errorf("read the token: %w", err))
	}
	if len(got.Kvs) == 0 {
		return nil, notFound
	}
	// A record that does not decode grants nothing; only a caller holding
	// every verb, unscoped, may clear it.
	stored, err := decodeRecord(got.Kvs[0].Value)
	if err != nil {
		stored = &Token{ID: id, Verbs: verbSet(Verbs)}
	}
	if !visible(stored) {
		return nil, notFound
	}
	err = s.commitSeen(ctx, ectx, writepath.DeleteAt(key, got.Kvs[0].ModRevision), "delete the token",
		status.Errorf(codes.Aborted, "id: token %q changed while it was being revoked; try again", id),
		func(err error) error {
			return status.Errorf(codes.Unavailable, "token %q is deleted, but this node may still accept it: %v", id, err)
		})
	if err != nil {
		return nil, err
	}
	return &taskdv1.RevokeTokenResponse{}, nil
}

// commitSeen commits txn (what doing says it does) under ectx, then waits
// until this node's follower has seen it, so that the node acts on the
// change once the call returns. It returns refused when the txn's compares
// fail, and unseen's error when the wait does.
func (s *Server) commitSeen(ctx, ectx context.Context, txn writepath.Txn, doing string, refused error, unseen func(error) error) error {
	resp, err := writepath.NewWriter(s.cli).Commit(ectx, txn)
	if err != nil {
		return etcdstatus.Of(fmt.Errorf("%s: %w", doing, err))
	}
	if !resp.Succeeded {
		return refused
	}
	if err := s.stored.WaitSeen(ctx, resp.Header.Revision); err != nil {
		return unseen(err)
	}
	return nil
}
