package etcdstatus

import (
	"errors"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file is the one classification of an etcd call's failure by what it
// says about the request: refused for its size (or shape), and whether it
// can have been applied. Every retry loop asks these, so that a write etcd
// will never take is not retried as if etcd were down.

// TooLarge reports an error that refuses a request for its size: etcd's
// "request is too large" (--max-request-bytes), "too many operations in
// txn request" (--max-txn-ops), or gRPC's RESOURCE_EXHAUSTED "message
// larger than max", from either side (the client's send limit, the
// server's receive limit, or the client's receive limit on the response).
// Sending the same request again can only fail the same way.
func TooLarge(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) ||
		errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrGRPCTooManyOps) {
		return true
	}
	return messageTooLarge(err)
}

// messageTooLarge reports gRPC's own size refusal of a message.
func messageTooLarge(err error) bool {
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "message larger than max")
}

// sendTooLarge reports the client's refusal to send a message over its
// send limit: the request never left the process.
func sendTooLarge(err error) bool {
	return messageTooLarge(err) && strings.Contains(status.Convert(err).Message(), "trying to send")
}

// NotApplied reports an error that is a definite failure: etcd cannot have
// applied the request. That is an error the server answered with (a
// refused request: its size, its operations, a duplicate key, the space
// quota, a compare on a bad key, too many requests) or the client's
// refusal to send it. A deadline, a lost connection or leader, or an
// unknown error leaves the outcome unknown: the request may have been
// applied. A response too large to receive is not definite either: the
// request was applied before its answer was refused.
func NotApplied(err error) bool {
	if err == nil {
		return false
	}
	if sendTooLarge(err) {
		return true
	}
	if messageTooLarge(err) {
		// "received message larger than max": the server's refusal of the
		// request, or the client's of the response; cannot be told apart.
		return false
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		switch ee.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown:
			return false
		}
		return true
	}
	return false
}
