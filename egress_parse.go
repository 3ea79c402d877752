package execgate

// ParseEgressEntry checks one entry of an [Egress] list, HOST:PORT in one
// of the forms [Egress] Allow describes, and returns it in the normal
// form [NewAllowlist] keeps it in: a name in lower case without a
// trailing dot, an address or prefix as net/netip writes it (an IPv6 one
// in brackets), and the whole port range as "*". An entry it refuses,
// NewAllowlist refuses too, with the same message; a caller that reads
// the lists from a file of its own can check each entry here and report
// a bad one where it was written.
func ParseEgressEntry(s string) (string, error) {
	e, err := parseEgressEntry(s)
	if err != nil {
		return "", err
	}
	return e.text, nil
}
