package main

// The binary builds stores/pgstore, which the approval store of the
// server section uses (README.md, "Layout").
import _ "github.com/execgate/execgate/stores/pgstore"
