/*
 * no_perf.c -- runs a command where perf_event_open fails with ENOSYS, as
 * it does under qemu-user (and, with EPERM, under Docker's default seccomp
 * profile): installs a seccomp filter for that one system call, then
 * execs the command, which inherits the filter, as do its children.  With
 * -e EACCES (or EPERM) the call fails as a kernel whose
 * perf_event_paranoid refuses it does.  Exits 125 with a message if the
 * filter cannot be installed (no seccomp in this kernel or sandbox), 127
 * if the command cannot be run.
 *
 * Usage: no_perf [-e ENOSYS|EACCES|EPERM] CMD [ARGS...]
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int err = ENOSYS;
	if (argc > 2 && !strcmp(argv[1], "-e")) {
		err = !strcmp(argv[2], "EACCES") ? EACCES : !strcmp(argv[2], "EPERM") ? EPERM : ENOSYS;
		argv += 2;
		argc -= 2;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: no_perf [-e ENOSYS|EACCES|EPERM] CMD [ARGS...]\n");
		return 125;
	}
	/* Only the system call number is looked at: the test runs native
	 * programs of one ABI, so the architecture word needs no check. */
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof code / sizeof code[0], .filter = code };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "no_perf: cannot install a seccomp filter: %s\n", strerror(errno));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_perf: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
