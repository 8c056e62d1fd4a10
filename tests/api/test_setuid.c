/*
 * test_setuid.c -- setuid programs are never profiled.  This program links
 * libcpuprof.so (its constructor starts a profile whenever CPUPROF or
 * `cpuprof record`'s shared memory is in the environment, which a secure
 * exec keeps), so the check that matters is the library's own, not the
 * dynamic loader's refusal to preload into such programs.  As root it
 * copies itself, owned by nobody and setuid, into a directory anyone may
 * write, and runs the copy (real uid root, effective uid nobody: a secure
 * exec, AT_SECURE) with CPUPROF set: no profile may appear.  The same copy
 * without its setuid bit writes one, so the test can see a profile when
 * there is one to see.  Under `cpuprof record` the setuid copy runs,
 * record says why it was not profiled and writes no samples of it.
 * Skips unless root on a native build (qemu-user cannot run a setuid
 * program as one).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

#define NOBODY 65534

DEFINE_BURNER(setuid_work)

static char dir[] = "/tmp/cpuprof-test-XXXXXX";

/* Runs argv with CPUPROF=profile added to the environment (NULL: none);
 * returns its wait status and its stderr in err[len]. */
static int run(char *const argv[], const char *profile, char *err, size_t len)
{
	char errpath[600];
	snprintf(errpath, sizeof errpath, "%s/stderr", dir);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
		if (profile)
			setenv("CPUPROF", profile, 1);
		else
			unsetenv("CPUPROF");
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	FILE *f = fopen(errpath, "r");
	size_t n = f ? fread(err, 1, len - 1, f) : 0;
	err[n] = '\0';
	if (f)
		fclose(f);
	return st;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "work")) {
		/* The copy: work that a profile would hold. */
		setuid_work(100);
		return 0;
	}
	const char *emu = getenv("EMU");
	if (emu && *emu)
		SKIP("under %s: qemu-user is the process, and runs no program setuid", emu);
	if (geteuid() != 0)
		SKIP("needs root to make a program setuid to another user");
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	CHECK_EQ(chmod(dir, 01777), 0);

	char exe[PATH_MAX], copy[700], prof[700], cmd[2 * PATH_MAX], err[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0, "readlink");
	exe[n] = '\0';
	snprintf(copy, sizeof copy, "%s/work", dir);
	snprintf(prof, sizeof prof, "%s/setuid.pb.gz", dir);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", exe, copy);
	CHECK_EQ(system(cmd), 0);
	CHECK_EQ(chown(copy, NOBODY, NOBODY), 0);
	char *args[] = { copy, "work", NULL };

	/* The setuid copy loads the library from the build, as nobody. */
	char lib[PATH_MAX + 32];
	snprintf(lib, sizeof lib, "%s", exe);
	*strrchr(lib, '/') = '\0';
	*strrchr(lib, '/') = '\0';
	strcat(lib, "/libcpuprof.so");
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(setresuid(NOBODY, NOBODY, NOBODY) == 0 && access(lib, R_OK) == 0 ? 0 : 1);
	int ok;
	CHECK(waitpid(pid, &ok, 0) == pid, "waitpid");
	if (!WIFEXITED(ok) || WEXITSTATUS(ok) != 0)
		SKIP("nobody cannot read %s (a directory on its path is closed to others)", lib);

	/* Not setuid: profiled, as any program linked with the library. */
	CHECK_EQ(chmod(copy, 0755), 0);
	int st = run(args, prof, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the plain copy: status %#x: %s", st, err);
	char name[256];
	CHECK(pprof_top_row(prof, 0, name, sizeof name) == 0 && !strcmp(name, "setuid_work"),
	      "the plain copy wrote no profile of its work (the test cannot see one)");
	unlink(prof);

	/* Setuid nobody, run by root: a secure exec.  No profile. */
	CHECK_EQ(chmod(copy, 04755), 0);
	struct stat sb;
	CHECK(stat(copy, &sb) == 0 && (sb.st_mode & S_ISUID) && sb.st_uid == NOBODY, "the copy is not setuid nobody");
	st = run(args, prof, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the setuid copy: status %#x: %s", st, err);
	CHECK(access(prof, F_OK) != 0, "the setuid program was profiled into %s", prof);
	CHECK(!strstr(err, "cpuprof"), "the setuid program heard from cpuprof: %s", err);

	/* The same under `cpuprof record`. */
	const char *b = getenv("B");
	char cp[PATH_MAX + 64];
	snprintf(cp, sizeof cp, "%s/%s/cpuprof", getcwd(exe, sizeof exe) ? exe : ".", b ? b : "build");
	char *rec[] = { cp, "record", "-o", prof, "--", copy, "work", NULL };
	st = run(rec, NULL, err, sizeof err);
	fprintf(stderr, "record of the setuid program: %s", err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "record: status %#x: %s", st, err);
	CHECK(strstr(err, "was not profiled: it is setuid or setgid"), "record does not say why: %s", err);
	if (access(prof, F_OK) == 0) {
		char *top = pprof_run("-top", prof);
		CHECK(top && !strstr(top, "setuid_work"), "record profiled the setuid program:\n%s", top ? top : "");
		free(top);
	}

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
