package main

import "net"

// advertisedAddress is the gRPC address the node registers: --advertise when
// given, else the address the listener is bound to (right for a loopback or
// a specific host, useless to others for 0.0.0.0, which --advertise is for).
func advertisedAddress(advertise string, bound net.Addr) string {
	if advertise != "" {
		return advertise
	}
	return bound.String()
}
