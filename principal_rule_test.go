package execgate_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/internal/inputrules"
	"github.com/execgate/execgate/mcpserver"
)

// TestTypedGrammars_OnePrincipalRuleOnEverySurface checks that the Executor
// (a call's principal and an approval's), the MCP server's
// Options.Principal and a configuration's server.principal accept and
// refuse the same principals, with the same message: there is one rule,
// inputrules.PrincipalProblem.
//
// Invariant 12 of DESIGN.md.
func TestTypedGrammars_OnePrincipalRuleOnEverySurface(t *testing.T) {
	x, rec := newGate(t, execgate.Config{}, echoSpec())
	a, err := execgate.NewAllowlist(echoSpec())
	require.NoError(t, err)
	for _, tc := range []struct {
		principal string
		refused   bool
		why       string
	}{
		{"ci-bot", false, "an identifier is a principal everywhere"},
		{"alice@example.com", false, "so is an address"},
		{"ci bot", true, "a space would make two principals read alike in logs, so it is refused everywhere (the library accepted it before)"},
		{"ci\u00a0bot", true, "so would a no-break space"},
		{"a\nb", true, "a newline could forge an audit line"},
		{"ad\u200bmin", true, "an invisible character would make two principals look the same (mcpserver accepted it before)"},
		{"admin\U000e0041", true, "so would a tag character"},
		{"admin\u202e", true, "a bidirectional override could make one principal read as another"},
		{strings.Repeat("p", execgate.MaxPrincipalBytes+1), true, "principals are bounded"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			want := inputrules.PrincipalProblem(tc.principal)
			require.Equal(t, tc.refused, want != "", "the rule itself")

			ctx := execgate.WithPrincipal(context.Background(), tc.principal)
			_, err := x.Propose(ctx, "echo.say", nil, "")
			assert.Equal(t, want, principalIssue(err), "Executor.Propose")

			now := time.Now().UTC()
			env := execgate.Approval{
				ID: "0190b0c4-1b8e-7000-8000-000000000000", Principal: tc.principal, Name: "echo.say",
				Command: "/bin/echo", Digest: strings.Repeat("0", 64), PolicyVersion: "1",
				CreatedAt: now, ExpiresAt: now.Add(time.Minute),
			}
			_, err = x.Execute(context.Background(), env)
			if tc.refused {
				assert.Equal(t, want, principalIssue(err), "Executor.Execute, the approval's principal")
			}

			_, err = mcpserver.New(x, mcpserver.Options{Allowlist: a, Principal: tc.principal})
			if tc.refused {
				assert.ErrorContains(t, err, want, "mcpserver.Options.Principal")
			} else {
				assert.NoError(t, err, "mcpserver.Options.Principal")
			}

			file := "version: 1\ntools: [{name: echo, bin: /bin/echo}]\nserver:\n  principal: " + strconv.Quote(tc.principal) + "\n"
			_, err = config.LoadBytes("p.yaml", []byte(file))
			if tc.refused {
				assert.ErrorContains(t, err, "p.yaml:4:14: server.principal: "+want, "config's server.principal")
			} else {
				assert.NoError(t, err, "config's server.principal")
			}
		})
	}
	assert.Zero(t, rec.Count())
}

// principalIssue returns the message of the "principal" issue of err, or
// "" if it has none.
func principalIssue(err error) string {
	var ve *execgate.ValidationError
	if !errors.As(err, &ve) {
		return ""
	}
	for _, is := range ve.Issues {
		if is.Field == "principal" {
			return is.Message
		}
	}
	return ""
}
