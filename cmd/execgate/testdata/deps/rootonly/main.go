// Command rootonly imports only the root package, as a program that
// embeds the gate does; TestLayout_PgxOnlyInTheBinary lists what it
// builds.
package main

import "github.com/execgate/execgate"

func main() { _, _ = execgate.NewAllowlist() }
