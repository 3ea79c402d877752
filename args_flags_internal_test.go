package execgate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagFieldNames checks the field names flagField builds for issues,
// which an accepted call never formats.
func TestFlagFieldNames(t *testing.T) {
	for _, tt := range []struct {
		f    flagField
		want string
	}{
		{argField(0), "args[0]"},
		{argField(12), "args[12]"},
		{flagField{name: "max-count", index: -1}, "flags.max-count"},
		{flagField{name: "o", index: 0}, "flags.o[0]"},
		{flagField{name: "tag", index: 2}, "flags.tag[2]"},
	} {
		assert.Equal(t, tt.want, tt.f.String(), fmt.Sprintf("%+v", tt.f))
	}
}
