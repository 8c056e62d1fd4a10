// chain.go -- t_toolchains.sh's workload in Go: main calls outer, which
// calls inner, the hot loop, until SECONDS (argv[1], default 0.3) have
// passed.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink float64

//go:noinline
func inner(n int) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		s += float64(i) * 0.5 / (float64(i) + 1)
		sink = s
	}
	return s
}

//go:noinline
func outer(n int) float64 {
	return inner(n) + 1
}

func main() {
	until := 0.3
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			until = v
		}
	}
	start := time.Now()
	s := 0.0
	for time.Since(start).Seconds() < until {
		s += outer(200000)
	}
	fmt.Println(s > 0)
}
