package cli

// ShortLived says whether args run a command that ends soon and stays
// small: validate, generate, rules, version, help and completion, and
// whatever cobra refuses. The others (bridge and record run until
// stopped; simulate's searches grow large), and any command added later,
// are not. cmd/statuscheck keeps the garbage collector off for the
// short-lived ones until they reach a floor (internal/gcfloor).
func ShortLived(args []string) bool {
	if len(args) > 0 {
		// The command named first, as cobra finds it (no aliases, no
		// prefix matching), without building the commands.
		if short, ok := lifetimes[args[0]]; ok {
			return short
		}
	}
	cmd, _, err := (&app{}).rootCommand().Find(args)
	if err != nil {
		return true
	}
	for c := cmd; c != nil; c = c.Parent() {
		if short, ok := lifetimes[c.Name()]; ok {
			return short
		}
	}
	return !cmd.HasParent() // statuscheck alone, or with --help or --version
}

// lifetimes: true for the short-lived commands.
var lifetimes = map[string]bool{
	"validate": true, "generate": true, "rules": true, "version": true, "help": true, "completion": true,
	"bridge": false, "record": false, "simulate": false,
}
