//go:build linux

package organizer

import (
	"syscall"

	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/organize"
)

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

func newRules(o config.Organizer) (*organize.Rules, error) { return organize.New(o) }
