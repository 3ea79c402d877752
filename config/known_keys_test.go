package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownKeysNameTheKnownOnes pins the message of an unknown key in
// each mapping of a tools entry that a load decodes many times, and which
// empty values those mappings take, so that how the decoder finds a key's
// handler can change without the messages changing.
func TestUnknownKeysNameTheKnownOnes(t *testing.T) {
	const head = "version: 1\ntools:\n  - name: t\n    bin: /bin/echo\n"
	for _, tc := range []struct {
		name, text, path, message string
	}{
		{"a tools entry names its keys", head + "    colour: red\n",
			"tools[0].colour", `unknown key "colour" (known keys: allow_hostile_env, allow_interpreter, bare, bin, commands, confine, default_action, description, env, global_args, inherit_env, max_output, name, no_output_timeout, policy_version, sha256, strict, timeout, working_dir)`},
		{"a command names its keys", head + "    commands:\n      log: {colour: red}\n",
			"tools[0].commands.log.colour", `unknown key "colour" (known keys: annotations, confine, description, end_of_options, examples, flags, human_approval, leading, max_output, no_output_timeout, positionals, stdin, timeout)`},
		{"the bare entry names the same keys", head + "    bare: {colour: red}\n",
			"tools[0].bare.colour", `unknown key "colour" (known keys: annotations, confine, description, end_of_options, examples, flags, human_approval, leading, max_output, no_output_timeout, positionals, stdin, timeout)`},
		{"a flag names its keys", head + "    bare: {flags: [{name: x, colour: red}]}\n",
			"tools[0].bare.flags[0].colour", `unknown key "colour" (known keys: enum, glued, max, min, name, path, pattern, repeat, separate, short, single_dash, value, values)`},
		{"a flag's value names its keys", head + "    bare: {flags: [{name: x, values: [{name: a, value: string, short: a}]}]}\n",
			"tools[0].bare.flags[0].values[0].short", `unknown key "short" (known keys: enum, max, min, name, path, pattern, value)`},
		{"an empty flag key has no value", head + "    bare: {flags: [{name: x, value: string, pattern: ~}]}\n",
			"tools[0].bare.flags[0].pattern", "has no value; give one or remove the key"},
		{"an empty command key has no value", head + "    bare: {flags: ~}\n",
			"tools[0].bare.flags", "has no value; give one or remove the key"},
		{"an empty tools entry key has no value", head + "    commands: ~\n",
			"tools[0].commands", "has no value; give one or remove the key"},
		{"an empty limit has no value", head + "    bare: {timeout: ~}\n",
			"tools[0].bare.timeout", "has no value; give one or remove the key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := loadErrors(t, tc.text)
			require.Len(t, list, 1, describe(list))
			assert.Equal(t, tc.path, list[0].Path)
			assert.Equal(t, tc.message, list[0].Message)
		})
	}
}

// TestEmptyValuesThatMeanAnEmptyMapping pins the keys whose empty value
// (null) is taken as an empty mapping: a bare entry, stdin, a flag's path
// rule and the positionals' path rule.
func TestEmptyValuesThatMeanAnEmptyMapping(t *testing.T) {
	for _, tc := range []struct{ name, entry string }{
		{"an empty bare entry is a bare entry of no arguments", "    bare: ~\n"},
		{"an empty stdin takes stdin with the default cap", "    bare: {stdin: ~}\n"},
		{"an empty path rule on a flag is the default rule", "    bare: {flags: [{name: f, value: path, path: ~}]}\n"},
		{"an empty path rule on a flag's value is the default rule", "    bare: {flags: [{name: f, values: [{name: a, value: path, path: ~}]}]}\n"},
		{"an empty path rule on positionals is the default rule", "    bare: {positionals: {max: 1, path: ~}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustLoad(t, "version: 1\ntools:\n  - name: t\n    bin: /bin/echo\n    working_dir: /tmp\n"+tc.entry)
		})
	}
}
