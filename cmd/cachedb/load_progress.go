package main

import (
	"fmt"
	"io"

	"github.com/schollz/progressbar/v3"

	"github.com/cachedb/cachedb/cluster"
)

// loadProgress shows a load's progress messages (one per partition finished): a bar redrawn in
// place on a terminal, else one line per message, so a log or pipe gets no carriage returns.
//
// A reused dataset is reported by the head as a single message that is already complete, which
// a one-partition load also sends; such a first message is held until the load's result says
// whether it was a reuse, so a reuse is never shown as "materializing".
type loadProgress struct {
	w    io.Writer
	tty  bool
	name string
	bar  *progressbar.ProgressBar
	held *cluster.Progress
	seen bool
}

func newLoadProgress(w io.Writer, tty bool, name string) *loadProgress {
	return &loadProgress{w: w, tty: tty, name: name}
}

// update shows one progress message.
func (p *loadProgress) update(msg cluster.Progress) {
	first := !p.seen
	p.seen = true
	if first && msg.Done >= msg.Partitions {
		p.held = &msg
		return
	}
	p.show(msg)
}

// finish ends the display once the load's result is known: a held message is shown unless the
// dataset was reused, and a bar is closed.
func (p *loadProgress) finish(reused bool) {
	if p.held != nil && !reused {
		p.show(*p.held)
	}
	p.held = nil
	p.close()
}

// close ends a bar cut short by a failure, so the error starts on a line of its own.
func (p *loadProgress) close() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

func (p *loadProgress) show(msg cluster.Progress) {
	text := fmt.Sprintf("materializing %s: %d rows, %s", p.name, msg.Rows, humanBytes(msg.Bytes))
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %d/%d partitions\n", text, msg.Done, msg.Partitions)
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(msg.Partitions,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(text),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("partitions"),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }))
	}
	p.bar.Describe(text)
	_ = p.bar.Set(msg.Done)
}
