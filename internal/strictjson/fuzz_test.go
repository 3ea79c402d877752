package strictjson_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/strictjson"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts
// is valid JSON that encoding/json, with unknown fields disallowed,
// decodes to the same value: Decode only ever refuses more.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"n":1}`, `{"n":1,"n":2}`, `{"N":1}`, `{"name":"\u0000"}`,
		`{"paths":["a",null]}`, `{"opts":{"depth":1,"tags":["x"]}}`,
		`{"labels":{"a":"b"}}`, `{"when":"2024-01-02T03:04:05Z"}`,
		`{"raw":"aGk="}`, `{"pair":[1,2]}`, `{"any":[1,{"a":true}]}`,
		`{"tiny":-128,"u":255,"f":-1.5e3,"b":false}`, `{"trace":true}`,
		"{\"name\":\"\xff\"}", `{"name":"\ud83d\ude00"}`, `[{}]`, `{"n":1} `,
		`{"f":3.4028235e38}`, `{"f":3.4028236e38}`, `{"n":-0}`, `{"raw":"aG\nk="}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got target
		err := strictjson.Decode(data, &got)
		if err != nil {
			var se *strictjson.Error
			require.ErrorAs(t, err, &se)
			require.NotEmpty(t, se.Problems)
			return
		}
		require.True(t, json.Valid(data), "accepted invalid JSON")
		var want target
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&want), "encoding/json refuses what Decode accepted")
		assert.Equal(t, want, got)
	})
}
