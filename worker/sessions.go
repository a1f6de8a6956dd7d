package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/proc"
)

// slotState is one slot: its GPU and the session of the warm engine it ran last.
//
// Policy: a slot holds at most one session. A job of another engine, warm or not, closes
// it first, since the slot's GPU memory is what the next engine needs, and an idle session
// holding a model on a GPU would crowd out a tool run there. Leasing prefers jobs for the
// models already loaded, so a busy slot keeps its session; only a change of engine, a
// crash, or shutdown ends it. Which models a session keeps among those of its own engine
// is the session's affair.
type slotState struct {
	index int
	gpu   string

	// session is read by loadedModels from other goroutines, so it is set and cleared
	// under Worker.mu; only the slot's goroutine changes it.
	session engine.Session
	engine  string // name of the session's engine
}

// session returns the slot's live session of eng, opening one when the slot has none, has
// one of another engine, or has one that died.
func (w *Worker) session(ctx context.Context, s *slotState, eng engine.Warm) (engine.Session, error) {
	if s.session != nil && s.engine == eng.Name() && s.session.Err() == nil {
		return s.session, nil
	}
	w.closeSession(s)
	dir, err := filepath.Abs(w.sessionDir(s, eng.Name()))
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sess, err := eng.Open(ctx, engine.Slot{GPU: s.gpu, Tools: w.cfg.Tools, Dir: dir,
		Start: func(c engine.Command) (engine.Process, error) {
			c.Env = w.processEnv(c.Env, dir, s.gpu)
			return proc.Start(dir, c)
		}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	w.mu.Lock()
	s.session, s.engine = sess, eng.Name()
	w.mu.Unlock()
	w.log.Info("session opened", "engine", eng.Name(), "slot", s.index, "gpu", s.gpu)
	return sess, nil
}

// closeSession closes the slot's session, if any, and removes its folder.
func (w *Worker) closeSession(s *slotState) {
	if s.session == nil {
		return
	}
	w.mu.Lock()
	sess, name := s.session, s.engine
	s.session, s.engine = nil, ""
	w.mu.Unlock()
	if err := sess.Close(); err != nil {
		w.log.Warn("closing a session", "engine", name, "slot", s.index, "error", err.Error())
	}
	os.RemoveAll(w.sessionDir(s, name))
	w.log.Info("session closed", "engine", name, "slot", s.index)
}

// sessionDir is the folder of the slot's session of an engine. It lies under WorkDir, so
// a restarted worker clears it and kills what a crashed run left running from it.
func (w *Worker) sessionDir(s *slotState, engineName string) string {
	return filepath.Join(w.cfg.WorkDir, fmt.Sprintf("session-%d-%s", s.index, engineName))
}

// loadedModels lists the models that the slots' sessions hold loaded now, as the sessions
// themselves report it.
func (w *Worker) loadedModels() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.slots {
		if s.session != nil {
			out = append(out, s.session.Loaded()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
