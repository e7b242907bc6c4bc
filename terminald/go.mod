module github.com/bastion-mcp/bastion/terminald

go 1.26.0

require (
	github.com/bastion-mcp/bastion/safety v0.1.0
	github.com/mark3labs/mcp-go v1.2.1
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-shellwords v1.0.16 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
