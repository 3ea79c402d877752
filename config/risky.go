package config

import (
	"path/filepath"
	"strings"
)

// hostileEnv are environment variables that make a dynamic loader, a
// shell, a pager, a library or a language runtime load or run code of the
// caller's choosing, or point a tool at other data or credentials than the
// operator expects. Keys are compared in upper case.
var hostileEnv = map[string]bool{
	// From the issue.
	"LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true, "GLIBC_TUNABLES": true,
	"BASH_ENV": true, "ENV": true, "PAGER": true, "GIT_PAGER": true, "LESSOPEN": true,
	"GIT_SSH_COMMAND": true, "GIT_EXEC_PATH": true, "NODE_OPTIONS": true, "PYTHONPATH": true,
	"PERL5OPT": true, "RUBYOPT": true, "JAVA_TOOL_OPTIONS": true,
	// Their close relatives.
	"LESSCLOSE": true, "GIT_CONFIG": true, "GIT_SSH": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true,
	"GIT_EXTERNAL_DIFF": true, "GIT_PROXY_COMMAND": true, "GIT_EDITOR": true,
	"GIT_SEQUENCE_EDITOR": true, "EDITOR": true, "VISUAL": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PS4": true, "PROMPT_COMMAND": true, "IFS": true, "PYTHONHOME": true, "PYTHONSTARTUP": true,
	"PERL5LIB": true, "PERLLIB": true, "RUBYLIB": true, "NODE_PATH": true, "_JAVA_OPTIONS": true,
	"JDK_JAVA_OPTIONS": true,
	// glibc and other libraries that load modules or data from a path.
	"GCONV_PATH": true, "LOCPATH": true, "NLSPATH": true, "HOSTALIASES": true, "RESOLV_HOST_CONF": true,
	// Programs that other programs start: pagers, browsers, debuggers.
	"MANPAGER": true, "GH_PAGER": true, "SYSTEMD_PAGER": true, "BROWSER": true, "PERL5DB": true,
	"PYTHONWARNINGS": true, "PYTHONBREAKPOINT": true, "ZDOTDIR": true, "GIT_TEMPLATE_DIR": true,
	"GIT_DIR": true, "GIT_WORK_TREE": true, "KUBECONFIG": true, "DOCKER_HOST": true,
}

// hostileEnvPrefixes are prefixes of hostile variables: every LD_ and
// DYLD_ variable steers a dynamic loader, every GIT_CONFIG_ variable can
// set any git option (core.sshCommand, core.pager, alias.*), and BASH_FUNC_
// variables define shell functions.
var hostileEnvPrefixes = []string{"LD_", "DYLD_", "GIT_CONFIG_", "BASH_FUNC_"}

// isHostileEnv reports whether key is a loader-hostile variable.
func isHostileEnv(key string) bool {
	k := strings.ToUpper(key)
	if hostileEnv[k] {
		return true
	}
	for _, p := range hostileEnvPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// interpreters are programs that run code, or another program, given in
// their arguments or input: shells, command runners and language
// interpreters.
var interpreters = map[string]bool{
	// Shells.
	"sh": true, "ash": true, "bash": true, "rbash": true, "dash": true, "ksh": true, "mksh": true,
	"pdksh": true, "zsh": true, "csh": true, "tcsh": true, "fish": true, "pwsh": true,
	// Command runners.
	"env": true, "xargs": true, "timeout": true, "nice": true, "nohup": true, "busybox": true,
	"toybox": true, "sudo": true, "doas": true, "su": true, "runuser": true, "setsid": true,
	"stdbuf": true, "chroot": true, "ionice": true, "taskset": true, "chrt": true, "flock": true,
	"unshare": true, "nsenter": true, "watch": true, "script": true, "strace": true, "ltrace": true,
	"time": true, "systemd-run": true, "expect": true,
	// Interpreters and their launchers.
	"node": true, "nodejs": true, "deno": true, "bun": true, "bunx": true, "npx": true, "npm": true,
	"pnpm": true, "yarn": true, "pipx": true, "uvx": true, "uv": true, "make": true, "gmake": true,
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "ksh93": true,
}

// versionedInterpreters are interpreters installed under versioned names
// ("perl5.36.0", "ruby3.1", "lua5.4"): the name followed by digits and dots.
var versionedInterpreters = []string{"perl", "ruby", "php", "lua", "luajit", "tclsh", "wish", "pypy"}

// isInterpreter reports whether the base name of path names a shell,
// command runner or interpreter, compared in lower case (some file systems
// do not tell case apart). Every name starting with "python" or "ipython"
// counts. A copy or hard link under another name cannot be recognized:
// pin the executable's SHA256 where that matters.
func isInterpreter(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	if interpreters[base] || strings.HasPrefix(base, "python") || strings.HasPrefix(base, "ipython") {
		return true
	}
	for _, name := range versionedInterpreters {
		if rest, ok := strings.CutPrefix(base, name); ok && strings.Trim(rest, "0123456789.") == "" {
			return true
		}
	}
	return false
}

// pathProblem reports why a PATH value is unsafe, or "": every entry must be
// a non-empty absolute directory, or a tool that looks up helper programs
// (git-<sub>, kubectl plugins) could find one in the working directory.
func pathProblem(value string) string {
	for _, dir := range filepath.SplitList(value) {
		if dir == "" || !filepath.IsAbs(dir) {
			return "every PATH entry must be an absolute directory: an empty or relative entry lets tools find helper programs in the working directory"
		}
	}
	return ""
}

// gitTransports are the values of GIT_ALLOW_PROTOCOL's colon-separated
// list that name a transport git carries out itself, with a program of
// its own: what a URL can ask for is then limited to these. "-none" and
// "_" name no transport, and so allow none. Every other name lets a URL
// of the form name::address reach a program: "ext" runs the command the
// URL spells out, and any other name runs the remote helper
// git-remote-<name> found on PATH; an empty value, or an empty name in
// the list, allows the URL "::address" the same.
//
// These hold against a caller's URL, not against a repository's own
// config: a remote's vcs names its helper directly, and git runs it as
// the git command "remote-<name>", which the repository can define as an
// alias where git has no such command (file, git, ssh, "-none"). Only "_"
// can be no alias, and it is what the git profile sets.
var gitTransports = map[string]bool{
	"-none": true, "_": true, "file": true, "git": true, "ssh": true,
	"http": true, "https": true, "ftp": true, "ftps": true,
}

// envValueHostile says why setting key to value in a tool's environment
// would let a program of the caller's choosing run, or "" when it would
// not. Only variables whose risk lies in their value are judged here; see
// isHostileEnv for those hostile whatever their value.
func envValueHostile(key, value string) string {
	if !strings.EqualFold(key, "GIT_ALLOW_PROTOCOL") {
		return ""
	}
	for _, name := range strings.Split(value, ":") {
		if !gitTransports[name] {
			return "GIT_ALLOW_PROTOCOL allows a transport that runs a program a URL names (ext, a remote helper git-remote-<name> found on PATH, or an empty name); list only _ for no transport, or file, git, ssh, http, https, ftp or ftps for a URL of those (a hostile repository's remote vcs can still run an alias for file, git or ssh)"
		}
	}
	return ""
}

// valueHostileEnv are the variables envValueHostile judges: inheriting
// one from the environment of the process, whose value is not known when
// the configuration is checked, is hostile.
var valueHostileEnv = []string{"GIT_ALLOW_PROTOCOL"}
