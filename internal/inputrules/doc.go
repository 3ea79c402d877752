// Package inputrules holds every rule execgate applies to text it is
// given: the characters an argv token may hold, what a principal, a
// command name, a tool name, a flag name, a subcommand and an environment
// key look like, how large an input may be, and the message each rule
// gives. The root package, package config, package mcpserver and the JSON
// Schema generators all ask it, so a rule is written once and a loader
// cannot accept what the gate refuses.
//
// # Characters a token may not hold
//
// A token (an argument, a flag value, a fixed leading argument, an enum
// value) may hold any valid UTF-8 except the characters [Refused] reports.
// They are decided by Unicode properties, from the tables of Go's unicode
// package (Unicode [unicode.Version]), not by a hand list. Each has a
// [Class], named in parentheses, which messages use:
//
//   - NUL, U+0000 (NUL).
//   - Control characters: the general category Cc, that is C0, DEL and
//     C1 (Control).
//   - Formatting characters: the Bidi_Control property (U+061C, U+200E,
//     U+200F, U+202A–U+202E, U+2066–U+2069), which can make text display
//     in an order other than the one the command reads; the line and
//     paragraph separators, general categories Zl and Zp (U+2028,
//     U+2029); and every other format character, general category Cf,
//     that is not default-ignorable, such as U+0600 ARABIC NUMBER SIGN
//     and the interlinear annotation characters U+FFF9–U+FFFB
//     (Formatting).
//   - Invisible characters: Unicode's Default_Ignorable_Code_Point, which
//     renderers are told to draw as nothing, so an approver reading the
//     argv would not see them. Go has no table for it, so it is built
//     from the properties Unicode derives it from:
//     Other_Default_Ignorable_Code_Point, plus Cf, plus
//     Variation_Selector, minus White_Space, minus the interlinear
//     annotation and the Egyptian hieroglyph format characters, minus
//     Prepended_Concatenation_Mark. It holds, among others, U+00AD SOFT
//     HYPHEN, U+034F COMBINING GRAPHEME JOINER, the Hangul fillers
//     U+115F, U+1160, U+3164 and U+FFA0, U+17B4, U+180E, U+200B–U+200D,
//     U+2060–U+2064, the variation selectors U+FE00–U+FE0F, U+FEFF and
//     the Tags block U+E0000–U+E007F (Invisible).
//   - U+2800 BRAILLE PATTERN BLANK. Unicode does not call it
//     default-ignorable, since it is a braille cell with no dots, but it
//     is drawn as blank space by every font that has it, so a token made
//     of it looks empty; a command line has no use for it (Invisible).
//
// Space characters (U+0020, U+00A0, U+3000 and the like) are allowed in
// tokens: they are visible as space and arguments often hold them.
// Principals may not hold them (see [PrincipalProblem]).
//
// [SchemaClass] writes the same set as the body of a regular expression
// character class, for the JSON Schemas a model is shown, so that a
// schema never accepts a character the gate refuses.
package inputrules
