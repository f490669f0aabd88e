package etcdstatus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestOf(t *testing.T) {
	if Of(nil) != nil {
		t.Fatal("Of(nil) is not nil")
	}
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{fmt.Errorf("put: %w", context.DeadlineExceeded), codes.Unavailable},
		{fmt.Errorf("put: %w", context.Canceled), codes.Canceled},
		{rpctypes.ErrGRPCNoSpace, codes.ResourceExhausted},
		{rpctypes.ErrGRPCNoLeader, codes.Unavailable},
		{rpctypes.ErrGRPCTimeout, codes.Unavailable},
		{fmt.Errorf("txn: %w", status.Error(codes.Unavailable, "connection refused")), codes.Unavailable},
		{status.Error(codes.DeadlineExceeded, "slow"), codes.Unavailable},
		{errors.New("decode: bad record"), codes.Internal},
	} {
		got := Of(tc.err)
		if status.Code(got) != tc.code {
			t.Errorf("Of(%v) = %v, want %v", tc.err, got, tc.code)
		}
		if s := status.Convert(got).Message(); len(s) < len(tc.err.Error()) {
			t.Errorf("Of(%v) lost the error: %q", tc.err, s)
		}
	}
}

// The size refusals, and which of them are definite (nothing applied).
func TestTooLargeAndNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name                string
		err                 error
		tooLarge, notApplid bool
		code                codes.Code
	}{
		{"etcd: request too large", rpctypes.Error(rpctypes.ErrGRPCRequestTooLarge), true, true, codes.InvalidArgument},
		{"etcd: too many ops", fmt.Errorf("txn: %w", rpctypes.Error(rpctypes.ErrGRPCTooManyOps)), true, true, codes.InvalidArgument},
		{"client: send limit", status.Error(codes.ResourceExhausted, "trying to send message larger than max (3145736 vs. 2097152)"), true, true, codes.InvalidArgument},
		{"received larger than max", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (1231270 vs. 1048576)"), true, false, codes.InvalidArgument},
		{"space quota", rpctypes.Error(rpctypes.ErrGRPCNoSpace), false, true, codes.ResourceExhausted},
		{"duplicate key", rpctypes.Error(rpctypes.ErrGRPCDuplicateKey), false, true, codes.Internal},
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), false, false, codes.Unavailable},
		{"deadline", context.DeadlineExceeded, false, false, codes.Unavailable},
		{"no leader", rpctypes.Error(rpctypes.ErrGRPCNoLeader), false, false, codes.Unavailable},
	} {
		if got := TooLarge(tc.err); got != tc.tooLarge {
			t.Errorf("%s: TooLarge = %v, want %v", tc.name, got, tc.tooLarge)
		}
		if got := NotApplied(tc.err); got != tc.notApplid {
			t.Errorf("%s: NotApplied = %v, want %v", tc.name, got, tc.notApplid)
		}
		if got := status.Code(Of(tc.err)); got != tc.code {
			t.Errorf("%s: Of = %v, want %v", tc.name, got, tc.code)
		}
	}
}
