// Package strictjson decodes JSON into Go structs and refuses everything
// encoding/json would quietly accept: unknown keys, keys that match a
// field only case-insensitively, duplicate keys at any depth, trailing
// data, wrong types (a float or a string for an integer, an out-of-range
// number), null where the field cannot be nil, NUL bytes (raw or escaped),
// invalid UTF-8 and unpaired surrogate escapes in strings and keys, deep
// nesting, and oversized input.
//
// It reads the input once, guided by the target's reflect.Type, and writes
// the values as it goes; types that decode themselves (time.Time, any
// json.Unmarshaler or encoding.TextUnmarshaler) are checked as JSON and
// then handed to encoding/json. A field whose shape depends on other data
// can be a Value or an Object, which Decode checks as strictly and keeps
// untyped, so that its reader never decodes the same bytes again. The
// plan of each type (which fields, which reader per value) is worked out
// once and cached. Every refusal is a list of Problems, each with the
// JSON path of the offending value ("opts.depth", "paths[2]") and a
// message that never repeats the value, so it is safe to show to the
// sender and to log.
//
// Decode is the entry point; Fields and Check describe which struct
// shapes it supports, so that callers can refuse a type when they are
// configured rather than when input arrives.
package strictjson
