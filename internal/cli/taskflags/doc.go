// Package taskflags is what the flags that describe a task mean: it turns
// the trigger flags (--cron, --every, --at, --delay, --on-startup ...) and
// the task settings (--payload, --priority, --backoff, --label ...) into
// the API's Trigger and TaskSpec, and those of schedule (with its -f file
// of tasks), update, trigger add, preview and list into their requests.
// Every error is a cmdline.UsageError naming the flag. It makes no call
// and reads the clock only as it is handed in. No lock.
package taskflags
