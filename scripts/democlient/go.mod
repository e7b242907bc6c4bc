module github.com/bastion-mcp/bastion/scripts/democlient

go 1.26.0

require (
	github.com/bastion-mcp/bastion/safety v0.1.0
	github.com/mark3labs/mcp-go v1.2.1
)
