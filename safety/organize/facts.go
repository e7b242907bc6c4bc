package organize

import (
	"io/fs"

	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/risk"
)

// KindOf says what an lstat'd object is.
func KindOf(i jail.Info) Kind {
	switch {
	case i.IsSymlink():
		return Symlink
	case i.IsDir():
		return Dir
	case i.IsRegular():
		return File
	case i.Mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
		return Special
	}
	return Other
}

// KindOfEntry says what a directory entry is, from its type bits alone.
func KindOfEntry(t fs.FileMode) Kind {
	switch {
	case t&fs.ModeSymlink != 0:
		return Symlink
	case t.IsDir():
		return Dir
	case t.IsRegular():
		return File
	case t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
		return Special
	}
	return Other
}

// Radar classifies paths with the risk radar for the high-risk restraint.
type Radar struct {
	Engine *risk.Engine
	Root   string // the workspace's absolute path
}

// FactsFor builds the facts of the object rel (root-relative) with lstat
// info. The radar, when set, supplies the risk importance and reason
// (rules only: no file is opened).
func (r *Rules) FactsFor(rel string, info jail.Info, radar *Radar) Facts {
	_, name := jail.Split(rel)
	f := Facts{Name: name, Kind: KindOf(info), ModTime: info.ModTime, BadName: jail.CheckName(name) != nil}
	if f.Kind == File {
		f.Category = r.Category(name)
	}
	if radar != nil && radar.Engine != nil && (f.Kind == File || f.Kind == Dir) {
		if d, err := radar.Engine.ClassifyPath(radar.Root, rel, f.Kind == Dir); err == nil {
			f.Risk, f.RiskAction, f.RiskMIME = string(d.Metadata.Importance), string(d.Metadata.SuggestedAction), d.MimeType
			if len(d.Metadata.Reasons) > 0 {
				f.RiskReason = d.Metadata.Reasons[0]
			}
		}
	}
	return f
}
