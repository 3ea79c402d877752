package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Examples that hold load; rule examples are decided without rate limits,
// so many examples of a rate-limited policy do not trip its limit.
func TestExamplesThatHoldLoad(t *testing.T) {
	_, err := loadString(t, `
version: 1
tools:
  - name: echo
    bin: /bin/echo
    commands:
      log:
        flags: [{name: max-count, value: int, min: 1, max: 10}, {name: oneline}]
        positionals: {max: 1, pattern: '^[a-z]+$'}
        examples:
          allow:
            - {args: [--max-count, "3", --oneline]}
            - {args: [main]}
            -
          refuse:
            - {args: [--max-count=11]}
            - {args: ["main; rm -rf /"]}
            - {args: [a, b]}
      status: {}
  - name: cat
    bin: /bin/cat
    bare:
      examples: {allow: [{}], refuse: [{args: [x]}]}
policies:
  - name: agents
    principal: agent-*
    rate_limit: {per_minute: 1, burst: 1}
    rules:
      - tools: [echo.status]
        action: deny
        examples:
          refuse: [{principal: agent-1, tool: echo.status}]
      - tools: [echo.*]
        action: allow
        examples:
          allow:
            - {principal: agent-1, tool: echo.log, input: {args: [main]}}
            - {principal: agent-2, tool: echo.log, input: {args: [--oneline]}}
            - {principal: agent-3, tool: echo.log}
          refuse:
            - {principal: other, tool: echo.log}
            - {principal: agent-1, tool: cat.run}
            - {principal: agent-1, tool: echo.nope}
`)
	require.NoError(t, err)
}
