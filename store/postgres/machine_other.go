//go:build !linux

package postgres

// machineID is unknown here: a lease is never taken over before its ttl.
func machineID() string { return "" }

// processStart is unknown here.
func processStart(int) (int64, bool) { return 0, false }
