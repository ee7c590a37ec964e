package manifest

import (
	"bytes"
	"cmp"
	"io"
	"iter"
	"os"
	"slices"
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
// one file at a time, in order, skipping the ones a caller has already
// asked for, and starts no new one once a caller has asked for a file it
// did not have: by then the caller parses at its own pace, and the set
// holds no more than what the background had already started.
type Preparsed struct {
	lim     Limits
	mu      sync.Mutex
	files   map[string]*preparse
	stopped bool
}

// preparse is one file's parse; done closes when the rest is set. A nil
// entry in Preparsed.files is a file a caller took or parsed itself.
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
// the largest first (the longest step of a loader that parses a group's
// files in parallel). groups is drawn in the background, one group at a
// time, and no further than the background gets: listing the files is
// work too. Only regular files (not a symlink, a FIFO or a device) within
// lim.MaxFileSize are read; the caller's loader reads the others as it
// would without the set.
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

// parseGroup parses one group's files, the largest first, and says
// whether to go on.
func (p *Preparsed) parseGroup(group []string) bool {
	type sized struct {
		file string
		size int64
	}
	var regular []sized
	for _, file := range group {
		if st, err := os.Lstat(file); err == nil && st.Mode().IsRegular() && (p.lim.MaxFileSize <= 0 || st.Size() <= p.lim.MaxFileSize) {
			regular = append(regular, sized{file, st.Size()})
		}
	}
	slices.SortStableFunc(regular, func(a, b sized) int { return cmp.Compare(b.size, a.size) })
	for _, f := range regular {
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return false
		}
		if _, seen := p.files[f.file]; seen {
			p.mu.Unlock()
			continue
		}
		e := &preparse{done: make(chan struct{})}
		p.files[f.file] = e
		p.mu.Unlock()
		if data, ok := readRegular(f.file, p.lim.MaxFileSize); ok {
			e.data = data
			e.docs, e.err = Parse(f.file, data, p.lim)
		}
		close(e.done)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.stopped
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
		if e.data != nil && bytes.Equal(e.data, data) {
			return e.docs, e.err
		}
	}
	return Parse(file, data, lim)
}

// readRegular reads file if it is a regular file of at most limit bytes
// (when limit > 0).
func readRegular(file string, limit int64) ([]byte, bool) {
	f, err := os.Open(file)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || limit > 0 && st.Size() > limit {
		return nil, false
	}
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size()) + 1)
	if _, err := buf.ReadFrom(r); err != nil || limit > 0 && int64(buf.Len()) > limit {
		return nil, false
	}
	return buf.Bytes(), true
}
