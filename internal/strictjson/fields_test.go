package strictjson_test

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/execgate/execgate/internal/strictjson"
)

type base struct {
	ID string `json:"id"`
}

type withEmbedded struct {
	base
	Name  string `json:"name,omitempty"`
	Count int
	Inner inner `json:"inner"`
	skip  int
}

func TestFields(t *testing.T) {
	fs, err := strictjson.Fields(reflect.TypeFor[withEmbedded]())
	require.NoError(t, err)
	type row struct {
		Name, GoName string
		Index        []int
		OmitEmpty    bool
	}
	var got []row
	for _, f := range fs {
		got = append(got, row{f.Name, f.GoName, f.Index, f.OmitEmpty})
	}
	assert.Equal(t, []row{
		{"id", "ID", []int{0, 0}, false},
		{"name", "Name", []int{1}, true},
		{"Count", "Count", []int{2}, false},
		{"inner", "Inner", []int{3}, false},
	}, got)
}

func TestFieldsAndCheckRefuse(t *testing.T) {
	type dupName struct {
		A string `json:"X"`
		X string
	}
	type dupDeep struct {
		base
		ID string `json:"id"`
	}
	type embeddedPtr struct {
		*base
	}
	type stringOpt struct {
		N int `json:"n,string"`
	}
	type badName struct {
		N int `json:"a b"`
	}
	type dotName struct {
		N int `json:"a.b"`
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	type withIface struct {
		V any `json:"v"`
	}
	type withIntKey struct {
		M map[int]string `json:"m"`
	}
	type withTextKey struct {
		M map[netip.Addr]string `json:"m"`
	}
	type withFunc struct {
		F []func() `json:"f"`
	}
	type withComplex struct {
		C *complex128 `json:"c"`
	}
	type deepBad struct {
		Inner struct {
			List []map[string]withChan `json:"list"`
		} `json:"inner"`
	}
	for name, typ := range map[string]reflect.Type{
		"duplicate name":         reflect.TypeFor[dupName](),
		"duplicate across embed": reflect.TypeFor[dupDeep](),
		"embedded pointer":       reflect.TypeFor[embeddedPtr](),
		",string option":         reflect.TypeFor[stringOpt](),
		"name with space":        reflect.TypeFor[badName](),
		"name with dot":          reflect.TypeFor[dotName](),
		"channel":                reflect.TypeFor[withChan](),
		"interface":              reflect.TypeFor[withIface](),
		"int map key":            reflect.TypeFor[withIntKey](),
		"text map key":           reflect.TypeFor[withTextKey](),
		"func":                   reflect.TypeFor[withFunc](),
		"complex":                reflect.TypeFor[withComplex](),
		"nested deep":            reflect.TypeFor[deepBad](),
	} {
		assert.Error(t, strictjson.Check(typ), name)
	}
	_, err := strictjson.Fields(reflect.TypeFor[[]string]())
	assert.Error(t, err, "Fields needs a struct")
	assert.Error(t, strictjson.Check(nil))
}

func TestCheckAccepts(t *testing.T) {
	type node struct {
		Name     string  `json:"name"`
		Children []*node `json:"children"`
	}
	type all struct {
		B   bool                        `json:"b"`
		I   int64                       `json:"i"`
		U   uint16                      `json:"u"`
		F   float64                     `json:"f"`
		S   *string                     `json:"s"`
		D   time.Duration               `json:"d"`
		T   *time.Time                  `json:"t"`
		R   json.RawMessage             `json:"r"`
		A   netip.Addr                  `json:"a"`
		M   map[string][]map[string]int `json:"m"`
		Arr [3]byte                     `json:"arr"`
		N   node                        `json:"n"`
	}
	require.NoError(t, strictjson.Check(reflect.TypeFor[all]()))
	require.NoError(t, strictjson.Check(reflect.TypeFor[all]()), "cached")
}

func TestOpaque(t *testing.T) {
	assert.True(t, strictjson.Opaque(reflect.TypeFor[time.Time]()))
	assert.True(t, strictjson.Opaque(reflect.TypeFor[json.RawMessage]()))
	assert.True(t, strictjson.Opaque(reflect.TypeFor[netip.Addr]()))
	assert.False(t, strictjson.Opaque(reflect.TypeFor[*time.Time]()), "pointers are looked through")
	assert.False(t, strictjson.Opaque(reflect.TypeFor[json.Unmarshaler]()))
	assert.False(t, strictjson.Opaque(reflect.TypeFor[inner]()))
	assert.False(t, strictjson.Opaque(nil))
}
