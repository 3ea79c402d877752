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

	"go.yaml.in/yaml/v3"

	"github.com/execgate/execgate"
)

// MaxFileSize is the largest configuration, in bytes, that Load reads.
const MaxFileSize = 4 << 20

// inputName is the file name of errors from Load, which has none.
const inputName = "<input>"

// Loaded is a checked configuration, ready for execgate.NewExecutor.
type Loaded struct {
	// Allowlist holds every command the configuration declares. It is
	// never nil; a configuration with no tools gives an Allowlist that
	// refuses every name.
	Allowlist *execgate.Allowlist

	// Policy is the policy the configuration declares. It is always nil
	// for now: the policies and grants sections are reserved and refused
	// until the policy engine exists. A nil Policy in execgate.Config
	// allows every allowlisted call, subject to each spec's Floor.
	Policy execgate.Policy

	// Tools describes each entry of the tools list, in file order.
	Tools []Tool
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
	// DefaultAction is the dispatcher's Floor (execgate.ActionAllow,
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
// Problems in the configuration are returned together as an ErrorList
// whose entries name path, the line and the key. An error opening or
// reading the file is returned as it is, wrapped (errors.Is(err,
// fs.ErrNotExist) works).
func LoadFile(path string) (*Loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := readCapped(f, path)
	if err != nil {
		return nil, err
	}
	return LoadBytes(path, data)
}

// Load reads, checks and builds the configuration in r, as LoadFile does.
// Its errors name the file "<input>".
func Load(r io.Reader) (*Loaded, error) {
	data, err := readCapped(r, inputName)
	if err != nil {
		return nil, err
	}
	return LoadBytes(inputName, data)
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

// LoadBytes checks and builds the configuration in data, as LoadFile does;
// name is the file name its errors carry ("<input>" if empty).
//
// It never panics. Every problem it can find is reported in one
// ErrorList: the YAML must be a single document without anchors,
// aliases, merge keys or tags; every key must be known and appear once;
// every value must have its type. Then each tool is checked (see the
// package documentation for the rules). When all of that passes,
// execgate.NewAllowlist builds the Allowlist, and an error it reports is
// placed on the tool's line and key.
func LoadBytes(name string, data []byte) (*Loaded, error) {
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
	if err := p.err(); err != nil {
		return nil, err
	}
	allow, err := execgate.NewAllowlist(b.specs...)
	if err != nil {
		b.place(err)
		return nil, p.err()
	}
	return &Loaded{Allowlist: allow, Tools: b.tools}, nil
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
