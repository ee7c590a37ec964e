package generate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
)

// WriteFile replaces path with data, atomically: a temporary file in the
// same directory is written, fsynced and given the original's mode (and,
// where allowed, owner), then renamed over path, and the directory is
// fsynced. It refuses a read-only file, and a file whose content is no
// longer orig (changed since it was read). On any failure the original is
// untouched and the temporary file removed.
func WriteFile(path string, orig, data []byte) (err error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrap(err))
	}
	st, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrap(err))
	}
	if st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("writing %s: the file is read-only (mode %v); not written", path, st.Mode().Perm())
	}
	if err := unchanged(target, orig); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".statuscheck-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrap(err))
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Chmod(st.Mode().Perm()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	keepOwner(tmp, st) // best effort: only root may give files away
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = unchanged(target, orig); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrap(err))
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

func unchanged(path string, orig []byte) error {
	now, err := os.ReadFile(path)
	if err != nil {
		return unwrap(err)
	}
	if !bytes.Equal(now, orig) {
		return fmt.Errorf("the file changed after statuscheck read it; not written (run generate again)")
	}
	return nil
}

// Diff renders a unified diff of the change.
func Diff(r *Result) (string, error) {
	if !r.Changed() {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(r.Old)),
		B:        difflib.SplitLines(string(r.New)),
		FromFile: r.File,
		ToFile:   r.File,
		Context:  3,
	})
}

// Patch renders a JSON 6902 patch that sets the annotation (and, with
// the bridge, its declaration and the ops that add its container and
// RBAC), ready for a kustomize patches entry targeting the CSV. "add"
// replaces an existing member (RFC 6902 section 4.1); without
// metadata.annotations the patch adds the whole map, since a JSON pointer
// cannot create parents.
func Patch(r *Result) ([]byte, error) {
	anns := map[string]string{v1alpha1.AnnotationKey: r.Derivation.Source.Marshal()}
	keys := []string{v1alpha1.AnnotationKey}
	if r.Bridge != nil {
		anns[sidecar.AnnotationKey] = r.Bridge.String()
		keys = append(keys, sidecar.AnnotationKey)
	}
	var ops []patchOp
	if r.HadAnnotations {
		for _, k := range keys {
			ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: anns[k]})
		}
	} else {
		ops = []patchOp{{Op: "add", Path: "/metadata/annotations", Value: anns}}
	}
	for _, op := range r.BridgeOps {
		ops = append(ops, op.patch())
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ops); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
