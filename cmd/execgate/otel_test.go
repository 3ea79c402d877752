package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// TestOtelExports: which standard variables --otel follows, and what it
// refuses because this binary has no such exporter.
func TestOtelExports(t *testing.T) {
	for _, tc := range []struct {
		about   string
		env     map[string]string
		exports bool
		refused string // in the error; "" for none
	}{
		{"nothing set: OTLP over HTTP", nil, true, ""},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, ""},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, true, ""},
		{"otlp is the exporter", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"grpc is refused, saying where to point instead",
			map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL is grpc: serve --otel exports over OTLP/HTTP only"},
		{"the traces' own protocol wins over the general one",
			map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is grpc"},
		{"and may allow what the general one would refuse",
			map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, true, ""},
		{"an unknown protocol is refused, not repeated",
			map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}, false, "is not http/protobuf or http/json"},
		{"another exporter is refused, not repeated",
			map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER is not otlp or none"},
		{"none exports nothing", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"a disabled SDK exports nothing", map[string]string{"OTEL_SDK_DISABLED": "true"}, false, ""},
		{"a disabled SDK, in capitals", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, ""},
		{"OTEL_SDK_DISABLED false is not disabled", map[string]string{"OTEL_SDK_DISABLED": "false"}, true, ""},
	} {
		exports, err := otelExports(func(k string) string { return tc.env[k] })
		assert.Equal(t, tc.exports, exports, tc.about)
		if tc.refused == "" {
			assert.NoError(t, err, tc.about)
			continue
		}
		require.Error(t, err, tc.about)
		assert.Contains(t, err.Error(), tc.refused, tc.about)
		for _, v := range tc.env {
			if v != "grpc" && v != "http/protobuf" {
				assert.NotContains(t, err.Error(), v, "%s: a value is not repeated", tc.about)
			}
		}
	}
}

// TestOtel_OffReadsNothing: without --otel, no OTEL_ variable is read
// and nothing is started.
func TestOtel_OffReadsNothing(t *testing.T) {
	tel, err := startTelemetry(context.Background(), false, func(k string) string {
		t.Errorf("%s was read without --otel", k)
		return ""
	}, nil)
	require.NoError(t, err)
	assert.Nil(t, tel.tp)
	assert.Empty(t, tel.auditors())
	tel.shutdown(nil)
}

// TestServe_OtelRefusesWhatItCannotExport: serve --otel with an exporter
// or protocol this binary does not have stops before serving, with exit
// code 2.
func TestServe_OtelRefusesWhatItCannotExport(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	for _, tc := range []struct{ key, value, says string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "collector's OTLP/HTTP port"},
		{"OTEL_TRACES_EXPORTER", "console", "exports traces over OTLP only"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Setenv(tc.key, tc.value)
			var out, errOut bytes.Buffer
			c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code := c.run(ctx, []string{"serve", "--config", path, "--http", "127.0.0.1:0", "--otel"})
			assert.Equal(t, exitUsage, code, errOut.String())
			assert.Contains(t, errOut.String(), "--otel: ")
			assert.Contains(t, errOut.String(), tc.says)
			assert.NotContains(t, errOut.String(), "serving", "nothing was served")
		})
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver: it accepts POST
// /v1/traces, in protobuf or JSON, and keeps what each request holds.
type otlpReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []otlpRequest
}

// otlpRequest is one export request as the receiver decoded it.
type otlpRequest struct {
	contentType string
	resource    map[string]string   // the resource's string attributes
	spans       []map[string]string // each span's name (key "name") and attributes, as text
	raw         []byte
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			t.Errorf("the receiver got %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading an export: %v", err)
			return
		}
		req := otlpRequest{contentType: r.Header.Get("Content-Type"), raw: body}
		switch req.contentType {
		case "application/x-protobuf":
			var m coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				t.Errorf("an export that is not OTLP protobuf: %v", err)
				return
			}
			req.resource, req.spans = fromProto(&m)
		case "application/json":
			req.resource, req.spans = fromJSON(t, body)
		default:
			t.Errorf("an export of Content-Type %q", req.contentType)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, req)
		rc.mu.Unlock()
		w.Header().Set("Content-Type", req.contentType)
		if req.contentType == "application/json" {
			_, _ = w.Write([]byte("{}"))
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) requests() []otlpRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]otlpRequest(nil), rc.got...)
}

// text is an attribute value as text.
func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func fromProto(m *coltracepb.ExportTraceServiceRequest) (map[string]string, []map[string]string) {
	res := map[string]string{}
	var spans []map[string]string
	for _, rs := range m.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.GetKey()] = text(kv.GetValue())
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				span := map[string]string{"name": s.GetName(), "scope": ss.GetScope().GetName()}
				for _, kv := range s.GetAttributes() {
					span[kv.GetKey()] = text(kv.GetValue())
				}
				spans = append(spans, span)
			}
		}
	}
	return res, spans
}

// fromJSON reads an OTLP/JSON request, whose IDs are hex, not the base64
// of protobuf's JSON mapping.
func fromJSON(t *testing.T, body []byte) (map[string]string, []map[string]string) {
	type kv struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	}
	var m struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []kv `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					Name       string `json:"name"`
					Attributes []kv   `json:"attributes"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Errorf("an export that is not OTLP JSON: %v", err)
	}
	str := func(v map[string]any) string {
		for _, x := range v {
			if s, ok := x.(string); ok {
				return s
			}
			b, _ := json.Marshal(x)
			return string(b)
		}
		return ""
	}
	res := map[string]string{}
	var spans []map[string]string
	for _, rs := range m.ResourceSpans {
		for _, a := range rs.Resource.Attributes {
			res[a.Key] = str(a.Value)
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				span := map[string]string{"name": s.Name}
				for _, a := range s.Attributes {
					span[a.Key] = str(a.Value)
				}
				spans = append(spans, span)
			}
		}
	}
	return res, spans
}

// otelFreeEnv is this process's environment without its OTEL_ variables,
// plus extra.
func otelFreeEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// TestE2E_OtelExport runs serve --http with and without --otel, with
// OTEL_EXPORTER_OTLP_ENDPOINT at a receiver, makes a call, a refused
// request and probes, and stops it: with --otel, each call is a span
// (the probes none) under the resource the OTEL_ variables name, sent
// when serve stops even though the batch would have waited ten minutes;
// the standard sampler variable is obeyed; without --otel nothing
// arrives. No span holds a token.
func TestE2E_OtelExport(t *testing.T) {
	path := writeFile(t, "tools.yaml", testConfig)
	const secretToken = "not-a-configured-token-0c1d"
	for _, tc := range []struct {
		about       string
		otel        bool
		env         []string
		contentType string // "" when nothing must arrive
		service     string
	}{
		{"--otel, named by the OTEL_ variables", true,
			[]string{"OTEL_SERVICE_NAME=gate-under-test", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=e2e,team=platform"},
			"application/x-protobuf", "gate-under-test"},
		{"--otel, unnamed: the service is execgate", true, nil, "application/x-protobuf", "execgate"},
		{"--otel over http/json", true, []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "application/json", "execgate"},
		{"--otel with the always_off sampler", true, []string{"OTEL_TRACES_SAMPLER=always_off"}, "", ""},
		{"without --otel", false, []string{"OTEL_SERVICE_NAME=gate-under-test"}, "", ""},
	} {
		t.Run(tc.about, func(t *testing.T) {
			rc := newOTLPReceiver(t)
			env := otelFreeEnv(append([]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL,
				// Spans are exported once the batch is full or this has
				// passed, or when serve stops: here, only then.
				"OTEL_BSP_SCHEDULE_DELAY=600000",
			}, tc.env...)...)
			args := []string{"--config", path, "--http", "127.0.0.1:0"}
			if tc.otel {
				args = append(args, "--otel")
			}
			p := startServeEnv(t, env, args...)
			base := p.stderr.waitFor(t, regexp.MustCompile(`serving the HTTP API on (http://127\.0\.0\.1:\d+)`))

			status, _, _ := askProbe(t, base, "GET", "/readyz", "")
			require.Equal(t, http.StatusOK, status)
			call := func(token, body string) int {
				req, err := http.NewRequest("POST", base+"/v1/tools/echo.run", strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+token)
				client := &http.Client{Timeout: 30 * time.Second}
				defer client.CloseIdleConnections()
				resp, err := client.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			require.Equal(t, http.StatusOK, call(callerToken, `{"args":["traced"]}`))
			require.Equal(t, http.StatusUnauthorized, call(secretToken, `{}`))
			assert.Empty(t, rc.requests(), "nothing is sent before the batch is due")
			p.stop(t)

			got := rc.requests()
			if tc.contentType == "" {
				assert.Empty(t, got, "nothing is exported; stderr: %s", p.stderr)
				return
			}
			require.NotEmpty(t, got, "the spans are sent when serve stops; stderr: %s", p.stderr)
			var spans []map[string]string
			for _, r := range got {
				assert.Equal(t, tc.contentType, r.contentType)
				assert.Equal(t, tc.service, r.resource["service.name"])
				assert.NotEmpty(t, r.resource["service.version"])
				assert.Equal(t, "opentelemetry", r.resource["telemetry.sdk.name"])
				if tc.service == "gate-under-test" {
					assert.Equal(t, "e2e", r.resource["deployment.environment.name"])
					assert.Equal(t, "platform", r.resource["team"])
				}
				for _, secret := range []string{callerToken, secretToken} {
					assert.NotContains(t, string(r.raw), secret, "no token is exported")
				}
				spans = append(spans, r.spans...)
			}
			require.Len(t, spans, 2, "one span per call, none for a probe: %v", spans)
			run, refused := spans[0], spans[1]
			if run["name"] != "execgate.run" {
				run, refused = refused, run
			}
			assert.Equal(t, "execgate.run", run["name"])
			assert.Equal(t, "echo.run", run["execgate.name"])
			assert.Equal(t, "ci-bot", run["execgate.principal"])
			assert.Equal(t, "/bin/echo", run["process.executable.path"])
			assert.Equal(t, "0", run["process.exit.code"])
			assert.NotContains(t, run, "process.command_args", "the argv is not exported")
			assert.Equal(t, "execgate.request", refused["name"])
			assert.Equal(t, "unauthenticated", refused["execgate.error"])
			assert.Equal(t, "unknown bearer token", refused["execgate.reason"])
		})
	}
}
