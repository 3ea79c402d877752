package execgate

// The confinement helper is entered from the init function of package
// internal/confine, which this package imports: a process started as a
// helper by DefaultExecFn becomes one there, before the packages that
// sort after it are initialized (see "Confinement" in the package
// documentation). In any other process that init compares os.Args[1]
// with a constant and returns.
import _ "github.com/execgate/execgate/internal/confine"
