package risk

import "regexp"

// SecretPatterns are the secret shapes the content scanner looks for. A
// match is reported by Label and line, never by its text. The set is kept
// to high-precision token shapes: a generic "password = ..." is judged by
// the structure probe instead, which knows it is reading a config file.
//
// safety/redact keeps its own table for output redaction; the two are to be
// merged into one set.
var SecretPatterns = []struct {
	Name, Label string
	Re          *regexp.Regexp
}{
	{"private-key", "private key block", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)},
	{"aws-access-key-id", "AWS access key ID", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`)},
	{"aws-secret-access-key", "AWS secret access key", regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}\b`)},
	{"github-token", "GitHub token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b`)},
	{"gitlab-token", "GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}\b`)},
	{"slack-token", "Slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
	{"slack-webhook", "Slack webhook URL", regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}`)},
	{"stripe-key", "Stripe live secret key", regexp.MustCompile(`\b[sr]k_live_[A-Za-z0-9]{20,}\b`)},
	{"google-api-key", "Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"openai-key", "OpenAI API key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}\b`)},
	{"anthropic-key", "Anthropic API key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{32,}\b`)},
	{"npm-token", "npm access token", regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"pypi-token", "PyPI upload token", regexp.MustCompile(`\bpypi-AgE[A-Za-z0-9_-]{50,}`)},
	{"jwt", "JSON Web Token", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
	{"url-password", "connection string with a password", regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.-]{1,20})://[^\s:/@'"]+:[^\s@/'"]+@[^\s/'"]+`)},
}
