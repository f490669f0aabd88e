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
