package cli

import (
	"strings"
	"testing"
)

func TestShortLived(t *testing.T) {
	for args, want := range map[string]bool{
		"":                                true,
		"--help":                          true,
		"--version":                       true,
		"validate bundle/":                true,
		"validate -o json a/ b/":          true,
		"generate -d bundle/":             true,
		"rules -o markdown":               true,
		"version":                         true,
		"help validate":                   true,
		"completion bash":                 true,
		"no-such-command":                 true,
		"bridge --kubeconfig k":           false,
		"record --kubeconfig k -o t.yaml": false,
		"simulate --policy all t.yaml":    false,
		"simulate --explore --bundle b/":  false,
	} {
		if got := ShortLived(strings.Fields(args)); got != want {
			t.Errorf("ShortLived(%q) = %v, want %v", args, got, want)
		}
	}
}

// TestLifetimesNameCommands: every name ShortLived knows is a command
// of statuscheck's (a renamed command would otherwise fall to the
// default, not short-lived).
func TestLifetimesNameCommands(t *testing.T) {
	root := (&app{}).rootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	names := map[string]bool{}
	for _, c := range root.Commands() {
		names[c.Name()] = true
	}
	for name := range lifetimes {
		if !names[name] {
			t.Errorf("lifetimes names %q, which is not a command (the commands: %v)", name, names)
		}
	}
}
