package main

import (
	"github.com/taskd/taskd/internal/console"
	"github.com/taskd/taskd/pkg/taskservice"
)

// consoleListener tells the web console of each run this node starts, with
// its fire time, for the console's chart of runs and fire lag.
func consoleListener(ui *console.Console) taskservice.Listener {
	return func(ev taskservice.Event) {
		if ev.Type == taskservice.EventStarted {
			ui.RunStarted(ev.Node, ev.Time, ev.FireTime)
		}
	}
}
