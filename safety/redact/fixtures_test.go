package redact

import "strings"

// Every fixture below is fake and is assembled from pieces, so that secret
// scanners run over this repository do not flag it.

// j joins pieces; it exists only to keep fixtures split in the source.
func j(parts ...string) string { return strings.Join(parts, "") }

// fixture is one secret in context.
type fixture struct {
	family string // test name
	name   string // expected marker name
	text   string // the line as a program would print it
	secret string // the bytes replaced by the marker; all else must survive
}

var (
	fakeAKIA      = j("AK", "IA", "EXAMPLEKEY234567")
	fakeASIA      = j("AS", "IA", "FAKEFAKEFAKE2345")
	fakeAWSSecret = j("wJalrXUtnFEMI/K7MDENG", "/bPxRfiCYEXAMPLEKEY")
	fakeGHP       = j("gh", "p_", "FAKE", strings.Repeat("x1", 16))
	fakeGHS       = j("gh", "s_", "FAKE", strings.Repeat("Zq", 16))
	fakeGHO       = j("gh", "o_", "FAKE", strings.Repeat("k7", 16))
	fakeGHU       = j("gh", "u_", "FAKE", strings.Repeat("u8", 16))
	fakeGHR       = j("gh", "r_", "FAKE", strings.Repeat("r9", 16))
	fakeGHPat     = j("github", "_pat_", "11FAKE", strings.Repeat("Ab3_", 19))
	fakeGLPat     = j("gl", "pat-", "FAKE", strings.Repeat("x9", 10))
	fakeXoxb      = j("xo", "xb-", "1234567890-1234567890-", "FAKEfakeFAKEfake")
	fakeXoxp      = j("xo", "xp-", "1234567890-1234567890-1234567890-", "fakefakefake")
	fakeHookPath  = j("services/", "T00000000/B00000000/", "XXXXFAKEXXXXXXXXXXXXXXXX")
	fakeSkLive    = j("sk", "_live_", "FAKE", strings.Repeat("4e", 10))
	fakeRkTest    = j("rk", "_test_", "FAKE", strings.Repeat("9q", 10))
	fakeGoogle    = j("AI", "za", "SyFAKE", strings.Repeat("a1_", 9), "zz")
	fakeOpenAI    = j("sk", "-", "FAKE", strings.Repeat("aB3", 15))
	fakeOpenProj  = j("sk", "-proj-", "FAKEfake1234", strings.Repeat("Ab9_", 10))
	fakeAnthropic = j("sk", "-ant-", "api03-", strings.Repeat("FaKe9_", 15))
	fakeJWT       = j("ey", "JhbGciOiJIUzI1NiJ9", ".", "ey", "JzdWIiOiJmYWtlIn0", ".", "FAKEsigFAKEsig123")
	fakeKeyBody   = strings.Repeat(j("MIIEFAKE", strings.Repeat("QUJD", 14), "\n"), 6)
	fakeRSAKey    = j("-----BEGIN ", "RSA PRIVATE KEY-----\n", fakeKeyBody, "-----END RSA ", "PRIVATE KEY-----")
	fakeSSHKey    = j("-----BEGIN ", "OPENSSH PRIVATE KEY-----\n", fakeKeyBody, "-----END OPENSSH ", "PRIVATE KEY-----")
	fakeECHead    = j("-----BEGIN ", "EC PRIVATE KEY-----\n", fakeKeyBody)
	fakeECTail    = j(fakeKeyBody, "-----END EC ", "PRIVATE KEY-----")
	fakeJSONKey   = j(`-----BEGIN `, `PRIVATE KEY-----\nMIIEFAKEfake\n-----END `, `PRIVATE KEY-----`)
	fakeURLPass   = j("FakePass", "123")
	fakeBasic     = j("ZmFrZTpm", "YWtlZmFrZQ==")
	fakeBearer    = j("FAKEtoken", "1234567890abc")
)

// families lists one or more fixtures per pattern family.
var families = []fixture{
	{"AWSAccessKeyID", "aws-access-key-id", "key id " + fakeAKIA + " in use", fakeAKIA},
	{"AWSSessionKeyID", "aws-access-key-id", "AWS_ACCESS_KEY_ID=" + fakeASIA, fakeASIA},
	{"AWSSecretAccessKey", "aws-secret-access-key", "aws_secret_access_key = " + fakeAWSSecret + "\n", fakeAWSSecret},
	{"AWSSecretAccessKeyEnv", "aws-secret-access-key", "export AWS_SECRET_ACCESS_KEY=" + fakeAWSSecret, fakeAWSSecret},
	{"GitHubPersonalToken", "github-token", "token " + fakeGHP + " ok", fakeGHP},
	{"GitHubServerToken", "github-token", fakeGHS, fakeGHS},
	{"GitHubOAuthToken", "github-token", "(" + fakeGHO + ")", fakeGHO},
	{"GitHubUserToken", "github-token", fakeGHU + ",", fakeGHU},
	{"GitHubRefreshToken", "github-token", "r=" + fakeGHR, fakeGHR},
	{"GitHubFineGrainedPAT", "github-pat", "GH " + fakeGHPat + " end", fakeGHPat},
	{"GitLabToken", "gitlab-token", "remote: " + fakeGLPat, fakeGLPat},
	{"SlackBotToken", "slack-token", "SLACK=" + fakeXoxb, fakeXoxb},
	{"SlackUserToken", "slack-token", "using " + fakeXoxp + " now", fakeXoxp},
	{"SlackWebhook", "slack-webhook", "POST https://hooks.slack.com/" + fakeHookPath + " 200", fakeHookPath},
	{"StripeLiveKey", "stripe-key", "stripe " + fakeSkLive, fakeSkLive},
	{"StripeRestrictedTestKey", "stripe-key", "'" + fakeRkTest + "'", fakeRkTest},
	{"GoogleAPIKey", "google-api-key", "?key=" + fakeGoogle + "&x=1", fakeGoogle},
	{"OpenAILegacyKey", "openai-key", "OPENAI " + fakeOpenAI, fakeOpenAI},
	{"OpenAIProjectKey", "openai-key", "key: [" + fakeOpenProj + "]", fakeOpenProj},
	{"AnthropicKey", "anthropic-key", "ANTHROPIC " + fakeAnthropic + " set", fakeAnthropic},
	{"JWT", "jwt", "id_jwt " + fakeJWT + " x", fakeJWT},
	{"RSAPrivateKeyBlock", "private-key", "before\n" + fakeRSAKey + "\nafter", fakeRSAKey},
	{"OpenSSHPrivateKeyBlock", "private-key", fakeSSHKey + "\nafter\n", fakeSSHKey},
	{"PrivateKeyWithoutEnd", "private-key", "$ head key.pem\n" + fakeECHead, fakeECHead},
	{"PrivateKeyTailOnly", "private-key-tail", "$ tail key.pem\n" + fakeECTail + "\n", fakeECTail},
	{"PrivateKeyInJSON", "private-key", `{"k":"` + fakeJSONKey + `\n"}`, fakeJSONKey},
	{"URLCredentials", "url-credentials", "DATABASE_URL=postgres://alice:" + fakeURLPass + "@db:5432/x", fakeURLPass},
	{"URLCredentialsNoUser", "url-credentials", "redis://:" + fakeURLPass + "@cache", fakeURLPass},
	{"AuthorizationBasic", "authorization-header", "Authorization: Basic " + fakeBasic, fakeBasic},
	{"AuthorizationJSON", "authorization-header", `{"authorization": "` + fakeBearer + `"}`, fakeBearer},
	{"BearerHeader", "bearer-token", "curl -H 'X: Bearer " + fakeBearer + "'", fakeBearer},
	{"AssignPassword", "secret-assignment", "password = hunter2fake", "hunter2fake"},
	{"AssignEnvPassword", "secret-assignment", "DB_PASSWORD=FakeDbPass1", "FakeDbPass1"},
	{"AssignPasswd", "secret-assignment", "passwd: fakepw99", "fakepw99"},
	{"AssignClientSecretQuoted", "secret-assignment", `"client_secret": "FAKE secret value"`, "FAKE secret value"},
	{"AssignAPIKey", "secret-assignment", "api_key: FAKE123abc", "FAKE123abc"},
	{"AssignAPIKeyNoSeparator", "secret-assignment", "apikey='FAKEabc123'", "FAKEabc123"},
	{"AssignAccessKey", "secret-assignment", "access_key => FAKEACCESS9", "FAKEACCESS9"},
	{"AssignToken", "secret-assignment", "GITLAB_TOKEN=FaKeToKeN42", "FaKeToKeN42"},
	{"AssignSecret", "secret-assignment", "secret := \"fake-go-secret\"", "fake-go-secret"},
	{"AssignSecretKeyCLI", "secret-assignment", "--secret-key=FakeCliSecret", "FakeCliSecret"},
}

// nearMisses must come out of the default set unchanged.
var nearMisses = []string{
	"AKIA is the prefix of an access key id",
	j("AK", "IA", "EXAMPLEKEY23456"), // one character short
	j("XAK", "IA", "EXAMPLEKEY234567"),
	"Asia/Tokyo and ASIA are regions",
	"ghp_short and gho_ and ghs_tooShort123",
	j("gh", "p_", strings.Repeat("x", 35)),
	"glpat- is GitLab's prefix",
	"xoxo-gossip-girl-fan-club and xoxb-not-really-a-token",
	j("pk", "_live_", "FAKE", strings.Repeat("4e", 10)), // publishable, not secret
	"sk_live_ alone",
	"pip install scikit-learn; sk-learn-is-not-a-key-at-all-really",
	"task-abcdefghijklmnopqrstuvwxyz123ABC",
	"AIza too short",
	"eyJ alone, eyJhbGciOiJI.notjwt",
	"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
	"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
	"see https://example.com:8080/path@v2 and http://localhost:3000/",
	"git@github.com:org/repo.git",
	"ssh://git@example.com:22/repo",
	"tokens: 5",
	"token count: 12",
	"password_reset_url=https://example.com/reset",
	"Enter password:",
	"Password:\n",
	"token := os.Getenv(\"TOKEN\")",
	"if password == \"\" {",
	"password: null",
	"password=${DB_PASSWORD}",
	"secret = getSecret(ctx)",
	"api_key: <your key here>",
	"password: ********",
	"Authorization: Bearer $TOKEN",
	"Authorization: Bearer",
	"Bearer authentication is required",
	"secretary: Bob",
	"the token is valid; the password was changed",
	"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
	"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"drwxr-xr-x  2 user user 4096 Jan  1 00:00 secrets",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
}
