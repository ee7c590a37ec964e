package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

type probeKind string

const (
	liveness  probeKind = "liveness"
	readiness probeKind = "readiness"
)

// startProbe polls p every period until ctx ends, as a kubelet probe
// worker does (kubernetes pkg/kubelet/prober/worker.go, run and doProbe):
// the first probe one period after the start (the worker's first round
// finds the container not running yet), none during initialDelaySeconds
// (whole seconds since the start), and a verdict only after
// failureThreshold failures or successThreshold successes in a row.
func (c *Container) startProbe(ctx context.Context, kind probeKind, p *corev1.Probe, port int, period time.Duration) {
	do := prober(p, port)
	c.probes.Add(1)
	go func() {
		defer c.probes.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		var last error
		run := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if int32(time.Since(c.started).Seconds()) < p.InitialDelaySeconds {
				continue
			}
			err := do(ctx)
			if ctx.Err() != nil {
				return // Stop began: this result is not the container's
			}
			if run > 0 && (err == nil) == (last == nil) {
				run++
			} else {
				run = 1
			}
			last = err
			if (err != nil && run < int(p.FailureThreshold)) || (err == nil && run < int(p.SuccessThreshold)) {
				continue
			}
			c.record(kind, err, run)
			if kind == liveness && err != nil {
				// The kubelet restarts the container and starts counting
				// afresh (doProbe sets resultRun to 0).
				run = 0
			}
		}
	}()
}

// record takes a probe's verdict: the result of its last try after run
// tries in a row with the same result.
func (c *Container) record(kind probeKind, err error, run int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case kind == liveness && err != nil:
		c.liveFails++
		c.t.Logf("kubelet: %s: liveness probe failed %d times in a row, the kubelet would restart it: %v", c.spec.Name, run, err)
		if c.plan.readiness == nil {
			c.setReadyLocked(false)
		}
	case kind == liveness:
		if c.plan.readiness == nil {
			c.setReadyLocked(true)
		}
	default:
		if c.isReady && err != nil {
			c.t.Logf("kubelet: %s: readiness probe failed %d times in a row: %v", c.spec.Name, run, err)
		}
		c.setReadyLocked(err == nil)
	}
}

// markReady makes the container ready now.
func (c *Container) markReady() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setReadyLocked(true)
}

func (c *Container) setReadyLocked(ready bool) {
	c.isReady = ready
	if ready && c.readyAfter == 0 {
		c.readyAfter = time.Since(c.started)
		close(c.ready)
	}
}

// prober returns the probe's action: nil is success.
func prober(p *corev1.Probe, port int) func(context.Context) error {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if p.TCPSocket != nil {
		addr := net.JoinHostPort(probeHost(p.TCPSocket.Host), strconv.Itoa(port))
		// pkg/probe/tcp/tcp.go, DoTCPProbe: a connection is success.
		return func(ctx context.Context) error {
			d := net.Dialer{Timeout: timeout}
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			return conn.Close()
		}
	}
	g := p.HTTPGet
	// pkg/probe/http/http.go, NewWithTLSConfig: no verification, no
	// keep-alive, no proxy, no compression; redirects followed only to the
	// same host (RedirectChecker).
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, // as the kubelet's prober
			DisableKeepAlives:  true,
			Proxy:              http.ProxyURL(nil),
			DisableCompression: true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	// pkg/probe/http/request.go, NewRequestForHTTPGetAction and formatURL.
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = strings.ToLower(string(g.Scheme))
	u.Host = net.JoinHostPort(probeHost(g.Host), strconv.Itoa(port))
	target := u.String()
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return fmt.Errorf("probe request: %w", err)
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		req.Host = req.Header.Get("Host")
		if _, ok := req.Header["User-Agent"]; !ok {
			req.Header.Set("User-Agent", "kube-probe/1.36")
		}
		if _, ok := req.Header["Accept"]; !ok {
			req.Header.Set("Accept", "*/*")
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 10<<10))
		// pkg/probe/http/http.go, DoHTTPProbe: 2xx and 3xx succeed.
		if res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", res.StatusCode)
		}
		return nil
	}
}

// probeHost is where a probe goes: its host, else the pod's address,
// which on the host network is 127.0.0.1 here.
func probeHost(host string) string {
	if host == "" {
		return "127.0.0.1"
	}
	return host
}
