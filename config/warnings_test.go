package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/config"
)

// warningTools serves kubectl.get (strict), a dispatcher git, and
// cat.run, each with a description. %s is where a case adds a tool.
const warningTools = `version: 1
tools:
  - name: kubectl
    bin: /bin/echo
    strict: true
    commands:
      get: {description: Show resources}
  - name: git
    bin: /bin/echo
    description: Run a read-only git subcommand
  - name: cat
    bin: /bin/cat
    description: Print standard input
    bare: {stdin: {}}
%s`

// warningRule is a policies section with one rule over the patterns %s.
const warningRule = `policies:
  - name: agents
    principal: "*"
    rules:
      - tools: [%s]
        action: allow
`

// wantWarning is a warning a case expects: its key path and a part of its
// message.
type wantWarning struct {
	path, says string
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools string // a tools entry added to warningTools
		rule  string // the patterns of the rule; "" for no policies section
		want  []wantWarning
	}{
		{
			name: "A misspelt pattern matches nothing, and the closest name is suggested.",
			rule: `"kubctl.*"`,
			want: []wantWarning{{"policies[0].rules[0].tools[0]", `"kubctl.*" matches no command this file serves, so this rule never applies; did you mean "kubectl.get"?`}},
		},
		{
			name: "A misspelt literal name is pointed at the nearest name.",
			rule: `kubectl.gte`,
			want: []wantWarning{{"policies[0].rules[0].tools[0]", `did you mean "kubectl.get"?`}},
		},
		{
			name: "Only the patterns that match nothing are named, each at its own index.",
			rule: `cat.run, "gti.*"`,
			want: []wantWarning{{"policies[0].rules[0].tools[1]", `did you mean "git.*"?`}},
		},
		{
			name: "A name the dispatcher serves without declaring it gives no warning.",
			rule: `git.status`,
		},
		{
			name: "A pattern over the dispatcher's names gives no warning.",
			rule: `"git.*"`,
		},
		{
			name: "A pattern that matches only through a dispatcher gives no warning.",
			rule: `"*.status"`,
		},
		{
			name: "The dispatcher's own name is never requested, so a pattern matching only it is named.",
			rule: `git`,
			want: []wantWarning{{"policies[0].rules[0].tools[0]", `the dispatcher "git" serves "git.<subcommand>"; did you mean "git.*"?`}},
		},
		{
			name: "A pattern that matches a declared command gives no warning.",
			rule: `kubectl.get, "kube*.g?t", cat.run`,
		},
		{
			name: `"*" gives no warning.`,
			rule: `"*"`,
		},
		{
			name: "A command without a description is named, since it does not take its tool's.",
			tools: `  - name: ls
    bin: /bin/ls
    description: List a directory
    strict: true
    commands:
      short: {description: List names}
      long: {}
`,
			want: []wantWarning{{"tools[3].commands.long", `"ls.long" is served without a description, so the model sees none; add description to this command`}},
		},
		{
			name: "A dispatcher without a description is named: the model sees only how to name a subcommand.",
			tools: `  - name: svc
    bin: /bin/echo
    default_action: allow
`,
			want: []wantWarning{{"tools[3]", `the dispatcher "svc" is served without a description`}},
		},
		{
			name: "A bare tool without a description is named.",
			tools: `  - name: date
    bin: /bin/date
    bare: {}
`,
			want: []wantWarning{{"tools[3].bare", `"date.run" is served without a description, so the model sees none; add description here or on the tool`}},
		},
		{
			name: "A bare tool whose description is on the tool gives no warning.",
			tools: `  - name: date
    bin: /bin/date
    description: Print the date
    bare: {}
`,
		},
		{
			name: "A bare tool whose description is on its bare entry gives no warning.",
			tools: `  - name: date
    bin: /bin/date
    bare: {description: Print the date}
`,
		},
		{
			name: "A description of blanks is no description.",
			tools: `  - name: date
    bin: /bin/date
    description: "  "
    bare: {}
`,
			want: []wantWarning{{"tools[3].bare", `"date.run" is served without a description`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf(warningTools, tc.tools)
			if tc.rule != "" {
				text += fmt.Sprintf(warningRule, tc.rule)
			}
			l := mustLoad(t, text)
			got := l.Warnings()
			require.Len(t, got, len(tc.want), "%v", got)
			for i, w := range tc.want {
				assert.Equal(t, "test.yaml", got[i].File)
				assert.Equal(t, w.path, got[i].Path)
				assert.Contains(t, got[i].Message, w.says)
			}
		})
	}
}

// TestWarnings_Position pins where a pattern's warning points: the
// pattern itself, in the form check prints.
func TestWarnings_Position(t *testing.T) {
	text := fmt.Sprintf(warningTools, "") + fmt.Sprintf(warningRule, `kubectl.get, "kubctl.*"`)
	line, col := positionIn(t, text, `"kubctl.*"`)
	got := mustLoad(t, text).Warnings()
	require.Len(t, got, 1)
	assert.Equal(t, config.Warning{
		File: "test.yaml", Line: line, Column: col, Path: "policies[0].rules[0].tools[1]",
		Message: `"kubctl.*" matches no command this file serves, so this rule never applies; did you mean "kubectl.get"?`,
	}, got[0])
	assert.Equal(t, fmt.Sprintf(`test.yaml:%d:%d: policies[0].rules[0].tools[1]: "kubctl.*" matches no command this file serves, so this rule never applies; did you mean "kubectl.get"?`, line, col), got[0].String())
}

// TestWarnings_Sorted checks that warnings of both kinds come in file
// order, and that changing the returned slice changes nothing.
func TestWarnings_Sorted(t *testing.T) {
	text := fmt.Sprintf(warningTools, "  - name: svc\n    bin: /bin/echo\n") + fmt.Sprintf(warningRule, `"kubctl.*"`)
	l := mustLoad(t, text)
	got := l.Warnings()
	require.Len(t, got, 2, "%v", got)
	assert.Equal(t, "tools[3]", got[0].Path)
	assert.Equal(t, "policies[0].rules[0].tools[0]", got[1].Path)
	assert.Less(t, got[0].Line, got[1].Line)
	got[0].Message = "changed"
	assert.NotEqual(t, "changed", l.Warnings()[0].Message)
}

// TestWarnings_NoTools checks the message for a policy over a tools list
// that serves nothing: there is no name to suggest.
func TestWarnings_NoTools(t *testing.T) {
	got := mustLoad(t, "version: 1\ntools: []\n"+fmt.Sprintf(warningRule, `"*"`)).Warnings()
	require.Len(t, got, 1)
	assert.Equal(t, `"*" matches no command, so this rule never applies: the tools list serves none`, got[0].Message)
}

// TestWarnings_Reload checks that a reloaded configuration carries the
// warnings of the new file.
func TestWarnings_Reload(t *testing.T) {
	l := mustLoad(t, fmt.Sprintf(warningTools, "")+fmt.Sprintf(warningRule, `"git.*"`))
	require.Empty(t, l.Warnings())
	next, err := l.ReloadBytes("next.yaml", []byte(fmt.Sprintf(warningTools, "")+fmt.Sprintf(warningRule, `"kubctl.*"`)))
	require.NoError(t, err)
	got := next.Warnings()
	require.Len(t, got, 1)
	assert.Equal(t, "next.yaml", got[0].File)
	assert.Empty(t, l.Warnings(), "the earlier load keeps its own")
}

// positionIn returns the 1-based line and column of the first s in text.
func positionIn(t *testing.T, text, s string) (line, col int) {
	t.Helper()
	i := strings.Index(text, s)
	require.GreaterOrEqual(t, i, 0, "%q is not in the text", s)
	before := text[:i]
	return strings.Count(before, "\n") + 1, i - strings.LastIndex(before, "\n")
}
