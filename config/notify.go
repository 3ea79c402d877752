package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file decodes and checks server.notify: the webhooks the execgate
// binary's serve tells of approvals. The file names each webhook's key
// by the environment variable that holds it, never the key itself, and
// no message about a url or a secret_env repeats its value: a webhook's
// address may itself hold a secret (many chat services put one in the
// path), and a secret_env may be a key pasted by mistake.

// The events a webhook can be told of (Notify.Events).
const (
	// NotifyPending is an approval that waits for the approvers.
	NotifyPending = "pending"
	// NotifyDecided is an approver's decision on one, and what came of
	// it.
	NotifyDecided = "decided"
)

// notifyEvents are the events of server.notify, in the order Notify.Events
// lists them.
var notifyEvents = []string{NotifyPending, NotifyDecided}

// Bounds of server.notify.
const (
	// MaxNotify is how many webhooks server.notify may list.
	MaxNotify = 16
	// MaxNotifyURLBytes bounds a webhook's url.
	MaxNotifyURLBytes = 2048
	// DefaultNotifyTimeout is a webhook's timeout when its entry sets
	// none: how long one attempt to deliver a message may take.
	DefaultNotifyTimeout = 10 * time.Second
	// MaxNotifyTimeout is the largest timeout of a webhook accepted.
	MaxNotifyTimeout = time.Minute
)

// Notify is one entry of server.notify: a webhook that serve sends a
// signed JSON message when an approval is pending and when it is
// decided. The file holds the name of the environment variable with the
// signing key, never the key.
type Notify struct {
	// URL is where messages are posted: https, or http to a loopback
	// host (localhost, 127.0.0.0/8, ::1). It has a host, and no user,
	// password or fragment.
	URL string
	// SecretEnv is the name of the environment variable of serve's
	// process that holds the HMAC-SHA256 key messages are signed with.
	// No tool of the file inherits it (inherit_env).
	SecretEnv string
	// Events are the events the webhook is sent, NotifyPending and
	// NotifyDecided, in that order and each once; both when the entry
	// does not say.
	Events []string
	// Timeout bounds one attempt to deliver a message, from
	// connecting to reading the answer: DefaultNotifyTimeout when the
	// entry sets none, at most MaxNotifyTimeout.
	Timeout time.Duration
	// Line is the line of the entry in the file.
	Line int
}

// notifyDoc is one entry of server.notify.
type notifyDoc struct {
	node      *yaml.Node
	path      string
	ok        bool
	keys      map[string]bool
	url, env  val[string]
	events    []val[string]
	eventsKey *yaml.Node
	timeout   val[time.Duration]
}

// notify decodes one entry of server.notify.
func (d *decoder) notify(n *yaml.Node, path string) *notifyDoc {
	w := &notifyDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode}
	events := d.strings(&w.events)
	w.keys = d.mapping(n, path, fields{handlers: map[string]handler{
		"url":        d.str(&w.url),
		"secret_env": d.str(&w.env),
		"events": func(k, v *yaml.Node, p string) {
			w.eventsKey = v
			events(k, v, p)
		},
		"timeout": d.duration(&w.timeout, false),
	}})
	return w
}

// envNameRe is what a secret_env must look like: the name of a variable
// a shell can set. Anything else is more likely a key pasted in its
// place.
var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// notifyList checks the entries of server.notify and returns the good
// ones.
func (b *builder) notifyList(doc *serverDoc) []Notify {
	if len(doc.notify) > MaxNotify {
		b.add(doc.notifyKey, keyPath(doc.path, "notify"), "lists %d webhooks; at most %d are allowed", len(doc.notify), MaxNotify)
		return nil
	}
	inherited := b.inheritedEnv()
	urls := make(map[string]*notifyDoc)
	var out []Notify
	for _, w := range doc.notify {
		if !w.ok {
			continue // already reported
		}
		good := true
		b.required(w.node, w.path, w.keys, "url", "where the messages are posted, an https URL (http only to localhost)")
		b.required(w.node, w.path, w.keys, "secret_env", "the name of the environment variable that holds the webhook's signing key, such as EXECGATE_WEBHOOK_KEY; never the key itself")
		if !w.url.set || !w.env.set {
			good = false
		}
		if w.url.set {
			if msg := notifyURLProblem(w.url.v); msg != "" {
				b.add(w.url.node, w.url.path, "%s", msg)
				good = false
			} else if first, dup := urls[w.url.v]; dup {
				b.add(w.url.node, w.url.path, "the same url is already listed at line %d; list a webhook once, with every event it is sent", first.node.Line)
				good = false
			} else {
				urls[w.url.v] = w
			}
		}
		if w.env.set {
			if msg := b.secretEnvProblem(w.env.v, inherited); msg != "" {
				b.add(w.env.node, w.env.path, "%s", msg)
				good = false
			}
		}
		events, ok := b.notifyEvents(w)
		if !ok {
			good = false
		}
		timeout := DefaultNotifyTimeout
		if w.timeout.set {
			if w.timeout.v > MaxNotifyTimeout {
				b.add(w.timeout.node, w.timeout.path, "is at most %s: a receiver that takes longer holds up the messages behind it", MaxNotifyTimeout)
				good = false
			}
			timeout = w.timeout.v
		}
		if good {
			out = append(out, Notify{URL: w.url.v, SecretEnv: w.env.v, Events: events, Timeout: timeout, Line: w.node.Line})
		}
	}
	return out
}

// notifyEvents checks an entry's events and returns them in the order of
// notifyEvents; both when the entry has no events key.
func (b *builder) notifyEvents(w *notifyDoc) ([]string, bool) {
	if !w.keys["events"] {
		return notifyEvents, true
	}
	if w.eventsKey != nil && w.eventsKey.Kind == yaml.SequenceNode && len(w.eventsKey.Content) == 0 {
		b.add(w.eventsKey, keyPath(w.path, "events"), "lists no event; leave the key out to be sent both, pending and decided")
		return nil, false
	}
	want := make(map[string]*yaml.Node)
	good := len(w.events) > 0
	for _, e := range w.events {
		switch {
		case e.v != NotifyPending && e.v != NotifyDecided:
			b.add(e.node, e.path, "unknown event %s: the events are pending and decided", quote(e.v))
			good = false
		case want[e.v] != nil:
			b.add(e.node, e.path, "%s is listed twice (first at line %d)", quote(e.v), want[e.v].Line)
			good = false
		default:
			want[e.v] = e.node
		}
	}
	var out []string
	for _, e := range notifyEvents {
		if want[e] != nil {
			out = append(out, e)
		}
	}
	return out, good
}

// notifyURLProblem says what is wrong with a webhook's url, or "". The
// message never repeats the url.
func notifyURLProblem(s string) string {
	if len(s) > MaxNotifyURLBytes {
		return "is longer than 2048 bytes"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "must not hold white space or control characters"
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "must be an absolute URL, such as https://hooks.example.com/execgate"
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "must be an https URL (http only to localhost), such as https://hooks.example.com/execgate"
	case u.Host == "" || u.Hostname() == "":
		return "must name a host, such as https://hooks.example.com/execgate"
	case u.User != nil:
		return "must not hold a user or a password: the messages are signed with the key of secret_env, and a password in the file would be a secret in the file"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "must not hold a fragment (#...), which is never sent"
	case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
		return "must be https: a message to a host that is not loopback would cross the network in plain text, its signature and the approval it describes readable and replayable; use http only with localhost, 127.0.0.1 or ::1"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "has a port that is not a number from 1 to 65535"
		}
	}
	return ""
}

// IsLoopbackHost reports whether host certainly names this machine only:
// "localhost" (in any case) or a loopback address. It is the one rule for
// what may go without TLS: a webhook's http URL here, and the addresses
// execgate serve listens on without --tls-cert.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secretEnvProblem says what is wrong with a secret_env, or "". The
// message never repeats the value, which may be a key pasted in place of
// a name.
func (b *builder) secretEnvProblem(name string, inherited map[string]inheritedBy) string {
	if !envNameRe.MatchString(name) {
		return "must be the name of an environment variable, such as EXECGATE_WEBHOOK_KEY (letters, digits and _, not starting with a digit, at most 128), never the key itself"
	}
	if by, ok := inherited[name]; ok {
		return fmt.Sprintf("names a variable that inherit_env at line %d passes to %s: the commands an agent runs would hold the webhook's key; keep the key in a variable no tool inherits", by.line, by.what)
	}
	return ""
}

// inheritedBy says who inherits a variable, "every tool" or "the tool
// NAME", and at which line.
type inheritedBy struct {
	what string
	line int
}

// inheritedEnv returns the variables the file's defaults and tools
// inherit from the process (inherit_env), each with its first mention.
func (b *builder) inheritedEnv() map[string]inheritedBy {
	out := make(map[string]inheritedBy)
	note := func(list []val[string], what string) {
		for _, e := range list {
			if _, seen := out[e.v]; !seen && e.node != nil {
				out[e.v] = inheritedBy{what: what, line: e.node.Line}
			}
		}
	}
	note(b.doc.defaults.inheritEnv, "every tool")
	for _, t := range b.doc.tools {
		if t.ok {
			note(t.inheritEnv, "the tool "+quote(t.name.v))
		}
	}
	return out
}
