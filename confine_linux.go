//go:build linux

package execgate

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/execgate/execgate/internal/confine"
)

// confinedStart is one confined call of [DefaultExecFn] being started: the
// helper's launch, whether the helper gets new user and network
// namespaces, and what is already known not to be applied.
type confinedStart struct {
	// req and exe are what the helper is given; launch is its start,
	// made by cold, or by a warm helper's handoff (see runWarm).
	req        confine.Request
	exe        *os.File
	launch     *confine.Launch
	ns         confine.Namespaces
	bestEffort bool
	unconfined []string

	// proxy is the call's egress proxy when its Confinement has an
	// Egress; proxyDone is closed once it has stopped serving.
	proxy     *egressProxy
	proxyDone chan struct{}
}

// namespacesFor returns the namespaces a confined call starts in: always
// a PID namespace, so that nothing the command starts outlives it, and a
// mount namespace, read-only but for the write paths, so that nothing
// outside them changes; a network namespace when it has no network; and
// a user namespace, which lets an ordinary user make the others (root
// needs none for the PID and mount namespaces alone).
func namespacesFor(c *Confinement) confine.Namespaces {
	ns := confine.Namespaces{Net: !c.Network, PID: true, Mount: true}
	ns.User = ns.Net || os.Geteuid() != 0
	return ns
}

// newConfinedStart prepares the helper's request from inv: the target's
// exact path, argv and environment, the Landlock rules (the spec's paths,
// Dir, and what the executable needs to start), the limits and the mode.
// exe, if not nil, is the pinned executable, which the helper executes
// through its descriptor.
func newConfinedStart(inv Invocation, exe *os.File) (*confinedStart, error) {
	c := inv.Confine
	env := inv.Env
	if env == nil {
		env = []string{}
	}
	var proxy *egressProxy
	if c.Egress != nil && !c.Network {
		rules, err := compileEgress(c.Egress)
		if err != nil {
			return nil, fmt.Errorf("execgate: cannot start %s: its egress list: %w", inv.Path, err)
		}
		proxy = newEgressProxy(rules)
		env = egressEnv(env)
	}
	req := confine.Request{
		Path:              inv.Path,
		Argv:              append([]string{inv.Path}, inv.Args...),
		Env:               env,
		ScopeAbstractUnix: true, // the network on or off: a host's abstract sockets are not the command's
		UnixSockets:       c.UnixSockets,
		Limits: confine.Limits{
			CPUSeconds:   uint64((c.Limits.CPU + time.Second - 1) / time.Second),
			AddressSpace: uint64(c.Limits.AddressSpace),
			Files:        uint64(c.Limits.Files),
			FileSize:     uint64(c.Limits.FileSize),
			Processes:    uint64(c.Limits.Processes),
		},
		BestEffort:     c.BestEffort,
		EgressListener: proxy != nil,
	}
	add := func(paths []string, a confine.Access) {
		for _, p := range paths {
			req.Rules = append(req.Rules, confine.Rule{Path: p, Access: a})
		}
	}
	read := confine.AccessReadFile | confine.AccessReadDir
	add(c.Read, read)
	add(c.Write, read|confine.AccessWrite)
	add(c.Exec, read|confine.AccessExecute)
	self := ""
	if exe != nil {
		self = "/proc/self/fd/" + strconv.Itoa(confine.ExecutableFD)
	}
	req.Rules = append(req.Rules, confine.ExecutableRules(inv.Path, exe, self)...)
	filters, err := confine.Filters(!c.UnixSockets)
	if err != nil {
		return nil, fmt.Errorf("execgate: cannot start %s confined: %w", inv.Path, err)
	}
	req.Filters = filters
	return &confinedStart{req: req, exe: exe, ns: namespacesFor(c), bestEffort: c.BestEffort, proxy: proxy}, nil
}

// cold prepares the start of a helper for this call alone, when no warm
// helper took it.
func (c *confinedStart) cold(inv Invocation) error {
	l, err := confine.NewLaunch(c.req, c.exe)
	if err != nil {
		return fmt.Errorf("execgate: cannot start %s: creating the confinement helper's pipes: %w", inv.Path, err)
	}
	c.launch = l
	return nil
}

// apply turns cmd, built for the target, into the start of the helper:
// the running program's own binary with the helper's argv, an empty
// environment, the request and status pipes (and the pinned executable),
// and its namespaces (see namespacesFor). Dir,
// stdin, stdout and stderr stay: the helper passes them on to the target.
func (c *confinedStart) apply(cmd *exec.Cmd) {
	cmd.Path = confine.HelperPath
	cmd.Args = c.launch.Args()
	cmd.Env = []string{}
	cmd.ExtraFiles = c.launch.Files()
	cmd.SysProcAttr = c.launch.SysProcAttr(c.ns)
}

// retry reports whether a start that failed should be tried again: once,
// without namespaces, for a best-effort confinement that asked for them
// (they are what most often fails), noting what that leaves: the network
// shared, processes that may outlive the call.
//
// A call with an egress list is never retried: without its network
// namespace the command would have the caller's whole network, with the
// proxy variables pointing at whatever listens on the caller's
// 127.0.0.1:3128.
func (c *confinedStart) retry() bool {
	if c.ns == (confine.Namespaces{}) || !c.bestEffort || c.proxy != nil {
		return false
	}
	if c.ns.Net {
		c.unconfined = append(c.unconfined, confine.UnappliedNetwork)
	}
	c.unconfined = append(c.unconfined, confine.UnappliedProcesses, confine.UnappliedMetadata)
	c.ns = confine.Namespaces{}
	return true
}

// startError describes a failed start of the helper.
func (c *confinedStart) startError(inv Invocation, err error) error {
	if c.ns != (confine.Namespaces{}) {
		if fi, serr := os.Stat(inv.Dir); inv.Dir == "" || serr == nil && fi.IsDir() {
			what := "a PID and mount namespace"
			switch {
			case c.ns.User && c.ns.Net:
				what = "a user, network, PID and mount namespace"
			case c.ns.User:
				what = "a user, PID and mount namespace"
			}
			return fmt.Errorf("execgate: cannot start %s confined: creating %s failed (are unprivileged user namespaces enabled? see user.max_user_namespaces; or set best_effort): %w", inv.Path, what, pathErrorCause(err))
		}
	}
	return fmt.Errorf("execgate: cannot start %s through the confinement helper %s: %w", inv.Path, confine.HelperPath, startErrorCause(inv, err))
}

// startErrorCause is startError's cause, naming the working directory when
// it is at fault.
func startErrorCause(inv Invocation, err error) error {
	if inv.Dir != "" {
		fi, serr := os.Stat(inv.Dir)
		if serr == nil && !fi.IsDir() {
			serr = syscall.ENOTDIR
		}
		if serr != nil {
			return fmt.Errorf("working directory %s: %w", inv.Dir, pathErrorCause(serr))
		}
	}
	return pathErrorCause(err)
}

// started is called once the helper runs.
//
// For a call with an egress proxy, it starts serving the listener the
// helper makes in the command's network namespace. The command may
// connect as soon as it runs: the kernel queues its connections on that
// listener until the proxy accepts them.
func (c *confinedStart) started() {
	c.launch.Started(c.ns)
	c.serveEgress()
}

// serveEgress starts the call's egress proxy, if it has one, on the
// listener the helper makes in the command's network namespace.
func (c *confinedStart) serveEgress() {
	if c.proxy == nil {
		return
	}
	c.proxyDone = make(chan struct{})
	go func() {
		defer close(c.proxyDone)
		l, err := c.launch.EgressListener()
		if err != nil || l == nil {
			return // the helper failed (its report says why), or had no network namespace
		}
		c.proxy.serve(l)
	}()
}

// finish merges what the helper reported into the Outcome of the process:
// a helper that failed, or ended before it executed the target, makes a
// spawn error (unless the call was killed first, for a timeout or a
// cancellation); otherwise the Outcome is the target's, with what was not
// applied.
//
// The egress proxy is stopped first, every connection through it closed
// (every process of the command has ended), and its record of them is
// the Outcome's Connections.
func (c *confinedStart) finish(inv Invocation, out Outcome) Outcome {
	if c.proxy != nil {
		out.Connections, out.ConnectionsDropped = c.proxy.close()
		if c.proxyDone != nil {
			<-c.proxyDone
		}
	}
	rep := c.launch.Wait()
	switch {
	case rep.Err != nil:
		return Outcome{ExitCode: -1, Stdout: out.Stdout, Stderr: out.Stderr,
			Err: fmt.Errorf("execgate: cannot start %s confined: %w", inv.Path, rep.Err)}
	case !rep.Ready:
		switch out.Termination {
		case TerminationTimeout, TerminationNoOutputTimeout, TerminationCanceled:
			return out
		}
		how := out.Signal
		if how == "" {
			how = "exit status " + strconv.Itoa(out.ExitCode)
		}
		return Outcome{ExitCode: -1, Stdout: out.Stdout, Stderr: out.Stderr,
			Err: fmt.Errorf("execgate: cannot start %s confined: the confinement helper ended before starting it (%s)", inv.Path, how)}
	}
	out.Unconfined = append(c.unconfined, rep.Unapplied...)
	return out
}

// close releases the launch.
func (c *confinedStart) close() {
	if c.launch != nil {
		c.launch.Close()
	}
}
