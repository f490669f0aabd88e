package taskcmd

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/internal/cli/taskflags"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the schedule command: one task from its flags, or with -f
// the tasks of a file.

// maxBatch is the most tasks one ScheduleTasks call takes.
const maxBatch = client.MaxBatch

// Schedule defines schedule: it schedules a task and prints its id.
func Schedule(fs *flag.FlagSet) command.Action {
	o := &taskflags.ScheduleOptions{}
	taskflags.DefineScheduleFlags(fs, o)
	return func(e *command.Env, args []string) error {
		if err := cmdline.NoArgs(args); err != nil {
			return err
		}
		file, err := cmdline.FileGiven(fs, o.File, "whole tasks")
		if err != nil {
			return err
		}
		if file {
			return scheduleFile(e, o.File)
		}
		req, err := taskflags.BuildScheduleRequest(*o, time.Now())
		if err != nil {
			return err
		}
		return command.Call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ScheduleTaskResponse, error) {
			task, existing, err := c.Schedule(ctx, client.TaskSpec{Proto: req.GetTask()})
			if err != nil {
				return nil, err
			}
			return &taskdv1.ScheduleTaskResponse{Task: task.Proto, Existing: existing}, nil
		}, func(resp *taskdv1.ScheduleTaskResponse) error {
			_, err := fmt.Fprintln(e.Stdout, resp.GetTask().GetId())
			return err
		})
	}
}

// scheduleFile is schedule -f: it sends the file's tasks with ScheduleTasks
// in chunks of at most maxBatch, in file order, and prints the ids of the
// stored tasks one per line (with -o json: one ScheduleTasksResponse of
// them all). A failed chunk stops it: what earlier chunks stored is printed
// first, and the error names the failing task by its index in the file.
func scheduleFile(e *command.Env, path string) error {
	specs, err := taskflags.ReadTaskSpecs(e.Stdin, path)
	if err != nil {
		return err
	}
	c, err := e.TaskClient()
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
		ctx, cancel := e.RPCContext()
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
func writeScheduled(e *command.Env, out *taskdv1.ScheduleTasksResponse) error {
	if e.JSON() {
		return render.WriteJSON(e.Stdout, out)
	}
	for _, t := range out.GetTasks() {
		if _, err := fmt.Fprintln(e.Stdout, t.GetId()); err != nil {
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
