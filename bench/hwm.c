/*
 * hwm.c -- the memory part's launcher: runs one command, and every
 * process it forks, under ptrace, and reads each process's peak resident
 * set (VmHWM of /proc/PID/status) at its last moment, the exit stop
 * (PTRACE_EVENT_EXIT: the threads are leaving, the address space is
 * still there), where wait4's ru_maxrss would give only the largest of a
 * process and everything it waited for.  Threads are not traced (they
 * share their process's address space), so a signal stops only the
 * thread it is delivered to, and only if that is a process's first.
 * Linked statically, as spawn.c is, for the same reason.
 *
 * Usage: hwm RESULT TIMEOUT_S CMD [ARGS...]
 * Writes RESULT with "key value" lines, status, wall_ns and maxrss_kb as
 * spawn.c does, and one line per process that ended:
 *   proc PID PPID NAME HWM_KB START_KB
 * (START_KB: the resident set a forked process had at its first stop,
 * right after the fork, the pages it shares with its parent until either
 * writes them; 0 for the command itself, which starts at exec).  After
 * TIMEOUT_S seconds the command is killed (status 137 then).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 4096

static pid_t child;

static struct proc {
	pid_t pid;
	long start_kb;
} procs[MAX_PROCS];
static int nprocs;

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

static struct proc *find(pid_t pid)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

/* The "Key:" line's first number of /proc/PID/status, or -1; the Name
 * into name (no spaces: they become '_'). */
static long status_field(pid_t pid, const char *key, char *name, size_t len)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	size_t kl = strlen(key);
	while (fgets(line, sizeof line, f)) {
		if (name && strncmp(line, "Name:", 5) == 0) {
			char *p = line + 5;
			p += strspn(p, " \t");
			p[strcspn(p, "\n")] = '\0';
			snprintf(name, len, "%s", *p ? p : "?");
			for (char *q = name; *q; q++)
				if (*q == ' ')
					*q = '_';
		}
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: hwm RESULT TIMEOUT_S CMD [ARGS...]\n");
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
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[3], argv + 3);
		fprintf(stderr, "hwm: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	signal(SIGALRM, on_alarm);
	alarm(timeout);
	procs[nprocs++] = (struct proc){ child, 0 };
	int st, status = -1, first = 1;
	struct rusage ru = { 0 };
	for (;;) {
		struct rusage r;
		pid_t pid = wait4(-1, &st, __WALL, &r);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			perror("wait4");
			return 2;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (pid == child) {
				ru = r;
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			}
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), event = st >> 16;
		if (first && pid == child) {
			/* The stop after exec: from here on, forks are traced too. */
			first = 0;
			ptrace(PTRACE_SETOPTIONS, pid, NULL,
			       (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
					      PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			continue;
		}
		if (event == PTRACE_EVENT_EXIT) {
			char name[64] = "?";
			long tgid = status_field(pid, "Tgid", NULL, 0);
			if (tgid == pid) {
				long hwm = status_field(pid, "VmHWM", name, sizeof name);
				long ppid = status_field(pid, "PPid", NULL, 0);
				struct proc *p = find(pid);
				fprintf(out, "proc %d %ld %s %ld %ld\n", (int)pid, ppid, name, hwm, p ? p->start_kb : 0);
			}
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			continue;
		}
		if (event) {
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			continue;
		}
		if (sig == SIGSTOP && !find(pid)) {
			/* A forked process's first stop. */
			if (nprocs < MAX_PROCS)
				procs[nprocs++] = (struct proc){ pid, status_field(pid, "VmRSS", NULL, 0) };
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			continue;
		}
		/* A signal on its way to the process: let it through. */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
	long long t1 = mono_ns();
	fprintf(out, "status %d\nwall_ns %lld\nmaxrss_kb %ld\n", status, t1 - t0, ru.ru_maxrss);
	return fclose(out) == 0 ? 0 : 2;
}
