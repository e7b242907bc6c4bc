module github.com/bastion-mcp/bastion/safety

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/mark3labs/mcp-go v1.2.1 // indirect
	github.com/mattn/go-shellwords v1.0.16 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
