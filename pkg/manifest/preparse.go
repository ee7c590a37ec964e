package manifest

import (
	"bytes"
	"cmp"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Preparsed is a set of files parsed ahead of their use, in the
// background: a command that knows from its arguments which files it
// will read starts them early (statuscheck starts them while the rest of
// its packages initialise, on a core that initialisation leaves idle),
// and its loader parses through the set (Preparsed.Parse) instead of
// calling Parse.
//
// What the set returns is what Parse returns: it gives a file's
// documents only for the same bytes (the loader's own read of the file,
// compared with the one parsed) and the same limits, and to one caller
// only; anything else is parsed then and there. The background parses
// one file at a time, skipping the ones a caller has already asked for,
// and starts no new one once Stop is called or a caller asks for a file
// it does not hold: from then on the caller parses at its own pace, and
// the set holds no more than what the background had already started.
type Preparsed struct {
	lim     Limits
	mu      sync.Mutex
	files   map[string]*preparse
	stopped bool
	parsed  int // files parsed in the background
	taken   int // of them, given to a caller
}

// preparse is one file's parse; done closes when docs and err are set. A
// nil entry in Preparsed.files is a file a caller took or parsed itself.
type preparse struct {
	done chan struct{}
	data []byte
	docs []*Document
	err  error
}

// Preparse starts parsing files (each as Parse(file, its content, lim)
// would) in a goroutine of its own and returns at once. groups are the
// files to parse, a group at a time, in order (a bundle's manifests: the
// group the caller's loader needs first comes first), and within a group
// in ParseOrder, as the loader takes them. groups is drawn in the
// background, one group at a time, and no further than the background
// gets: listing the files is work too. Only regular files (not a
// symlink, a FIFO or a device) within lim.MaxFileSize are read
// (ReadFile); the caller's loader reads the others as it would without
// the set.
func Preparse(groups iter.Seq[[]string], lim Limits) *Preparsed {
	p := &Preparsed{lim: lim, files: map[string]*preparse{}}
	go func() {
		for group := range groups {
			if !p.parseGroup(group) {
				return
			}
		}
	}()
	return p
}

// Stop stops the background from starting another file; a file it is
// parsing is still given to the caller that asks for it. A nil set does
// nothing.
func (p *Preparsed) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
}

// Stats says how many files the background parsed and how many of them
// a caller took.
func (p *Preparsed) Stats() (parsed, taken int) {
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.parsed, p.taken
}

// parseGroup parses one group's files in ParseOrder, and says whether to
// go on.
func (p *Preparsed) parseGroup(group []string) bool {
	var regular []string
	var sizes []int64
	for _, file := range group {
		if st, err := os.Lstat(file); err == nil && st.Mode().IsRegular() && (p.lim.MaxFileSize <= 0 || st.Size() <= p.lim.MaxFileSize) {
			regular = append(regular, file)
			sizes = append(sizes, st.Size())
		}
	}
	for _, i := range ParseOrder(regular, sizes) {
		if !p.parseFile(regular[i]) {
			return false
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.stopped
}

// ParseOrder is the order, by index, in which to parse a bundle's files
// of these names (in file-name order) and sizes: a ClusterServiceVersion
// first, by its name (NamedCSV), since what else of the bundle is worth
// starting early depends on it; then the files before it, since a loader
// that tells of what it read in file-name order (bundle.Options.Decoded)
// tells of the CSV once they are read; then the others. Within each, the
// largest first, ties in the order given, so that a loader parsing them
// in parallel starts its longest steps at once instead of last.
func ParseOrder(files []string, sizes []int64) []int {
	rank := make([]int, len(files)) // 0 a CSV, 1 before the first, 2 after
	seen := false
	for i, f := range files {
		switch {
		case NamedCSV(f):
			seen = true
		case seen:
			rank[i] = 2
		default:
			rank[i] = 1
		}
	}
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		return cmp.Or(cmp.Compare(rank[i], rank[j]), cmp.Compare(sizes[j], sizes[i]))
	})
	return order
}

// NamedCSV says whether a file's name says it holds a
// ClusterServiceVersion, as operator-sdk names it
// (<name>.clusterserviceversion.yaml), in any case. It is a name only:
// what the file holds is what its kind says.
func NamedCSV(file string) bool {
	return strings.Contains(strings.ToLower(filepath.Base(file)), "clusterserviceversion")
}

// parseFile reads and parses one file unless a caller has asked for it,
// and says whether to go on. The file is read before it is claimed, so
// that a caller never waits on a read (a file swapped for a FIFO since
// it was listed blocks the background only); a caller that asks for it
// meanwhile parses it itself.
func (p *Preparsed) parseFile(file string) bool {
	p.mu.Lock()
	_, seen := p.files[file]
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		return false
	}
	if seen {
		return true
	}
	data, err := ReadFile(file, p.lim.MaxFileSize)
	e := &preparse{done: make(chan struct{}), data: data}
	p.mu.Lock()
	if _, seen := p.files[file]; err != nil || seen || p.stopped {
		goOn := !p.stopped
		p.mu.Unlock()
		return goOn
	}
	p.files[file] = e
	p.parsed++
	p.mu.Unlock()
	defer close(e.done)
	e.docs, e.err = Parse(file, data, p.lim)
	return true
}

// Parse is Parse(file, data, lim), from the set when it parsed the same
// bytes of file under the same limits; a nil set parses.
func (p *Preparsed) Parse(file string, data []byte, lim Limits) ([]*Document, error) {
	if p == nil || lim != p.lim {
		return Parse(file, data, lim)
	}
	p.mu.Lock()
	e, ok := p.files[file]
	p.files[file] = nil
	if !ok {
		p.stopped = true
	}
	p.mu.Unlock()
	if e != nil {
		<-e.done
		if bytes.Equal(e.data, data) {
			p.mu.Lock()
			p.taken++
			p.mu.Unlock()
			return e.docs, e.err
		}
	}
	return Parse(file, data, lim)
}
