// Command prog is a plain program that imports execgate, for the
// confinement tests: built without the race detector, it shows that the
// confinement helper is not entered in a program that does not ask for
// it, and it is a target whose memory use the tests control.
//
// By default it prints "main ran", its arguments and its effective user ID. "alloc N"
// allocates N bytes, then prints "allocated".
package main

import (
	"fmt"
	"os"
	"strconv"

	_ "github.com/execgate/execgate"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "alloc" {
		n, err := strconv.ParseInt(os.Args[2], 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
		b := make([]byte, n)
		b[0], b[len(b)-1] = 1, 1
		fmt.Println("allocated")
		return
	}
	fmt.Println("main ran", os.Args[1:], "euid", os.Geteuid())
}
