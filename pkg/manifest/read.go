package manifest

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is returned by ReadFile for a file over the limit.
type ErrTooLarge struct {
	Size, Limit int64
}

func (e *ErrTooLarge) Error() string {
	return fmt.Sprintf("file is %d bytes, over the %d-byte limit", e.Size, e.Limit)
}

// ReadFile reads a regular file, failing with an *ErrTooLarge rather than
// reading more than limit bytes (limit <= 0: no limit). It checks the
// size before reading and reads at most limit+1 bytes, so a file that
// grows while being read is caught too.
func ReadFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", FileKind(st.Mode()))
	}
	if limit > 0 && st.Size() > limit {
		return nil, &ErrTooLarge{Size: st.Size(), Limit: limit}
	}
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	// As os.ReadFile: room for the size the file has and one byte more,
	// where io.ReadAll would grow its buffer from 512 bytes, copying and
	// clearing a bundle's CRDs many times over; a file that grew since
	// is read on all the same.
	data := make([]byte, 0, max(st.Size(), 511)+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, &ErrTooLarge{Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// FileKind names what a non-regular file is, in words.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
