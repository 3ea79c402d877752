package flux7_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/config/flux7"
	"github.com/execgate/execgate/policy"
)

// convertCase is one conversion: a flux7 file and what must come of it.
type convertCase struct {
	name  string   // a sentence: what the case shows
	in    string   // the flux7 file
	kinds []string // ParseKind spellings given to the import

	// For a file that converts: text the output must hold and must not
	// hold, notes (in Note.String form) that must be among Result.Notes,
	// and Result.Floored (nil: anything).
	want, notWant, notes []string
	floored              []string

	// For a file that does not convert: the problems the error must
	// hold, each as the start of a line of the ErrorList.
	errs []string
}

var convertCases = []convertCase{
	// Modes.
	{
		name:    "A simple tool (bin alone) keeps its dispatcher and its default_action, and is not floored.",
		in:      "cli_tools:\n  - {name: gh, bin: /bin/echo, default_action: allow}\npolicies: []\n",
		want:    []string{"- name: gh # flux7 line 2", "default_action: allow"},
		notWant: []string{"commands:", "strict:", "TODO(flux7)", "floor-"},
		notes:   []string{`in.yaml:2:5: cli_tools[0]: the dispatcher of "gh" accepts no stdin; flux7's did`},
		floored: []string{},
	},
	{
		name:    "A simple tool without default_action stays without one, so its dispatcher denies as flux7's did.",
		in:      "cli_tools:\n  - {name: gh, bin: /bin/echo}\npolicies: []\n",
		notWant: []string{"default_action"},
		floored: []string{},
	},
	{
		name: "A fine-tuned tool (commands without strict) keeps its commands and dispatcher; a TODO raises default_action allow to human_approval.",
		in: `cli_tools:
  - name: terraform
    bin: /bin/echo
    default_action: allow
    commands:
      plan: {timeout: 120s}
policies:
  - {name: p, agent: a, rules: [{tools: ["terraform.*"], action: allow}]}
`,
		want:    []string{"default_action: human_approval", "      plan:\n        stdin: {}\n        timeout: 2m0s", "tools: [terraform.plan]\n        action: require_approval"},
		notWant: []string{"strict:"},
		notes:   []string{"in.yaml:4:21: cli_tools[0].default_action: default_action allow is raised to human_approval until the TODOs of \"terraform\" are done; then set it back"},
		floored: []string{"terraform", "terraform.plan"},
	},
	{
		name:    "A fine-tuned tool floored by flux7 at human_approval or deny keeps its default_action.",
		in:      "cli_tools:\n  - {name: t, bin: /bin/echo, default_action: deny, commands: {plan: {}}}\npolicies: []\n",
		want:    []string{"default_action: deny"},
		floored: []string{"t.plan"},
	},
	{
		name:    "A strict tool keeps only its declared commands, and its default_action, which does nothing there, is left out with a note.",
		in:      "cli_tools:\n  - {name: kubectl, bin: /bin/echo, strict: true, default_action: allow, commands: {get: {}}}\npolicies: []\n",
		want:    []string{"strict: true", "      get:\n        stdin: {}"},
		notWant: []string{"default_action:"},
		notes:   []string{"in.yaml:2:67: cli_tools[0].default_action: default_action is left out: it has no effect on a strict tool"},
		floored: []string{"kubectl.get"},
	},
	{
		name:    "A bare tool becomes <tool>.run, takes its timeout, and loses its default_action with a note.",
		in:      "cli_tools:\n  - {name: play7, bin: /bin/echo, default_action: allow, bare: {timeout: 2m}}\npolicies: []\n",
		want:    []string{"bare:\n      stdin: {}\n      timeout: 2m0s"},
		notWant: []string{"default_action:", "commands:"},
		notes:   []string{"in.yaml:2:51: cli_tools[0].default_action: default_action is left out: it has no effect on a bare tool"},
		floored: []string{"play7.run"},
	},
	{
		name:    "An empty bare entry (bare:) is a bare tool too.",
		in:      "cli_tools:\n  - name: rg\n    bin: /bin/echo\n    bare:\npolicies: []\n",
		want:    []string{"bare:\n      stdin: {}"},
		floored: []string{"rg.run"},
	},
	{
		name:    "commands: {} without strict declares nothing, so the tool is simple.",
		in:      "cli_tools:\n  - {name: make, bin: /bin/echo, commands: {}}\npolicies: []\n",
		notWant: []string{"commands:"},
		notes:   []string{"in.yaml:2:44: cli_tools[0].commands: commands declares none; the tool is simple"},
		floored: []string{},
	},

	// allowed_args.
	{
		name:  "Flags of every spelling whose kinds the import is given become declared flags: -n, --namespace, and -target with one dash.",
		in:    "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {allowed_args: [-n, --namespace, -target]}}}\npolicies: []\n",
		kinds: []string{"-n=string", "--namespace=string", "-target=string"},
		want: []string{
			"- {name: n, value: string}",
			"- {name: namespace, value: string}",
			"- {name: target, single_dash: true, value: string}",
		},
		notWant: []string{"flag \"-"},
	},
	{
		name:  "A kind of none declares a boolean flag and int an integer flag.",
		in:    "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {logs: {allowed_args: [--follow, --tail]}}}\npolicies: []\n",
		kinds: []string{"--follow=none", "--tail=int"},
		want:  []string{"- {name: follow}", "- {name: tail, value: int}"},
	},
	{
		name:  "The most specific kind wins: a command's over its tool's over every tool's.",
		in:    "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {a: {allowed_args: [-x]}, b: {allowed_args: [-x]}}}\n  - {name: j, bin: /bin/echo, strict: true, commands: {a: {allowed_args: [-x]}}}\npolicies: []\n",
		kinds: []string{"-x=none", "k:-x=string", "k.b:-x=int"},
		want:  []string{"a:\n        flags:\n          - {name: x, value: string}", "b:\n        flags:\n          - {name: x, value: int}", "a:\n        flags:\n          - {name: x}\n"},
	},
	{
		name:    "A flag whose value kind is unknown is a TODO, not a declared flag, and floors its tool.",
		in:      "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {allowed_args: [-n]}}}\npolicies:\n  - {name: p, agent: a, rules: [{tools: [k.get], action: allow}]}\n",
		want:    []string{"# TODO(flux7): line 2: flag \"-n\": its value kind is unknown", "name: floor-1\n        tools: [k.get]\n        action: require_approval"},
		notWant: []string{"flags:"},
		notes:   []string{`in.yaml:2:77: cli_tools[0].commands.get.allowed_args[0]: flag "-n": its value kind is unknown, so it is not declared; add {name: n, value: KIND} to flags`},
		floored: []string{"k.get"},
	},
	{
		name:    "Free positionals, which every flux7 command accepts, are a TODO on every command and floor the tool even when every flag is typed.",
		in:      "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {allowed_args: [-n]}}}\npolicies: []\n",
		kinds:   []string{"-n=string"},
		want:    []string{"# TODO(flux7): line 2: positionals: flux7 accepted any here"},
		notWant: []string{"        positionals:"},
		notes:   []string{"in.yaml:2:56: cli_tools[0].commands.get: positionals: flux7 accepted any here"},
		floored: []string{"k.get"},
	},
	{
		name:  "A command without allowed_args, which flux7 reads as any flag, is a TODO that declares no flag.",
		in:    "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {timeout: 5s}, put: {allowed_args: []}}}\npolicies: []\n",
		want:  []string{"line 2: flags: flux7 accepted any here"},
		notes: []string{"in.yaml:2:56: cli_tools[0].commands.get: flags: flux7 accepted any here", "in.yaml:2:96: cli_tools[0].commands.put.allowed_args: flags: flux7 accepted any here"},
	},
	{
		name:    "allowed_args entries this format cannot spell are left out as TODOs: a one-character name with two dashes, a value glued on, and a second spelling of one name.",
		in:      "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {allowed_args: [--x, \"--o=json\", -target, --target]}}}\npolicies: []\n",
		kinds:   []string{"-target=string", "--target=string"},
		want:    []string{"- {name: target, single_dash: true, value: string}"},
		notWant: []string{"{name: x", "{name: target, value"},
		notes: []string{
			`cli_tools[0].commands.get.allowed_args[0]: flag "--x" is left out: this format spells a one-character flag with one dash only`,
			`cli_tools[0].commands.get.allowed_args[1]: flag "--o=json" is left out: this format needs a flag name`,
			`cli_tools[0].commands.get.allowed_args[3]: flag "--target" is left out: this format gives a flag name one spelling, and "-target" has it`,
		},
	},
	{
		name:  "An allowed_args entry that is no flag is left out with a note: flux7 let positionals through anyway.",
		in:    "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {allowed_args: [pods]}}}\npolicies: []\n",
		notes: []string{`cli_tools[0].commands.get.allowed_args[0]: allowed_args "pods" is left out: it is not a flag`},
	},
	{
		name:    "A command name this format refuses is left out as a TODO; a strict tool left with no command is left out whole.",
		in:      "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {Get: {}, pr.list: {}}}\npolicies: []\n",
		want:    []string{"tools: []", `# TODO(flux7): line 2: tool "k" is left out`},
		notWant: []string{"name: k"},
		notes:   []string{`cli_tools[0].commands.Get: command "Get" is left out`, `cli_tools[0].commands["pr.list"]: command "pr.list" is left out`},
		floored: []string{},
	},
	{
		name:    "env, working_dir and timeouts are carried over; an env value keeps its text, quoted.",
		in:      "cli_tools:\n  - name: t\n    bin: /bin/echo\n    working_dir: /srv/infra\n    env: {TF_IN_AUTOMATION: 1, TF_LOG: \"off\"}\n    bare: {timeout: 90s}\npolicies: []\n",
		want:    []string{"working_dir: /srv/infra", "TF_IN_AUTOMATION: \"1\"", "TF_LOG: off", "timeout: 1m30s", "inherit_env: [PATH, HOME, LANG]"},
		floored: []string{"t.run"},
	},
	{
		name:    "A timeout of 0 is left out with a note, so the default applies.",
		in:      "cli_tools:\n  - {name: t, bin: /bin/echo, bare: {timeout: 0s}}\npolicies: []\n",
		notWant: []string{"timeout:"},
		notes:   []string{"in.yaml:2:47: cli_tools[0].bare.timeout: timeout 0 is left out"},
	},
	{
		name: "Text from the file cannot break out of its scalar or its comment.",
		in:   "cli_tools:\n  - name: t\n    bin: /bin/echo\n    env: {A: \"x\\ntools: []\\n# y\"}\n    bare: {allowed_args: [\"--a\\n  - name: evil\", \"-b\\u2028c\"]}\npolicies: []\n",
		want: []string{`flag "--a\n  - name: evil" is left out`, `flag "-b\u2028c" is left out`},
	},

	// Policies.
	{
		name: "agent becomes principal, and human_approval, allow and deny rules keep their order with this format's action names.",
		in: `cli_tools:
  - {name: k, bin: /bin/echo, default_action: human_approval}
policies:
  - name: infra-governance
    agent: claude
    rules:
      - {tools: [k.destroy], action: deny}
      - {tools: ["k.delete*"], action: human_approval}
      - {tools: ["k.*"], action: allow}
`,
		want: []string{
			"name: infra-governance\n    principal: claude\n    rules:\n      - tools: [k.destroy]\n        action: deny\n      - tools: [k.delete*]\n        action: require_approval\n      - tools: [k.*]\n        action: allow\n",
		},
		notWant: []string{"agent:", "human_approval\n        tools", "floor-"},
		floored: []string{},
	},
	{
		name:    "A floor rule comes right before each allow rule that matches a floored command, after the deny rules before it.",
		in:      "cli_tools:\n  - {name: k, bin: /bin/echo, strict: true, commands: {get: {}, delete: {}}}\npolicies:\n  - {name: p, agent: a, rules: [{tools: [k.delete], action: deny}, {tools: [k.get], action: allow}, {tools: [\"k.*\"], action: allow}]}\n",
		want:    []string{"tools: [k.delete]\n        action: deny\n", "name: floor-1\n        tools: [k.get]\n        action: require_approval\n      - tools: [k.get]\n        action: allow\n", "name: floor-2\n        tools: [k.get, k.delete]\n        action: require_approval\n      - tools: [k.*]\n        action: allow\n"},
		floored: []string{"k.get", "k.delete"},
	},
	{
		name:  "A file without policies gets policies: [], which denies every call as flux7 does, and a TODO.",
		in:    "cli_tools:\n  - {name: gh, bin: /bin/echo, default_action: allow}\n",
		want:  []string{"policies: []", "# TODO(flux7): line 1: the file has no policies"},
		notes: []string{"in.yaml:1:1: policies: the file has no policies"},
	},
	{
		name:    "A policy whose agent holds '*' or '?', and every policy of an agent named twice, are left out, so their agents are denied.",
		in:      "cli_tools:\n  - {name: gh, bin: /bin/echo, default_action: allow}\npolicies:\n  - {name: all, agent: \"*\", rules: [{tools: [\"*\"], action: allow}]}\n  - {name: a1, agent: bot, rules: []}\n  - {name: a2, agent: bot, rules: [{tools: [\"*\"], action: allow}]}\n  - {name: ok, agent: ci, rules: []}\n",
		want:    []string{"policies:\n  - name: ok\n    principal: ci\n    rules: []\n"},
		notWant: []string{"principal: bot", "principal: '*'"},
		notes:   []string{`in.yaml:4:5: policies[0]: the policy for agent "*" is left out`, `in.yaml:5:5: policies[1]: the policy for agent "bot" is left out`, `in.yaml:6:5: policies[2]: the policy for agent "bot" is left out`},
	},
	{
		name:  "A policy without a name, or with one this format refuses, is named policy-N.",
		in:    "cli_tools: []\npolicies:\n  - {agent: a, rules: []}\n  - {name: \"bad name\", agent: b, rules: []}\n",
		want:  []string{"name: policy-1\n    principal: a", "name: policy-2\n    principal: b"},
		notes: []string{"in.yaml:3:5: policies[0]: the policy has no name; it is named policy-1 here", `in.yaml:4:5: policies[1]: the policy is named "bad name"`},
	},
	{
		name:    "Patterns this format cannot match as flux7 does allow nothing: left out of allow rules, denied as a wider pattern in deny rules, denied instead of held in human_approval rules.",
		in:      "cli_tools: []\npolicies:\n  - name: p\n    agent: a\n    rules:\n      - {tools: [\"mcp:gh/*\"], action: deny}\n      - {tools: [\"k.del?\", \"k.x\"], action: human_approval}\n      - {tools: [\"k.[ab]\", \"k.y\"], action: allow}\n      - {tools: [\"web/fetch\"], action: allow}\n",
		want:    []string{"- tools: [mcp*]\n        action: deny\n", "- tools: ['k.del?']\n        action: deny\n      - tools: [k.x]\n        action: require_approval\n", "- tools: [k.y]\n        action: allow\n"},
		notWant: []string{"web/fetch\n", "[ab]]"},
		notes: []string{
			`in.yaml:6:18: policies[0].rules[0].tools[0]: pattern "mcp:gh/*" is denied as mcp*`,
			`in.yaml:7:18: policies[0].rules[1].tools[0]: pattern "k.del?" cannot be matched here as flux7 does, so k.del? is denied instead of held for approval`,
			`in.yaml:8:18: policies[0].rules[2].tools[0]: pattern "k.[ab]" is left out of this allow rule`,
			`in.yaml:9:9: policies[0].rules[3]: this allow rule is left out`,
		},
	},
	{
		name: "'?' stays as it is in a deny rule, where a wider match denies more.",
		in:   "cli_tools: []\npolicies:\n  - {name: p, agent: a, rules: [{tools: [\"k.?\"], action: deny}]}\n",
		want: []string{"- tools: ['k.?']\n        action: deny\n"},
	},

	// Refused input.
	{
		name: "An unknown key is an error with its line, column and path, and lists the known keys.",
		in:   "cli_tools:\n  - name: k\n    bin: /bin/echo\n    colour: red\n",
		errs: []string{`in.yaml:4:5: cli_tools[0].colour: unknown key "colour" (known keys: bare, bin, commands, default_action, env, name, strict, working_dir)`},
	},
	{
		name: "Unknown keys of the top level, a command, a policy and a rule are errors too.",
		in:   "cli_tools:\n  - {name: k, bin: /bin/echo, commands: {get: {args: []}}}\npolicies:\n  - {name: p, agent: a, rate_limit: 1, rules: [{tools: [x], action: allow, why: no}]}\nmcp_servers: []\n",
		errs: []string{
			`in.yaml:2:48: cli_tools[0].commands.get.args: unknown key "args" (known keys: allowed_args, timeout)`,
			`in.yaml:4:25: policies[0].rate_limit: unknown key "rate_limit"`,
			`in.yaml:4:76: policies[0].rules[0].why: unknown key "why"`,
			`in.yaml:5:1: mcp_servers: unknown key "mcp_servers" (known keys: cli_tools, policies)`,
		},
	},
	{
		name: "A document that is not a mapping is an error.",
		in:   "- cli_tools\n",
		errs: []string{"in.yaml:1:1: must be a mapping, not a list"},
	},
	{
		name: "A cli_tools entry, a command and a rule that are not mappings are errors.",
		in:   "cli_tools:\n  - gh\n  - {name: k, bin: /bin/echo, commands: {get: [a]}}\npolicies:\n  - {name: p, agent: a, rules: [allow]}\n",
		errs: []string{"in.yaml:2:5: cli_tools[0]: must be a mapping, not a string", "in.yaml:3:47: cli_tools[1].commands.get: must be a mapping, not a list", "in.yaml:5:33: policies[0].rules[0]: must be a mapping, not a string"},
	},
	{
		name: "Aliases are refused, so no alias can multiply the input.",
		in:   "cli_tools:\n  - &t {name: k, bin: /bin/echo}\n  - *t\n",
		errs: []string{"in.yaml:2:5: cli_tools[0]: anchors (&t) are not supported", "in.yaml:3:5: cli_tools[1]: aliases (*t) are not supported"},
	},
	{
		name: "A billion-laughs document is refused at its first anchor, without expanding anything.",
		in:   "cli_tools: []\npolicies:\n  - name: p\n    agent: a\n    rules:\n      - tools: &a [x, x, x, x, x, x, x, x, x]\n        action: allow\n      - {tools: *a, action: allow}\n      - {tools: *a, action: allow}\n",
		errs: []string{"in.yaml:6:16: policies[0].rules[0].tools: anchors (&a) are not supported", "in.yaml:8:17: policies[0].rules[1].tools: aliases (*a) are not supported"},
	},
	{
		name: "Merge keys and explicit tags are refused.",
		in:   "cli_tools:\n  - {<<: {name: k}, bin: /bin/echo}\n  - {name: !!str j, bin: /bin/echo}\n",
		errs: []string{"in.yaml:2:6: cli_tools[0]: merge keys (<<) are not supported", "in.yaml:3:12: cli_tools[1].name: tags (\"!!str\") are not supported"},
	},
	{
		name: "Duplicate keys are refused with the line of the first.",
		in:   "cli_tools:\n  - name: k\n    name: j\n    bin: /bin/echo\n",
		errs: []string{"in.yaml:3:5: cli_tools[0].name: duplicate key (first at line 2)"},
	},
	{
		name: "Values of the wrong type are refused.",
		in:   "cli_tools:\n  - {name: 7, bin: /bin/echo, strict: \"yes\", commands: {get: {allowed_args: -n}}}\n",
		errs: []string{"in.yaml:2:12: cli_tools[0].name: must be a string, not an integer", "in.yaml:2:39: cli_tools[0].strict: must be true or false, not a string", "in.yaml:2:77: cli_tools[0].commands.get.allowed_args: must be a list, not a string"},
	},
	{
		name: "What flux7 itself refuses is refused: bare with commands or strict, strict without commands, a bad timeout or default_action, a duplicate name.",
		in: `cli_tools:
  - {name: a, bin: /bin/echo, bare: {}, commands: {x: {}}}
  - {name: b, bin: /bin/echo, bare: {}, strict: true}
  - {name: c, bin: /bin/echo, strict: true}
  - {name: d, bin: /bin/echo, default_action: maybe, commands: {x: {timeout: soon}}}
  - {name: a, bin: /bin/echo}
policies:
  - {name: p, agent: a, rules: [{tools: [x], action: ask}]}
`,
		errs: []string{
			"in.yaml:2:31: cli_tools[0].bare: bare and commands exclude each other",
			"in.yaml:3:49: cli_tools[1].strict: bare and strict exclude each other",
			"in.yaml:4:39: cli_tools[2].strict: strict: true needs at least one command",
			`in.yaml:5:47: cli_tools[3].default_action: unknown default_action "maybe"`,
			`in.yaml:5:78: cli_tools[3].commands.x.timeout: "soon" is not a duration`,
			`in.yaml:6:12: cli_tools[4].name: duplicate tool name "a" (first at line 2)`,
			`in.yaml:8:54: policies[0].rules[0].action: unknown action "ask"`,
		},
	},
	{
		name: "What this format cannot express without changing what runs is refused: a relative bin or working_dir, a tool name with a dot.",
		in:   "cli_tools:\n  - {name: a, bin: ./bin/a}\n  - {name: b, bin: /bin/echo, working_dir: infra}\n  - {name: c.d, bin: /bin/echo}\n",
		errs: []string{`in.yaml:2:20: cli_tools[0].bin: "./bin/a" is a relative path`, "in.yaml:3:44: cli_tools[1].working_dir: this format needs an absolute working_dir", `in.yaml:4:12: cli_tools[2].name: "c.d": this format needs a tool name`},
	},
	{
		name: "Missing required keys are named.",
		in:   "cli_tools:\n  - {bin: /bin/echo}\npolicies:\n  - {name: p, rules: [{action: allow}]}\n",
		errs: []string{"in.yaml:2:5: cli_tools[0].name: required", "in.yaml:4:5: policies[0].agent: required", "in.yaml:4:23: policies[0].rules[0].tools: required"},
	},
	{
		name: "A file without cli_tools has nothing to convert.",
		in:   "policies: []\n",
		errs: []string{"in.yaml:1:1: cli_tools: required"},
	},
	{
		name: "A YAML syntax error is refused with its line.",
		in:   "cli_tools: [\n",
		errs: []string{"in.yaml:1: invalid YAML"},
	},
	{
		name: "Two documents are refused.",
		in:   "cli_tools: []\n---\ncli_tools: []\n",
		errs: []string{"in.yaml:2:1: holds more than one YAML document"},
	},
}

func TestConvert(t *testing.T) {
	for _, tc := range convertCases {
		t.Run(tc.name, func(t *testing.T) {
			var opts flux7.Options
			for _, s := range tc.kinds {
				k, err := flux7.ParseKind(s)
				require.NoError(t, err)
				opts.Kinds = append(opts.Kinds, k)
			}
			res, err := flux7.Convert("in.yaml", []byte(tc.in), opts)
			if tc.errs != nil {
				require.Error(t, err)
				require.Nil(t, res)
				var list config.ErrorList
				require.True(t, errors.As(err, &list), "error is %T, not a config.ErrorList: %v", err, err)
				lines := strings.Split(err.Error(), "\n")
				for _, want := range tc.errs {
					require.True(t, hasPrefix(lines, want), "no problem starts with %q in:\n%v", want, err)
				}
				return
			}
			require.NoError(t, err)
			out := string(res.YAML)
			_, out, _ = strings.Cut(out, "\nversion: 1\n") // the header is the same in every output
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			for _, w := range tc.notWant {
				require.NotContains(t, out, w)
			}
			var notes []string
			for _, n := range res.Notes {
				notes = append(notes, n.String())
			}
			for _, w := range tc.notes {
				require.True(t, hasPrefix(notes, w) || hasPrefix(notes, "in.yaml:"+w) || containsAny(notes, w), "no note holds %q in:\n%s", w, strings.Join(notes, "\n"))
			}
			if tc.floored != nil {
				require.ElementsMatch(t, tc.floored, res.Floored)
			}
			requireNoWider(t, []byte(tc.in), mustLoad(t, res.YAML))
		})
	}
}

func hasPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func containsAny(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestConvert_TooLarge(t *testing.T) {
	// A file over config.MaxFileSize is refused before it is parsed.
	_, err := flux7.Convert("big.yaml", make([]byte, config.MaxFileSize+1), flux7.Options{})
	require.ErrorContains(t, err, "big.yaml: larger than")
}

func TestConvert_Empty(t *testing.T) {
	// An empty file holds nothing to convert.
	_, err := flux7.Convert("", nil, flux7.Options{})
	require.ErrorContains(t, err, "<input>: empty")
}

func TestConvert_Limits(t *testing.T) {
	// More cli_tools entries than the conversion reads are refused at the
	// first one too many.
	var b strings.Builder
	b.WriteString("cli_tools:\n")
	for i := 0; i <= 1000; i++ {
		b.WriteString("  - {name: t, bin: /bin/echo}\n")
	}
	_, err := flux7.Convert("in.yaml", []byte(b.String()), flux7.Options{})
	require.ErrorContains(t, err, "in.yaml:1002:5: cli_tools[1000]: more than 1000 cli_tools entries")
}

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     flux7.Kind
		err      string
	}{
		{name: "A flag alone applies to every tool.", in: "--namespace=string", want: flux7.Kind{Flag: "--namespace", Value: execgate.ValueString}},
		{name: "TOOL: scopes it to a tool.", in: "kubectl:-n=string", want: flux7.Kind{Tool: "kubectl", Flag: "-n", Value: execgate.ValueString}},
		{name: "TOOL.COMMAND: scopes it to a command.", in: "terraform.apply:-parallelism=int", want: flux7.Kind{Tool: "terraform", Command: "apply", Flag: "-parallelism", Value: execgate.ValueInt}},
		{name: "none is a boolean flag.", in: "-v=none", want: flux7.Kind{Flag: "-v", Value: execgate.ValueNone}},
		{name: "Without = there is no kind.", in: "-n", err: "want [TOOL[.COMMAND]:]FLAG=VALUE"},
		{name: "A flag must start with a dash.", in: "n=string", err: "the flag must start with '-'"},
		{name: "An unknown kind is refused.", in: "-n=text", err: `unknown value kind "text"`},
		{name: "enum and pattern need more than a name.", in: "-o=enum", err: "needs more than a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := flux7.ParseKind(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestConvert_BadOptions(t *testing.T) {
	// Two kinds for one flag and scope, and a Command without a Tool, are
	// refused before anything is read.
	_, err := flux7.Convert("in.yaml", []byte("cli_tools: []\n"), flux7.Options{Kinds: []flux7.Kind{
		{Flag: "-n", Value: execgate.ValueString}, {Flag: "-n", Value: execgate.ValueInt},
	}})
	require.ErrorContains(t, err, `kind for "-n" is given twice`)
	_, err = flux7.Convert("in.yaml", []byte("cli_tools: []\n"), flux7.Options{Kinds: []flux7.Kind{{Command: "get", Flag: "-n"}}})
	require.ErrorContains(t, err, "needs a Tool")
}

// TestNames_MatchTheLoader checks the conversion's idea of a tool name, a
// subcommand and a flag name against the loader's: a name the conversion
// writes loads, and one it refuses does not.
func TestNames_MatchTheLoader(t *testing.T) {
	load := func(tool, sub, flagName string) error {
		in := "version: 1\ntools:\n  - name: '" + tool + "'\n    bin: /bin/echo\n    strict: true\n    commands:\n      '" + sub + "':\n        flags: [{name: '" + flagName + "'}]\n"
		_, err := config.LoadBytes("names.yaml", []byte(in))
		return err
	}
	for _, tc := range []struct {
		tool, sub, flag string
		ok              bool
	}{
		{"kubectl", "get", "namespace", true},
		{"k8s_tool-2", "port-forward", "dry_run-2", true},
		{strings.Repeat("t", 63), strings.Repeat("s", 64), strings.Repeat("f", 64), true},
		{"c.d", "get", "n", false},
		{"-t", "get", "n", false},
		{strings.Repeat("t", 64), "get", "n", false},
		{"t", "Get", "n", false},
		{"t", "2get", "n", false},
		{"t", strings.Repeat("s", 65), "n", false},
		{"t", "get", "-n", false},
		{"t", "get", "a.b", false},
		{"t", "get", strings.Repeat("f", 65), false},
	} {
		err := load(tc.tool, tc.sub, tc.flag)
		in := "cli_tools:\n  - name: '" + tc.tool + "'\n    bin: /bin/echo\n    strict: true\n    commands:\n      '" + tc.sub + "': {allowed_args: ['--" + tc.flag + "']}\n"
		res, cerr := flux7.Convert("in.yaml", []byte(in), flux7.Options{Kinds: []flux7.Kind{{Flag: "--" + tc.flag}}})
		if tc.ok {
			require.NoError(t, err, "%+v", tc)
			require.NoError(t, cerr, "%+v", tc)
			require.Contains(t, string(res.YAML), "{name: "+tc.flag+"}")
			continue
		}
		require.Error(t, err, "%+v", tc)
		converted := cerr == nil && strings.Contains(string(res.YAML), "- name: "+tc.tool+" ") &&
			strings.Contains(string(res.YAML), "      "+tc.sub+":") && strings.Contains(string(res.YAML), "{name: "+tc.flag+"}")
		require.False(t, converted, "the conversion writes what the loader refuses: %+v", tc)
	}
}

// TestConvert_ToolsWithTODOsAreHeldWhateverAGrantSays converts a flux7
// file whose strict, fine-tuned and bare tools all have TODOs (free
// positionals), under a policy that allows every call: each command and
// bare entry carries human_approval: true, so a call still needs a
// person's approval after a grant lifts the floor-N rule that holds it in
// the policies.
func TestConvert_ToolsWithTODOsAreHeldWhateverAGrantSays(t *testing.T) {
	in := `cli_tools:
  - {name: k, bin: /bin/echo, strict: true, commands: {get: {allowed_args: [-n]}}}
  - {name: tf, bin: /bin/echo, default_action: allow, commands: {plan: {}}}
  - {name: rg, bin: /bin/echo, bare: {}}
policies:
  - {name: p, agent: a, rules: [{tools: ["*"], action: allow}]}
`
	res, err := flux7.Convert("in.yaml", []byte(in), flux7.Options{Kinds: []flux7.Kind{{Flag: "-n", Value: execgate.ValueString}}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"k.get", "tf", "tf.plan", "rg.run"}, res.Floored)
	require.Equal(t, 3, strings.Count(string(res.YAML), "\n        human_approval: true\n")+strings.Count(string(res.YAML), "\n      human_approval: true\n"), "one per command and bare entry:\n%s", res.YAML)
	l := mustLoad(t, res.YAML)
	_, err = l.Engine.Grant(policy.Grant{Principal: "a", Tool: "*", Expires: time.Now().Add(time.Hour), Reason: "lifts the floor-N rules"})
	require.NoError(t, err)
	for _, name := range []string{"k.get", "tf.plan", "rg.run", "tf.other"} {
		spec, ok := l.Allowlist.Lookup(name)
		require.True(t, ok, name)
		d, err := l.Policy.Decide(context.Background(), execgate.Request{Op: execgate.OpRun, Principal: "a", Name: name, Spec: spec})
		require.NoError(t, err)
		require.Equal(t, execgate.ActionAllow, d.Action, "%s: the grant lifts the policy's hold", name)
		require.Equal(t, execgate.ActionRequireApproval, spec.Floor, "%s: its own floor still holds it", name)
		require.Equal(t, execgate.ActionRequireApproval, ours(t, l, "a", name), name)
	}
	requireNoWider(t, []byte(in), l)
}
