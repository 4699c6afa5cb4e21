package slurm

import (
	"context"
	"fmt"
	"os/user"
	"strings"
	"time"
)

// Submit submits the spec's batch script with sbatch and returns the job's
// ID. The job's name is Spec.Name as it is (Run adds the attempt). When
// sbatch gets no answer from slurmctld, the submission may still have
// happened: Submit looks for a job of that name before it tries again, so
// that it never submits one spec twice.
func (c *Client) Submit(ctx context.Context, s Spec) (string, error) {
	script, err := Script(s)
	if err != nil {
		return "", err
	}
	var id string
	tried := false
	err = c.patiently(ctx, "submit "+s.Name, func() error {
		if tried {
			// The last sbatch got no answer, which does not say that
			// the job was not submitted.
			found, err := c.byName(ctx, s.Name)
			if err != nil || found != "" {
				id = found
				return err
			}
		}
		tried = true
		out, err := c.command(ctx, script, "sbatch", "--parsable")
		if err != nil {
			return err
		}
		id, _, _ = strings.Cut(strings.TrimSpace(string(out)), ";")
		if jobNumber(id) <= 0 {
			return fmt.Errorf("sbatch answered %q, not a job ID", out)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("submit job %s: %w", s.Name, err)
	}
	return id, nil
}

// byName returns the ID of the current user's newest job called name, ""
// when there is none.
func (c *Client) byName(ctx context.Context, name string) (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	out, err := c.command(ctx, nil, "squeue", "--noheader", "--states=all", "--user="+u.Username, "--name="+name, "--Format="+squeueFields)
	if err != nil {
		return "", err
	}
	infos, err := parseSqueue(out)
	if err != nil {
		return "", err
	}
	id := ""
	for _, in := range infos {
		if in.Name == name && jobNumber(in.ID) > jobNumber(id) {
			id = in.ID
		}
	}
	return id, nil
}

// Cancel cancels the job with scancel. A job that has ended already is no
// error.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if _, err := c.command(ctx, nil, "scancel", id); err != nil {
		return fmt.Errorf("cancel job %s: %w", id, err)
	}
	return nil
}

// Wait looks at the job until it ends and returns what Slurm says of it
// then. onChange, when not nil, sees the job each time its state or reason
// changes (pending for resources, running on a node). Wait does not cancel
// the job when ctx ends; Run does. A slurmctld that does not answer is
// waited for up to Client.Outage.
func (c *Client) Wait(ctx context.Context, id string, onChange func(Info)) (Info, error) {
	first := 250 * time.Millisecond
	wait := first
	answered := time.Now()
	var prev Info
	for {
		in, err := c.Info(ctx, id)
		switch {
		case err == nil:
			answered = time.Now()
			if in.State.Ended() {
				return in, nil
			}
			if onChange != nil && (in.State != prev.State || in.Reason != prev.Reason || in.Node != prev.Node) {
				onChange(in)
			}
			if in.State != prev.State {
				wait = first
			}
			prev = in
		case ctx.Err() != nil:
			return prev, ctx.Err()
		case Transient(err) && time.Since(answered) < c.outage():
			c.log().Warn("slurm: no answer about a job; trying again", "job", id, "err", err)
		default:
			return prev, fmt.Errorf("follow job %s: %w", id, err)
		}
		if err := sleep(ctx, wait); err != nil {
			return prev, err
		}
		wait = min(wait*3/2, c.poll())
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// resubmitWithin is how far back Run asks the accounting database for
// attempts of a spec that slurmctld has forgotten.
const resubmitWithin = 30 * 24 * time.Hour

// Run runs the spec as a job and follows it to its end, as the package doc
// describes: it follows an attempt already submitted by an earlier
// process, resubmits once when the node failed the job, and cancels the
// job when ctx ends. onChange, when not nil, sees each change of the job's
// state (see Wait).
//
// The error is nil whenever the job's end is known, whatever it is; it is
// not nil when the job could not be submitted, when Slurm would not say
// how it ended, or when ctx ended (the Result then says whether the cancel
// was confirmed).
func (c *Client) Run(ctx context.Context, s Spec, onChange func(Info)) (Result, error) {
	if _, err := Script(s); err != nil {
		return Result{}, err
	}
	var found []Info
	err := c.patiently(ctx, "find the jobs of "+s.Name, func() (err error) {
		found, err = c.Find(ctx, s.Name, resubmitWithin)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	var attempts []Info
	for _, in := range found {
		if in.State.Ended() {
			attempts = append(attempts, in)
			continue
		}
		// An attempt still in Slurm's hands: a process before this one
		// submitted it. Follow it rather than submit another.
		c.log().Info("slurm: following a job submitted before", "job", in.ID, "name", in.Name, "state", in.State)
		end, err := c.follow(ctx, in.ID, in.Name, onChange)
		attempts = append(attempts, end)
		if err != nil {
			return result(ctx, s, attempts), err
		}
	}
	for len(attempts) == 0 || (attempts[len(attempts)-1].State.nodeFault() && len(attempts) < 2) {
		if n := len(attempts); n > 0 {
			c.log().Warn("slurm: the node failed the job; submitting it once more", "job", attempts[n-1].ID, "state", attempts[n-1].State, "node", attempts[n-1].Node)
		}
		a := s
		a.Name = attemptName(s.Name, len(attempts)+1)
		id, err := c.Submit(ctx, a)
		if err != nil {
			if ctx.Err() != nil {
				// sbatch was stopped: a job may exist that nobody
				// follows. Cancel it if it does.
				c.cancelByName(a.Name)
			}
			return result(ctx, s, attempts), err
		}
		c.log().Info("slurm: submitted", "job", id, "name", a.Name)
		end, err := c.follow(ctx, id, a.Name, onChange)
		attempts = append(attempts, end)
		if err != nil {
			return result(ctx, s, attempts), err
		}
	}
	return result(ctx, s, attempts), nil
}

// follow waits for the job to end; when ctx ends first, it cancels the job
// and waits a little for Slurm to confirm.
func (c *Client) follow(ctx context.Context, id, name string, onChange func(Info)) (Info, error) {
	in, err := c.Wait(ctx, id, onChange)
	in.ID, in.Name = id, name
	if err == nil || ctx.Err() == nil {
		return in, err
	}
	cause := context.Cause(ctx)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	c.log().Info("slurm: cancelling", "job", id, "cause", cause)
	if cerr := c.patiently(cctx, "cancel job "+id, func() error { return c.Cancel(cctx, id) }); cerr != nil {
		return in, fmt.Errorf("%w; the job may still run: %w", cause, cerr)
	}
	// Slurm's word on the end, when it comes in time; without it the
	// Result says that the cancel is not confirmed.
	if end, werr := c.Wait(cctx, id, nil); werr == nil {
		in = end
	}
	return in, cause
}

// cancelByName cancels the job called name, if there is one; for a
// submission that was interrupted.
func (c *Client) cancelByName(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if id, err := c.byName(ctx, name); err == nil && id != "" {
		if err := c.Cancel(ctx, id); err != nil {
			c.log().Warn("slurm: an interrupted submission left a job", "job", id, "err", err)
		}
	}
}

// result puts the attempts together.
func result(ctx context.Context, s Spec, attempts []Info) Result {
	r := Result{Attempts: attempts, Cancelled: ctx.Err() != nil}
	if len(attempts) > 0 {
		r.Info = attempts[len(attempts)-1]
		r.Said = slurmSaid(s, r.Info)
	}
	said := strings.ToLower(r.Said)
	r.MemoryExceeded = r.State == OutOfMemory ||
		(r.State == Failed && (strings.Contains(said, "memory limit") || strings.Contains(said, "oom")))
	r.Message = describe(r)
	return r
}
