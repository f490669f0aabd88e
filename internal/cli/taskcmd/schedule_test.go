package taskcmd

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestChunkError(t *testing.T) {
	for _, tc := range []struct {
		name            string
		err             error
		off, end, total int
		code            codes.Code
		msg             string
	}{
		{"one call", status.Error(codes.InvalidArgument, "tasks[3].kind: no node handles kind \"x\""), 0, 10, 10,
			codes.InvalidArgument, "tasks[3].kind: no node handles kind \"x\""},
		{"first of several", status.Error(codes.InvalidArgument, "tasks[3].kind: bad"), 0, 100, 250,
			codes.InvalidArgument, "tasks[3].kind: bad (in the call with tasks[0] to tasks[99] of 250)"},
		{"third call", status.Error(codes.InvalidArgument, "tasks[7].triggers[0].cron.expression: bad"), 200, 250, 250,
			codes.InvalidArgument, "tasks[207].triggers[0].cron.expression: bad (in the call with tasks[200] to tasks[249] of 250; the 200 tasks before it were scheduled, their ids are printed)"},
		{"no field", status.Error(codes.Unavailable, "etcd is down"), 100, 200, 250,
			codes.Unavailable, "etcd is down (in the call with tasks[100] to tasks[199] of 250; the 100 tasks before it were scheduled, their ids are printed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(chunkError(tc.err, tc.off, tc.end, tc.total))
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("got %v %q\nwant %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
		})
	}
	plain := errors.New("plain")
	if got := chunkError(plain, 0, 1, 1); got != plain {
		t.Errorf("a non-gRPC error became %v", got)
	}
}
