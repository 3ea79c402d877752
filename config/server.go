package config

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/policy"
)

// This file decodes and checks the server section: the settings of the
// execgate binary's serve command (its stdio principal, and the bearer
// tokens of its HTTP API, and how many commands it runs at once). The
// library itself never reads them.

// maxTokens bounds each of the tokens and approvers lists.
const maxTokens = 1000

// DefaultMaxConcurrent is server.max_concurrent when the file does not
// set it: a fixed number, not one derived from the machine, so that a
// file means the same wherever it is served. The commands an agent runs
// mostly wait on files and networks, and each holds at most two output
// buffers (tools' max_output), so 64 is far from what a server can hold,
// and still a bound.
const DefaultMaxConcurrent = 64

// DefaultMaxConcurrentPerPrincipal is server.max_concurrent_per_principal
// when the file does not set it, for a server that runs total commands at
// once: half of them (at least 1), so that one caller cannot take every
// slot from the others.
func DefaultMaxConcurrentPerPrincipal(total int) int {
	return max(1, total/2)
}

// MaxConcurrentLimit is the largest server.max_concurrent and
// server.max_concurrent_per_principal accepted.
const MaxConcurrentLimit = 10000

// MaxQueueWaitLimit is the largest server.max_queue_wait accepted: a call
// waiting for a slot holds its connection, and the client's patience is
// shorter than that.
const MaxQueueWaitLimit = time.Minute

// MaxApprovalWaitLimit is the largest server.approval_wait accepted: the
// lifetime of the approvals serve issues (execgate.DefaultApprovalTTL),
// past which no decision can come.
const MaxApprovalWaitLimit = execgate.DefaultApprovalTTL

// MaxPendingLimit is the largest server.max_pending_per_principal
// accepted: the capacity of serve's approval store
// (execgate.DefaultStoreCapacity).
const MaxPendingLimit = execgate.DefaultStoreCapacity

// MaxPendingBytesLimit is the largest server.max_pending_bytes_per_principal
// accepted: the byte budget of serve's approval store
// (execgate.DefaultStoreMaxBytes).
const MaxPendingBytesLimit = execgate.DefaultStoreMaxBytes

// DefaultMaxGrant is server.max_grant when the file does not set it: the
// longest grant an approver may give with an approval.
const DefaultMaxGrant = time.Hour

// MaxGrantLimit is the largest server.max_grant accepted: the longest
// grant the policy engine of a loaded file holds
// (policy.DefaultMaxGrantDuration).
const MaxGrantLimit = policy.DefaultMaxGrantDuration

// Server is the server section of a configuration: who the execgate
// binary's serve command says its callers are. Tokens are identified by
// their SHA-256 only; the file never holds a token itself.
type Server struct {
	// Principal is the principal of every call that arrives over MCP on
	// stdio, which carries no caller identity, and of execgate run. ""
	// when the section does not set it.
	Principal string

	// Tokens are the bearer tokens of the HTTP API's callers (agents):
	// each may list tools and call them as its principal. They cannot
	// approve.
	Tokens []Token

	// Approvers are the bearer tokens of the people or systems that list,
	// approve and reject pending approvals over the HTTP API. They cannot
	// call tools. No token and no principal is both a caller and an
	// approver.
	Approvers []Token

	// MaxConcurrent is server.max_concurrent: how many commands serve
	// runs at once, in all (execgate.Config.MaxConcurrent). It is
	// [DefaultMaxConcurrent] when the file does not set it, and at least 1.
	MaxConcurrent int

	// MaxConcurrentPerPrincipal is server.max_concurrent_per_principal:
	// how many commands one principal runs at once
	// (execgate.Config.MaxConcurrentPerPrincipal). It is
	// DefaultMaxConcurrentPerPrincipal(MaxConcurrent) when the file does
	// not set it, and from 1 to MaxConcurrent.
	MaxConcurrentPerPrincipal int

	// MaxQueueWait is server.max_queue_wait: how long a call over a bound
	// waits for a slot before it is refused (execgate.Config.MaxQueueWait).
	// Zero, when the file does not set it, refuses it at once.
	MaxQueueWait time.Duration

	// MaxPendingPerPrincipal is server.max_pending_per_principal: how many
	// pending approvals one principal may hold in serve's approval store,
	// from 1 to [MaxPendingLimit]
	// (execgate.MemoryStoreOptions.PerPrincipalCapacity). Zero, when the
	// file does not set it, is the store's default, a quarter of its
	// capacity.
	MaxPendingPerPrincipal int

	// MaxPendingBytesPerPrincipal is server.max_pending_bytes_per_principal:
	// how many bytes of inputs, arguments, reasons and salts one
	// principal's pending approvals may hold in serve's approval store
	// (execgate.Record.Bytes), a size from 1B
	// to [MaxPendingBytesLimit]
	// (execgate.MemoryStoreOptions.PerPrincipalMaxBytes). Zero, when the
	// file does not set it, is the store's default, a quarter of its byte
	// budget.
	MaxPendingBytesPerPrincipal int64

	// MCPHTTPElicitation is server.mcp_http_elicitation: whether a client
	// of MCP over Streamable HTTP (serve --mcp-http) may approve a call
	// held for approval by answering an elicitation. False, when the file
	// does not set it, leaves every such call pending for the approvers:
	// over HTTP the client may be the agent itself, which would answer
	// its own question.
	MCPHTTPElicitation bool

	// ApprovalWait is server.approval_wait: how long a call over MCP that
	// serve leaves pending for the approvers waits for their decision
	// before it answers pending (mcpserver.Options.ApprovalWait), with
	// notifications/progress meanwhile for a client that asked for
	// progress. Zero, when the file does not set it, answers pending at
	// once.
	ApprovalWait time.Duration

	// MaxGrant is server.max_grant: the longest grant an approver may give
	// the principal of a call in the same decision that approves it
	// (serve's POST /v1/approvals/{id} with a grant), from 0s to
	// [MaxGrantLimit]. It is [DefaultMaxGrant] when the file does not set
	// it; zero turns grants made with approvals off.
	MaxGrant time.Duration

	// Notify is server.notify: the webhooks serve tells of pending
	// approvals and of decisions, in file order; empty when the file
	// lists none.
	Notify []Notify

	// ApprovalStore is server.approval_store: where serve keeps pending
	// approvals, decisions and the Results of approved calls; the memory
	// store when the file does not set it.
	ApprovalStore ApprovalStore

	// AuditStore is server.audit_store: the PostgreSQL table serve
	// appends every call's audit entries to, beside the file of --audit,
	// if any; no table when the file does not set it.
	AuditStore AuditStore

	// Line is the line of the server key in the file.
	Line int
}

// Token is one bearer token of the server section.
type Token struct {
	// Principal is who a request bearing the token is.
	Principal string
	// SHA256 is the lowercase hex SHA-256 of the token, 64 digits.
	// Compare the SHA-256 of a presented token with it in constant time.
	SHA256 string
	// Line is the line of the entry in the file.
	Line int
}

// serverDoc is the raw server section.
type serverDoc struct {
	node      *yaml.Node
	path      string
	ok        bool
	principal val[string]
	tokens    []*tokenDoc
	approvers []*tokenDoc
	tokensKey *yaml.Node
	apprKey   *yaml.Node

	maxConcurrent, maxPerPrincipal val[int64]
	maxQueueWait                   val[time.Duration]
	maxPending                     val[int64]
	maxPendingBytes                val[int]
	mcpHTTPElicitation             val[bool]
	approvalWait                   val[time.Duration]
	maxGrant                       val[time.Duration]
	notify                         []*notifyDoc
	notifyKey                      *yaml.Node
	approvalStore                  *approvalStoreDoc
	auditStore                     *approvalStoreDoc
}

// tokenDoc is one entry of the tokens or approvers list.
type tokenDoc struct {
	node            *yaml.Node
	path            string
	ok              bool
	keys            map[string]bool
	principal, hash val[string]
}

// server decodes the server mapping.
func (d *decoder) server(n *yaml.Node, path string) *serverDoc {
	s := &serverDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode}
	list := func(dst *[]*tokenDoc, key **yaml.Node) handler {
		return func(k, v *yaml.Node, p string) {
			*key = k
			d.list(v, p, func(_ int, e *yaml.Node, ep string) {
				*dst = append(*dst, d.token(e, ep))
			})
		}
	}
	d.mapping(n, path, fields{handlers: map[string]handler{
		"principal": d.str(&s.principal),
		"tokens":    list(&s.tokens, &s.tokensKey),
		"approvers": list(&s.approvers, &s.apprKey),

		"max_concurrent":               d.integer(&s.maxConcurrent),
		"max_concurrent_per_principal": d.integer(&s.maxPerPrincipal),
		"max_queue_wait":               d.duration(&s.maxQueueWait, true),

		"max_pending_per_principal":       d.integer(&s.maxPending),
		"max_pending_bytes_per_principal": d.size(&s.maxPendingBytes),

		"mcp_http_elicitation": d.boolean(&s.mcpHTTPElicitation),
		"approval_wait":        d.duration(&s.approvalWait, true),
		"max_grant":            d.duration(&s.maxGrant, true),

		"approval_store": func(k, v *yaml.Node, p string) { s.approvalStore = d.approvalStore(k, v, p) },
		"audit_store":    func(k, v *yaml.Node, p string) { s.auditStore = d.approvalStore(k, v, p) },

		"notify": func(k, v *yaml.Node, p string) {
			s.notifyKey = k
			d.list(v, p, func(_ int, e *yaml.Node, ep string) {
				s.notify = append(s.notify, d.notify(e, ep))
			})
		},
	}})
	return s
}

// token decodes one entry of the tokens or approvers list.
func (d *decoder) token(n *yaml.Node, path string) *tokenDoc {
	t := &tokenDoc{node: n, path: path, ok: n.Kind == yaml.MappingNode}
	t.keys = d.mapping(n, path, fields{handlers: map[string]handler{
		"principal": d.str(&t.principal),
		"sha256":    d.str(&t.hash),
	}})
	return t
}

// serverSection checks the server section and returns it, or nil when
// the file has none.
func (b *builder) serverSection(doc *serverDoc, key *yaml.Node) *Server {
	if doc == nil || !doc.ok {
		return nil // absent, or not a mapping (already reported)
	}
	srv := &Server{Line: key.Line}
	if doc.principal.set {
		if msg := principalProblem(doc.principal.v); msg != "" {
			b.add(doc.principal.node, doc.principal.path, "%s", msg)
		} else {
			srv.Principal = doc.principal.v
		}
	}
	hashes := make(map[string]*tokenDoc)
	roles := make(map[string]string) // principal -> "tokens" or "approvers"
	check := func(list []*tokenDoc, listKey *yaml.Node, role string) []Token {
		if len(list) > maxTokens {
			b.add(listKey, keyPath(doc.path, role), "lists %d tokens; at most %d are allowed", len(list), maxTokens)
			return nil
		}
		var out []Token
		for _, t := range list {
			if !t.ok {
				continue // already reported
			}
			good := true
			b.required(t.node, t.path, t.keys, "principal", "who a request bearing this token is, such as ci-bot")
			if t.principal.set {
				if msg := principalProblem(t.principal.v); msg != "" {
					b.add(t.principal.node, t.principal.path, "%s", msg)
					good = false
				} else if other, seen := roles[t.principal.v]; seen && other != role {
					b.add(t.principal.node, t.principal.path, "%s is listed under both tokens and approvers; give the caller and the approver different principals, so that no one approves their own calls", quote(t.principal.v))
					good = false
				} else {
					roles[t.principal.v] = role
				}
			} else {
				good = false
			}
			b.required(t.node, t.path, t.keys, "sha256", "the hex SHA-256 of the token, 64 digits (execgate token prints a new token and its hash); never the token itself")
			sum := strings.ToLower(t.hash.v)
			if t.hash.set {
				// The value may be a token pasted by mistake: never repeat it.
				if !sha256Re.MatchString(t.hash.v) {
					b.add(t.hash.node, t.hash.path, "must be the token's SHA-256 as 64 hex digits, never the token itself (execgate token prints a new token and its hash)")
					good = false
				} else if first, dup := hashes[sum]; dup {
					b.add(t.hash.node, t.hash.path, "the same token is already listed at line %d; every token names one principal, in one role", first.node.Line)
					good = false
				} else {
					hashes[sum] = t
				}
			} else {
				good = false
			}
			if good {
				out = append(out, Token{Principal: t.principal.v, SHA256: sum, Line: t.node.Line})
			}
		}
		return out
	}
	srv.Tokens = check(doc.tokens, doc.tokensKey, "tokens")
	srv.Approvers = check(doc.approvers, doc.apprKey, "approvers")
	srv.MCPHTTPElicitation = doc.mcpHTTPElicitation.v
	b.serverLimits(doc, srv)
	srv.Notify = b.notifyList(doc)
	srv.ApprovalStore = b.checkApprovalStore(doc.approvalStore)
	srv.AuditStore = b.checkAuditStore(doc.auditStore)
	return srv
}

// serverLimits checks the concurrency bounds of the server section and
// puts them, or their defaults, in srv.
func (b *builder) serverLimits(doc *serverDoc, srv *Server) {
	bound := func(f val[int64]) (int, bool) {
		switch {
		case !f.set:
			return 0, false
		case f.v < 1:
			b.add(f.node, f.path, "must be at least 1: every server bounds the commands it runs at once; leave the key out for the default")
		case f.v > MaxConcurrentLimit:
			b.add(f.node, f.path, "is at most %d", MaxConcurrentLimit)
		default:
			return int(f.v), true
		}
		return 0, false
	}
	srv.MaxConcurrent = DefaultMaxConcurrent
	total, totalSet := bound(doc.maxConcurrent)
	if totalSet {
		srv.MaxConcurrent = total
	}
	srv.MaxConcurrentPerPrincipal = DefaultMaxConcurrentPerPrincipal(srv.MaxConcurrent)
	if per, ok := bound(doc.maxPerPrincipal); ok {
		if per > srv.MaxConcurrent {
			what := fmt.Sprintf("the default max_concurrent, %d", DefaultMaxConcurrent)
			if totalSet {
				what = fmt.Sprintf("max_concurrent, %d", total)
			}
			b.add(doc.maxPerPrincipal.node, doc.maxPerPrincipal.path, "%d is more than %s: no principal can run more than the server does", per, what)
		} else {
			srv.MaxConcurrentPerPrincipal = per
		}
	}
	if w := doc.maxQueueWait; w.set {
		if w.v > MaxQueueWaitLimit {
			b.add(w.node, w.path, "is at most %s: a waiting call holds its connection", MaxQueueWaitLimit)
		} else {
			srv.MaxQueueWait = w.v
		}
	}
	if w := doc.approvalWait; w.set {
		if w.v > MaxApprovalWaitLimit {
			b.add(w.node, w.path, "is at most %s, the lifetime of an approval: no decision comes after it", MaxApprovalWaitLimit)
		} else {
			srv.ApprovalWait = w.v
		}
	}
	srv.MaxGrant = DefaultMaxGrant
	if g := doc.maxGrant; g.set {
		if g.v > MaxGrantLimit {
			b.add(g.node, g.path, "is at most %s, the longest grant the policy engine holds; write 0s to let approvers make no grants", MaxGrantLimit)
		} else {
			srv.MaxGrant = g.v
		}
	}
	b.pendingQuotas(doc, srv)
}

// pendingQuotas checks the quotas per principal of serve's approval store
// and puts them in srv; zero, when the file sets none, is the store's
// default.
func (b *builder) pendingQuotas(doc *serverDoc, srv *Server) {
	if f := doc.maxPending; f.set {
		if f.v < 1 || f.v > MaxPendingLimit {
			b.add(f.node, f.path, "must be from 1 to %d, the capacity of the approval store; leave the key out for a quarter of it", MaxPendingLimit)
		} else {
			srv.MaxPendingPerPrincipal = int(f.v)
		}
	}
	if f := doc.maxPendingBytes; f.set {
		if int64(f.v) > MaxPendingBytesLimit {
			b.add(f.node, f.path, "is at most %d bytes (64MiB), the byte budget of the approval store; leave the key out for a quarter of it", int64(MaxPendingBytesLimit))
		} else {
			srv.MaxPendingBytesPerPrincipal = int64(f.v)
		}
	}
}

// principalProblem says what is wrong with a principal, or "": the
// Executor's rule for principals (inputrules.PrincipalProblem), and a
// principal named in a file is never the unknown one, "".
func principalProblem(p string) string {
	if p == "" {
		return "must not be empty"
	}
	return inputrules.PrincipalProblem(p)
}
