// Package safety is the root of Bastion's shared safety core. The decisions
// live in its subpackages (result, config, jail, audit, ids, mcpkit, ...);
// this package holds only the module's version.
package safety

// Version is the version of the safety module, reported by every server.
const Version = "0.1.0"
