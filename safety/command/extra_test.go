package command

import "testing"

func TestEverydayCommandsAreNotOverDenied(t *testing.T) {
	mustAllow(t, shipped(t), "git log -p", "git show -p HEAD", "git diff -c", "git commit -c HEAD",
		"git branch -c a b", "tar -C out -xf x.tar", "find . -name foo -print0", "cp -p a b", "mkdir -m 755 d",
		"git stash push -m msg", "git tag -a v1 -m msg", "git log -S foo",
		"git format-patch -o patches HEAD~2", "git log --output-indicator-new=+", "git commit --template=msg.txt",
		"git rm --cached x", "git reset --soft HEAD~1", "git clean -nd", "tail -n 5 f", "git fetch --all --prune",
		"sort -k 2 -t : f", "git checkout -- file.go", "git rebase main", "grep -c x f")
	// A push is not refused: a person approves it (the shipped ask_args).
	mustAsk(t, shipped(t), "git push -o ci.skip origin main")
}
