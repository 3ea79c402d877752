package inputrules

import "fmt"

// MaxInputBytes is the largest JSON input, in bytes, the gate reads for
// one call.
const MaxInputBytes = 1 << 20

// InputSizeProblem returns why an input of n bytes is refused, or "".
func InputSizeProblem(n int) string {
	if n > MaxInputBytes {
		return fmt.Sprintf("input is larger than %d MiB", MaxInputBytes>>20)
	}
	return ""
}
