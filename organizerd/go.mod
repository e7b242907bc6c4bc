module github.com/bastion-mcp/bastion/organizerd

go 1.26.0

require (
	github.com/bastion-mcp/bastion/safety v0.1.0
	github.com/mark3labs/mcp-go v1.2.1
)
