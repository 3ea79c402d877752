// Command library imports the root package, config and mcpserver, as a
// program that serves the gate itself does; TestLayout_PgxOnlyInTheBinary
// lists what it builds.
package main

import (
	"github.com/execgate/execgate"
	"github.com/execgate/execgate/config"
	"github.com/execgate/execgate/mcpserver"
)

var (
	_ = execgate.NewAllowlist
	_ = config.LoadFile
	_ mcpserver.Options
)

func main() {}
