/*
 * spawn.c -- the benchmark's launcher: runs one command like time(1) and
 * reports what the kernel accounted for it.  Linked statically so that
 * its own tiny RSS is all a child inherits before exec (a child's
 * ru_maxrss includes the pages it had before exec: launched from Python
 * every workload would start at Python's size).
 *
 * Usage: spawn RESULT TIMEOUT_S CMD [ARGS...]
 * Writes RESULT with "key value" lines: status (exit status, or 128+N if
 * signal N killed it), wall_ns, cpu_ns (user + system of the command and
 * all the children it waited for: perf's own process and its workload),
 * user_ns, sys_ns, maxrss_kb (the largest of them), end_mono_ns (the
 * CLOCK_MONOTONIC instant the command was reaped).  After TIMEOUT_S
 * seconds the command is killed (status 137 then).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void on_alarm(int sig)
{
	(void)sig;
	if (child > 0)
		kill(child, SIGKILL);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: spawn RESULT TIMEOUT_S CMD [ARGS...]\n");
		return 2;
	}
	FILE *out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	unsigned timeout = (unsigned)atoi(argv[2]);
	long long t0 = mono_ns();
	child = fork();
	if (child < 0) {
		perror("fork");
		return 2;
	}
	if (child == 0) {
		execvp(argv[3], argv + 3);
		fprintf(stderr, "spawn: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	signal(SIGALRM, on_alarm);
	alarm(timeout);
	int st;
	struct rusage ru;
	while (wait4(child, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("wait4");
			return 2;
		}
	long long t1 = mono_ns();
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	long long user = ru.ru_utime.tv_sec * 1000000000ll + ru.ru_utime.tv_usec * 1000ll;
	long long sys = ru.ru_stime.tv_sec * 1000000000ll + ru.ru_stime.tv_usec * 1000ll;
	fprintf(out, "status %d\nwall_ns %lld\ncpu_ns %lld\nuser_ns %lld\nsys_ns %lld\nmaxrss_kb %ld\nend_mono_ns %lld\n",
		status, t1 - t0, user + sys, user, sys, ru.ru_maxrss, t1);
	return fclose(out) == 0 ? 0 : 2;
}
