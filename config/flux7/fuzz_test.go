package flux7_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/config/flux7"
)

// delegated matches the key paths of the problems the conversion leaves
// to the loader, which judges them on the machine that serves the file:
// whether a bin exists and is no interpreter, and which env variables
// are refused.
var delegated = regexp.MustCompile(`^tools\[\d+\]\.(bin|env(\..*|\[.*)?)$`)

// FuzzConvert feeds Convert arbitrary files: it must not panic, and what
// it writes must load, but for the problems it leaves to the loader.
func FuzzConvert(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.flux7.yaml"))
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range convertCases {
		f.Add([]byte(tc.in))
	}
	kinds := []flux7.Kind{{Flag: "-n", Value: 1}, {Flag: "--x"}, {Flag: "-target", Value: 2}}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := flux7.Convert("fuzz.yaml", data, flux7.Options{Kinds: kinds})
		if err != nil {
			var list config.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, not an ErrorList: %v", err, err)
			}
			return
		}
		_, err = config.LoadBytes("out.yaml", res.YAML)
		var list config.ErrorList
		if err != nil && !errors.As(err, &list) {
			t.Fatalf("the output does not load: %v\n%s", err, res.YAML)
		}
		for _, e := range list {
			if !delegated.MatchString(e.Path) {
				t.Fatalf("the output does not load: %v\n%s", e, res.YAML)
			}
		}
	})
}
