package manifest

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Scalars are resolved the way Kubernetes resolves them, not the way
// go.yaml.in/yaml/v3 does. kubectl, the apiserver, operator-registry and
// operator-framework/api all read manifests through sigs.k8s.io/yaml, which is
// built on go.yaml.in/yaml/v2: YAML 1.1 booleans (yes/no/on/off/y/n),
// base-0 integers with underscores, and timestamps that end up as RFC 3339
// strings once converted to JSON. The rules below port resolve() from
// go.yaml.in/yaml/v2 v2.4.3 resolve.go and the key handling of
// convertToJSONableObject in sigs.k8s.io/yaml v1.6.0 yaml.go, so that
// `served: yes` means true here exactly as it does in a cluster.

type scalarKind uint8

const (
	kindStr scalarKind = iota
	kindBool
	kindInt
	kindFloat
	kindNull
	kindTimestamp
)

var v2BoolNull = map[string]struct {
	kind scalarKind
	val  interface{}
}{}

func init() {
	for _, s := range []string{"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"} {
		v2BoolNull[s] = struct {
			kind scalarKind
			val  interface{}
		}{kindBool, true}
	}
	for _, s := range []string{"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"} {
		v2BoolNull[s] = struct {
			kind scalarKind
			val  interface{}
		}{kindBool, false}
	}
	for _, s := range []string{"", "~", "null", "Null", "NULL"} {
		v2BoolNull[s] = struct {
			kind scalarKind
			val  interface{}
		}{kindNull, nil}
	}
	for _, s := range []string{".nan", ".NaN", ".NAN"} {
		v2BoolNull[s] = struct {
			kind scalarKind
			val  interface{}
		}{kindFloat, math.NaN()}
	}
	for _, s := range []string{".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"} {
		v2BoolNull[s] = struct {
			kind scalarKind
			val  interface{}
		}{kindFloat, math.Inf(1)}
	}
	for _, s := range []string{"-.inf", "-.Inf", "-.INF"} {
		v2BoolNull[s] = struct {
			kind scalarKind
			val  interface{}
		}{kindFloat, math.Inf(-1)}
	}
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolvePlain resolves an untagged plain scalar as go.yaml.in/yaml/v2 does.
// Integers come back as int64 (or float64 past the int64 range, as a JSON
// number becomes in an unstructured object), timestamps as time.Time.
func resolvePlain(in string) (scalarKind, interface{}) {
	if in == "" {
		return kindNull, nil
	}
	c := in[0]
	switch {
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if item, ok := v2BoolNull[in]; ok {
			return item.kind, item.val
		}
		if t, ok := parseTimestamp(in); ok {
			return kindTimestamp, t
		}
		plain := strings.ReplaceAll(in, "_", "")
		if iv, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return kindInt, iv
		}
		if uv, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return kindInt, float64(uv)
		}
		if yamlStyleFloat.MatchString(plain) {
			if fv, err := strconv.ParseFloat(plain, 64); err == nil {
				return kindFloat, fv
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if iv, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return kindInt, iv
			}
			if uv, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return kindInt, float64(uv)
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if iv, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return kindInt, iv
			}
		}
	case c == '.':
		if item, ok := v2BoolNull[in]; ok {
			return item.kind, item.val
		}
		if fv, err := strconv.ParseFloat(in, 64); err == nil {
			return kindFloat, fv
		}
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		if item, ok := v2BoolNull[in]; ok {
			return item.kind, item.val
		}
	}
	return kindStr, in
}

// allowedTimestampFormats is go.yaml.in/yaml/v2's list.
var allowedTimestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func parseTimestamp(s string) (time.Time, bool) {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return time.Time{}, false
	}
	for _, format := range allowedTimestampFormats {
		if t, err := time.Parse(format, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// keyString turns a resolved map key into the JSON key sigs.k8s.io/yaml
// would produce.
func keyString(kind scalarKind, v interface{}) (string, bool) {
	switch kind {
	case kindStr:
		return v.(string), true
	case kindInt:
		switch n := v.(type) {
		case int64:
			return strconv.FormatInt(n, 10), true
		case float64:
			// An integer past int64 is a uint64 in go.yaml.in/yaml/v2, and
			// sigs.k8s.io/yaml refuses it as a key ("unsupported map key of
			// type: uint64").
			return "", false
		}
	case kindFloat:
		s := strconv.FormatFloat(v.(float64), 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, true
	case kindBool:
		if v.(bool) {
			return "true", true
		}
		return "false", true
	}
	return "", false
}
