// Package execgate is a gate between an untrusted caller, such as an AI
// agent, and the operating system's processes.
package execgate
