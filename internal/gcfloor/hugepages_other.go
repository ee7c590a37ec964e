//go:build !linux

package gcfloor

// adviseHugePages does nothing where the kernel is not Linux.
func adviseHugePages(int64) {}

// unadviseHugePages does nothing where the kernel is not Linux.
func unadviseHugePages() {}
