//go:build linux && amd64

package testutil

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// RunKilledAtRename runs cmd under ptrace and SIGKILLs it the moment any of
// its threads enters its first rename system call (rename, renameat or
// renameat2): the worst moment for a program that writes a temporary file
// and renames it over the original. The program itself has no hook for
// it. It reports whether the kill happened (false: the program ended
// without renaming).
func RunKilledAtRename(cmd *exec.Cmd) (killed bool, err error) {
	// Every ptrace request must come from the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	// Its own process group, so that waiting for its threads (by group)
	// reaps nothing else of the test binary's.
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return false, err
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Wait() }()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return false, fmt.Errorf("waiting for the traced process: %w", err)
	}
	const (
		traceSysGood = 0x1      // PTRACE_O_TRACESYSGOOD
		traceClone   = 0x8      // PTRACE_O_TRACECLONE
		exitKill     = 0x100000 // PTRACE_O_EXITKILL
		wall         = 0x40000000
		enosys       = -38
	)
	if err := syscall.PtraceSetOptions(pid, traceSysGood|traceClone|exitKill); err != nil {
		return false, fmt.Errorf("ptrace options: %w", err)
	}
	if err := syscall.PtraceSyscall(pid, 0); err != nil {
		return false, fmt.Errorf("ptrace: %w", err)
	}
	for {
		tid, err := syscall.Wait4(-pid, &ws, wall, nil)
		if errors.Is(err, syscall.ECHILD) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("waiting for the traced process: %w", err)
		}
		if ws.Exited() || ws.Signaled() {
			if tid == pid {
				return false, nil
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		deliver := 0
		switch {
		case sig == syscall.SIGTRAP|0x80: // a system call stop
			var regs syscall.PtraceRegs
			if syscall.PtraceGetRegs(tid, &regs) == nil && int64(regs.Rax) == enosys {
				switch regs.Orig_rax {
				case syscall.SYS_RENAME, syscall.SYS_RENAMEAT, 316: // 316: renameat2
					_ = syscall.Kill(pid, syscall.SIGKILL)
					for {
						if _, err := syscall.Wait4(-pid, &ws, wall, nil); errors.Is(err, syscall.ECHILD) {
							return true, nil
						}
					}
				}
			}
		case sig == syscall.SIGTRAP, sig == syscall.SIGSTOP:
			// A clone event, or a new thread starting: not the program's.
		default:
			deliver = int(sig) // the Go runtime's own signals (SIGURG, ...)
		}
		_ = syscall.PtraceSyscall(tid, deliver)
	}
}
