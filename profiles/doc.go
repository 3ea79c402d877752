// Package profiles holds vetted tool entries for common programs, written
// in the tools-entry format of package config and embedded in the binary.
//
// Each profile is one YAML mapping, a tools entry whose name is the
// program's name and whose bin is the program's bare name (looked up on
// PATH when the configuration loads). A profile types every argument
// (paths are paths inside the working directory), describes each command
// for a model, marks what is read-only, confines the program (it reads
// the working directory, writes nothing and has no network), and carries
// examples of calls that must pass and calls that must be refused, with
// a comment for each technique a rule shuts out.
//
// A configuration uses one with a tools entry such as
//
//	tools:
//	  - profile: git
//	    working_dir: /srv/repo
//
// and [Names] and [Lookup] give the profiles to programs that build
// configurations themselves.
package profiles
