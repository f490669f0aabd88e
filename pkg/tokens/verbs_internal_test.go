package tokens

import (
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
