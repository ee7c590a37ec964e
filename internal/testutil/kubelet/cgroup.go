package kubelet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupMounts are this machine's cgroup hierarchies, from
// /proc/self/mountinfo: the cgroup v1 mount points by controller, the
// cgroup v2 mount point, and every one of them (runc creates a cgroup in
// each, and each must be removed).
type cgroupMounts struct {
	v1  map[string]string
	v2  string
	all []string
}

func readCgroupMounts() (cgroupMounts, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroupMounts{}, fmt.Errorf("cgroup mounts: %w", err)
	}
	defer f.Close()
	return parseCgroupMounts(f)
}

// parseCgroupMounts reads the cgroup mounts of a mountinfo file.
func parseCgroupMounts(r io.Reader) (cgroupMounts, error) {
	m := cgroupMounts{v1: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(fields) {
			continue
		}
		point := fields[4]
		switch fields[sep+1] {
		case "cgroup2":
			m.v2 = point
			m.all = append(m.all, point)
		case "cgroup":
			m.all = append(m.all, point)
			for _, opt := range strings.Split(fields[sep+3], ",") {
				m.v1[opt] = point
			}
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("cgroup mounts: %w", err)
	}
	return m, nil
}

// cgroupUsage reads the peak memory and the CPU time of the cgroup at
// path: from the v1 memory and cpuacct controllers where this machine
// mounts them (cgroup v1, or the hybrid layout), else from cgroup v2.
func cgroupUsage(m cgroupMounts, path string) (peak int64, cpu time.Duration, err error) {
	read := func(file string) (string, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("container usage: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	var memFile string
	switch {
	case m.v1["memory"] != "":
		memFile = filepath.Join(m.v1["memory"], path, "memory.max_usage_in_bytes")
	case m.v2 != "":
		memFile = filepath.Join(m.v2, path, "memory.peak")
	default:
		return 0, 0, errors.New("container usage: no memory cgroup mounted")
	}
	s, err := read(memFile)
	if err != nil {
		return 0, 0, err
	}
	if peak, err = strconv.ParseInt(s, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("container usage: %s: %w", memFile, err)
	}
	switch {
	case m.v1["cpuacct"] != "":
		file := filepath.Join(m.v1["cpuacct"], path, "cpuacct.usage")
		if s, err = read(file); err != nil {
			return 0, 0, err
		}
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("container usage: %s: %w", file, err)
		}
		return peak, time.Duration(ns), nil
	case m.v2 != "":
		file := filepath.Join(m.v2, path, "cpu.stat")
		if s, err = read(file); err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("container usage: %s: %w", file, err)
				}
				return peak, time.Duration(us) * time.Microsecond, nil
			}
		}
		return 0, 0, fmt.Errorf("container usage: %s has no usage_usec", file)
	}
	return 0, 0, errors.New("container usage: no cpu accounting cgroup mounted")
}

// removeCgroup removes the cgroup at path from every hierarchy; one that
// is not there is not an error.
func removeCgroup(path string) error {
	m, err := readCgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, point := range m.all {
		if err := os.Remove(filepath.Join(point, path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the pod's cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}
