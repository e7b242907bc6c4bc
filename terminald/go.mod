module github.com/bastion-mcp/bastion/terminald

go 1.26.0

require (
	github.com/bastion-mcp/bastion/safety v0.1.0
	github.com/mark3labs/mcp-go v1.2.1
	golang.org/x/sys v0.50.0
)
