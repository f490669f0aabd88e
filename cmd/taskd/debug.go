package main

import (
	"net/http"
	"net/http/pprof"
	"slices"
)

// mountPprof serves Go's profiling endpoints under /debug/pprof/ on mux
// (--pprof).
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// wantsVersion reports whether the command line asks for --version (or
// -version), which is answered before any option is read.
func wantsVersion(args []string) bool {
	return slices.Contains(args, "--version") || slices.Contains(args, "-version")
}
