// Package config builds an execgate allowlist from a YAML file, so that
// operators can declare which commands an agent may run, with which
// flags, without writing Go.
//
// [Load] a file and hand the result to an Executor:
//
//	loaded, err := config.LoadFile("execgate.yaml")
//	if err != nil {
//		log.Fatal(err) // every problem, one per line: file:line:col: key.path: message
//	}
//	x, err := execgate.NewExecutor(execgate.Config{Allowlist: loaded.Allowlist, Policy: loaded.Policy})
//
// The tools list says what can ever run; the optional policies list says
// which principal (execgate.WithPrincipal) may run it now, and whether a
// person must approve first. A file without policies allows every
// allowlisted call to every caller; see "Policies and grants".
//
// One entry of the tools list is one executable. Depending on its keys it
// becomes one or more execgate.CommandSpecs, named "<tool>.<subcommand>",
// "<tool>.run" or "<tool>".
//
// # Example
//
//	version: 1
//	defaults: {timeout: 30s, max_output: 64KiB, env: {PATH: /usr/bin:/bin}, inherit_env: [HOME]}
//	tools:
//	  - name: git
//	    bin: git
//	    strict: true
//	    global_args: ["--no-pager", "-c", "core.hooksPath=/dev/null"]
//	    commands:
//	      log:
//	        description: Show recent commits
//	        flags:
//	          - {name: max-count, short: n, value: int, min: 1, max: 500}
//	          - {name: oneline}
//	          - {name: format, value: enum, enum: [oneline, short, medium]}
//	          - {name: author, value: pattern, pattern: '^[A-Za-z .@-]{1,64}$'}
//	        positionals: {max: 1, pattern: '^[A-Za-z0-9._/-]{1,100}$'}
//	        end_of_options: true
//	  - name: jq
//	    bin: jq
//	    bare:
//	      flags: [{name: compact-output, short: c}]
//	      positionals: {max: 1, pattern: '^[.a-z\[\]0-9 |]{1,200}$'}
//	      stdin: {max: 1MiB}
//	  - name: terraform
//	    bin: terraform
//	    default_action: human_approval
//	    commands:
//	      plan: {flags: [{name: target, value: string}]}
//
// This allows exactly git.log (strict: no other git subcommand exists),
// jq.run, terraform.plan, and every other terraform subcommand
// ("terraform.apply") through a dispatcher whose calls always need an
// approval.
//
// # Tool modes
//
//   - strict (strict: true, with commands): only the declared subcommands
//     exist, each as "<tool>.<subcommand>". Any other name is an
//     *execgate.NotFoundError.
//   - fine-tuned (commands without strict): the declared subcommands, plus
//     a dispatcher registered as "<tool>" that serves every other
//     "<tool>.<subcommand>".
//   - simple (neither commands nor bare): only the dispatcher.
//   - bare (bare:): a binary without subcommands, exposed as "<tool>.run".
//
// A declared subcommand's spec runs bin with global_args, the subcommand,
// then what its flags, positionals and stdin accept (execgate.Flags). A
// bare spec runs bin with global_args, then what its grammar accepts.
//
// A dispatcher (execgate.Subcommands) takes the subcommand from the
// requested name only, never from the arguments; it must match
// ^[a-z][a-z0-9-]*$ and nothing but global_args comes before it. Its
// arguments ({"args": [...]}) pass the token checks of execgate.Flags (no
// shell metacharacters, control characters, "--" or leading '@') but no
// flag allowlist: any flag the subcommand understands can be given,
// including ones that make it read, write or run other things. That is why
// a dispatcher answers to default_action, the spec's Floor, which can only
// make the policy's decision stricter: allow (the policy decides alone),
// human_approval (every call needs Propose and Execute, even when the
// policy allows it), or deny, which is the default, so that a dispatcher
// does nothing until the operator says so. A strict or bare tool has no
// dispatcher; default_action on it is an error. A dispatcher accepts no
// stdin, and it runs with the tool's limits (no command's).
//
// # Schema
//
// Top level:
//
//	version: 1          required; the only version this package reads
//	defaults: {...}     optional; see below
//	tools: [...]        required; an empty list allows nothing
//	policies: [...]     optional; who may run what (see "Policies and
//	                    grants"); without it every allowlisted call is
//	                    allowed, and policies: [] denies every call
//	grants: [...]       optional; needs policies
//	server: {...}       optional; for the execgate binary (see "Server")
//
// defaults (each applies to every tool that does not set its own):
//
//	timeout             duration; the default when unset is 30s
//	no_output_timeout   duration; 0s or unset means off
//	max_output          size, per output stream; the default is 64KiB
//	env                 mapping of variable names to string values
//	inherit_env         list of variable names to copy from this process
//
// A tools entry:
//
//	name                required; 1 to 63 ASCII letters, digits, '_' and
//	                    '-', starting with a letter or digit; unique
//	bin                 required; an absolute path, or a bare name looked
//	                    up once, at load time, on this process's PATH
//	                    (not the PATH in env)
//	sha256              the executable's SHA-256, 64 hex digits; checked at
//	                    load time and before every call
//	working_dir         absolute path; unset means the working directory
//	                    of the loading process, captured at load time
//	env, inherit_env    as in defaults
//	timeout, no_output_timeout, max_output
//	                    as in defaults; they override defaults
//	policy_version      string bound into approval digests; change it to
//	                    invalidate pending approvals; unset means "1"
//	description         shown in tool listings (the dispatcher's and the
//	                    bare entry's; a command has its own)
//	default_action      allow, deny or human_approval; the dispatcher's
//	                    Floor; unset means deny
//	strict              boolean; requires commands
//	global_args         list of fixed tokens placed before the
//	                    subcommand (or, for bare, before everything);
//	                    callers can never place anything there
//	allow_hostile_env   boolean; see "Refused environment variables"
//	allow_interpreter   boolean; see "Shells and interpreters"
//	commands            mapping of subcommand to a command entry
//	bare                a command entry; excludes commands and strict
//	confine             what every command of the tool may touch once it
//	                    runs (Linux); see "Confinement"
//
// A command entry (the value of a commands key, or of bare); an empty
// entry (`status:` or `status: {}`) takes no arguments:
//
//	flags               list of flag entries, in the order they are emitted
//	positionals         {max: integer >= 0, pattern: RE2 regexp, path:
//	                    a path rule}; without it no positional is
//	                    accepted; with path every positional is a path
//	                    (see "Paths"), and pattern is refused
//	stdin               {max: size}; without it stdin is refused; `stdin:`
//	                    or `stdin: {}` accepts up to 1MiB
//	end_of_options      boolean; emit "--" before the positionals
//	leading             list of fixed tokens emitted in place of the
//	                    command's name, after the tool's global_args:
//	                    [pr, list] for gh's pr-list, [diff, --no-ext-diff]
//	                    for a diff that must not run an external program;
//	                    unset means [the command's name]; not on bare
//	human_approval      boolean; every call needs a person's approval
//	                    whatever the policies say (the spec's Floor)
//	timeout, no_output_timeout, max_output
//	                    override the tool's and the defaults'
//	description         shown in tool listings
//	annotations         {read_only, destructive, idempotent, open_world}:
//	                    booleans for tool listings (execgate.Hints); not
//	                    enforced
//	confine             replaces the tool's confine whole (nothing of the
//	                    tool's is merged in); unset inherits the tool's
//
//	examples            {allow: [...], refuse: [...]}: calls that must
//	                    pass and must be refused; checked at load time
//	                    (see "Examples")
//
// Subcommand keys must match ^[a-z][a-z0-9-]*$, at most 64 bytes.
//
// A flag entry (see execgate.Flag for how each is matched and emitted):
//
//	name                required; without dashes ("max-count")
//	short               one ASCII letter or digit ("n" is -n)
//	single_dash         boolean; spell the name with one dash (-name)
//	value               none (the default: a boolean flag), string, int,
//	                    enum, pattern or path
//	min, max            integers; bounds of an int value
//	enum                list of strings; required for, and only for, enum
//	pattern             RE2 regexp a value must match as a whole; required
//	                    for, and only for, pattern
//	path                a path rule (see "Paths"); only for value: path,
//	                    which without it takes any path inside the
//	                    working directory
//	repeat              integer; how often the flag may be given; 0 means once
//	glued               boolean; also accept -n5 (needs a one-character
//	                    spelling and a value)
//	separate            boolean; emit a two-dash flag's value as the next
//	                    argument (--max-time 5), for programs that read
//	                    only that form (curl, jq); such a value must not
//	                    start with '-'; needs a value
//	values              list of {name, value, min, max, enum, pattern,
//	                    path}: a flag that takes several values, each
//	                    typed as above (jq's --rawfile NAME FILE); name
//	                    (required, unique) names the value for the
//	                    model, value (required) is its kind, not none.
//	                    The flag and its values are separate arguments
//	                    and no value may start with '-'; the "flags"
//	                    entry is an array of the values (an array of
//	                    such arrays with repeat), and in "args" the flag
//	                    is followed by that many tokens. Excludes value,
//	                    min, max, enum, pattern, path, glued and separate
//	                    on the flag; at most 8 values:
//
//	  flags:
//	    - name: rawfile
//	      values: [{name: name, value: pattern, pattern: '^[a-z_]+$'},
//	               {name: file, value: path, path: {must: file}}]
//
// # Profiles
//
// A tools entry may name a vetted profile (package profiles: git, jq, rg,
// ...) instead of writing the tool out:
//
//	tools:
//	  - profile: git
//	    working_dir: /srv/repo
//	    timeout: 10s
//
// The entry is then the profile's entry, with what the entry sets in
// place of the profile's: only name, bin, sha256, working_dir, timeout,
// no_output_timeout, max_output, policy_version and the site values below
// may be set (any other key is an error naming the profile and the key:
// the grammar, the environment and the confinement are the profile's;
// the defaults section's env and inherit_env do not reach it either, its
// limits do).
// bin, when unset, is the profile's program found on PATH under its own
// name or another name its distribution uses (fd's fdfind on Debian).
// working_dir, when unset, is the loading process's working directory,
// and is added to the read paths of each confine of the profile (the
// tool's and a command's own).
//
// Some profiles need what only the site knows, and mark where it goes with
// ${name} in their text; an entry naming such a profile must set it, and
// one naming a profile without that mark may not:
//
//	hosts               list of host names (lower case, no scheme, port,
//	                    path or user): the hosts curl may reach
//	namespaces          list of namespace names: the namespaces kubectl
//	                    may read; the first is the default
//	kubeconfig          absolute path of the file kubectl's cluster and
//	                    credentials are in
//
// A list item that is only a mark becomes one item per value; a mark in a
// pattern becomes an alternation of the values, each quoted, so a pattern
// matches those names and no other; a mark in a description becomes the
// values as a list ("a, b"); a mark anywhere else becomes the first value. A problem found in a profile's own text names the profile
// and its line there. `execgate profiles` lists the profiles; `execgate
// init --profile git,rg --root DIR` writes a starter file that uses them.
//
// # Paths
//
// A path argument (value: path, or positionals with path) is checked as a
// path, not as text (execgate.PathRule): it is cleaned, and refused when it
// names anything outside its roots ("src/../../secret.txt", "/etc/passwd"),
// starts with '-' or '@', holds a control or invisible character, or,
// unless lexical, leads outside through a symbolic link. The program is
// given the cleaned path ("a/./b" as "a/b"). A path rule is a mapping,
// every key optional; `path: {}` is anything inside the working directory:
//
//	roots               list of absolute directories a path may name
//	                    something in; unset means the tool's working_dir
//	must                exists, file or dir: what must be at the path
//	glob                boolean; allow * ? [ for a program that expands
//	                    patterns itself (the fixed part is checked)
//	lexical             boolean; check the text only, without resolving
//	                    symbolic links
//
// The check is made when the call is validated, the program opens the path
// later: a confine with read and write paths closes that window.
//
// # Confinement
//
// A confine mapping becomes the spec's execgate.Confinement: what the
// command may touch once it runs, enforced by the Linux kernel on it and
// every process it starts (see the execgate package documentation for how,
// and for what each kernel supports; `execgate check` reports what the
// running kernel has). At tool level it applies to every command of the
// tool and to its dispatcher; a command entry's (or bare's) own confine
// replaces it whole. A tool or command without one runs unconfined.
//
//	confine:
//	  read: [/usr, /etc/ssl]
//	  write: [/srv/scratch]
//	  exec: [/usr/bin]
//	  network: false
//	  limits: {cpu: 10s, memory: 512MiB, files: 256, file_size: 64MiB, processes: 64}
//	  require: true
//
// Its keys, each optional:
//
//	read                list of absolute paths (files or directory trees)
//	                    the command may read (Confinement.Read); its own
//	                    executable and the dynamic loader's libraries
//	                    are readable without being listed, working_dir
//	                    is not: list it to let the command read there
//	write               list of absolute paths it may write, and read
//	                    (Confinement.Write)
//	exec                list of absolute paths it may execute, and read
//	                    (Confinement.Exec)
//	network             false (the default) starts the command in a new
//	                    network namespace with only its own loopback: no
//	                    other host, and no port of this machine's
//	                    127.0.0.1; true leaves it on this host's network;
//	                    a list of HOST:PORT entries, or a mapping of allow
//	                    and deny lists, keeps it off the network but for
//	                    those hosts, through an egress proxy (see below;
//	                    Confinement.Egress)
//	unix_sockets        boolean; true lets the command create Unix sockets,
//	                    and so reach any pathname socket it can see (a
//	                    docker.sock); false (the default) refuses them
//	                    (Confinement.UnixSockets)
//	limits              resource limits, each optional; unset sets none:
//	  cpu               duration of processor time (RLIMIT_CPU), rounded
//	                    up to a whole second
//	  memory            size: the virtual address space of each process
//	                    (RLIMIT_AS), not resident memory; runtimes that
//	                    reserve address space up front need far more than
//	                    they use: a Go program needs over 1GiB just to
//	                    start, a JVM or Go's race detector more
//	  files             integer: one more than the highest file descriptor
//	                    a process may open (RLIMIT_NOFILE)
//	  file_size         size: the largest file a process may write
//	                    (RLIMIT_FSIZE)
//	  processes         integer: processes and threads the user may have
//	                    at once (RLIMIT_NPROC; counts all of the user's)
//	require             boolean; true (the default) refuses the call with
//	                    a spawn error when the kernel lacks what is asked
//	                    (Landlock ABI 3, or user namespaces when network
//	                    is not true); false runs it with what the kernel
//	                    can do and names the rest in the Result
//	                    (Confinement.BestEffort)
//
// An empty mapping, confine: {}, is the strictest confinement: the command
// reads only what it needs to start, writes and executes nothing else and
// has no network. Paths are cleaned and deduplicated; a relative path is
// refused. memory and file_size take a size as elsewhere but may exceed
// 2GiB ("4GiB"); cpu, memory, files, file_size and processes must be more
// than zero (leave a key out for no limit).
//
// The hosts a command may reach, when it is not to have the whole
// network, are written in network as a list (the allow list) or as a
// mapping of an allow and a deny list, each optional:
//
//	network: [api.github.com:443, '*.githubusercontent.com:443']
//
//	network:
//	  allow: ['*.example.com:443', 10.1.0.0/16:5432, '[fd00::1]:8000-8999']
//	  deny: [internal.example.com:443]
//
// Either becomes Confinement.Egress; see execgate.Egress for the forms of
// an entry: HOST is a name, "*." and a name (one or more labels before
// it), "*" (any name), an IPv4 address, an IPv6 address in brackets, or a
// prefix; PORT is a number, a range such as 8000-8999, or "*". Quote an
// entry that starts with * or [ (YAML reads those as an alias or a list).
// Each entry is checked as the file loads; names are compared without
// regard to case, and deny wins over allow. The command still starts in a
// network namespace of its own; the gate runs an HTTP proxy for the call
// on its loopback (127.0.0.1:3128, named in HTTP_PROXY, HTTPS_PROXY and
// ALL_PROXY) that tunnels CONNECT and forwards http:// requests to the
// listed destinations and nowhere else. The proxy resolves names itself,
// and refuses loopback, private, link-local and cloud metadata addresses
// unless an entry names the address itself. Every attempt, allowed
// or refused, is in the Result's connections. An empty list, like an
// empty mapping, allows nothing, as false does, but reports each attempt;
// a program that ignores the proxy variables reaches nothing at all.
//
// # Examples
//
// A command entry, a bare entry and a policy rule may carry examples:
// calls the author means to be let through (allow) and calls that must
// be refused (refuse). Load runs every example through an
// execgate.Executor built on the loaded Allowlist, whose ExecFn starts
// nothing, and fails, placing the
// problem on the example's line, when an allow example is refused (the
// message carries the refusal) or a refuse example gets through (the
// message carries the argv it would have run).
//
//	commands:
//	  log:
//	    flags: [{name: max-count, value: int, min: 1, max: 500}]
//	    examples:
//	      allow: [{args: [--max-count, "5"]}, {}]
//	      refuse: [{args: [--max-count, "0"]}, {args: [--all]}]
//
// An entry of a command's or a bare entry's lists is the call's arguments
// object (the JSON Run takes) written as a YAML mapping; an empty entry
// is {}. Values keep their YAML types, so quote a number that is an
// argv token ("5"). These examples run as "<tool>.<subcommand>" or
// "<tool>.run" without a policy and without a principal: they test the
// command's grammar, not who may call it.
//
// An entry of a rule's lists is a mapping of principal (optional; unset
// is a call without a principal), tool (required: the requested name,
// such as "git.log" or "terraform.apply") and input (optional; the
// arguments object, {} when unset). These run with the principal
// (execgate.WithPrincipal), through a new policy.Engine built from the
// policies section without its rate limits and without any grant, so
// that they test the rules, not state that changes while a program runs;
// each dispatcher's default_action applies as always. A rule's example
// is let through when the call runs or needs an approval
// (require_approval), and refused when it is not allowlisted, its input
// is invalid, or it is denied; the example does not check which rule
// decided.
//
// # Policies and grants
//
// Without a policies section, [Loaded.Policy] is nil, and an Executor built
// with it allows every allowlisted call, whoever makes it, subject only to
// each dispatcher's default_action. That suits a program with one trusted
// caller; give every other program a policies section.
//
// With one, Loaded.Policy and [Loaded.Engine] are a *policy.Engine built
// from it, and the package documentation of policy says how it decides.
// In short: the policy whose principal is exactly the caller's principal
// is chosen, else the matching pattern with the longest literal prefix,
// else the policy with principal "*" (which also governs calls without a
// principal), else none and the call is denied; within the chosen policy
// the first rule with a tools pattern matching the requested name
// decides, and a name no rule matches is denied. An empty list,
// policies: [], gives an Engine that denies every call. A tool's
// default_action applies after the policy and can only make its decision
// stricter: a rule's allow on a dispatcher with default_action:
// human_approval still needs an approval, and a rule's deny holds against
// default_action: allow.
//
// A policies entry:
//
//	name                required; unique; at most 64 ASCII letters,
//	                    digits, '_', '-' and '.', starting with a letter or
//	                    digit; decisions name rules "<name>/<rule>"
//	principal           required; an exact principal ("ci-bot"), a pattern
//	                    ("agent-*", "agent-?"), or "*" for everyone; not
//	                    empty, and no two policies share one
//	rules               required; list of rule entries, tried in order;
//	                    rules: [] denies every call of these principals
//	rate_limit          optional; see below
//
// A rule entry:
//
//	tools               required; non-empty list of patterns over requested
//	                    command names ("git.log", "gh.*", "kubectl.delete*")
//	action              required; allow, deny or require_approval (a rule
//	                    spells it require_approval, where a tool's
//	                    default_action says human_approval)
//	name                optional; names the rule in decisions instead of its
//	                    1-based position ("agents/no-destroy", "agents/2");
//	                    at most 64 ASCII letters, digits, '_' and '-';
//	                    unique in its policy; not "default", not all digits
//	examples            optional; {allow: [...], refuse: [...]}, each entry
//	                    {principal, tool, input}; see "Examples"
//
// In patterns, '*' matches any run of characters, dots included, and '?'
// one character; a pattern matches the whole name, case-sensitively. A
// tool pattern holds only letters, digits, '_', '-', '.', '*' and '?';
// "**" is refused. A principal pattern holds any printable character but
// white space, '[', ']', '{', '}' and '\'.
//
// A tool pattern that matches no name the tools list serves is not an
// error, since tools may be added later; it is a warning (see
// "Warnings"), because a misspelt pattern denies nothing: a deny rule for
// "terraform.destory" lets terraform.destroy fall through to the rules
// after it. Put deny rules before broader allows.
//
// A rate_limit mapping (every key optional; see policy.RateLimit):
//
//	per_minute          integer; calls per minute for each principal
//	burst               integer; calls a principal may make at once;
//	                    unset means per_minute; needs per_minute
//	budget              integer; calls all the policy's principals may
//	                    make together per budget_window
//	budget_window       duration; unset means the budget never refills;
//	                    needs budget
//	loop                {max: integer 1 to 100, window: duration}: refuse
//	                    the same call (name, argv and stdin) by the same
//	                    principal more than max times within window
//
// A grants entry, a temporary waiver of approvals (see policy.Grant):
//
//	principal           required; principal pattern
//	tool                required; tool pattern
//	expires             required; an RFC 3339 timestamp with a time zone
//	                    (2030-01-02T15:04:05Z, 2030-01-02T16:04:05+01:00),
//	                    plain or quoted; a date alone is refused
//	id                  optional; unique; 1 to 128 ASCII letters, digits,
//	                    '_', '-', '.' and ':'; unset means a new UUIDv7
//	reason              optional; for people reading the grants
//
// A grant turns a rule's require_approval into allow for the principals
// and names it covers, until it expires; it never overturns a deny, never
// applies where no rule matched, never lifts a default_action, and does
// not lift rate limits. Each is created with Engine.Grant when the file
// is loaded, and [Loaded.Grants] lists them. A grant must expire after the
// load and at most 24 hours after it (LoadOptions.Policy.MaxGrantDuration
// changes that): an expired grant is a load error, not something skipped,
// so remove it from the file. The time is [LoadOptions.Now], which is also
// the Engine's clock afterwards.
//
// # Server
//
// The server section is read by the execgate binary's serve and run
// commands, not by the library: [Loaded.Server] holds it, nil when absent.
//
//	server:
//	  principal: local-agent
//	  tokens:
//	    - {principal: ci-bot, sha256: "<hex SHA-256 of ci-bot's token>"}
//	  approvers:
//	    - {principal: alice, sha256: "<hex SHA-256 of alice's token>"}
//
// Its keys, each optional:
//
//	principal           the principal of calls over MCP on stdio, which
//	                    carries no caller identity, and of execgate run
//	tokens              list of {principal, sha256}: the bearer tokens of
//	                    the HTTP API's callers, who list and call tools
//	approvers           list of {principal, sha256}: the bearer tokens of
//	                    those who list, approve and reject pending
//	                    approvals over the HTTP API; they cannot call tools
//	max_concurrent      how many commands serve runs at once, in all: 1 to
//	                    10000, default 64 (DefaultMaxConcurrent)
//	max_concurrent_per_principal
//	                    how many of those one principal runs at once: 1 to
//	                    max_concurrent, default half of max_concurrent
//	                    (at least 1), so that one caller cannot take every
//	                    slot
//	max_queue_wait      how long a call over a bound waits for a slot
//	                    before it is refused, such as 2s: 0s to 1m, default
//	                    0s (refused at once)
//	max_pending_per_principal
//	                    how many pending approvals one principal may hold
//	                    in serve's approval store: 1 to 1000 (the store's
//	                    capacity), default a quarter of it (250), so that
//	                    one caller cannot fill the store for the others;
//	                    calls without a principal share one quota
//	max_pending_bytes_per_principal
//	                    how many bytes (inputs, arguments, reasons) one
//	                    principal's pending approvals may hold, a size
//	                    such as 8MiB: 1B to 64MiB (the store's budget),
//	                    default a quarter of it (16MiB)
//	mcp_http_elicitation
//	                    true lets a client of MCP over Streamable HTTP
//	                    (serve --mcp-http) approve a call held for
//	                    approval by answering an elicitation; default
//	                    false: such calls wait for the approvers
//	approval_wait       how long a call over MCP that serve leaves
//	                    pending for the approvers waits for their
//	                    decision before it answers pending, such as 2m:
//	                    0s to 15m (an approval's lifetime), default 0s
//	                    (pending at once; the agent learns the outcome
//	                    by calling again); while it waits, a client that
//	                    asked for progress gets notifications/progress
//	max_grant           the longest grant an approver may give the
//	                    principal of a call in the same decision that
//	                    approves it (serve's POST /v1/approvals/{id} with
//	                    "grant"), such as 30m: 0s to 24h, default 1h
//	                    (DefaultMaxGrant); 0s lets approvers make no
//	                    grants
//	notify              list of webhooks serve tells of approvals (see
//	                    below), at most 16
//	approval_store      {kind, dsn_env, table}: where serve keeps pending
//	                    approvals, decisions and the results of approved
//	                    calls; kind memory (the default) or postgres, with
//	                    dsn_env the name of the variable of serve's own
//	                    environment that holds the connection string
//	                    (never the string itself, which is refused at its
//	                    line without being repeated), so that several
//	                    replicas on one database share them
//	audit_store         {kind: postgres, dsn_env, table}: a hash-chained,
//	                    append-only table that serve records every call
//	                    in, one chain for every replica (with --audit FILE
//	                    too when both are given); dsn_env as for
//	                    approval_store
//
// Both keys of an entry are required. sha256 is the token's SHA-256, 64
// hex digits (quote it if YAML would read it as a number); a token is
// never written in the file, and an error about a sha256 value never
// repeats it. `execgate token` prints a new random token and its hash.
// A principal is 1 to 256 bytes of UTF-8 without white space, control,
// formatting or invisible characters: the rule the gate applies to every
// principal. No token may be listed twice, and no principal may
// be both under tokens and under approvers, so that no caller can
// approve its own calls.
//
// The bounds are execgate.Config.MaxConcurrent, MaxConcurrentPerPrincipal
// and MaxQueueWait of the Executor serve builds; Loaded.Server holds them
// with their defaults filled in, and serve uses the same defaults for a
// file without a server section. 64 is a fixed number rather than one
// derived from the machine's CPUs, so that a file means the same wherever
// it is served: the commands an agent runs mostly wait on files and
// networks. Zero is refused, since "no bound" is not a setting a server
// has.
//
// Over stdio, an elicitation answer approves by default (serve
// --approvals), since the client is the user's own program on the same
// machine. Over HTTP the client may be the agent itself, which could
// answer its own question, so mcp_http_elicitation is false unless the
// file says otherwise: set it only when every token under tokens belongs
// to a client that asks a person.
//
// Each entry of notify is a webhook that serve posts a signed JSON
// message to when an approval is pending and when it is decided
// ([Server.Notify]; the messages and their signature are described in
// "go doc github.com/execgate/execgate/cmd/execgate"):
//
//	server:
//	  notify:
//	    - url: https://hooks.example.com/execgate
//	      secret_env: EXECGATE_WEBHOOK_KEY
//	      events: [pending, decided]
//	      timeout: 10s
//
// Its keys:
//
//	url                 required; where the messages are posted: https,
//	                    or http to localhost, 127.0.0.1 or ::1 only; no
//	                    user, password or fragment; at most 2048 bytes;
//	                    each url listed once
//	secret_env          required; the name of the environment variable of
//	                    serve's process that holds the webhook's signing
//	                    key (at least 16 bytes; serve refuses to start
//	                    without it); never the key itself. No tool may
//	                    inherit it (inherit_env), or every command it ran
//	                    would hold the key
//	events              pending, decided or both (the default)
//	timeout             how long one attempt to deliver a message may
//	                    take, such as 5s: more than 0s, at most 1m,
//	                    default 10s
//
// A url may hold a secret of its own (many chat services put one in the
// path), so no error and no log line repeats a url beyond its scheme and
// host, and no error repeats a secret_env that is not a plain variable
// name: it may be a key pasted in its place.
//
// # Reloading
//
// [Loaded.Reload] loads a changed file and applies it to the running
// Engine: it revokes the grants the previous file created, swaps in the
// new policies (policy.Engine.Swap) and creates the new file's grants.
// Grants made through the Engine's API, rate-limit state and pending
// approvals survive. Give the Executor the new allowlist afterwards:
//
//	next, err := cur.Reload("execgate.yaml")
//	if err != nil {
//		log.Print(err) // the file does not load, or some of its grants could not be made
//	}
//	if next != nil { // its rules are in force
//		x.SetAllowlist(next.Allowlist)
//		cur = next
//	}
//
// Decisions made during a reload are race-free and use either the old
// rules or the new ones. A reload cannot add or remove the policies
// section, since an Executor's Policy is fixed when it is built; restart
// the program for that.
//
// # Values
//
// Durations are strings that time.ParseDuration reads: "30s", "1m30s",
// "500ms"; a bare number is refused, it has no unit. Sizes are a plain
// integer of bytes or a string with a unit B, KiB, MiB or GiB ("64KiB",
// "1 MiB"), at most 2147483647 bytes (confine's memory and file_size may
// be larger). KB, MB, GB, K, M and G are refused
// as ambiguous (1000 or 1024?); write KiB, MiB or GiB. Negative values are
// refused, and so is zero, except for no_output_timeout, where 0s means
// off (a tool can turn off a default that way), server.max_queue_wait
// and server.approval_wait, where 0s means no wait, and server.max_grant,
// where 0s means no grants.
//
// Every value must have its type: a string where a boolean or an integer
// is expected is refused, and so is a number where a string is expected;
// quote it ("2"). A key with no value (`timeout:`) is refused, except for
// bare, a command entry and stdin, where it means an empty mapping.
//
// # Merging
//
// A command's timeout, no_output_timeout and max_output override its
// tool's, which override the defaults'; what none sets gets the root
// package's default. The child's environment, read once at load time, is
// the variables named in defaults.inherit_env and the tool's inherit_env,
// copied from this process if set (execgate.InheritEnv), then
// defaults.env, then the tool's env; a later entry wins. Nothing else is
// inherited.
//
// # YAML that is refused
//
// A configuration is one YAML document of at most [MaxFileSize] bytes.
// Unknown keys, duplicate keys, anchors (&a), aliases (*a), merge keys
// (<<) and explicit tags (!!str, !custom) are refused, so what is read is
// what is written and no alias can multiply the input.
//
// # Refused environment variables
//
// Some variables make the executable, its dynamic loader, a pager or a
// language runtime load or run code of their choosing. They are refused
// as keys of env and as entries of inherit_env unless the tool sets
// allow_hostile_env: true. In defaults they are refused always: set them
// on the one tool that needs them. The list, compared case-insensitively:
// every LD_*, DYLD_*, GIT_CONFIG_* and BASH_FUNC_* variable; GIT_CONFIG,
// GLIBC_TUNABLES, BASH_ENV, ENV, SHELLOPTS, BASHOPTS, PS4, PROMPT_COMMAND,
// IFS, PAGER, GIT_PAGER, LESSOPEN, LESSCLOSE, EDITOR, VISUAL, GIT_EDITOR,
// GIT_SEQUENCE_EDITOR, GIT_SSH, GIT_SSH_COMMAND, GIT_ASKPASS, SSH_ASKPASS,
// GIT_EXTERNAL_DIFF, GIT_PROXY_COMMAND, GIT_EXEC_PATH, NODE_OPTIONS,
// NODE_PATH, PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, PERL5OPT, PERL5LIB,
// PERLLIB, RUBYOPT, RUBYLIB, JAVA_TOOL_OPTIONS, _JAVA_OPTIONS,
// JDK_JAVA_OPTIONS; GCONV_PATH, LOCPATH, NLSPATH, HOSTALIASES,
// RESOLV_HOST_CONF; MANPAGER, GH_PAGER, SYSTEMD_PAGER, BROWSER, PERL5DB,
// PYTHONWARNINGS, PYTHONBREAKPOINT, ZDOTDIR; and, because they point a
// tool at other data or credentials, GIT_TEMPLATE_DIR, GIT_DIR,
// GIT_WORK_TREE, KUBECONFIG and DOCKER_HOST.
//
// GIT_ALLOW_PROTOCOL is judged by its value: a colon-separated list of
// the transports git may use for a URL. A name other than file, git, ssh,
// http, https, ftp, ftps, -none and _ (the last two name no transport, so
// allow none) lets a URL of the form name::address run a program: ext
// runs the command the URL spells out, any other name runs
// git-remote-<name> from PATH, and an empty value or an empty name in the
// list allows the URL ::address. Such a value, and inheriting the
// variable (whose value is not known at load), are refused as the
// variables above are. The accepted names hold against a caller's URL,
// not against a hostile repository: a remote's vcs in the repository's
// own config runs the helper "git remote-<name>", which the repository
// can define as an alias for file, git, ssh and -none. Only _ can name
// no alias, which is why the git profile sets GIT_ALLOW_PROTOCOL=_.
//
// A PATH in env must hold only absolute directories: an empty or relative
// entry would let a tool that looks up helper programs (git-<sub>, kubectl
// plugins) find one in its working directory.
//
// # Shells and interpreters
//
// A shell, a command runner or an interpreter runs whatever its arguments
// or input say, so no flag allowlist can make it safe. A tool whose bin is
// one is refused, in every mode, unless it is a bare entry with fixed
// arguments (no flags, no positionals, no stdin: the operator wrote the
// whole argv in global_args) or the tool sets allow_interpreter: true.
// Both the configured name and the base name of the file its symlinks lead
// to are judged, so /bin/sh is caught where it links to dash. The names:
// sh, ash, bash, rbash, dash, ksh, mksh, pdksh, zsh, csh, tcsh, fish,
// pwsh; env, xargs, timeout, nice, nohup, busybox, toybox, sudo, doas, su,
// runuser, setsid, stdbuf, chroot, ionice, taskset, chrt, flock, unshare,
// nsenter, watch, script, strace, ltrace, time, systemd-run, expect; node,
// nodejs, deno, bun, bunx, npx, npm, pnpm, yarn, pipx, uv, uvx, make,
// gmake, awk, gawk, mawk, nawk, ksh93; every name starting with python or
// ipython; and perl, ruby, php, lua, luajit, tclsh, wish and pypy,
// alone or followed by a version ("perl5.36.0", "ruby3.1"), all compared
// in lower case. A copy of an
// interpreter under another name is not recognized: the list is a guard
// against mistakes, not a sandbox.
//
// # Errors
//
// [LoadFile], Load and [LoadBytes] report every problem they find, not just
// the first, as an [ErrorList] of [*Error], each with the file name, line,
// column, key path ("tools[1].commands.log.flags[2].pattern",
// "policies[0].rules[1].action", "grants[2].expires") and a message. The
// policy package judges every name, pattern, action, rate limit and grant
// of the policies and grants sections; each of its complaints is placed
// on the value it is about. Problems found by execgate.NewAllowlist, which runs only when
// everything else passed (a SHA-256 pin that does not match, for
// example), are placed on the tool's key as well. Nothing is built unless
// everything passes, and no input makes them panic.
//
// # Warnings
//
// A configuration that loads may still hold what is likely a mistake.
// [Loaded.Warnings] lists it, each [Warning] with the file, line, column, key
// path and a message, in the form of an Error; a warning never stops a
// load. There are three:
//
//   - A rules tools pattern that no call can match: it matches no
//     command name the tools list serves and is no dispatcher's. A call
//     names an ordinary command ("kubectl.get"), or
//     "<dispatcher>.<subcommand>" for a dispatcher, which serves every
//     such name ("git.status" and "git.*" are fine when git is a
//     dispatcher); a dispatcher's own name ("git") is never requested.
//     The message names the closest name the file serves, by edit
//     distance ("kubctl.*": did you mean "kubectl.get"?), a dispatcher's
//     names written as "git.*".
//   - A command served without a description, which the model then does
//     not get: a subcommand without its own description (it does not
//     take the tool's), a bare entry with none on it or on its tool, and
//     a dispatcher whose tool has none (the model sees only how to name a
//     subcommand). A description of blanks is none.
//   - An example of a profile that does not hold here. The project's
//     tests prove every profile's examples in a scratch directory that
//     holds the files they name (README, src/main.go); a site's
//     working_dir holds other files, and a profile's example that needs
//     one it lacks must not stop the site's file from loading. Entries
//     naming the same profile with the same site values and overrides,
//     whatever their names and working directories, make the same calls
//     of the same grammar: their examples are checked in full at the
//     first of them, and at each of the others, in that entry's own
//     working directory, those that did not hold at the first and, in
//     another directory than the first's, every refuse example a path
//     rule refused at the first (a path rule's root is the working
//     directory, so a working_dir of /etc lets through an example reading
//     /etc/passwd, and says so; what the grammar refuses, it refuses in
//     any directory). An allow example that held at the first is not
//     checked again. An example of the file's own is always checked and
//     is an error.
//
// execgate check prints the warnings on stderr, and execgate serve logs
// them when it starts and after each reload.
package config
