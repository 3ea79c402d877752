// Package policy decides who may run which allowlisted command. Its [Engine]
// implements execgate.Policy with named policies chosen by principal,
// ordered rules over command names, temporary grants that waive an
// approval, and rate limits.
//
// The allowlist says what can ever run; the Engine says which principal
// may run it now, and whether a person must approve first. Build an Engine
// with [New] and give it to the Executor; name the caller with
// execgate.WithPrincipal:
//
//	eng, err := policy.New([]policy.Policy{
//		{Name: "ci", Principal: "ci-bot", Rules: []policy.Rule{
//			{Tools: []string{"git.*", "go.test"}, Action: execgate.ActionAllow},
//		}},
//		{Name: "agents", Principal: "agent-*", Rules: []policy.Rule{
//			{Name: "no-destroy", Tools: []string{"terraform.destroy"}, Action: execgate.ActionDeny},
//			{Tools: []string{"terraform.*", "kubectl.delete*"}, Action: execgate.ActionRequireApproval},
//			{Tools: []string{"*"}, Action: execgate.ActionAllow},
//		}, RateLimit: policy.RateLimit{PerMinute: 30, Loop: policy.Loop{Max: 3, Window: 10 * time.Minute}}},
//	}, policy.Options{})
//	if err != nil {
//		return err // *policy.ConfigError: a typo never becomes an allow
//	}
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: allow, Policy: eng})
//	...
//	res, err := x.Run(execgate.WithPrincipal(ctx, "agent-7"), "git.log", input)
//
// # How a call is decided
//
// Decisions are made on the principal of the request and the requested
// name (execgate.Request.Name), never on the name of the spec that serves
// it: a rule denying "terraform.destroy" holds even when a "terraform"
// dispatcher would serve that name. Step by step:
//
//  1. The policy is chosen by principal. A policy whose Principal is
//     exactly the principal wins. Otherwise, among the glob patterns that
//     match, the one with the longest literal prefix (the characters
//     before its first '*' or '?') wins, and between equal prefixes the
//     one declared first. Otherwise the policy whose Principal is "*"
//     governs, which includes calls that carry no principal. When no
//     policy matches, the call is denied with Rule "default" (DefaultRule).
//  2. Within that policy, and only that one, the first rule with a Tools
//     pattern matching the name decides. When no rule matches, the call is
//     denied with Rule "<policy>/default".
//  3. A deny is final. A require_approval becomes an allow when an
//     unexpired grant covers the principal and the name; the Decision's
//     Grant then names the grant.
//  4. An allow, from a rule or a grant, is checked against the policy's
//     RateLimit. Over a limit, the call gets ActionRateLimited, which the
//     Executor refuses with a *execgate.PolicyError.
//
// Decision.Rule names what decided: "<policy>/<rule>", where <rule> is the
// rule's Name or its 1-based position in [Policy.Rules] ("ops/2"), or
// "<policy>/rate_limit.loop", "<policy>/rate_limit.budget" and
// "<policy>/rate_limit.per_minute" for rate-limit refusals. Decide never
// returns an error.
//
// A spec's Floor (execgate.CommandSpec.Floor) is applied by the Executor
// after the Engine's decision and can only make it stricter: an Engine
// allow on a spec whose Floor is require_approval still needs an approval,
// and a Floor of allow never loosens an Engine deny.
//
// # Patterns
//
// Principal and tool patterns match whole strings, case-sensitively. '*'
// matches any run of characters, dots included, so "gh.*" matches
// "gh.pr" and "gh.pr.create", and "kubectl.delete*" matches
// "kubectl.delete" and "kubectl.delete-all"; '?' matches exactly one
// character. There are no character classes or escapes. A tool pattern
// may hold only the characters of a command name and the two wildcards;
// a principal pattern may hold any printable character but white space
// and the reserved '[', ']', '{', '}' and '\'. "**" is refused, because a
// single '*' already crosses dots. Any pattern that breaks these rules,
// an unknown or missing action, and a duplicate policy name or principal
// pattern make New and Swap fail with a [*ConfigError] whose Path names the
// offending value; nothing is ever silently allowed.
//
// # Grants
//
// [Grant] lets a person waive approvals for a while: a principal pattern, a
// tool pattern and an expiry at most [Options.MaxGrantDuration] (default 24
// hours) away. A grant only turns require_approval into allow: it never
// overturns a deny, never applies where no rule matched, and the allowed
// call still counts against rate limits. When several grants cover a
// call, the oldest decides. A grant stops applying at its expiry, judged
// with [Options.Now], and is pruned then; Revoke ends it earlier. At most
// [Options.MaxGrants] grants are live at once.
//
// A grant with Exact set names a principal and a command instead of
// patterns: it covers that principal calling that name, whatever
// characters they hold, and nothing else. That is the grant to make when a
// person approves a call and, in the same decision, lets its principal
// make the same call again for a while (the execgate binary's
// POST /v1/approvals/{id} with a grant does): it never covers a principal
// or a subcommand the person did not see. GrantedBy and Approval say who
// made it and with which approval, for whoever reads [Engine.Grants].
//
// # What a principal may run
//
// [Engine.MayRun] and [Engine.MayServe] answer, without a call, whether
// a principal could have any call of a name (or any name a dispatcher
// serves) allowed or held for approval, so that a server lists to each
// caller only the tools it could use. Since rules match names only, a
// name whose first matching rule denies, or that no rule matches, is
// denied to the principal whatever the arguments; a grant never changes
// the answer, since it only turns a require_approval into an allow, and
// neither does a rate limit, which refuses a call for a while. For a
// dispatcher, MayServe errs towards true when its rules' patterns make
// it unsure.
//
// # Rate limits
//
// A policy's [RateLimit] has three independent limits: a per-principal
// token bucket (PerMinute, Burst), a Budget shared by all the policy's
// principals per fixed BudgetWindow (or for good, without a window), and
// [Loop], which refuses a principal that makes the same call (same name,
// argv and stdin) more than [Loop.Max] times within [Loop.Window]. Time comes
// from Options.Now only, so tests drive the limits with a fake clock.
//
// Buckets and loop history belong to the principal, not to the policy:
// calls that carry no principal all share the bucket of the empty
// principal, so give every caller its own principal when limits matter.
//
// Limits count the calls that would go ahead: calls the Engine allows, on
// Run, Submit and Propose, and calls that require an approval, on Propose
// and on Submit (Request.ProposeIfHeld), since every one of them holds a
// pending approval and asks a person's time. A submitted call is asked
// about once, and so counted once.
// Denied calls run nothing and are not counted; a call refused by a limit
// is counted by no limit, so a principal stuck in a loop is refused until
// its oldest repeat leaves the window. The Executor asks the Engine again
// on Execute (Request.Op); limits do not apply there, so a proposed call is
// counted once and an approval a person gave is never refused for a limit.
//
// Memory stays bounded whatever the number of principals: the Engine
// remembers at most [Options.MaxPrincipals] per-minute buckets and
// [Options.MaxLoopEntries] distinct calls, forgetting the least recently
// used; at most Loop.Max times (up to [MaxLoop]) per call; and one budget
// per policy. A forgotten bucket is full again when its principal
// returns, so MaxPrincipals should exceed the number of principals active
// within a minute. Policies without a RateLimit keep no state at all.
//
// # Hot reload
//
// Swap compiles new policies and replaces the old ones atomically; the
// next decision uses them, and Decide holds no lock while it matches
// rules, so decisions and swaps may run concurrently. Invalid policies
// leave the ones in force. Grants survive a swap, as does rate-limit
// state: buckets take the new rates but keep their tokens, budgets are
// kept by policy name, and loop history by call.
//
// # Configuration files
//
// [Policy], [Rule], RateLimit, Loop and Grant carry yaml tags with the keys of
// a configuration file, one key per field:
//
//	policies:
//	  - name: agents
//	    principal: "agent-*"
//	    rules:
//	      - {name: no-destroy, tools: [terraform.destroy], action: deny}
//	      - {tools: ["terraform.*", "kubectl.delete*"], action: require_approval}
//	      - {tools: ["*"], action: allow}
//	    rate_limit:
//	      per_minute: 30
//	      burst: 10
//	      budget: 1000
//	      budget_window: 24h
//	      loop: {max: 3, window: 10m}
//	grants:
//	  - principal: agent-7
//	    tool: "terraform.plan"
//	    expires: 2030-01-02T15:04:05Z
//	    reason: incident 4711
//
// The policies list goes to New or Swap; each grant to [Engine.Grant]. A
// *ConfigError's Path uses the same keys, with "grant." for the fields of
// one grant, so a loader can point at the offending line.
package policy
