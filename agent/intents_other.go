//go:build !unix

package agent

const syscallNoFollow = 0
