// Command envprobe is the kubelet package's test container: it prints,
// as one JSON line, what a container sees (its argv, user, environment,
// service account files, whether its root file system takes a write, its
// no_new_privs, capabilities and seccomp mode), then does what its
// environment asks:
//
//	ENVPROBE_ALLOC_MIB=N      allocate and touch N MiB, and keep them
//	ENVPROBE_SPIN=DURATION    burn CPU until the process has used that much
//	ENVPROBE_LISTEN=PORT      serve /healthz (status ENVPROBE_HEALTHZ,
//	                          default 200) and /readyz (503 until
//	                          ENVPROBE_READY_AFTER has passed, then 200)
//	ENVPROBE_STAY=1           stay until SIGTERM (so does ENVPROBE_LISTEN)
//	ENVPROBE_ON_TERM=exit:N   on SIGTERM, exit N (default exit:0);
//	                          "ignore" ignores SIGTERM
//
// It is built static and put FROM scratch, with an empty /tmp, by the
// package's tests.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type report struct {
	Argv   []string          `json:"argv"`
	UID    int               `json:"uid"`
	GID    int               `json:"gid"`
	Groups []int             `json:"groups"`
	Env    map[string]string `json:"env"`
	// Files are the service account volume's files by name.
	Files map[string]string `json:"files"`
	// RootWrite and TmpWrite are the errors of writing a file in / and
	// /tmp ("" when the write worked).
	RootWrite string `json:"rootWrite"`
	TmpWrite  string `json:"tmpWrite"`
	// NoNewPrivs, CapEff and Seccomp are /proc/self/status's.
	NoNewPrivs string `json:"noNewPrivs"`
	CapEff     string `json:"capEff"`
	Seccomp    string `json:"seccomp"`
}

func main() {
	start := time.Now()
	term := make(chan os.Signal, 1)
	onTerm := os.Getenv("ENVPROBE_ON_TERM")
	if onTerm == "ignore" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}

	r := report{Argv: os.Args, UID: os.Getuid(), GID: os.Getgid(), Env: map[string]string{}, Files: map[string]string{}}
	r.Groups, _ = os.Getgroups()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		r.Env[k] = v
	}
	sa := "/var/run/secrets/kubernetes.io/serviceaccount"
	entries, _ := os.ReadDir(sa)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(sa, e.Name()))
		if err != nil {
			r.Files[e.Name()] = "error: " + err.Error()
			continue
		}
		r.Files[e.Name()] = string(b)
	}
	r.RootWrite = writeErr("/envprobe-write")
	r.TmpWrite = writeErr("/tmp/envprobe-write")
	r.NoNewPrivs, r.CapEff, r.Seccomp = procStatus("NoNewPrivs"), procStatus("CapEff"), procStatus("Seccomp")
	line, _ := json.Marshal(r)
	fmt.Println(string(line))

	var keep [][]byte
	if n, _ := strconv.Atoi(os.Getenv("ENVPROBE_ALLOC_MIB")); n > 0 {
		for range n {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Printf("envprobe: allocated %d MiB\n", len(keep))
	}
	if d, err := time.ParseDuration(os.Getenv("ENVPROBE_SPIN")); err == nil {
		for x := 0; cpuTime() < d; x++ {
			for range 1 << 16 {
				x++
			}
		}
		fmt.Printf("envprobe: spun %v of CPU\n", cpuTime())
	}
	if port := os.Getenv("ENVPROBE_LISTEN"); port != "" {
		go serve(port, start)
	} else if os.Getenv("ENVPROBE_STAY") == "" {
		return
	}
	if onTerm == "ignore" {
		for { // until SIGKILL (a blocked receive alone is a deadlock to the runtime)
			time.Sleep(time.Hour)
		}
	}
	<-term
	fmt.Println("envprobe: SIGTERM")
	code := 0
	if v, ok := strings.CutPrefix(onTerm, "exit:"); ok {
		code, _ = strconv.Atoi(v)
	}
	runtime.KeepAlive(keep)
	os.Exit(code)
}

func serve(port string, start time.Time) {
	healthz, _ := strconv.Atoi(os.Getenv("ENVPROBE_HEALTHZ"))
	if healthz == 0 {
		healthz = http.StatusOK
	}
	readyAfter, _ := time.ParseDuration(os.Getenv("ENVPROBE_READY_AFTER"))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(healthz) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Since(start) < readyAfter {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	if err := http.ListenAndServe(":"+port, mux); err != nil {
		fmt.Println("envprobe: serve:", err)
		os.Exit(1)
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func writeErr(path string) string {
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		return err.Error()
	}
	_ = os.Remove(path)
	return ""
}

func procStatus(key string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
