package testutil

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Fatal is what a MainTB panics with when setup code calls Fatal or
// FailNow: recover it around the setup.
type Fatal string

// MainTB lets setup helpers that take a testing.TB (an embedded etcd, a
// test apiserver) run outside any one test, for servers that belong to the
// whole test binary (started from TestMain, stopped with Finish). The
// embedded nil TB satisfies the interface's unexported method; only the
// methods below are ever called by that setup code.
type MainTB struct {
	testing.TB
	name     string
	logf     func(format string, args ...interface{})
	mu       sync.Mutex
	cleanups []func()
	dirs     []string
	failed   bool
}

// NewMainTB is a MainTB that logs through logf.
func NewMainTB(name string, logf func(format string, args ...interface{})) *MainTB {
	return &MainTB{name: name, logf: logf}
}

func (m *MainTB) Helper()      {}
func (m *MainTB) Name() string { return m.name }
func (m *MainTB) Failed() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.failed }
func (m *MainTB) Fail()        { m.mu.Lock(); m.failed = true; m.mu.Unlock() }
func (m *MainTB) FailNow()     { m.Fail(); panic(Fatal(m.name + " failed")) }
func (m *MainTB) Log(args ...interface{}) {
	m.logf("%s", fmt.Sprint(args...))
}
func (m *MainTB) Logf(format string, args ...interface{}) { m.logf(format, args...) }
func (m *MainTB) Error(args ...interface{})               { m.Fail(); m.logf("%s", fmt.Sprint(args...)) }
func (m *MainTB) Errorf(format string, args ...interface{}) {
	m.Fail()
	m.logf(format, args...)
}
func (m *MainTB) Fatal(args ...interface{}) { m.Fail(); panic(Fatal(fmt.Sprint(args...))) }
func (m *MainTB) Fatalf(format string, args ...interface{}) {
	m.Fail()
	panic(Fatal(fmt.Sprintf(format, args...)))
}
func (m *MainTB) Cleanup(f func()) { m.mu.Lock(); m.cleanups = append(m.cleanups, f); m.mu.Unlock() }
func (m *MainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		panic(Fatal(err.Error()))
	}
	m.mu.Lock()
	m.dirs = append(m.dirs, dir)
	m.mu.Unlock()
	return dir
}

// Finish runs the cleanups last first, as testing does, then removes the
// temporary directories.
func (m *MainTB) Finish() {
	m.mu.Lock()
	fs, dirs := m.cleanups, m.dirs
	m.cleanups, m.dirs = nil, nil
	m.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}
