package deploy

import (
	"bufio"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwspod "sigs.k8s.io/lws/pkg/utils/pod"
)

// A loopback cluster runs the pods of one rendered LeaderWorkerSet group as processes on this
// machine, as the kubelet would run them, so that the chart's wiring (command lines, environment
// from ConfigMaps, Secrets and the downward API, the variables the LeaderWorkerSet injects,
// volumes, probes, DNS names) is exercised without a cluster. What differs from a cluster, and
// only that: every pod gets its own free loopback ports for its container ports, and every
// address naming a pod or a Service of the release (POD.SUBDOMAIN.NAMESPACE[.svc...]:PORT,
// SERVICE.NAMESPACE.svc:PORT) is rewritten to 127.0.0.1 and that pod's port; a volume's
// mountPath is rewritten to a directory of the pod's own. An address into the namespace that
// names nothing rendered is an error, as it would not resolve in the cluster either. A
// cert-manager Certificate is issued into its Secret by a stand-in CA (certissuer_test.go).

// imageSpec is what deploy/Dockerfile's final stage gives a container: its entrypoint and
// environment.
type imageSpec struct {
	entrypoint []string
	env        []corev1.EnvVar
}

// readImageSpec reads ENTRYPOINT and ENV of deploy/Dockerfile's final stage.
func readImageSpec() (imageSpec, error) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		return imageSpec{}, err
	}
	stages := strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\nFROM ")
	var spec imageSpec
	for _, line := range strings.Split(stages[len(stages)-1], "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "ENTRYPOINT":
			ep := strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "ENTRYPOINT")), "[]")
			for _, s := range strings.Split(ep, ",") {
				spec.entrypoint = append(spec.entrypoint, strings.Trim(strings.TrimSpace(s), `"`))
			}
		case "ENV":
			for _, kv := range fields[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return imageSpec{}, fmt.Errorf("Dockerfile: ENV %q is not NAME=VALUE", kv)
				}
				spec.env = append(spec.env, corev1.EnvVar{Name: k, Value: v})
			}
		}
	}
	if len(spec.entrypoint) == 0 {
		return imageSpec{}, fmt.Errorf("Dockerfile: no ENTRYPOINT in the final stage")
	}
	return spec, nil
}

// loopbackPod is one pod of the group: its spec as the LeaderWorkerSet controller and webhook
// make it, and, once started, its process.
type loopbackPod struct {
	pod   corev1.Pod
	ports map[int32]int // container port -> loopback port
	dir   string        // the pod's directory: volumes, working directory, log
	cmd   *exec.Cmd
	argv  []string
	env   []string
	exit  chan error
}

func (p *loopbackPod) container() corev1.Container { return p.pod.Spec.Containers[0] }

// port is the loopback port of the container port a probe or Service names.
func (p *loopbackPod) port(ref intstr.IntOrString) (int, error) {
	c := p.container()
	for _, cp := range c.Ports {
		if (ref.Type == intstr.String && cp.Name == ref.StrVal) || (ref.Type == intstr.Int && cp.ContainerPort == ref.IntVal) {
			return p.ports[cp.ContainerPort], nil
		}
	}
	return 0, fmt.Errorf("pod %s has no container port %s", p.pod.Name, ref.String())
}

func (p *loopbackPod) logFile() string { return filepath.Join(p.dir, "log") }

// loopbackCluster is a rendered release's group of pods on this machine.
type loopbackCluster struct {
	namespace  string
	image      imageSpec
	binary     string
	secrets    map[string]map[string]string
	configMaps map[string]map[string]string
	services   []*corev1.Service
	pods       []*loopbackPod // the leader first, then the workers by index
	dir        string
	taken      map[int]bool // loopback ports handed out
}

// newLoopbackCluster makes the pods of group 0 of the rendered LeaderWorkerSet named lws, as
// the LeaderWorkerSet controller names and labels them and its webhook sets their variables.
func newLoopbackCluster(objs []decoded, namespace, lws, binary, dir string) (*loopbackCluster, error) {
	image, err := readImageSpec()
	if err != nil {
		return nil, err
	}
	c := &loopbackCluster{namespace: namespace, image: image, binary: binary,
		secrets: map[string]map[string]string{}, configMaps: map[string]map[string]string{}, dir: dir, taken: map[int]bool{}}
	var (
		set    *lwsv1.LeaderWorkerSet
		issuer *certIssuer
	)
	for _, d := range objs {
		switch v := d.value.(type) {
		case *certificate:
			if issuer == nil {
				if issuer, err = newCertIssuer(); err != nil {
					return nil, err
				}
			}
			data, err := issuer.issue(v, int64(len(c.secrets)+2))
			if err != nil {
				return nil, err
			}
			c.secrets[v.Spec.SecretName] = data
		case *corev1.Secret:
			data := map[string]string{}
			for k, b := range v.Data {
				data[k] = string(b)
			}
			for k, s := range v.StringData {
				data[k] = s
			}
			c.secrets[v.Name] = data
		case *corev1.ConfigMap:
			c.configMaps[v.Name] = v.Data
		case *corev1.Service:
			c.services = append(c.services, v)
		case *lwsv1.LeaderWorkerSet:
			if v.Name == lws {
				set = v
			}
		}
	}
	if set == nil {
		return nil, fmt.Errorf("no LeaderWorkerSet %s rendered", lws)
	}
	tmpl := set.Spec.LeaderWorkerTemplate
	size := int(*tmpl.Size)
	leaderName := lws + "-0"
	for i := 0; i < size; i++ {
		pt, name := tmpl.WorkerTemplate, fmt.Sprintf("%s-%d", leaderName, i)
		if i == 0 {
			pt, name = *tmpl.LeaderTemplate, leaderName
		}
		pod := corev1.Pod{ObjectMeta: *pt.ObjectMeta.DeepCopy(), Spec: *pt.Spec.DeepCopy()}
		pod.Name, pod.Namespace = name, namespace
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Labels[lwsv1.SetNameLabelKey] = lws
		pod.Labels[lwsv1.GroupIndexLabelKey] = "0"
		pod.Labels[lwsv1.WorkerIndexLabelKey] = strconv.Itoa(i)
		pod.Annotations[lwsv1.SizeAnnotationKey] = strconv.Itoa(size)
		// The shared subdomain policy puts every pod under the LeaderWorkerSet's name.
		pod.Spec.Hostname, pod.Spec.Subdomain = name, lws
		if err := lwspod.AddLWSVariables(&pod); err != nil {
			return nil, err
		}
		p, err := c.newPod(pod)
		if err != nil {
			return nil, err
		}
		c.pods = append(c.pods, p)
	}
	// Prepared once every pod has its ports: their addresses name each other.
	for _, p := range c.pods {
		if err := c.prepare(p); err != nil {
			return nil, fmt.Errorf("pod %s: %w", p.pod.Name, err)
		}
	}
	return c, nil
}

// newPod gives pod's container ports loopback ports.
func (c *loopbackCluster) newPod(pod corev1.Pod) (*loopbackPod, error) {
	if len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("pod %s: %d containers; the stand-in runs one", pod.Name, len(pod.Spec.Containers))
	}
	p := &loopbackPod{pod: pod, ports: map[int32]int{}, dir: filepath.Join(c.dir, pod.Name)}
	for _, cp := range pod.Spec.Containers[0].Ports {
		port, err := freePort(c.taken)
		if err != nil {
			return nil, err
		}
		p.ports[cp.ContainerPort] = port
	}
	return p, nil
}

// jobPod is pod name of a Job's pod template, in the release's namespace, ready to start and
// run to completion (awaitExit).
func (c *loopbackCluster) jobPod(name string, tmpl corev1.PodTemplateSpec) (*loopbackPod, error) {
	pod := corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace, pod.Spec.Hostname = name, c.namespace, name
	p, err := c.newPod(pod)
	if err != nil {
		return nil, err
	}
	if err := c.prepare(p); err != nil {
		return nil, fmt.Errorf("pod %s: %w", name, err)
	}
	return p, nil
}

// awaitExit waits until p's process exits and returns its error, with its log; at the deadline
// it kills it.
func (c *loopbackCluster) awaitExit(p *loopbackPod, deadline time.Time) error {
	select {
	case err := <-p.exit:
		p.exit = nil
		if err != nil {
			return fmt.Errorf("pod %s: %v\n%s", p.pod.Name, err, tail(p.logFile()))
		}
		return nil
	case <-time.After(time.Until(deadline)):
		_ = p.cmd.Process.Kill()
		<-p.exit
		p.exit = nil
		return fmt.Errorf("pod %s still ran at the deadline (killed)\n%s", p.pod.Name, tail(p.logFile()))
	}
}

// freePort is a loopback port nothing listens on now. It is taken below the kernel's ephemeral
// range (32768 and up on Linux), from which every listener on port 0 and every outgoing
// connection on this machine gets its port, so that none of those takes it before the pod
// binds it; nor is it one of taken, the ports handed out before.
func freePort(taken map[int]bool) (int, error) {
	for range 100 {
		port := 20000 + mrand.IntN(12000)
		if taken[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		taken[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in 20000-31999")
}

// prepare resolves p's volumes, environment and command line.
func (c *loopbackCluster) prepare(p *loopbackPod) error {
	mounts, err := c.mountVolumes(p)
	if err != nil {
		return err
	}
	ctr := p.container()
	// The image's environment, overridden by the container's, each variable resolved in order:
	// $(NAME) refers to a variable defined before it.
	vars := map[string]string{}
	var order []string
	setVar := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	for _, e := range c.image.env {
		setVar(e.Name, e.Value)
	}
	// The kubelet sets HOSTNAME to the pod's hostname.
	setVar("HOSTNAME", p.pod.Spec.Hostname)
	for _, e := range ctr.Env {
		v, err := c.envValue(p, e, vars)
		if err != nil {
			return fmt.Errorf("variable %s: %w", e.Name, err)
		}
		setVar(e.Name, v)
	}
	rewrite := func(s string) (string, error) { return c.rewrite(p, mounts, s) }
	for _, name := range order {
		v, err := rewrite(vars[name])
		if err != nil {
			return fmt.Errorf("variable %s: %w", name, err)
		}
		p.env = append(p.env, name+"="+v)
	}
	argv := ctr.Command
	if len(argv) == 0 {
		argv = slices.Concat(c.image.entrypoint, ctr.Args)
	} else {
		argv = slices.Concat(argv, ctr.Args)
	}
	for i, a := range argv {
		a = expand(a, vars)
		if i > 0 {
			if a, err = rewrite(a); err != nil {
				return fmt.Errorf("argument %q: %w", argv[i], err)
			}
		}
		p.argv = append(p.argv, a)
	}
	// The image's binary, under the name the command gives it (the image has links named head
	// and worker).
	if !strings.HasPrefix(p.argv[0], "/usr/local/bin/") {
		return fmt.Errorf("command %q is not one of the image's /usr/local/bin", p.argv[0])
	}
	bin := filepath.Join(p.dir, "bin", filepath.Base(p.argv[0]))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(c.binary, bin); err != nil {
		return err
	}
	p.argv[0] = bin
	return nil
}

// mountVolumes makes a directory for each volume the container mounts (an emptyDir empty, a
// ConfigMap's or Secret's keys as files) and returns mountPath -> that directory.
func (c *loopbackCluster) mountVolumes(p *loopbackPod) (map[string]string, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range p.pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range p.container().VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("mount %s: no volume %s", m.MountPath, m.Name)
		}
		dir := filepath.Join(p.dir, "volumes", m.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		var files map[string]string
		switch {
		case v.EmptyDir != nil:
		case v.ConfigMap != nil:
			data, ok := c.configMaps[v.ConfigMap.Name]
			if !ok {
				return nil, fmt.Errorf("volume %s: ConfigMap %s not rendered", v.Name, v.ConfigMap.Name)
			}
			files = data
		case v.Secret != nil:
			data, ok := c.secrets[v.Secret.SecretName]
			if !ok {
				return nil, fmt.Errorf("volume %s: Secret %s not rendered (nor issued for a Certificate)", v.Name, v.Secret.SecretName)
			}
			files = data
			if len(v.Secret.Items) > 0 {
				// Only the keys listed, at their paths.
				files = map[string]string{}
				for _, it := range v.Secret.Items {
					content, ok := data[it.Key]
					if !ok {
						return nil, fmt.Errorf("volume %s: Secret %s has no key %s", v.Name, v.Secret.SecretName, it.Key)
					}
					files[it.Path] = content
				}
			}
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir, configMap and secret volumes are stood in for", v.Name)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o444); err != nil {
				return nil, err
			}
		}
		mounts[m.MountPath] = dir
	}
	return mounts, nil
}

// envValue is the value the kubelet gives variable e of pod p, before addresses are rewritten.
func (c *loopbackCluster) envValue(p *loopbackPod, e corev1.EnvVar, vars map[string]string) (string, error) {
	if e.ValueFrom == nil {
		return expand(e.Value, vars), nil
	}
	switch from := e.ValueFrom; {
	case from.FieldRef != nil:
		switch from.FieldRef.FieldPath {
		case "metadata.name":
			return p.pod.Name, nil
		case "metadata.namespace":
			return p.pod.Namespace, nil
		}
		if k, ok := strings.CutPrefix(from.FieldRef.FieldPath, "metadata.labels['"); ok {
			return p.pod.Labels[strings.TrimSuffix(k, "']")], nil
		}
		return "", fmt.Errorf("field %s is not stood in for", from.FieldRef.FieldPath)
	case from.SecretKeyRef != nil:
		return lookupKey(c.secrets, "Secret", from.SecretKeyRef.Name, from.SecretKeyRef.Key)
	case from.ConfigMapKeyRef != nil:
		return lookupKey(c.configMaps, "ConfigMap", from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key)
	}
	return "", fmt.Errorf("valueFrom %+v is not stood in for", e.ValueFrom)
}

func lookupKey(objs map[string]map[string]string, kind, name, key string) (string, error) {
	data, ok := objs[name]
	if !ok {
		return "", fmt.Errorf("%s %s is not rendered (give it to the stand-in's values)", kind, name)
	}
	v, ok := data[key]
	if !ok {
		return "", fmt.Errorf("%s %s has no key %s", kind, name, key)
	}
	return v, nil
}

var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expand replaces $(NAME) by the variable's value as Kubernetes does: $$ is a literal $, and a
// reference to an undefined variable stays as written.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// hostPort matches HOST:PORT with a DNS name or an empty or unspecified host.
var hostPort = regexp.MustCompile(`(^|[^A-Za-z0-9.-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]*[a-z0-9])?|0\.0\.0\.0|\[::\]|)?:(\d+)\b`)

// rewrite moves an argument or variable of pod p onto the loopback cluster: a path under a
// volume's mountPath to the pod's directory for it; a listen address (":PORT", "0.0.0.0:PORT")
// of one of p's container ports to p's loopback port (of another port, unchanged); the address
// of a pod or Service of the release to 127.0.0.1 and the port of the pod behind it.
func (c *loopbackCluster) rewrite(p *loopbackPod, mounts map[string]string, s string) (string, error) {
	// A path, alone or as the value of --flag=PATH.
	prefix, value := "", s
	if i := strings.Index(s, "="); strings.HasPrefix(s, "--") && i > 0 {
		prefix, value = s[:i+1], s[i+1:]
	}
	mountPaths := slices.Sorted(func(yield func(string) bool) {
		for m := range mounts {
			if !yield(m) {
				return
			}
		}
	})
	slices.Reverse(mountPaths) // longest of nested mount paths first
	for _, m := range mountPaths {
		if value == m || strings.HasPrefix(value, strings.TrimSuffix(m, "/")+"/") {
			return prefix + mounts[m] + value[len(m):], nil
		}
	}
	var failed error
	out := hostPort.ReplaceAllStringFunc(s, func(match string) string {
		sub := hostPort.FindStringSubmatch(match)
		lead, host, portText := sub[1], sub[2], sub[3]
		port, _ := strconv.Atoi(portText)
		if host == "" || host == "0.0.0.0" || host == "[::]" {
			// A port the container does not declare stays as it is: Kubernetes does not
			// require declaring one (the image's CACHEDB_LISTEN in a client's pod listens on
			// nothing).
			local, ok := p.ports[int32(port)]
			if !ok {
				return match
			}
			return fmt.Sprintf("%s127.0.0.1:%d", lead, local)
		}
		target, err := c.resolve(host, int32(port))
		if err != nil {
			failed = err
			return match
		}
		if target == "" {
			return match
		}
		return lead + target
	})
	return out, failed
}

// resolve is the loopback address of HOST:PORT when HOST names a pod or Service of the release,
// "" when it names something outside the namespace, and an error when it names something in
// the namespace that is not rendered.
func (c *loopbackCluster) resolve(host string, port int32) (string, error) {
	name := strings.TrimSuffix(strings.TrimSuffix(host, ".cluster.local"), ".svc")
	for _, p := range c.pods {
		if name == p.pod.Spec.Hostname+"."+p.pod.Spec.Subdomain+"."+c.namespace {
			local, ok := p.ports[port]
			if !ok {
				return "", fmt.Errorf("%s:%d: pod %s has no container port %d", host, port, p.pod.Name, port)
			}
			return fmt.Sprintf("127.0.0.1:%d", local), nil
		}
	}
	for _, svc := range c.services {
		if name != svc.Name+"."+c.namespace && name != svc.Name {
			continue
		}
		var behind []*loopbackPod
		for _, p := range c.pods {
			if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.pod.Labels)) {
				behind = append(behind, p)
			}
		}
		if len(behind) != 1 {
			return "", fmt.Errorf("%s:%d: Service %s selects %d pods; the stand-in resolves Services of one pod", host, port, svc.Name, len(behind))
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Port == port {
				local, err := behind[0].port(sp.TargetPort)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("127.0.0.1:%d", local), nil
			}
		}
		return "", fmt.Errorf("%s:%d: Service %s has no port %d", host, port, svc.Name, port)
	}
	if strings.HasSuffix(name, "."+c.namespace) || strings.Contains(host, ".svc") {
		return "", fmt.Errorf("%s:%d names nothing the release renders", host, port)
	}
	return "", nil
}

// start runs pod p's container: its command line and nothing but its environment, in a
// working directory it cannot write (the image's root filesystem is read-only), logging to
// p.logFile().
func (c *loopbackCluster) start(p *loopbackPod) error {
	root := filepath.Join(p.dir, "root")
	if err := os.MkdirAll(root, 0o555); err != nil {
		return err
	}
	log, err := os.Create(p.logFile())
	if err != nil {
		return err
	}
	p.cmd = exec.Command(p.argv[0], p.argv[1:]...)
	p.cmd.Env = p.env
	p.cmd.Dir = root
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	p.exit = make(chan error, 1)
	go func() {
		p.exit <- p.cmd.Wait()
		log.Close()
	}()
	return nil
}

// probe runs one HTTP GET probe of pod p as the kubelet does: 200-399 succeeds.
func (c *loopbackCluster) probe(ctx context.Context, p *loopbackPod, pr *corev1.Probe) error {
	if pr == nil || pr.HTTPGet == nil {
		return fmt.Errorf("pod %s: only HTTP GET probes are stood in for", p.pod.Name)
	}
	port, err := p.port(pr.HTTPGet.Port)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(pr.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	timeout := time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, pr.HTTPGet.Path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		var body strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			body.WriteString(sc.Text())
		}
		return fmt.Errorf("%s %d: %s", pr.HTTPGet.Path, resp.StatusCode, body.String())
	}
	return nil
}

// awaitReady polls p's readiness probe until it succeeds, p exits, or the deadline passes; the
// liveness probe must succeed all along.
func (c *loopbackCluster) awaitReady(p *loopbackPod, deadline time.Time) error {
	ctr := p.container()
	for {
		select {
		case err := <-p.exit:
			p.exit <- err
			return fmt.Errorf("pod %s exited before it was ready: %v\n%s", p.pod.Name, err, tail(p.logFile()))
		default:
		}
		ready := c.probe(context.Background(), p, ctr.ReadinessProbe)
		if ready == nil {
			if err := c.probe(context.Background(), p, ctr.LivenessProbe); err != nil {
				return fmt.Errorf("pod %s is ready but not live: %v", p.pod.Name, err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s not ready by the deadline: %v\n%s", p.pod.Name, ready, tail(p.logFile()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM to every running pod, as the kubelet does, and waits for each to exit
// within its termination grace period; it returns the pods that did not exit cleanly.
func (c *loopbackCluster) stop() error {
	var errs []string
	for _, p := range c.pods {
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range c.pods {
		if p.exit == nil {
			continue
		}
		grace := 30 * time.Second
		if g := p.pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		select {
		case err := <-p.exit:
			if err != nil {
				errs = append(errs, fmt.Sprintf("pod %s: %v\n%s", p.pod.Name, err, tail(p.logFile())))
			}
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exit
			errs = append(errs, fmt.Sprintf("pod %s did not exit within its grace period %s", p.pod.Name, grace))
		}
		p.exit = nil
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// tail is the last lines of a log file, for failure messages.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
