package audit

// ChainFile is what a Chain made by OpenChain appends to, for tests that
// stand in for *os.File.
type ChainFile = chainFile

// OpenChainFile continues the chain in f, which must behave as a file
// opened for appending, exactly as OpenChain does once it has opened and
// locked its file.
func OpenChainFile(f ChainFile, opts ChainOptions) (*Chain, error) {
	return openChain(f, opts)
}
