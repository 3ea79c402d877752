// Package flux7 converts the cli_tools and policies sections of a
// flux7-mesh configuration into a configuration of package config, for
// people moving their command-line tools from flux7-mesh to execgate.
// `execgate import flux7 FILE` is this package on the command line.
//
//	data, err := os.ReadFile("flux7.yaml")
//	...
//	res, err := flux7.Convert("flux7.yaml", data, flux7.Options{})
//	if err != nil {
//		log.Fatal(err) // a config.ErrorList: file:line:col: key.path: message
//	}
//	for _, n := range res.Notes {
//		log.Print(n) // what was not carried over as it was
//	}
//	os.WriteFile("execgate.yaml", res.YAML, 0o644)
//
// The output never allows more than the input did. Whatever flux7
// accepted that this format cannot check as precisely (an allowed_args
// flag whose value kind the file does not say, the positional arguments
// every flux7 command accepts, a command with no allowed_args, which
// flux7 reads as any flag) is left out, written as a TODO(flux7) comment
// in the output and reported as a Note, and its tool is floored at
// human_approval: every call of it needs a person's approval until
// someone finishes the TODOs and removes the floor.
//
// # Mapping
//
//	flux7                          this format
//	-----                          -----------
//	cli_tools                      tools (defaults.inherit_env: [PATH, HOME, LANG],
//	                               which flux7 passes to every command)
//	name, bin, working_dir, env    name, bin, working_dir, env
//	bin alone (simple)             simple: a dispatcher
//	commands (fine-tuned)          fine-tuned: the commands and a dispatcher
//	strict: true with commands     strict: the commands only
//	bare                           bare: <tool>.run
//	default_action                 default_action, on simple and fine-tuned
//	                               tools; left out (with a note) on strict
//	                               and bare tools, where it does nothing in
//	                               flux7 and is refused here
//	commands.<sub>.timeout         commands.<sub>.timeout
//	allowed_args "-n"              flags: {name: n}
//	allowed_args "--namespace"     flags: {name: namespace}
//	allowed_args "-target"         flags: {name: target, single_dash: true}
//	(any command's stdin)          stdin: {} on every declared command and
//	                               bare entry; dispatchers take none here
//	policies[].agent               policies[].principal
//	policies[].name                policies[].name (policy-N when missing
//	                               or refused here)
//	rules[].action allow, deny     allow, deny
//	rules[].action human_approval  require_approval
//	rules[].tools                  rules[].tools
//	no policies section            policies: [] (flux7 refuses every call
//	                               no policy allows; so does this)
//
// A flux7 file does not say what value an allowed_args flag takes. A flag
// is declared only when Options.Kinds gives its kind (none, string or
// int); otherwise it is a TODO. Positionals are always a TODO: flux7 lets
// any through, and this format accepts none until they are declared with
// a count and a pattern.
//
// # Floors
//
// A tool with a TODO is floored at human_approval. A dispatcher's
// default_action allow becomes human_approval (deny and human_approval
// stay). Each declared command and bare entry of the tool gets
// human_approval: true, its spec's floor: every call of it needs a
// person's approval whatever the policies decide, and no grant lifts it.
// The policies hold those commands too: before every allow rule that
// matches one of them, a rule named floor-N holds them for approval, so
// that the policy's own decisions say so. A grant can lift a floor-N rule
// as it lifts any require_approval rule, but not the command's
// human_approval. A file without policies needs no floor rules:
// policies: [] denies every call.
//
// # What is refused or narrowed
//
// Where the two formats might read a thing differently, the conversion
// picks the reading that allows less:
//
//   - A policy whose agent holds '*' or '?', and every policy of an agent
//     named by more than one, are left out, so their agents' calls are
//     denied: flux7's documentation does not say how it matches or
//     combines them.
//   - A rule pattern the policy package refuses, or, outside deny rules,
//     one with '?', is left out of an allow rule; in a deny rule it is
//     replaced by a pattern that matches at least as much ("mcp:gh/*"
//     becomes "mcp*"); in a human_approval rule that wider pattern is
//     denied instead.
//   - An allowed_args entry this format cannot spell ("--x", "--o=json",
//     a second spelling of one name) and a command name it refuses are
//     left out as TODOs; a strict tool left with no command is left out.
//   - A flag is declared to be given once; flux7 let it repeat.
//
// What cannot be left out without changing what runs stops the
// conversion with an error naming its line: a relative working_dir or
// bin, a tool name this format refuses. So does what flux7 itself
// refuses (bare with commands or strict, strict without commands, an
// unknown action or default_action, a timeout that is no duration, a
// duplicate tool name).
//
// The conversion does not look at the machine: a bin is written as
// given, so a bare name is looked up on PATH when the output is loaded,
// and the loader, not the conversion, refuses shells and interpreters
// and the environment variables package config refuses. Load the output
// (`execgate check`) where it will be served.
//
// # Input
//
// The input is read as untrusted text: one YAML document of at most
// config.MaxFileSize bytes, with no anchors, aliases, merge keys or
// explicit tags, no unknown or duplicate keys, every value of its type,
// and at most 1000 tools, 2000 commands, 1000 policies and 2000 rules. A
// flux7 file with other sections (HTTP or MCP tools, server settings) is
// refused: copy its cli_tools and policies into a file of their own.
// Text from the file reaches the output only as YAML scalars the encoder
// quotes, or quoted in comments.
package flux7
