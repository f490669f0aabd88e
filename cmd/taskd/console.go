package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/internal/console"
	"github.com/taskd/taskd/pkg/config"
	"github.com/taskd/taskd/pkg/taskservice"
)

// nodeConsole is the node's web console, or nil with --console=false; its
// methods do nothing then.
type nodeConsole struct {
	*console.Console
}

// newConsole makes the console of a node whose API listens on api, or nil
// with --console=false.
func newConsole(cfg config.Config, api net.Addr, peer *tls.Config, hosts *console.HostPolicy, log hclog.Logger) (*nodeConsole, error) {
	if !cfg.Console {
		return nil, nil
	}
	ui, err := console.New(console.Config{Node: cfg.Name, Target: console.LoopbackTarget(api), TLS: peer,
		ServerName: advertisedAddress(cfg.Advertise, api), Hosts: hosts, Logger: log})
	if err != nil {
		return nil, err
	}
	return &nodeConsole{ui}, nil
}

// consoleHostNames are the names, besides its addresses, under which the
// node's console is reached: the --http host when it is a name, the host of
// --advertise, and the --console-host entries.
func consoleHostNames(cfg config.Config) []string {
	var names []string
	for _, addr := range []string{cfg.HTTP, cfg.Advertise} {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && net.ParseIP(host) == nil {
			names = append(names, host)
		}
	}
	return append(names, cfg.ConsoleHosts...)
}

// mount serves the console under console.Prefix on mux, and leads the root
// of the HTTP endpoint to it.
func (ui *nodeConsole) mount(mux *http.ServeMux) {
	if ui == nil {
		return
	}
	mux.Handle(console.Prefix, ui)
	mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusFound))
}

// listener tells the console of each run this node starts, with its fire
// time, for the console's chart of runs and fire lag.
func (ui *nodeConsole) listener() taskservice.Listener {
	return func(ev taskservice.Event) {
		if ui != nil && ev.Type == taskservice.EventStarted {
			ui.RunStarted(ev.Node, ev.Time, ev.FireTime)
		}
	}
}

// run feeds the console's chart until ctx ends.
func (ui *nodeConsole) run(ctx context.Context) {
	if ui != nil {
		ui.Run(ctx)
	}
}

// Close ends the console's streams and its connection to the API.
func (ui *nodeConsole) Close() {
	if ui != nil {
		ui.Console.Close()
	}
}
