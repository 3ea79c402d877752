package config_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackageDoc_IsWhole keeps the package comment in one piece: a blank
// line in doc.go ends a comment, and go doc then shows only what follows
// it. Every comment before the package clause must be the package
// comment, and every heading written in doc.go must be one of its
// sections.
func TestPackageDoc_IsWhole(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc.go", src, parser.ParseComments)
	require.NoError(t, err)
	require.NotNil(t, f.Doc, "doc.go has no package comment")
	for _, g := range f.Comments {
		if g.Pos() < f.Package && g != f.Doc {
			t.Errorf("the comment at %v is cut off the package comment: %q", fset.Position(g.Pos()), firstLine(g.Text()))
		}
	}

	p, err := doc.NewFromFiles(fset, []*ast.File{f}, "github.com/execgate/execgate/config")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p.Doc, "Package config "), "the package comment starts %q", firstLine(p.Doc))
	var shown []string
	for _, b := range p.Parser().Parse(p.Doc).Content {
		if h, ok := b.(*comment.Heading); ok {
			shown = append(shown, headingText(h))
		}
	}
	written := writtenHeadings(t, src)
	require.NotEmpty(t, written)
	assert.Equal(t, written, shown, "the sections written in doc.go are the sections go doc shows")
	for _, want := range []string{"Example", "Tool modes", "Schema"} {
		assert.Contains(t, shown, want)
	}
}

// writtenHeadings returns the "# Heading" lines of the comments in src,
// in order.
func writtenHeadings(t *testing.T, src []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "// # "); ok {
			out = append(out, h)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func headingText(h *comment.Heading) string {
	var b strings.Builder
	for _, t := range h.Text {
		if p, ok := t.(comment.Plain); ok {
			b.WriteString(string(p))
		}
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
