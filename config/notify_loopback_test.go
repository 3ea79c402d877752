package config

import "testing"

// TestIsLoopbackHost: only names that certainly mean this machine may go
// without TLS.
func TestIsLoopbackHost(t *testing.T) {
	for _, c := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LocalHost", true},
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"localhost.example.com", false},
		{"10.0.0.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"", false},
		{"example.com", false},
	} {
		if got := IsLoopbackHost(c.host); got != c.want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}
