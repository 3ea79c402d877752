package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logConfig is testConfig with a secret in echo's environment.
var logConfig = strings.Replace(testConfig, "env: {PATH: /usr/bin:/bin}", "env: {PATH: /usr/bin:/bin, API_KEY: ENV-SECRET-5e1f}", 1)

// TestE2E_ServeLogs: serve logs on stderr as one JSON object per line by
// default (time, level, msg and fields), key=value lines with
// --log-format text, and never a token, an environment value or a
// request's body.
func TestE2E_ServeLogs(t *testing.T) {
	path := writeFile(t, "tools.yaml", logConfig)
	const (
		secretToken = "not-a-configured-token-7a2c"
		secretBody  = "BODY-SECRET-31d8"
	)
	for _, tc := range []struct {
		about string
		args  []string
		json  bool
	}{
		{"by default, JSON", nil, true},
		{"--log-format json", []string{"--log-format", "json"}, true},
		{"--log-format text", []string{"--log-format", "text"}, false},
	} {
		t.Run(tc.about, func(t *testing.T) {
			p := startServe(t, append([]string{"--config", path, "--http", "127.0.0.1:0"}, tc.args...)...)
			base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))
			for _, token := range []string{callerToken, secretToken} {
				req, err := http.NewRequest("POST", base+"/v1/tools/echo.run", strings.NewReader(`{"args":["`+secretBody+`"]}`))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+token)
				client := &http.Client{Timeout: 30 * time.Second}
				resp, err := client.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				client.CloseIdleConnections()
			}
			p.stop(t)

			stderr := p.stderr.String()
			for _, secret := range []string{callerToken, secretToken, "ENV-SECRET-5e1f", secretBody} {
				assert.NotContains(t, stderr, secret)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			require.GreaterOrEqual(t, len(lines), 2, stderr)
			if !tc.json {
				for _, line := range lines {
					assert.Regexp(t, `^time=\S+ level=(INFO|WARN|ERROR) msg=`, line)
				}
				assert.Contains(t, stderr, `msg="execgate: serving the HTTP API on `+base+`" url=`+base+"\n")
				return
			}
			var msgs []string
			for _, line := range lines {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec), "every line is one JSON object: %q", line)
				assert.NotEmpty(t, rec["time"], line)
				assert.Contains(t, []any{"INFO", "WARN", "ERROR"}, rec["level"], line)
				msgs = append(msgs, rec["msg"].(string))
				if strings.HasPrefix(rec["msg"].(string), "execgate: serving the HTTP API") {
					assert.Equal(t, base, rec["url"], "the address is a field too")
				}
			}
			assert.Contains(t, msgs, "execgate: serving the HTTP API on "+base)
			assert.Contains(t, msgs, "execgate: the HTTP API stopped")
		})
	}
}

// TestServe_LogFormatIsChecked: an unknown --log-format is a usage error.
func TestServe_LogFormatIsChecked(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	code, out, errOut := runCLI(t, "", "serve", "--config", path, "--http", "127.0.0.1:0", "--log-format", "xml")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `--log-format must be json or text, not "xml"`)
}
