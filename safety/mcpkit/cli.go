package mcpkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/server"

	"github.com/bastion-mcp/bastion/safety/audit"
	"github.com/bastion-mcp/bastion/safety/config"
	"github.com/bastion-mcp/bastion/safety/jail"
	"github.com/bastion-mcp/bastion/safety/result"
)

// CLI is the command line every Bastion server shares: the `check` and
// `audit verify` subcommands, and the --config, --log-level, --version,
// --print-client-config, --http and --http-token-file flags. A server adds
// its own flags to FS before calling Parse.
type CLI struct {
	Name    string
	Version string
	// Summary is the one-line description printed by --help.
	Summary string
	// Usage are the usage lines printed by --help after the summary.
	Usage []string
	// Check adds server-specific checks to `check` (may be nil).
	Check func(*config.Policy, *config.Effective)
	// ArgsHint completes the refusal of a stray positional argument.
	ArgsHint string
	// TakesArgs lets positional arguments through to Args instead of
	// refusing them (sweepd takes its roots so). They are paths:
	// --print-client-config makes them absolute.
	TakesArgs bool
	// Args are the positional arguments, when TakesArgs is set.
	Args []string
	// Roots are the main folders given on the command line (--root DIR
	// and DIR arguments), when TakeRoots was called; the server passes
	// them to config.Policy.UseCommandLineRoots.
	Roots []string
	// PolicyRequired makes --print-client-config refuse to print a
	// snippet that names no policy (terminald runs only what its policy
	// allows).
	PolicyRequired bool

	FS         *flag.FlagSet
	ConfigPath string
	LogLevel   string
	Transport  Transport
	// Logger is set by Parse: slog on stderr at --log-level.
	Logger *slog.Logger

	showVersion bool
	printClient string
	fallback    string
	takesRoots  bool
	rootFlag    rootList

	stopTelemetry func() // set by StartTelemetry
}

// rootList is a repeatable --root flag; Get returns every value, so
// --print-client-config repeats it.
type rootList []string

func (m *rootList) String() string     { return strings.Join(*m, ",") }
func (m *rootList) Set(s string) error { *m = append(*m, s); return nil }
func (m *rootList) Get() any           { return []string(*m) }

// TakeRoots makes the server take its main folder the ways every server
// takes it besides the policy: --root DIR (repeatable) and DIR arguments
// (how MCP bundles pass a directory setting), plus the environment
// variable config.RootEnv names. what describes the folder in --help
// ("a DIR sweepd may scan and reclaim in"). After Parse, Roots holds the
// folders given, flags first.
func (c *CLI) TakeRoots(what string) {
	c.takesRoots = true
	c.TakesArgs = true
	c.FS.Var(&c.rootFlag, "root", what+"; also given as an argument, or by $"+config.RootEnv(c.Name)+" or "+config.RootKey(c.Name)+" in the policy")
}

// NewCLI returns a CLI whose FlagSet already holds the shared flags.
// configHelp, if not empty, is appended to --config's usage.
func NewCLI(name, version, summary, configHelp string, stderr io.Writer) *CLI {
	c := &CLI{Name: name, Version: version, Summary: summary, FS: flag.NewFlagSet(name, flag.ContinueOnError)}
	c.FS.SetOutput(stderr)
	usage := "policy `FILE` (default $" + config.EnvPolicyFile + ")"
	if configHelp != "" {
		usage += "; " + configHelp
	}
	c.FS.StringVar(&c.ConfigPath, "config", "", usage)
	c.FS.StringVar(&c.fallback, "fallback-config", "", "policy `FILE` used only when neither --config nor $"+config.EnvPolicyFile+
		" names one (an installer's default policy, as the MCP bundles ship)")
	c.FS.StringVar(&c.LogLevel, "log-level", "info", "log `LEVEL` on stderr: debug, info, warn, error")
	c.FS.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	c.Transport.Flags(c.FS)
	PrintClientConfigFlag(c.FS, &c.printClient)
	return c
}

// Parse runs the subcommands and the shared flags. When done is true the
// process should exit with code (a subcommand ran, --help, --version,
// --print-client-config, or a `fatal:` line was printed). Otherwise the
// caller loads its policy from c.ConfigPath and serves with c.Transport
// and c.Logger.
func (c *CLI) Parse(args []string, stdout, stderr io.Writer) (code int, done bool) {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return config.RunCheckCommand(c.Name, args[1:], stdout, stderr, audit.DefaultDir, c.Check), true
		case "audit":
			if len(args) < 2 || args[1] != "verify" {
				fmt.Fprintf(stderr, "usage: %s audit verify FILE\n", c.Name)
				return 2, true
			}
			return audit.RunVerifyCommand(args[2:], stdout, stderr), true
		}
	}
	c.FS.Usage = func() {
		fmt.Fprintf(stderr, "%s %s: %s\n\n", c.Name, c.Version, c.Summary)
		for i, u := range c.Usage {
			lead := "       "
			if i == 0 {
				lead = "usage: "
			}
			fmt.Fprintf(stderr, "%s%s %s\n", lead, c.Name, u)
		}
		fmt.Fprintf(stderr, "       %s check [--config policy.toml]\n", c.Name)
		fmt.Fprintf(stderr, "       %s --print-client-config CLIENT [flags]\n", c.Name)
		fmt.Fprintf(stderr, "       %s audit verify FILE\n", c.Name)
		c.FS.PrintDefaults()
	}
	if err := c.FS.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, true
		}
		return 2, true
	}
	if c.showVersion {
		fmt.Fprintf(stdout, "%s %s\n", c.Name, c.Version)
		return 0, true
	}
	if c.takesRoots {
		c.Roots = append(append([]string{}, c.rootFlag...), c.FS.Args()...)
	}
	if c.printClient != "" {
		if c.FS.NArg() > 0 && !c.TakesArgs {
			return config.Exit(stderr, config.Fatalf("unexpected argument %q%s", c.FS.Arg(0), c.ArgsHint)), true
		}
		if err := c.wouldStart(); err != nil {
			return config.Exit(stderr, config.Fatalf("--print-client-config: no snippet, because it could not start %s: %s", c.Name, err)), true
		}
		return RunPrintClientConfig(c.Name, c.printClient, c.FS, stdout, stderr), true
	}
	if c.ConfigPath == "" && os.Getenv(config.EnvPolicyFile) == "" {
		c.ConfigPath = c.fallback
	}
	if c.TakesArgs {
		c.Args = c.FS.Args()
	} else if c.FS.NArg() > 0 {
		return config.Exit(stderr, config.Fatalf("unexpected argument %q%s", c.FS.Arg(0), c.ArgsHint)), true
	}
	logger, err := NewLogger(stderr, c.LogLevel)
	if err != nil {
		return config.Exit(stderr, err), true
	}
	c.Logger = logger
	if err := c.Transport.Validate(); err != nil {
		return config.Exit(stderr, err), true
	}
	return 0, false
}

// wouldStart checks what a client would start from the snippet: a policy
// where the server needs one, a policy that loads, and main folders that
// exist and that the jail opens. Relative paths are no problem: the
// snippet carries them made absolute.
func (c *CLI) wouldStart() error {
	path := c.ConfigPath
	if path == "" && os.Getenv(config.EnvPolicyFile) == "" {
		path = c.fallback
	}
	if c.PolicyRequired && path == "" && os.Getenv(config.EnvPolicyFile) == "" {
		return fmt.Errorf("it has no policy, and %s runs only what a policy allows: pass --config FILE "+
			"(policies/dev.example.toml is a start) or set $%s", c.Name, config.EnvPolicyFile)
	}
	pol, err := config.Load(path)
	if err != nil {
		return fmt.Errorf("its policy does not load: %s", strings.TrimPrefix(err.Error(), "fatal: "))
	}
	if !c.takesRoots {
		return nil
	}
	if err := pol.UseCommandLineRoots(c.Name, c.Roots); err != nil {
		return err
	}
	roots := pol.MainRoots(c.Name)
	if len(roots) == 0 {
		return fmt.Errorf("no folder to work in: pass --root DIR or DIR, set $%s, or set %s in the policy",
			config.RootEnv(c.Name), config.RootKey(c.Name))
	}
	for _, r := range roots {
		jr, err := OpenRoot("folder", r, "")
		if err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "fatal: "))
		}
		_ = jr.Close()
	}
	return nil
}

// OpenRoot opens an operator root named by a policy key or flag (what, e.g.
// "jail_root"), made absolute against the working directory. An empty path
// is refused with ifMissing (how to set it: servers never pick a root by
// themselves); any other refusal is a config.Fatal naming what and the path.
func OpenRoot(what, path, ifMissing string) (*jail.Root, error) {
	if path == "" {
		return nil, config.Fatalf("no %s: %s", what, ifMissing)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, config.Fatalf("%s %q: cannot make it absolute", what, path)
	}
	r, err := jail.OpenRoot(abs)
	if err != nil {
		_, reason := result.Classify(err)
		return nil, config.Fatalf("%s %s: %s", what, abs, reason)
	}
	return r, nil
}

// Serve serves s until SIGINT or SIGTERM, keeping watch (the radar's rule
// hot reload; may be nil) running in the background, and returns the
// process exit code.
func (c *CLI) Serve(s *server.MCPServer, watch func(context.Context) error, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if watch != nil {
		go func() {
			if err := watch(ctx); err != nil {
				c.Logger.Warn("risk rule files will not hot-reload", "err", err)
			}
		}()
	}
	if err := Serve(ctx, s, c.Transport, c.Logger); err != nil {
		return config.Exit(stderr, err)
	}
	return 0
}
