package execgate

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Validator splits tags on ',' and '|', so a pattern that holds either
// falls apart into tags that do not exist or a pattern that does not
// compile. The error names the escape that keeps it whole, and the
// escaped pattern works.
func TestStruct_UnescapedCommaInAPatternNamesTheEscape(t *testing.T) {
	type repeatBounds struct {
		S string `json:"s" validate:"regexp=^[a-z]{1,40}$"`
	}
	type openEnded struct {
		S string `json:"s" validate:"regexp=^a{2,}$"`
	}
	type commaInGroup struct {
		S string `json:"s" validate:"regexp=^(a,b)$"`
	}
	type pipe struct {
		S string `json:"s" validate:"regexp=^(a|b)$"`
	}
	for name, schema := range map[string]ArgsSchema{
		"repeat bounds":     Struct(func(repeatBounds) Argv { return Argv{} }),
		"open-ended repeat": Struct(func(openEnded) Argv { return Argv{} }),
		"comma in a group":  Struct(func(commaInGroup) Argv { return Argv{} }),
		"pipe in a group":   Struct(func(pipe) Argv { return Argv{} }),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewAllowlist(CommandSpec{Name: "bad", Command: "/bin/echo", Args: schema})
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "want *ConfigError, got %v", err)
			assert.Equal(t, "Args", ce.Field)
			assert.Contains(t, ce.Message, "0x2C")
			assert.Contains(t, ce.Message, "0x7C")
		})
	}

	type escaped struct {
		S string `json:"s" validate:"regexp=^[a-z]{10x2C3}$"`
	}
	schema := Struct(func(escaped) Argv { return Argv{} })
	_, err := NewAllowlist(CommandSpec{Name: "good", Command: "/bin/echo", Args: schema})
	require.NoError(t, err)
	_, err = schema.Parse([]byte(`{"s":"abc"}`))
	require.NoError(t, err)
	_, err = schema.Parse([]byte(`{"s":"abcd"}`))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "must match the pattern ^[a-z]{1,3}$", ve.Issues[0].Message)

	type misspelt struct {
		S string `json:"s" validate:"requried"`
	}
	_, err = NewAllowlist(CommandSpec{Name: "typo", Command: "/bin/echo", Args: Struct(func(misspelt) Argv { return Argv{} })})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "requried", "the unknown tag is still named")
}
