// Package etcdstatus turns the error of an etcd call into the gRPC status
// taskd's APIs answer with: the one rule for every service.
//
// Guarantee: an error that means etcd could not be reached in time (a
// deadline, a lost leader, a lost connection, an unavailable member) is
// UNAVAILABLE, so that clients retry it; a full space quota is
// RESOURCE_EXHAUSTED; a request refused for its size (TooLarge) is
// INVALID_ARGUMENT, since sending it again cannot succeed; a cancelled call
// is CANCELED; anything else is INTERNAL. The message keeps the etcd error.
package etcdstatus

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Of returns the gRPC status error for err, an error of an etcd call.
func Of(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, rpctypes.ErrNoSpace), errors.Is(err, rpctypes.ErrGRPCNoSpace):
		return status.Error(codes.ResourceExhausted, "etcd's space quota is exhausted: "+err.Error())
	case TooLarge(err):
		return status.Error(codes.InvalidArgument, "too large for etcd: "+err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.Unavailable, "etcd unreachable: "+err.Error())
	}
	// status.FromError finds a gRPC status wrapped anywhere in err.
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.ResourceExhausted:
			return status.Error(codes.ResourceExhausted, err.Error())
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			return status.Error(codes.Unavailable, "etcd unreachable: "+err.Error())
		}
	}
	switch {
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrTimeout),
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail), errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost),
		errors.Is(err, rpctypes.ErrLeaderChanged):
		return status.Error(codes.Unavailable, "etcd unavailable: "+err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}
