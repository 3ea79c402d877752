package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/policy"
)

// MaxFileSize is the largest configuration, in bytes, that [Load] reads.
const MaxFileSize = 4 << 20

// inputName is the file name of errors from [Load], which has none.
const inputName = "<input>"

// Loaded is a checked configuration, ready for [execgate.NewExecutor].
type Loaded struct {
	// Allowlist holds every command the configuration declares. It is
	// never nil; a configuration with no tools gives an Allowlist that
	// refuses every name.
	Allowlist *execgate.Allowlist

	// Policy is what to put in execgate.Config.Policy. It is Engine when
	// the configuration has a policies section, and nil otherwise. A nil
	// Policy allows every allowlisted call, subject to each spec's Floor
	// (a tool's default_action); an empty policies list (policies: [])
	// gives an Engine that denies every call.
	Policy execgate.Policy

	// Engine is the policy engine built from the policies section, with
	// the grants of the grants section, or nil when the configuration has
	// no policies section. Use it to add and revoke grants while the
	// program runs (Engine.Grant, Engine.Revoke); to load a changed file
	// into it, use Reload.
	Engine *policy.Engine

	// Policies are the entries of the policies section, in file order, as
	// given to the Engine. Nil when the section is absent.
	Policies []policy.Policy

	// Grants are the grants created from the grants section, in file
	// order, each with the ID the Engine gave it (the file's id, or a new
	// UUIDv7) and its creation time. They describe the load; grants
	// revoked or expired since are still listed.
	Grants []policy.Grant

	// Tools describes each entry of the tools list, in file order.
	Tools []Tool

	// Server is the server section, for the execgate binary's serve
	// command, or nil when the configuration has none.
	Server *Server

	file        string      // the name errors carry
	policiesKey position    // the policies key
	grants      position    // the grants key
	grantAt     []grantPos  // where each of Grants is written
	state       *reloadable // shared by a load and every reload of it
	warnings    []Warning   // see Warnings
	examplesRun int         // examples of commands checked at load, for tests
}

// position is where a value is written, for errors found after the
// YAML nodes are gone.
type position struct {
	line, col int
	path      string
}

func positionOf(n *yaml.Node, path string) position {
	if n == nil {
		return position{path: path}
	}
	return position{line: n.Line, col: n.Column, path: path}
}

// grantPos locates one grant entry and its id.
type grantPos struct {
	entry, id position
}

// LoadOptions configures how a configuration is loaded. The zero
// LoadOptions is what [LoadFile], [Load] and [LoadBytes] use.
type LoadOptions struct {
	// Now is the clock of the Engine built from the policies section: it
	// judges the grants' expiry, at load time and afterwards, and paces
	// rate limits. Nil means Policy.Now, and time.Now if that is nil too.
	// Tests set it to load grants with fixed dates.
	Now func() time.Time

	// Policy configures the Engine built from the policies section: the
	// longest grant (MaxGrantDuration, 24 hours when zero), how many
	// grants it holds, and how much rate-limit state it keeps. Its zero
	// value picks the policy package's defaults. Negative fields make
	// every load fail.
	Policy policy.Options
}

// engineOptions returns the Options of the Engine a load builds.
func (o LoadOptions) engineOptions() (policy.Options, error) {
	opts := o.Policy
	if o.Now != nil {
		opts.Now = o.Now
	}
	if _, err := policy.New(nil, opts); err != nil {
		return policy.Options{}, fmt.Errorf("config: LoadOptions.Policy: %w", err)
	}
	return opts, nil
}

// Tool describes one entry of the tools list: what it exposes.
type Tool struct {
	// Name is the tool's name.
	Name string
	// Mode is how its subcommands are exposed.
	Mode Mode
	// Specs are the names of the CommandSpecs it produced, in file order,
	// the dispatcher (named like the tool) last.
	Specs []string
	// DefaultAction is the dispatcher's Floor ([execgate.ActionAllow],
	// ActionRequireApproval or ActionDeny), or "" when the tool has no
	// dispatcher (strict and bare tools).
	DefaultAction string
	// Line is the line of the tool's entry in the file.
	Line int
}

// Mode is how a tool's subcommands are exposed.
type Mode string

// The tool modes. See the package documentation.
const (
	// ModeStrict exposes only the declared subcommands, each as
	// "<tool>.<subcommand>".
	ModeStrict Mode = "strict"
	// ModeFineTuned exposes the declared subcommands and a dispatcher,
	// "<tool>", for every other subcommand.
	ModeFineTuned Mode = "fine-tuned"
	// ModeSimple exposes only a dispatcher.
	ModeSimple Mode = "simple"
	// ModeBare exposes a binary without subcommands as "<tool>.run".
	ModeBare Mode = "bare"
)

// LoadFile reads, checks and builds the configuration in the file at path.
// Problems in the configuration are returned together as an [ErrorList]
// whose entries name path, the line and the key. An error opening or
// reading the file is returned as it is, wrapped (errors.Is(err,
// fs.ErrNotExist) works). It is LoadOptions{}.LoadFile.
func LoadFile(path string) (*Loaded, error) {
	return LoadOptions{}.LoadFile(path)
}

// Load reads, checks and builds the configuration in r, as [LoadFile] does.
// It is LoadOptions{}.Load.
func Load(r io.Reader) (*Loaded, error) {
	return LoadOptions{}.Load(r)
}

// LoadBytes checks and builds the configuration in data, as [LoadFile] does;
// name is the file name its errors carry ("<input>" if empty). It is
// LoadOptions{}.LoadBytes.
func LoadBytes(name string, data []byte) (*Loaded, error) {
	return LoadOptions{}.LoadBytes(name, data)
}

// LoadFile is the package's [LoadFile] with the options o.
func (o LoadOptions) LoadFile(path string) (*Loaded, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return o.LoadBytes(path, data)
}

// Load is the package's [Load] with the options o.
func (o LoadOptions) Load(r io.Reader) (*Loaded, error) {
	data, err := readCapped(r, inputName)
	if err != nil {
		return nil, err
	}
	return o.LoadBytes(inputName, data)
}

// LoadBytes checks and builds the configuration in data with the options
// o; name is the file name its errors carry ("<input>" if empty).
//
// It never panics. Every problem it can find is reported in one
// [ErrorList]: the YAML must be a single document without anchors,
// aliases, merge keys or tags; every key must be known and appear once;
// every value must have its type. Then each tool, policy and grant is
// checked (see the package documentation for the rules), and the grants
// are created in a new Engine. When all of that passes,
// [execgate.NewAllowlist] builds the Allowlist, and an error it reports is
// placed on the tool's line and key.
//
// Only a [LoadOptions] whose Policy cannot be used (a negative field)
// gives an error that is not an ErrorList.
func (o LoadOptions) LoadBytes(name string, data []byte) (*Loaded, error) {
	opts, err := o.engineOptions()
	if err != nil {
		return nil, err
	}
	l, err := load(name, data, opts)
	if err != nil {
		return nil, err
	}
	l.state = &reloadable{opts: opts, fileGrants: grantIDs(l.Grants)}
	return l, nil
}

// readFile reads the configuration at path, at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return readCapped(f, path)
}

// readCapped reads all of r, or returns an ErrorList if r holds more
// than MaxFileSize bytes.
func readCapped(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: reading %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(name)
	}
	return data, nil
}

func tooLarge(name string) error {
	return ErrorList{{File: name, Message: fmt.Sprintf("larger than %d bytes (4 MiB); refusing to read it", MaxFileSize)}}
}

// load checks and builds the configuration in data, building its Engine,
// if any, with opts.
func load(name string, data []byte, opts policy.Options) (*Loaded, error) {
	if name == "" {
		name = inputName
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(name)
	}
	p := &problems{file: name}
	root := parse(p, data)
	if root == nil {
		return nil, p.err()
	}
	d := &decoder{problems: p}
	var doc *fileDoc
	if d.usable(root, "") {
		doc = d.file(root)
	}
	if doc == nil {
		return nil, p.err()
	}
	b := d.build(doc)
	sec := b.policySection(opts)
	srv := b.serverSection(doc.server, doc.serverKey)
	if err := p.err(); err != nil {
		return nil, err
	}
	allow, err := execgate.NewAllowlist(b.specs...)
	if err != nil {
		b.place(err)
		return nil, p.err()
	}
	var pols []policy.Policy
	if sec != nil {
		pols = sec.policies
	}
	p.runExamples(doc, allow, pols, opts)
	if err := p.err(); err != nil {
		return nil, err
	}
	l := &Loaded{Allowlist: allow, Tools: b.tools, Server: srv, file: name, warnings: b.warnings(sec), examplesRun: p.examplesRun}
	if sec != nil {
		l.Policy, l.Engine = sec.engine, sec.engine
		l.Policies, l.Grants, l.grantAt = sec.policies, sec.grants, sec.grantAt
		l.policiesKey, l.grants = sec.policiesKey, sec.grantsKey
	}
	return l, nil
}

// yamlLineRe matches the position in the YAML parser's messages.
var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse returns the root node of data's only document, or nil after
// recording why there is none.
func parse(p *problems, data []byte) (root *yaml.Node) {
	defer func() {
		// The parser is not ours; whatever it does, Load must not panic.
		if r := recover(); r != nil {
			p.at(0, 0, "", "the YAML parser failed on this input")
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		p.at(0, 0, "", "empty: write version: 1 and a tools list")
		return nil
	}
	if err != nil {
		syntaxError(p, err)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		syntaxError(p, err)
		return nil
	default:
		p.at(extra.Line, extra.Column, "", "holds more than one YAML document; a configuration is one document")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		p.at(0, 0, "", "holds no YAML document")
		return nil
	}
	return doc.Content[0]
}

func syntaxError(p *problems, err error) {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.at(line, 0, "", "invalid YAML: %s", m[2])
		return
	}
	p.at(0, 0, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}
