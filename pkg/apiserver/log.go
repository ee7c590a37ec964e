package apiserver

import (
	"flag"
	"io"

	"k8s.io/klog/v2"
)

// SilenceLogs stops the apiserver code statuscheck runs from logging
// through klog (it reports, for instance, duplicate validation errors at
// info level): what matters reaches the caller as a Refusal. Commands
// and tests call it once; a library user who wants the logs does not.
func SilenceLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
