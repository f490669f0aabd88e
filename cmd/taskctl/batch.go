package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// maxBatch is the most tasks one ScheduleTasks call takes.
const maxBatch = client.MaxBatch

// readTaskSpecs reads the tasks of schedule -f from path ("-": stdin). The
// file holds a JSON array of TaskSpecs in protojson form, or an object
// {"tasks": [...]} (a ScheduleTasksRequest). Errors are usageErrors naming
// the flag.
func readTaskSpecs(stdin io.Reader, path string) ([]*taskdv1.TaskSpec, error) {
	b, err := readFileFlag(stdin, path)
	if err != nil {
		return nil, err
	}
	specs, err := parseTaskSpecs(b)
	if err != nil {
		return nil, usagef("invalid value %q for flag -f: %v", path, err)
	}
	return specs, nil
}

// parseTaskSpecs decodes the content of a schedule -f file.
func parseTaskSpecs(b []byte) ([]*taskdv1.TaskSpec, error) {
	b = bytes.TrimSpace(b)
	var specs []*taskdv1.TaskSpec
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("the file is empty; want a JSON array of tasks")
	case b[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("not a JSON array: %v", err)
		}
		for i, item := range items {
			s := &taskdv1.TaskSpec{}
			if err := protojson.Unmarshal(item, s); err != nil {
				return nil, fmt.Errorf("tasks[%d]: %v", i, err)
			}
			specs = append(specs, s)
		}
	case b[0] == '{':
		req := &taskdv1.ScheduleTasksRequest{}
		if err := protojson.Unmarshal(b, req); err != nil {
			return nil, fmt.Errorf("not a {\"tasks\": [...]} object: %v", err)
		}
		specs = req.GetTasks()
	default:
		return nil, fmt.Errorf("want a JSON array of tasks or an object {\"tasks\": [...]}")
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("the file holds no task")
	}
	return specs, nil
}

// scheduleFile is schedule -f: it sends the file's tasks with ScheduleTasks
// in chunks of at most maxBatch, in file order, and prints the ids of the
// stored tasks one per line (with -o json: one ScheduleTasksResponse of
// them all). A failed chunk stops it: what earlier chunks stored is printed
// first, and the error names the failing task by its index in the file.
func scheduleFile(e *env, path string) error {
	specs, err := readTaskSpecs(e.stdin, path)
	if err != nil {
		return err
	}
	c, err := e.taskClient()
	if err != nil {
		return err
	}
	out := &taskdv1.ScheduleTasksResponse{}
	for off := 0; off < len(specs); off += maxBatch {
		end := min(off+maxBatch, len(specs))
		chunk := make([]client.TaskSpec, 0, end-off)
		for _, s := range specs[off:end] {
			chunk = append(chunk, client.TaskSpec{Proto: s})
		}
		ctx, cancel := e.rpcContext()
		tasks, err := c.ScheduleMany(ctx, chunk)
		cancel()
		if err != nil {
			if off > 0 {
				if werr := writeScheduled(e, out); werr != nil {
					return werr
				}
			}
			return chunkError(err, off, end, len(specs))
		}
		for _, t := range tasks {
			out.Tasks = append(out.Tasks, t.Proto)
		}
	}
	return writeScheduled(e, out)
}

// writeScheduled prints the tasks a batch stored.
func writeScheduled(e *env, out *taskdv1.ScheduleTasksResponse) error {
	if e.opts.format == formatJSON {
		return writeJSON(e.stdout, out)
	}
	for _, t := range out.GetTasks() {
		if _, err := fmt.Fprintln(e.stdout, t.GetId()); err != nil {
			return err
		}
	}
	return nil
}

// chunkIndex matches the request field a ScheduleTasks error starts with.
var chunkIndex = regexp.MustCompile(`^tasks\[(\d+)\]`)

// chunkError turns the error of the chunk of tasks [off, end) into one
// about the file: the task index in the server's message is made an index
// in the file, and when the file took several chunks the message says
// which chunk failed. The gRPC code is kept.
func chunkError(err error, off, end, total int) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := chunkIndex.ReplaceAllStringFunc(st.Message(), func(m string) string {
		i, _ := strconv.Atoi(m[len("tasks[") : len(m)-1])
		return fmt.Sprintf("tasks[%d]", off+i)
	})
	if total > maxBatch {
		msg += fmt.Sprintf(" (in the call with tasks[%d] to tasks[%d] of %d", off, end-1, total)
		if off > 0 {
			msg += fmt.Sprintf("; the %d tasks before it were scheduled, their ids are printed", off)
		}
		msg += ")"
	}
	return status.Error(st.Code(), msg)
}

// readFileFlag reads the file a -f flag names ("-": stdin); an error is a
// usageError naming the flag.
func readFileFlag(stdin io.Reader, path string) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usagef("invalid value %q for flag -f: %v", path, err)
	}
	return b, nil
}
