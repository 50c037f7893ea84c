package transfer

import (
	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// File is a file to write into the job container.
type File struct {
	// Container is its path in the job container.
	Container string
	Content   []byte
	// Shared makes it writable by every user: a container step's image
	// may run as another user than the job container.
	Shared bool
}

// Link is a symbolic link to make in the job container: Link → Target.
type Link struct {
	Link, Target string
}

// DeliveryJob is the job id of the job container's shim that writes
// files to their container paths (making their directories) and makes the
// links (an existing link is replaced, a directory in the way fails).
func DeliveryJob(id string, files []File, links []Link) client.Job {
	s := NewScript(id, "deliver a step's files")
	for _, f := range files {
		s.Deliver(f.Container, f.Content, 0o600)
		if f.Shared {
			s.Printf("chmod a+rw %s || fail %s\n", shell.Quote(f.Container), shell.Quote("cannot share "+f.Container))
		}
	}
	for _, l := range links {
		link, target := shell.Quote(l.Link), shell.Quote(l.Target)
		s.Printf("if [ -d %s ] && [ ! -L %s ]; then fail %s; fi\n", link, link, shell.Quote(l.Link+" is a directory, not a link"))
		s.Printf("mkdir -p %s && ln -sfn %s %s || fail %s\n", target, target, link, shell.Quote("cannot link "+l.Link+" to "+l.Target))
	}
	return s.Job("deliver.sh")
}
