package execgate

import "github.com/execgate/execgate/internal/confine"

// init enters the confinement helper when, and only when, this process was
// started as one by DefaultExecFn (see "Confinement" in the package
// documentation). In any other process it compares os.Args[1] with a
// constant and returns.
func init() {
	confine.RunHelperIfRequested()
}
