package ownership

import "time"

// SetAfterStep installs the test hook that runs after each transfer step
// ("fencing", "fenced"); an error stops the mover there.
func (d *Directory) SetAfterStep(f func(step string) error) { d.afterStep = f }

// NoteUnanswered and NoteAnswered record an etcd request sent at sent as
// the keepalive loop does (CutOff's evidence).
func (l *Liveness) NoteUnanswered(sent time.Time) { l.unanswered(sent) }
func (l *Liveness) NoteAnswered(sent time.Time)   { l.answered(sent) }
