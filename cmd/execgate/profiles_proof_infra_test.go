package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The proof tests of the kubectl and terraform profiles. kubectl talks to
// a fake API server run by the test (there is no cluster), which counts
// what each call asks it for; terraform plans a configuration that needs
// no provider, so that it works offline.

// infraCall is a call a proof test makes beside the profile's own allow
// examples: it must run, exit 0 and print each of want on stdout.
type infraCall struct {
	why, name string
	input     map[string]any
	want      []string
}

func (s *proofScene) infraRunCalls(t *testing.T, calls []infraCall) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.why, func(t *testing.T) {
			r := s.runOK(t, c.name, c.input)
			for _, w := range c.want {
				assert.Contains(t, r.Stdout, w)
			}
		})
	}
}

// infraRefused checks that the call is refused before anything runs: by
// the grammar ("validation") or because the command is not offered
// ("not_found"). runAttacks alone would also pass a call that ran and
// happened to be inert.
func (s *proofScene) infraRefused(t *testing.T, a attack) {
	t.Helper()
	code, out := s.run(t, a.name, a.input)
	assert.Equal(t, exitFailed, code, out)
	assert.Regexp(t, `"kind": "(validation|not_found)"`, out, "refused before it runs, not by the program")
}

// kubeAPI is a fake Kubernetes API server over TLS. It answers discovery
// and the pods, events, configmaps and secrets of any namespace, and
// records every request. A namespace the site does not list has a pod
// named after the canary, and every secret is: a call that reads either
// prints the canary, which the harness looks for.
type kubeAPI struct {
	srv    *httptest.Server
	token  string
	listed []string // the namespaces the site lists

	mu     sync.Mutex
	minor  string   // the minor version /version reports
	reqs   []string // "GET /path?query"
	agents []string // the User-Agent of each request
}

const kubeDiscovery = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[
{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list","watch"],"shortNames":["po"]},
{"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":["get","list","watch"],"shortNames":["ev"]},
{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","watch"],"shortNames":["cm"]},
{"name":"secrets","singularName":"secret","namespaced":true,"kind":"Secret","verbs":["get","list","watch"]},
{"name":"serviceaccounts","singularName":"serviceaccount","namespaced":true,"kind":"ServiceAccount","verbs":["get","list","watch"],"shortNames":["sa"]},
{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["get","list","watch"],"shortNames":["no"]},
{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list","watch"],"shortNames":["ns"]}]}`

func newKubeAPI(t *testing.T, minor string, listed []string) *kubeAPI {
	t.Helper()
	k := &kubeAPI{token: "proof-token-7c2e", minor: minor, listed: listed}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *kubeAPI) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.reqs = append(k.reqs, r.Method+" "+r.URL.RequestURI())
	k.agents = append(k.agents, r.UserAgent())
	minor := k.minor
	k.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+k.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	pod := func(ns string) string {
		name := "web"
		if !k.isListed(ns) {
			name = proofCanary
		}
		return fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":"u-%s","creationTimestamp":"2024-01-01T00:00:00Z","labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx"}]},"status":{"phase":"Running"}}`, name, ns, ns)
	}
	switch {
	case r.URL.Path == "/version":
		fmt.Fprintf(w, `{"major":"1","minor":%q,"gitVersion":"v1.%s.0"}`, minor, minor)
	case r.URL.Path == "/api":
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`)
	case r.URL.Path == "/apis":
		fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	case r.URL.Path == "/api/v1":
		fmt.Fprint(w, kubeDiscovery)
	case len(parts) >= 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces":
		ns, kind, rest := parts[3], parts[4], parts[5:]
		switch {
		case kind == "pods" && len(rest) == 0:
			fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[%s]}`, pod(ns))
		case kind == "pods" && len(rest) == 1 && rest[0] == "web":
			fmt.Fprint(w, pod(ns))
		case kind == "pods" && len(rest) == 2 && rest[0] == "web" && rest[1] == "log":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "log line from %s\n", ns)
		case kind == "events" && len(rest) == 0:
			fmt.Fprint(w, `{"kind":"EventList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		case kind == "serviceaccounts" && len(rest) == 1:
			fmt.Fprintf(w, `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":"sa-%s","creationTimestamp":"2024-01-01T00:00:00Z"}}`, rest[0], ns, ns)
		case kind == "configmaps" && len(rest) == 0:
			fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":%q,"creationTimestamp":"2024-01-01T00:00:00Z"},"data":{"mode":"fast"}}]}`, ns)
		case kind == "secrets":
			secret := fmt.Sprintf(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"creationTimestamp":"2024-01-01T00:00:00Z","annotations":{"note":%q}},"type":"Opaque","data":{"password":%q}}`,
				proofCanary, ns, proofCanary, base64.StdEncoding.EncodeToString([]byte(proofCanary)))
			if len(rest) == 0 {
				fmt.Fprintf(w, `{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[%s]}`, secret)
			} else {
				fmt.Fprint(w, secret)
			}
		default:
			k.notFound(w)
		}
	case r.URL.Path == "/api/v1/pods" || r.URL.Path == "/api/v1/secrets":
		// Every namespace at once.
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[%s]}`, pod("kube-system"))
	default:
		k.notFound(w)
	}
}

func (k *kubeAPI) notFound(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"not found","reason":"NotFound","code":404}`)
}

func (k *kubeAPI) isListed(ns string) bool {
	for _, l := range k.listed {
		if ns == l {
			return true
		}
	}
	return false
}

// requests returns the requests recorded from the n-th on.
func (k *kubeAPI) requests(n int) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.reqs[n:]...)
}

// userAgents returns the User-Agent of the requests from the n-th on.
func (k *kubeAPI) userAgents(n int) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.agents[n:]...)
}

func (k *kubeAPI) setMinor(m string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.minor = m
}

func (k *kubeAPI) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.reqs)
}

// forbidden says why a request is one no call of the profile may make,
// or "": a namespace the site does not list, every namespace at once,
// secrets, or anything but discovery and the listed namespaces' objects.
func (k *kubeAPI) forbidden(req string) string {
	path := strings.SplitN(strings.TrimPrefix(req, "GET "), "?", 2)[0]
	if !strings.HasPrefix(req, "GET ") {
		return "not a GET"
	}
	if strings.Contains(path, "secrets") {
		return "secrets"
	}
	switch path {
	case "/version", "/api", "/apis", "/api/v1":
		return ""
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" {
		return "not a namespaced object"
	}
	if !k.isListed(parts[3]) {
		return "namespace " + parts[3] + " is not listed"
	}
	return ""
}

// kubeconfig writes a kubeconfig for the fake server: its CA, the token,
// and a context whose namespace (kube-system) the site does not list.
func (k *kubeAPI) kubeconfig(t *testing.T, dir, name string) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.srv.Certificate().Raw})
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proof
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: reader
  user:
    token: %s
contexts:
- name: proof
  context: {cluster: proof, user: reader, namespace: kube-system}
- name: other
  context: {cluster: proof, user: reader, namespace: kube-public}
current-context: proof
`, k.srv.URL, base64.StdEncoding.EncodeToString(ca), k.token)
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// kubectlVersion returns the minor version of the installed kubectl as
// the fake server should report it, so that the Cloud SDK's dispatcher
// runs itself rather than a kubectl.1.<minor> beside it, and its whole
// version ("v1.32.4-dispatcher").
func kubectlVersion(t *testing.T, bin string) (minor, version string) {
	t.Helper()
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	require.NoError(t, err)
	var v struct {
		ClientVersion struct{ Minor, GitVersion string } `json:"clientVersion"`
	}
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	return strings.TrimRight(v.ClientVersion.Minor, "+"), v.ClientVersion.GitVersion
}

// TestProfileProof_Kubectl runs the kubectl profile against the real
// kubectl and a fake API server: the allow examples succeed, a caller's
// -n wins over the fixed default, the kubeconfig context's own namespace
// is never read, and each attack is refused before kubectl runs or is
// inert, without one request for an unlisted namespace or a secret.
func TestProfileProof_Kubectl(t *testing.T) {
	bin := requireProgram(t, "kubectl")
	listed := []string{"default", "team-a"}
	minor, version := kubectlVersion(t, bin)
	api := newKubeAPI(t, minor, listed)
	kc := api.kubeconfig(t, t.TempDir(), "kubeconfig")
	_, homeBefore := os.Stat("/nonexistent")
	s := newProofSceneWith(t, "kubectl", "    namespaces: [default, team-a]\n    kubeconfig: "+kc+"\n")
	// A kubeconfig outside the site's, which an attack would point at.
	otherKC := api.kubeconfig(t, s.base, "other-kubeconfig")

	s.runAllowExamples(t, "kubectl", "")

	// Each call below must reach exactly the namespace it names.
	nsOf := func(from int) []string {
		var out []string
		for _, r := range api.requests(from) {
			if p := strings.Split(strings.SplitN(r, "?", 2)[0], "/"); len(p) > 5 && p[3] == "namespaces" {
				out = append(out, p[4])
			}
		}
		return out
	}
	for _, c := range []struct {
		why  string
		in   map[string]any
		name string
		want string // the namespace every request names
		out  string
	}{
		{"no -n reads the first listed namespace, not the context's", args("pods"), "kubectl.get", "default", "web"},
		{"-n of the second listed namespace wins over the fixed default", args("pods", "-n", "team-a"), "kubectl.get", "team-a", "web"},
		{"--namespace= wins as well", args("pod/web", "--namespace=team-a", "-o", "name"), "kubectl.get", "team-a", "pod/web"},
		{"the namespace from the flags object wins", map[string]any{"flags": map[string]any{"namespace": "team-a"}, "args": []string{"pods"}}, "kubectl.get", "team-a", "web"},
		{"logs of a pod in the second namespace", args("web", "-n", "team-a"), "kubectl.logs", "team-a", "log line from team-a"},
		{"describe in the second namespace", args("pod/web", "-n", "team-a"), "kubectl.describe", "team-a", "Namespace:    team-a"},
	} {
		t.Run(c.why, func(t *testing.T) {
			from := api.count()
			s.infraRunCalls(t, []infraCall{{c.why, c.name, c.in, []string{c.out}}})
			got := nsOf(from)
			require.NotEmpty(t, got)
			for _, ns := range got {
				assert.Equal(t, c.want, ns)
			}
		})
	}

	// The Cloud SDK's kubectl is a dispatcher: it asks the server's
	// version and executes the kubectl.1.<minor> beside it. The
	// confinement executes nothing but kubectl, so the dispatcher falls
	// back to its own client: every request after /version carries its
	// version, none another one's.
	other := ""
	if strings.Contains(version, "dispatcher") {
		real, err := filepath.EvalSymlinks(bin)
		require.NoError(t, err)
		for _, m := range []string{"30", "31", "29", "33", "28"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(real), "kubectl.1."+m)); err == nil && m != minor {
				other = m
				break
			}
		}
	}
	if other != "" {
		t.Run("the dispatcher runs no other kubectl", func(t *testing.T) {
			api.setMinor(other)
			defer api.setMinor(minor)
			from := api.count()
			s.infraRunCalls(t, []infraCall{{"get pods with a server of another version", "kubectl.get", args("pods"), []string{"web"}}})
			agents := api.userAgents(from)
			require.Greater(t, len(agents), 1)
			own := "kubectl/" + strings.SplitN(version, "-", 2)[0] + " "
			for _, ua := range agents[1:] {
				assert.True(t, strings.HasPrefix(ua, own), "%q: a request of the dispatcher's own client, %s", ua, own)
			}
		})
	}

	secret := "../secret.txt"
	attacks := []attack{
		{"get secrets", "kubectl.get", args("secrets")},
		{"get secret", "kubectl.get", args("secret")},
		{"get Secrets, which kubectl resolves whatever the case", "kubectl.get", args("Secrets")},
		{"get secret/NAME", "kubectl.get", args("secret/db")},
		{"get secrets.v1., the fully qualified kind", "kubectl.get", args("secrets.v1.")},
		{"get secrets in a list of kinds", "kubectl.get", args("pods,secrets")},
		{"get a kind then a name that is secrets", "kubectl.get", args("pods", "secrets")},
		{"get secrets from the flags object's positionals", "kubectl.get", map[string]any{"args": []string{"secrets", "-o", "yaml"}}},
		{"describe secret/NAME", "kubectl.describe", args("secret/db")},
		{"describe secrets", "kubectl.describe", args("secrets")},
		{"describe serviceaccount/NAME, which lists every Secret of the namespace", "kubectl.describe", args("serviceaccount/default")},
		{"describe sa/NAME, the short name", "kubectl.describe", args("sa/default")},
		{"describe serviceaccounts in a list of kinds", "kubectl.describe", args("pods,sa")},
		{"logs of a secret", "kubectl.logs", args("secret/x")},
		{"get nodes, a cluster-scoped kind", "kubectl.get", args("nodes")},
		{"get namespaces, every namespace's name", "kubectl.get", args("namespaces")},
		{"-n of an unlisted namespace", "kubectl.get", args("pods", "-n", "kube-system")},
		{"--namespace= of an unlisted namespace", "kubectl.get", args("pods", "--namespace=kube-system")},
		{"-n twice, the second unlisted", "kubectl.get", args("pods", "-n", "default", "-n", "kube-system")},
		{"-n glued", "kubectl.get", args("pods", "-nkube-system")},
		{"logs in an unlisted namespace", "kubectl.logs", args("web", "-n", "kube-system")},
		{"-A, every namespace", "kubectl.get", args("pods", "-A")},
		{"--all-namespaces", "kubectl.get", args("pods", "--all-namespaces")},
		{"get --raw of an API path", "kubectl.get", args("--raw", "/api/v1/namespaces/kube-system/pods")},
		{"--kubeconfig of another file", "kubectl.get", args("pods", "--kubeconfig="+otherKC)},
		{"--context of a context whose namespace is unlisted", "kubectl.get", args("pods", "--context=other")},
		{"--cluster", "kubectl.get", args("pods", "--cluster=proof")},
		{"--user", "kubectl.get", args("pods", "--user=reader")},
		{"--server of another host", "kubectl.get", args("pods", "--server=https://127.0.0.2:1")},
		{"-s of another host", "kubectl.get", args("pods", "-s", "https://127.0.0.2:1")},
		{"--token", "kubectl.get", args("pods", "--token=x")},
		{"--as, impersonation", "kubectl.get", args("pods", "--as=system:admin")},
		{"--as-group", "kubectl.get", args("pods", "--as-group=system:masters")},
		{"--as-uid", "kubectl.get", args("pods", "--as-uid=0")},
		{"-o go-template-file= reads a file", "kubectl.get", args("pods", "-o", "go-template-file="+s.secret)},
		{"-o jsonpath-file= reads a file", "kubectl.get", args("pods", "-o", "jsonpath-file="+s.secret)},
		{"-o custom-columns-file= reads a file", "kubectl.get", args("pods", "-o", "custom-columns-file="+secret)},
		{"--template of a file", "kubectl.get", args("pods", "-o", "go-template", "--template="+s.secret)},
		{"-f reads a manifest outside", "kubectl.get", args("-f", secret)},
		{"-f by absolute path", "kubectl.get", args("-f", s.secret)},
		{"-f through the link-out symlink", "kubectl.get", args("-f", "link-out")},
		{"-k runs kustomize on a directory", "kubectl.get", args("-k", ".")},
		{"--certificate-authority reads a file", "kubectl.get", args("pods", "--certificate-authority="+s.secret)},
		{"--client-key reads a file", "kubectl.get", args("pods", "--client-key="+s.secret)},
		{"--client-certificate reads a file", "kubectl.get", args("pods", "--client-certificate="+s.secret)},
		{"--insecure-skip-tls-verify", "kubectl.get", args("pods", "--insecure-skip-tls-verify")},
		{"--cache-dir writes a cache", "kubectl.get", args("pods", "--cache-dir="+s.base)},
		{"--log-file writes a file", "kubectl.get", args("pods", "--log-file="+s.marker)},
		{"--profile-output writes a file", "kubectl.get", args("pods", "--profile=cpu", "--profile-output="+s.marker)},
		{"-v prints the requests", "kubectl.get", args("pods", "-v", "9")},
		{"get -w never ends", "kubectl.get", args("pods", "-w")},
		{"logs -f never ends", "kubectl.logs", args("web", "-f")},
		{"exec is not offered", "kubectl.exec", args("web", "--", "cat", s.secret)},
		{"cp is not offered", "kubectl.cp", args("default/web:/etc/passwd", s.marker)},
		{"port-forward is not offered", "kubectl.port-forward", args("web", "8080:80")},
		{"proxy is not offered", "kubectl.proxy", args("--port=8001")},
		{"run is not offered", "kubectl.run", args("x", "--image=busybox")},
		{"delete is not offered", "kubectl.delete", args("pod/web")},
		{"a plugin is not offered", "kubectl.pwn", args()},
		{"config view prints the credentials, and is not offered", "kubectl.config", args("view", "--raw")},
	}
	for _, a := range attacks {
		from := api.count()
		t.Run("refused: "+a.why, func(t *testing.T) { s.infraRefused(t, a) })
		s.runAttacks(t, []attack{a})
		for _, r := range api.requests(from) {
			assert.Empty(t, api.forbidden(r), "%s: %s", a.why, r)
		}
		assert.Empty(t, api.requests(from), "%s never reaches the server", a.why)
	}

	// kubectl's caches under HOME are refused by the confinement: no call
	// made the fixed HOME.
	if os.IsNotExist(homeBefore) {
		assert.NoDirExists(t, "/nonexistent", "kubectl wrote no cache under its HOME")
	}
	for _, r := range api.requests(0) {
		assert.Empty(t, api.forbidden(r), r)
	}

	// Last, since it makes a request no call may make: the scene is live: kubectl describe of a service account, run with
	// the profile's leading options but outside the gate, asks the
	// server for every Secret of the namespace.
	t.Run("describe of a service account outside the gate lists the secrets", func(t *testing.T) {
		from := api.count()
		cmd := exec.Command(bin, "--kubeconfig="+kc, "--namespace=default", "describe", "serviceaccount/default")
		cmd.Dir = s.root
		cmd.Env = []string{"HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		var listed bool
		for _, r := range api.requests(from) {
			listed = listed || strings.HasPrefix(r, "GET /api/v1/namespaces/default/secrets")
		}
		assert.True(t, listed, "describe sa listed the secrets: %v", api.requests(from))
	})
}

// infraRunAllowExamples is runAllowExamples for a profile with commands
// that need a person's approval (held): their allow examples must be held
// by execgate run, which cannot wait for an approval, and run nothing;
// every other allow example runs and exits 0.
func (s *proofScene) infraRunAllowExamples(t *testing.T, profile string, held ...string) {
	t.Helper()
	ex := allowExamples(t, profile)
	require.NotEmpty(t, ex)
	for name, list := range ex {
		require.NotEmpty(t, list, "%s has allow examples", name)
		isHeld := false
		for _, h := range held {
			isHeld = isHeld || h == name
		}
		for _, in := range list {
			code, out := s.run(t, name, in)
			assert.NotContains(t, out, proofCanary)
			if isHeld {
				assert.Equal(t, exitFailed, code, out)
				assert.Contains(t, out, "needs a person's approval", "%s %v is held for approval", name, in)
				continue
			}
			require.Equal(t, exitOK, code, "%s %v: %s", name, in, out)
			r := decodeProofResult(t, out)
			assert.Equal(t, 0, r.ExitCode, "%s %v: %s", name, in, r.Stderr)
		}
	}
}

// tfMainTF is a configuration that needs no provider, formatted as
// terraform fmt would: a string and a list variable, a local and outputs.
const tfMainTF = `variable "name" {
  type    = string
  default = "world"
}

variable "tags" {
  type    = list(string)
  default = []
}

locals {
  greeting = "hello ${var.name}"
}

output "x" {
  value = local.greeting
}

output "tags" {
  value = var.tags
}
`

// tfPlantProvider puts a provider program in root/.terraform, as
// terraform init would, with the dependency lock file that pins its hash:
// a shell script that copies the canary to the marker. main.tf needs it.
func tfPlantProvider(t *testing.T, root, marker, secret string) {
	t.Helper()
	dir := filepath.Join(root, ".terraform", "providers", "example.com", "proof", "evil", "1.0.0", "linux_amd64")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const exe = "terraform-provider-evil_v1.0.0"
	script := "#!/bin/sh\ncat '" + secret + "' > '" + marker + "'\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, exe), []byte(script), 0o755))
	// The h1 hash of the package directory: the SHA-256 of the lines
	// "<hex SHA-256 of each file>  <its name>\n", base64.
	sum := sha256.Sum256([]byte(script))
	h1 := sha256.Sum256([]byte(hex.EncodeToString(sum[:]) + "  " + exe + "\n"))
	lock := "provider \"example.com/proof/evil\" {\n  version = \"1.0.0\"\n  hashes  = [\"h1:" + base64.StdEncoding.EncodeToString(h1[:]) + "\"]\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, ".terraform.lock.hcl"), []byte(lock), 0o644))
	mainTF := "terraform {\n  required_providers {\n    evil = {\n      source = \"example.com/proof/evil\"\n    }\n  }\n}\n\nprovider \"evil\" {}\n\noutput \"x\" {\n  value = \"hello\"\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), []byte(mainTF), 0o644))
}

// TestProfileProof_Terraform runs the terraform profile against the real
// terraform in a root whose configuration needs no provider, so that it
// works offline: validate, plan, show and fmt succeed, -var values stay
// literal, apply is held for a person and, approved, cannot write the
// state (it fails taking the lock); each attack is refused or inert, and
// a provider program planted in the root's .terraform, which terraform
// runs when unconfined, is never executed.
func TestProfileProof_Terraform(t *testing.T) {
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH: Debian does not package it, so CI does not install it; this proof runs where terraform is installed")
	}
	s := newProofScene(t, "terraform")
	for name, text := range map[string]string{
		"main.tf":   tfMainTF,
		"data.json": `{"name":"from-file"}` + "\n",
		// A variables file that calls a function to read the canary.
		"evil.tfvars": `name = file("../secret.txt")` + "\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(s.root, name), []byte(text), 0o644))
	}
	s.infraRunAllowExamples(t, "terraform", "terraform.apply")

	s.infraRunCalls(t, []infraCall{
		{"plan shows the outputs", "terraform.plan", args(), []string{`x    = "hello world"`}},
		{"plan -var sets a variable", "terraform.plan", args("-var", "name=you"), []string{`"hello you"`}},
		{"plan -var-file reads a variables file inside the root", "terraform.plan", args("-var-file=data.json"), []string{`"hello from-file"`}},
		{"a -var value that calls file() is those characters", "terraform.plan", args("-var", `name=${file("../secret.txt")}`), []string{`hello ${file(\"../secret.txt\")}`}},
		{"a list -var is an expression", "terraform.plan", args("-var", `tags=["a","b"]`), []string{`+ "a",`}},
		{"validate", "terraform.validate", args(), []string{"Success! The configuration is valid."}},
		{"show without state", "terraform.show", args(), []string{"No state."}},
		{"fmt -check of formatted files prints nothing", "terraform.fmt", args("main.tf"), nil},
	})

	t.Run("apply, approved, cannot write the state", func(t *testing.T) {
		before := s.snapshot(t)
		g, err := openGate(s.config, "")
		require.NoError(t, err)
		defer g.Close()
		ctx := t.Context()
		_, err = g.x.Run(ctx, "terraform.apply", json.RawMessage(`{"args":["-var","name=applied"]}`))
		require.Error(t, err, "apply needs a person's approval")
		ap, err := g.x.Propose(ctx, "terraform.apply", json.RawMessage(`{"args":["-var","name=applied"]}`), "proof")
		require.NoError(t, err)
		assert.Equal(t, []string{"apply", "-input=false", "-no-color", "-auto-approve", "-var", "name=applied"}, ap.Args)
		res, err := g.x.Execute(ctx, ap)
		require.NoError(t, err)
		t.Logf("apply, approved: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
		assert.False(t, res.OK, "apply fails: %s", res.Stdout+res.Stderr)
		assert.Regexp(t, "open terraform.tfstate: (read-only file system|permission denied)", res.Stderr, "it fails taking the state lock")
		assert.NoFileExists(t, filepath.Join(s.root, "terraform.tfstate"))
		assert.NoFileExists(t, filepath.Join(s.root, "errored.tfstate"))
		assert.Equal(t, before, s.snapshot(t), "no file changed")
	})

	secret := "../secret.txt"
	grammar := []attack{
		{"-chdir before the command's options", "terraform.plan", args("-chdir=" + s.base)},
		{"-chdir as a variable's name", "terraform.plan", args("-var", "-chdir="+s.base)},
		{"console evaluates file() of any path", "terraform.console", map[string]any{"stdin": `file("` + s.secret + `")`}},
		{"destroy", "terraform.destroy", args()},
		{"import", "terraform.import", args("x.y", "id")},
		{"taint", "terraform.taint", args("x.y")},
		{"state push of a state file", "terraform.state", args("push", secret)},
		{"init installs programs", "terraform.init", args("-plugin-dir=" + s.base)},
		{"test applies", "terraform.test", args()},
		{"refresh writes the state", "terraform.refresh", args()},
		{"-var-file climbing out", "terraform.plan", args("-var-file=" + secret)},
		{"-var-file by absolute path", "terraform.plan", args("-var-file", s.secret)},
		{"-var-file through the link-out symlink", "terraform.plan", args("-var-file=link-out")},
		{"-out writes a plan file", "terraform.plan", args("-out=" + s.marker)},
		{"-state reads a state outside", "terraform.plan", args("-state=" + s.secret)},
		{"-state-out writes a state", "terraform.plan", args("-state-out=" + s.marker)},
		{"-backup writes a state", "terraform.plan", args("-backup=" + s.marker)},
		{"-generate-config-out writes a file", "terraform.plan", args("-generate-config-out=" + s.marker)},
		{"-lock=true writes the lock file", "terraform.plan", args("-lock=true")},
		{"-plugin-dir", "terraform.plan", args("-plugin-dir=" + s.base)},
		{"fmt -write=true rewrites files", "terraform.fmt", args("-write=true")},
		{"fmt of a path outside", "terraform.fmt", args(secret)},
		{"fmt of the parent directory", "terraform.fmt", args(s.base)},
		{"fmt -diff writes temporary files and runs diff", "terraform.fmt", args("-diff")},
		{"fmt of stdin", "terraform.fmt", args("-")},
		{"show of a file outside", "terraform.show", args(secret)},
		{"show of the canary by absolute path", "terraform.show", args(s.secret)},
		{"show through the link-out symlink", "terraform.show", args("link-out")},
		{"apply -destroy", "terraform.apply", args("-destroy")},
		{"apply -state of a file outside", "terraform.apply", args("-state=" + s.secret)},
	}
	for _, a := range grammar {
		t.Run("refused: "+a.why, func(t *testing.T) { s.infraRefused(t, a) })
	}
	s.runAttacks(t, append(grammar,
		attack{"apply without approval", "terraform.apply", args("-var", "name=x")},
		attack{"a -var value that calls file()", "terraform.plan", args("-var", `name=${file("`+secret+`")}`)},
		attack{"a list -var that calls file()", "terraform.plan", args("-var", `tags=[file("`+s.secret+`")]`)},
		attack{"a variables file inside the root that calls file()", "terraform.plan", args("-var-file=evil.tfvars")},
	))

	// A provider planted in the root's .terraform: unconfined, terraform
	// plan runs it (the control, with its own marker); through the
	// profile neither plan nor validate nor show can.
	control := t.TempDir()
	controlMarker := filepath.Join(control, "ran")
	tfPlantProvider(t, control, controlMarker, s.secret)
	cmd := exec.Command("terraform", "plan", "-input=false", "-no-color", "-lock=false")
	cmd.Dir = control
	cmd.Env = []string{"HOME=/nonexistent", "TF_CLI_CONFIG_FILE=/dev/null", "CHECKPOINT_DISABLE=1", "PATH=/usr/bin:/bin"}
	_ = cmd.Run() // fails: the script is no provider
	data, err := os.ReadFile(controlMarker)
	require.NoError(t, err, "unconfined, terraform plan runs the planted provider")
	require.Contains(t, string(data), proofCanary)

	p := newProofScene(t, "terraform")
	tfPlantProvider(t, p.root, p.marker, p.secret)
	p.runAttacks(t, []attack{
		{"plan with a planted provider", "terraform.plan", args()},
		{"validate with a planted provider", "terraform.validate", args()},
		{"show with a planted provider", "terraform.show", args()},
	})
	code, out := p.run(t, "terraform.plan", args())
	assert.Equal(t, exitFailed, code, out)
	t.Logf("plan with a planted provider: %s", decodeProofResult(t, out).Stderr)
	assert.Contains(t, decodeProofResult(t, out).Stderr, "permission denied", "the confinement refused to execute the provider")
}
