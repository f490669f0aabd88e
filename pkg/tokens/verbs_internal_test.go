package tokens

import (
	"strings"
	"testing"

	"google.golang.org/grpc"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Every method of the taskd services needs a token with a verb: a method
// left out would be refused to every token, and a service left out of ours
// would be open to anyone.
func TestEveryMethodHasAVerb(t *testing.T) {
	for _, sd := range []grpc.ServiceDesc{taskdv1.TaskService_ServiceDesc, taskdv1.TokenService_ServiceDesc, taskdv1.WorkerService_ServiceDesc} {
		var names []string
		for _, m := range sd.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range sd.Streams {
			names = append(names, s.StreamName)
		}
		for _, name := range names {
			full := "/" + sd.ServiceName + "/" + name
			if !ours(full) {
				t.Errorf("%s is not guarded by tokens", full)
			}
			if methodVerbs[full] == "" {
				t.Errorf("%s has no verb", full)
			}
		}
	}
	if v := methodVerbs["/"+taskdv1.WorkerService_ServiceDesc.ServiceName+"/Work"]; v != VerbWork {
		t.Errorf("WorkerService/Work needs %q, want %q", v, VerbWork)
	}
}

// A worker is handed runs of any identity, so its token must cover them
// all: a scoped token with the work verb is refused at the hello.
func TestWorkNeedsAnUnscopedToken(t *testing.T) {
	hello := &taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: &taskdv1.WorkerHello{Worker: "w", Kinds: []string{"k"}, Concurrency: 1}}}
	work := "/" + taskdv1.WorkerService_ServiceDesc.ServiceName + "/Work"
	scoped := &Token{ID: "scoped", Verbs: map[string]bool{VerbWork: true}, Scopes: []string{"tenant-7/*"}}
	if err := Authorize(scoped, work, hello); err == nil || !strings.Contains(err.Error(), "unscoped") {
		t.Fatalf("a scoped worker token: %v", err)
	}
	whole := &Token{ID: "whole", Verbs: map[string]bool{VerbWork: true}}
	if err := Authorize(whole, work, hello); err != nil {
		t.Fatalf("an unscoped worker token: %v", err)
	}
	reader := &Token{ID: "reader", Verbs: map[string]bool{VerbRead: true}}
	if err := Authorize(reader, work, hello); err == nil || !strings.Contains(err.Error(), `"work"`) {
		t.Fatalf("a token without the work verb: %v", err)
	}
}
