/*
 * record.c -- `cpuprof record [options] -- CMD [ARGS...]` and `cpuprof
 * record -p PID[,PID...]`: profiles CMD and every process it starts, or
 * processes already running, and writes one profile of the whole tree
 * (record_write.c), or one per process image with --per-process, saying on
 * stderr what it wrote.
 *
 * From outside, where the kernel allows it (kernel.c): record opens the
 * sampling events on CMD before it runs, inherited by everything it
 * starts, and reads the kernel's rings; nothing is preloaded.  Else, and
 * for the engines that must run inside the process (timer, itimer, hw),
 * CMD runs with libcpuprof.so in LD_PRELOAD and the settings in CPUPROF_*
 * variables, and each process writes its samples, as it takes them, into
 * shared memory that record made (collect.c).  Either way a profile
 * exists however a process ends -- exit, _exit, a fatal signal, SIGKILL,
 * exec.
 *
 * record is a good parent: the signals that ask a program to stop
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that are sent to record alone are
 * passed to CMD, and record gives CMD --grace seconds to end before it
 * kills it; a Ctrl-C from the terminal, which reaches CMD by itself, only
 * keeps record waiting for it.  Orphans of the tree come to record
 * (PR_SET_CHILD_SUBREAPER), so that how they end is known too.  Options
 * are validated before anything runs; the exit status is CMD's (128+N if
 * signal N killed it).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "commands.h"
#include "every.h"
#include "flags.h"
#include "kernel.h"
#include "profile/options.h"
#include "profile/times.h"
#include "sig/clock.h"
#include "record_live.h"
#include "record_write.h"
#include "symbolize/symbols.h"

#define DEFAULT_OUTPUT "cpu.pb.gz"
#define LIBNAME "libcpuprof.so"
/* The shared memory: slots for the processes of the tree that run at the
 * same time, each with a ring of this many samples. */
#define SLOTS 128
#define RING_CELLS 2048
/* How often record takes what the tree wrote, at most (ms): the shared
 * memory is polled; the kernel's rings wake record when a quarter full. */
#define POLL_MS 20
#define KERNEL_POLL_MS 100
/* The most processes -p takes. */
#define MAX_PIDS 64

/* record's flags: their order is the usage's. */
enum { F_OUTPUT, F_HZ, F_ENGINE, F_DEPTH, F_SIGNAL, F_UNWIND, F_PER_PROCESS, F_GRACE, F_PRELOAD, F_OFF_CPU, F_KERNEL,
       F_PID, F_DURATION, F_EVERY, F_NFLAGS };

static const struct flag record_flags[F_NFLAGS] = {
	[F_OUTPUT] = { "--output", 'o', FLAG_TEXT, "FILE", .want = "a file name",
		       .help = "the profile (default " DEFAULT_OUTPUT "); with --per-process CMD's last image's, "
			       "the others' FILE.<pid> (FILE.<pid>.<n> after the n-th exec)" },
	[F_HZ] = { "--hz", 'F', FLAG_SETTING, "HZ", .setting = CP_OPT_HZ },
	[F_ENGINE] = { "--engine", 0, FLAG_SETTING, "NAME", .setting = CP_OPT_ENGINE,
		       .help = "auto and perf record from outside where the kernel allows it (perf events on the "
			       "tree, nothing preloaded); hw, timer and itimer are the library's, preloaded into "
			       "each process" },
	[F_DEPTH] = { "--depth", 0, FLAG_SETTING, "N", .setting = CP_OPT_DEPTH },
	[F_SIGNAL] = { "--signal", 0, FLAG_SETTING, "N", .setting = CP_OPT_SIGNAL,
		       .help = "with --engine timer or itimer" },
	[F_UNWIND] = { "--unwind", 0, FLAG_SETTING, "MODE", .setting = CP_OPT_UNWIND,
		       .help = "auto: .eh_frame tables, frame pointers where there are none" },
	[F_PER_PROCESS] = { "--per-process", 0, FLAG_BOOL, .help = "one file per process image (-o)" },
	[F_GRACE] = { "--grace", 0, FLAG_INT, "SECONDS", .min = 0, .max = 3600, .def = 5,
		      .want = "the seconds CMD has to end, an integer from 0 to 3600",
		      .help = "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to record go to CMD, which then has "
			      "SECONDS to end before it is killed" },
	[F_PRELOAD] = { "--preload", 0, FLAG_BOOL,
			.help = "inside each process, the library preloaded, whatever the engine" },
	[F_OFF_CPU] = { "--off-cpu", 0, FLAG_BOOL,
			.help = "also the time each thread spent off the CPU (blocked, or waiting to run), charged to "
				"the stack where it left the CPU: sample types off_cpu and wall beside cpu (from "
				"outside only; needs root, CAP_PERFMON or perf_event_paranoid <= 1, else CPU only, "
				"and it says why)" },
	[F_KERNEL] = { "--kernel", 0, FLAG_BOOL,
		       .help = "also the kernel's part of each stack sampled in it (system calls, page faults), above "
			       "the user frames that entered it, named from /proc/kallsyms and marked as kernel "
			       "frames (from outside only; needs root, CAP_PERFMON or perf_event_paranoid <= 1, "
			       "else user frames only, and it says why)" },
	[F_PID] = { "--pid", 'p', FLAG_TEXT, "PID[,PID...]", .want = "a list of process IDs",
		    .help = "the running processes to record, instead of CMD" },
	[F_DURATION] = { "--duration", 'd', FLAG_INT, "SECONDS", .min = 1, .max = 86400 * 365, .no_def = true,
			 .want = "the seconds to record, an integer from 1",
			 .help = "with -p: until SECONDS pass (else until record is interrupted or they end)" },
	[F_EVERY] = { "--every", 0, FLAG_DURATION, "DURATION", .min = 100, .max = 86400000L * 365, .no_def = true,
		      .want = "a length of time from 100ms: 10s, 500ms, 2m or 1h (a bare number is seconds)",
		      .help = "one whole profile per window of DURATION, each written as it ends, FILE with the "
			      "window's number before its extension (cpu.0001.pb.gz, cpu.0002.pb.gz, ...); SIGUSR1 "
			      "sent to record ends a window at once; from outside only" },
};

static const struct flags record_cmd = {
	.cmd = "record",
	.flag = record_flags,
	.n = F_NFLAGS,
	.command_follows = true,
	.synopsis = "  cpuprof record [OPTIONS] -- CMD [ARGS...]\n"
		    "  cpuprof record -p PID[,PID...] [OPTIONS]\n"
		    "      run CMD, or watch the running processes PID until SECONDS\n"
		    "      pass, record is interrupted or they end, and write one\n"
		    "      profile of them and of every process they start to FILE,\n"
		    "      its samples labelled with process and thread.  Exits with\n"
		    "      CMD's status.\n",
};

/* What the command line asked for. */
struct record_opts {
	const char *output;          /* never NULL */
	const char *pids;            /* -p, or NULL */
	long grace, duration;        /* duration 0: none */
	bool per_process;
	bool preload;                /* inside each process, whatever the engine */
	bool off_cpu;                /* off-CPU time too */
	bool kframes;                /* --kernel: kernel frames too */
	long every_ms;               /* --every: the windows' length (0: one profile of the run) */
	const struct flag_value *v;  /* every flag's, by F_* */
	char **cmd;                  /* NULL-terminated argv of the command, or NULL with -p */
	const struct record_live *live; /* cpuprof top's passes, and no profile written; or NULL */
};

void record_usage(FILE *f)
{
	flags_usage(&record_cmd, f);
}

/* The engine asked for, or NULL. */
static const char *engine_asked(const struct record_opts *o)
{
	return o->v[F_ENGINE].set ? o->v[F_ENGINE].text : NULL;
}

/* Flags that do not go together, or do not apply: 0, or -1 after saying
 * which. */
static int check_fit(const struct record_opts *o, const struct flag_value *v, size_t noperands)
{
	const char *engine = engine_asked(o);
	if (o->pids && noperands)
		flags_refuse(&record_cmd, "-p and a command: give one or the other");
	else if (!o->pids && !noperands)
		flags_refuse(&record_cmd, "no command given (or -p PID)");
	else if (v[F_DURATION].set && !o->pids)
		flags_refuse(&record_cmd, "-d/--duration goes with -p: a command is recorded until it ends");
	else if (o->pids && (engine || v[F_SIGNAL].set || o->preload))
		flags_refuse(&record_cmd, "-p records from outside, with the perf engine: %s does not apply",
			     engine ? "--engine" : v[F_SIGNAL].set ? "--signal" : "--preload");
	else if (o->pids && v[F_GRACE].set)
		flags_refuse(&record_cmd, "--grace is the time CMD has to end once record passes it a signal; -p "
			     "sends its processes none: it does not apply");
	else if (o->every_ms && o->per_process)
		flags_refuse(&record_cmd, "--every and --per-process: give one or the other (a window's profile holds "
			     "every process, each under its own pid label: go tool pprof -tagfocus=pid=PID, cpuprof "
			     "report --group-by process)");
	else if (o->every_ms && o->off_cpu)
		flags_refuse(&record_cmd, "--every and --off-cpu: give one or the other (off-CPU time is held to each "
			     "thread's lifetime, which windows would cut)");
	else if (o->every_ms && (o->preload || (engine && strcmp(engine, "auto") && strcmp(engine, CP_ENGINE_PERF))))
		flags_refuse(&record_cmd, "--every records from outside only: %s runs the profiler inside each process",
			     o->preload ? "--preload" : "--engine hw, timer or itimer");
	else if (v[F_SIGNAL].set && (!engine || (strcmp(engine, CP_ENGINE_TIMER) != 0 &&
						   strcmp(engine, CP_ENGINE_ITIMER) != 0)))
		flags_refuse(&record_cmd, "--signal is the timer engines' sampling signal: it goes with --engine "
			     "timer or itimer (the perf engines send none)");
	else
		return 0;
	return -1;
}

/* With --kernel from outside: where the kernel frames were refused, one
 * line says what refused them. */
static void kframes_said(const struct cp_kcollector *k)
{
	const char *why = cp_kernel_kframes_absent(k);
	if (why)
		fprintf(stderr, "cpuprof %s: no kernel frames: %s; recording user frames only\n", cli_cmd, why);
}

/* Parses argv (argv[0] is "record") into *o, whose values point into fr
 * (the caller frees it).  Returns 0, FLAGS_HELP (printed), or -1 after
 * printing what is wrong.  Each value is checked as it is read, a
 * setting by the library's own rule (src/profile/options.h). */
static int parse_args(int argc, char **argv, struct record_opts *o, struct flags_result *fr)
{
	memset(o, 0, sizeof *o);
	int rc = flags_parse(&record_cmd, argc, argv, fr);
	if (rc != 0)
		return rc;
	const struct flag_value *v = fr->v;
	o->v = v;
	o->output = v[F_OUTPUT].set ? v[F_OUTPUT].text : DEFAULT_OUTPUT;
	o->pids = v[F_PID].text;
	o->grace = v[F_GRACE].n;
	o->duration = v[F_DURATION].set ? v[F_DURATION].n : 0;
	o->per_process = v[F_PER_PROCESS].set;
	o->preload = v[F_PRELOAD].set;
	o->off_cpu = v[F_OFF_CPU].set;
	o->kframes = v[F_KERNEL].set;
	o->every_ms = v[F_EVERY].set ? v[F_EVERY].n : 0;
	o->cmd = o->pids ? NULL : fr->operands;
	return check_fit(o, v, fr->noperands);
}

/* The canonical path of `path` if it names a readable regular file, else
 * NULL.  The result is malloc'd. */
static char *usable_file(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, R_OK) < 0)
		return NULL;
	return realpath(path, NULL);
}

/* Finds libcpuprof.so: $CPUPROF_LIB, else next to this executable (the
 * build tree), else in ../lib relative to it (an installed tree).  Returns
 * a malloc'd absolute path, or NULL after printing why. */
static char *find_library(void)
{
	const char *env = getenv("CPUPROF_LIB");
	if (env && *env) {
		char *p = usable_file(env);
		if (!p)
			fprintf(stderr, "cpuprof %s: CPUPROF_LIB=%s: not a readable file\n", cli_cmd, env);
		return p;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0 || (size_t)n >= sizeof exe - 1) {
		fprintf(stderr, "cpuprof record: cannot find " LIBNAME ": /proc/self/exe is unreadable; set CPUPROF_LIB\n");
		return NULL;
	}
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	char *cand[2] = { NULL, NULL }, *found = NULL;
	if (asprintf(&cand[0], "%s/" LIBNAME, exe) < 0)
		cand[0] = NULL;
	if (asprintf(&cand[1], "%s/../lib/" LIBNAME, exe) < 0)
		cand[1] = NULL;
	for (int i = 0; i < 2 && !found; i++)
		if (cand[i])
			found = usable_file(cand[i]);
	if (!found)
		fprintf(stderr, "cpuprof record: cannot find " LIBNAME " in %s or %s/../lib; set CPUPROF_LIB to its path\n",
			exe, exe);
	free(cand[0]);
	free(cand[1]);
	return found;
}

/* Hands the settings to the preloaded processes, in their CPUPROF_*
 * variables: each as record took it (the choice's own name, the number
 * in decimal), so that they read what record checked; a setting not
 * given is not passed on, whatever record's own environment had.
 * -1 if out of memory. */
static int hand_settings(const struct record_opts *o)
{
	for (size_t k = 0; k < F_NFLAGS; k++) {
		const struct flag *f = &record_flags[k];
		if (f->kind != FLAG_SETTING)
			continue;
		const struct cp_option *opt = &cp_options[f->setting];
		char num[24];
		snprintf(num, sizeof num, "%ld", o->v[k].n);
		if (!o->v[k].set)
			unsetenv(opt->env);
		else if (setenv(opt->env, opt->kind == CP_OPT_CHOICE ? o->v[k].text : num, 1) < 0)
			return -1;
	}
	return 0;
}

/* Sets the environment CMD runs in: LD_PRELOAD with lib first, the shared
 * memory's path, the settings (hand_settings), and none of LD_PRELOAD
 * mode's own variables.  Returns -1 if out of memory. */
static int set_environment(const struct record_opts *o, const char *lib, const char *shm)
{
	const char *pre = getenv("LD_PRELOAD");
	char *preload;
	if (pre && *pre) {
		if (asprintf(&preload, "%s:%s", lib, pre) < 0)
			return -1;
	} else if (!(preload = strdup(lib))) {
		return -1;
	}
	int rc = setenv("LD_PRELOAD", preload, 1);
	free(preload);
	unsetenv("CPUPROF");
	unsetenv("CPUPROF_OWNER");
	unsetenv(cp_options[CP_OPT_OFF_CPU].env); /* off-CPU time comes from outside only */
	if (rc < 0 || setenv(CP_SHM_ENV, shm, 1) < 0 || hand_settings(o) < 0)
		return -1;
	return 0;
}

/* Splits the absolute path `abs` into a malloc'd directory and a pointer
 * to its base name inside abs. */
static char *split_dir(const char *abs, const char **base)
{
	const char *slash = strrchr(abs, '/');
	*base = slash + 1;
	if (slash == abs)
		return strdup("/");
	return strndup(abs, (size_t)(slash - abs));
}

/* Can a file be written in dir?  Tries it (a file that is removed at
 * once), so that the profile's directory fails before the command runs
 * rather than after.  0, or an errno value. */
static int writable_dir(const char *dir)
{
	char *probe = NULL;
	if (asprintf(&probe, "%s/.cpuprof-record-%ld", dir, (long)getpid()) < 0)
		return ENOMEM;
	int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int e = fd < 0 ? errno : 0;
	if (fd >= 0) {
		close(fd);
		unlink(probe);
	}
	free(probe);
	return e;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t rusage_ns(const struct rusage *ru)
{
	return ((int64_t)ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000 +
	       ((int64_t)ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000;
}

/* The signals record handles itself, through a signalfd: with --every,
 * SIGUSR1 too, which ends a window. */
static void record_signals(sigset_t *set, bool every)
{
	sigemptyset(set);
	if (every)
		sigaddset(set, SIGUSR1);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
}

/* --every's windows of FILE (abs, as given `shown`), off without it. */
static void every_setup(struct every *e, const struct record_opts *o, const char *abs, const char *shown)
{
	memset(e, 0, sizeof *e);
	e->ms = o->every_ms;
	e->path = abs;
	e->shown = shown;
	snprintf(e->text, sizeof e->text, "--every %s", o->every_ms ? o->v[F_EVERY].text : "");
}

/* With --every, once the last window has ended: a SIGUSR1 that comes
 * later (or waits, blocked) is let go, not left to end record before it
 * writes that window. */
static void every_signal_off(const struct every *e)
{
	if (e->ms)
		signal(SIGUSR1, SIG_IGN);
}

/* What record saw of the run. */
struct run_state {
	pid_t root;
	int status;
	bool root_done;
	int64_t tree_cpu_ns;   /* the kernel's: CMD's rusage, and orphans' */
	int64_t tree_user_ns;  /* ... of it in user mode */
	int64_t tree_switches; /* ... and its context switches */
	int64_t kill_at;       /* CLOCK_MONOTONIC ms to kill CMD at, or 0 */
	int forwarded;         /* signals passed on */
	int told_to_stop;      /* the signal that did (0: none) */
	struct every every;    /* --every's windows */
	bool cut;              /* SIGUSR1 asked to end the window now */
	struct record_run base; /* what each window's profile says of the run */
};

/* The collector a run uses: the shared memory of preloaded processes, or
 * the kernel's rings. */
struct collector {
	struct cp_collector shm;
	struct cp_kcollector *kernel; /* NULL: the shared memory */
};

static struct cp_tree *tree_of(struct collector *c)
{
	return c->kernel ? cp_kernel_tree(c->kernel) : &c->shm.tree;
}

/* With --every, the next child that has ended, its CPU clock read while
 * it is a zombie (its last, for its window); -1 (any) otherwise, or 0 if
 * none has ended. */
static pid_t next_ended(struct collector *c, struct run_state *rs)
{
	siginfo_t si;
	if (!rs->every.ms || !c->kernel)
		return -1;
	si.si_pid = 0;
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0)
		return 0;
	cp_kernel_ending(c->kernel, si.si_pid);
	return si.si_pid;
}

/* Reaps every child that ended: CMD, or an orphan of the tree (or a
 * window's writer). */
static void reap(struct collector *c, struct run_state *rs)
{
	int st;
	struct rusage ru;
	pid_t p;
	while ((p = next_ended(c, rs)) != 0 && (p = wait4(p, &st, WNOHANG, &ru)) > 0) {
		if (!WIFEXITED(st) && !WIFSIGNALED(st))
			continue;
		if (every_reaped(&rs->every, p, st))
			continue;
		rs->tree_cpu_ns += rusage_ns(&ru);
		rs->tree_user_ns += (int64_t)ru.ru_utime.tv_sec * 1000000000 + (int64_t)ru.ru_utime.tv_usec * 1000;
		rs->tree_switches += ru.ru_nvcsw + ru.ru_nivcsw;
		if (c->kernel)
			cp_kernel_status(c->kernel, p, st, rusage_ns(&ru), ru.ru_nvcsw + ru.ru_nivcsw);
		else
			cp_tree_status(&c->shm.tree, p, st, rusage_ns(&ru));
		if (p == rs->root) {
			rs->status = st;
			rs->root_done = true;
		}
	}
}

/* A signal that asks a program to stop reached record. */
static void on_stop_signal(const struct signalfd_siginfo *si, struct run_state *rs, int grace)
{
	int sig = (int)si->ssi_signo;
	/* From the terminal (SI_KERNEL): the whole foreground group has it,
	 * CMD too.  From kill(): CMD has it as well if the sender aimed at
	 * our process group or is in it (timeout(1) sends to both);
	 * otherwise it was meant for record alone and goes on to CMD. */
	if (si->ssi_code == SI_KERNEL)
		return;
	pid_t sender = (pid_t)si->ssi_pid;
	if (sender <= 0 || getpgid(sender) != getpgid(rs->root)) {
		kill(rs->root, sig);
		rs->forwarded++;
	}
	if (!rs->told_to_stop) {
		rs->told_to_stop = sig;
		rs->kill_at = mono_ms() + (int64_t)grace * 1000;
	}
}

/* Ends what is left of the tree: CMD and every profiled process that
 * still runs. */
static void kill_tree(struct collector *c, struct run_state *rs)
{
	struct cp_tree *t = tree_of(c);
	kill(rs->root, SIGKILL);
	for (size_t k = 0; k < t->nimages; k++)
		if (!t->images[k]->dead && !t->images[k]->done && t->images[k]->pid > 1)
			kill(t->images[k]->pid, SIGKILL);
}

/* Waits up to timeout ms for a signal on sfd or, with the kernel's rings,
 * for a ring to fill; hands each signal to the run.  Rings whose events
 * have ended (POLLHUP) are polled no more: they are read at every pass. */
static void wait_events(struct collector *c, int sfd, int timeout, struct run_state *rs, int grace)
{
	struct pollfd p[1 + 256];
	static int hung[256];
	size_t n = 1;
	p[0] = (struct pollfd){ sfd, POLLIN, 0 };
	if (c->kernel) {
		struct pollfd r[256];
		size_t nr = cp_kernel_pollfds(c->kernel, r, 256);
		for (size_t i = 0; i < nr; i++)
			if (!hung[i])
				p[n++] = r[i];
	}
	if (poll(p, n, timeout) <= 0)
		return;
	for (size_t i = 1; i < n; i++)
		if (p[i].revents & (POLLHUP | POLLERR))
			hung[i - 1] = 1;
	if (!(p[0].revents & POLLIN))
		return;
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGCHLD)
			reap(c, rs);
		else if (si.ssi_signo == SIGUSR1)
			rs->cut = true;
		else
			on_stop_signal(&si, rs, grace);
	}
}

static void collect_poll(struct collector *c)
{
	if (c->kernel)
		cp_kernel_poll(c->kernel);
	else
		cp_collect_poll(&c->shm);
}

/* A pass of a live view (record_live.h): what is collected so far, shown
 * to it.  Whether it asks the run to end. */
static int live_pass(const struct record_opts *o, struct collector *c, const struct run_state *rs, pid_t root,
		     int final, const char *stopped)
{
	const struct cp_tree *t = tree_of(c);
	struct record_live_view v = { .tree = t, .root = root, .final = final, .stopped = stopped };
	if (rs) {
		v.reaped_cpu_ns = rs->tree_cpu_ns;
		v.status = rs->status;
	}
	/* From outside the kernel's count; inside, each process's own. */
	v.lost = c->kernel ? cp_kernel_lost(c->kernel) : 0;
	for (size_t k = 0; k < t->nimages; k++)
		v.lost += t->images[k]->dropped + (c->kernel ? 0 : t->images[k]->facts.lost);
	return o->live->pass(o->live->arg, &v);
}

/* A live view asked the run to end: CMD is ended as it is when record is
 * sent SIGINT (on_stop_signal), once. */
static void live_stop(struct run_state *rs, int grace)
{
	struct signalfd_siginfo si = { .ssi_signo = SIGINT, .ssi_code = SI_USER };
	if (!rs->told_to_stop)
		on_stop_signal(&si, rs, grace);
}

/* The child's side of spawn(): waits for the events to be opened on it
 * (kc), then execs CMD; an exec that fails writes its errno to pfd. */
static void child_exec(const struct record_opts *o, bool kc, int pfd[2], int go[2], const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
	close(pfd[0]);
	if (kc) {
		/* The events are opened on us while we wait: they come on at
		 * the exec. */
		char b = 0;
		close(go[1]);
		if (read(go[0], &b, 1) != 1 || b != 'g')
			_exit(127);
	}
	execvp(o->cmd[0], o->cmd);
	int e = errno;
	ssize_t w = write(pfd[1], &e, sizeof e);
	(void)w;
	_exit(127);
}

/* Starts o->cmd with record's signals blocked into a signalfd (*sfd; the
 * mask before is *old) and, with a kernel configuration kc, the events
 * opened on it before it execs.  Returns 0 with CMD running (rs->root);
 * -1 if it could not be started, after printing why (*exec_errno is then
 * its errno, or 0 if fork itself failed); -2 if the events could not be
 * opened (*refused: the reason), and nothing ran.  On failure the mask
 * is restored and *sfd closed. */
static int spawn(const struct record_opts *o, const struct cp_kernel_conf *kc, struct collector *c,
		 struct run_state *rs, int *sfd, sigset_t *old, int *exec_errno, char *refused, size_t rlen)
{
	int pfd[2], go[2] = { -1, -1 };
	sigset_t mine;
	*exec_errno = 0;
	if (pipe2(pfd, O_CLOEXEC) < 0 || (kc && pipe2(go, O_CLOEXEC) < 0)) {
		perror("cpuprof record: pipe");
		return -1;
	}
	record_signals(&mine, o->every_ms != 0);
	sigprocmask(SIG_BLOCK, &mine, old);
	*sfd = signalfd(-1, &mine, SFD_CLOEXEC | SFD_NONBLOCK);
	/* Orphans of the tree are reparented to record, not to init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		child_exec(o, kc != NULL, pfd, go, old);
	close(pfd[1]);
	if (go[0] >= 0)
		close(go[0]);
	int rc = 0, e = 0;
	bool reaped = false; /* CMD is to be waited for here (it cannot go on) */
	if (pid < 0 || *sfd < 0) {
		perror(pid < 0 ? "cpuprof record: fork" : "cpuprof record: signalfd");
		if (go[1] >= 0)
			close(go[1]);
		rc = -1;
	} else if (kc) {
		rc = cp_kernel_start(&c->kernel, kc, pid, refused, rlen) < 0 ? -2 : 0;
		if (rc == 0)
			kframes_said(c->kernel);
		reaped = rc < 0;
		ssize_t w = write(go[1], rc == 0 ? "g" : "n", 1);
		(void)w;
		close(go[1]);
	}
	if (rc == 0) {
		ssize_t n;
		do
			n = read(pfd[0], &e, sizeof e);
		while (n < 0 && errno == EINTR);
		rs->root = pid;
		if (n == (ssize_t)sizeof e) {
			*exec_errno = e ? e : ENOEXEC;
			fprintf(stderr, "cpuprof %s: %s: %s\n", cli_cmd, o->cmd[0], strerror(*exec_errno));
			rc = -1;
			reaped = true;
		}
	}
	close(pfd[0]);
	if (rc < 0) {
		while (reaped && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (*sfd >= 0)
			close(*sfd);
		sigprocmask(SIG_SETMASK, old, NULL);
	}
	return rc;
}

/* Runs o->cmd and collects the tree's samples until it has ended; returns
 * CMD's wait status, or spawn()'s -1 or -2. */
static int run(const struct record_opts *o, const struct cp_kernel_conf *kc, struct collector *c,
	       struct run_state *rs, int *exec_errno, char *refused, size_t rlen)
{
	int sfd;
	sigset_t old;
	int rc = spawn(o, kc, c, rs, &sfd, &old, exec_errno, refused, rlen);
	if (rc < 0)
		return rc;
	rs->base.root = rs->root;
	if (rs->every.ms)
		every_begin(&rs->every, c->kernel);
	while (!rs->root_done) {
		int timeout = every_timeout(&rs->every, c->kernel ? KERNEL_POLL_MS : POLL_MS);
		if (rs->kill_at) {
			int64_t left = rs->kill_at - mono_ms();
			if (left <= 0) {
				fprintf(stderr, "cpuprof %s: %s did not end within %ld s of signal %d: killing it\n", cli_cmd,
					o->cmd[0], o->grace, rs->told_to_stop);
				kill_tree(c, rs);
				rs->kill_at = 0;
			} else if (left < timeout) {
				timeout = (int)left;
			}
		}
		wait_events(c, sfd, timeout, rs, (int)o->grace);
		reap(c, rs);
		collect_poll(c);
		if (rs->every.ms && !rs->root_done && (rs->cut || every_due(&rs->every)))
			every_cut(&rs->every, c->kernel, &rs->base, rs->cut ? "SIGUSR1" : rs->every.text);
		rs->cut = false;
		if (o->live && live_pass(o, c, rs, rs->root, 0, NULL))
			live_stop(rs, (int)o->grace);
	}
	/* CMD is gone; orphans it left that already ended are reaped, and the
	 * rest of the tree is taken as it is. */
	reap(c, rs);
	if (c->kernel) {
		cp_kernel_finish(c->kernel);
		if (!rs->every.ms) /* each window was held to the clocks */
			cp_kernel_hold_to(c->kernel, rs->tree_cpu_ns, rs->tree_switches);
	} else
		cp_collect_finish(&c->shm);
	if (o->live)
		live_pass(o, c, rs, rs->root, 1, NULL);
	close(sfd);
	every_signal_off(&rs->every);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rs->status;
}

/* Parses -p's list into pids[MAX_PIDS].  How many, or -1 after saying why. */
static int parse_pids(const char *list, pid_t *pids)
{
	long *v;
	size_t n;
	if (!flags_ids(list, INT_MAX, &v, &n)) {
		fprintf(stderr, "cpuprof %s: -p %s: not a process ID, or a list of them (1234 or 1234,1240)\n", cli_cmd, list);
		return -1;
	}
	if (n > MAX_PIDS)
		fprintf(stderr, "cpuprof %s: -p %s: at most %d process IDs\n", cli_cmd, list, MAX_PIDS);
	for (size_t i = 0; i < n && n <= MAX_PIDS; i++)
		pids[i] = (pid_t)v[i];
	free(v);
	return n > MAX_PIDS ? -1 : (int)n;
}

/* With --off-cpu from outside: whether the kernel allows the events (c's
 * off_cpu is set if so); if not, says so in one line and puts why into
 * absent[len]. */
static void off_cpu_probe(struct cp_kernel_conf *c, char *absent, size_t len)
{
	c->off_cpu = cp_kernel_probe_off_cpu(c, absent, len) == 0;
	if (!c->off_cpu)
		fprintf(stderr, "cpuprof %s: no off-CPU time: %s; recording CPU only\n", cli_cmd, absent);
}

/* Records the running processes of -p until -d passes, record is told to
 * stop, or they all end; the profile is written whatever stopped it.
 * Returns record's exit status. */
static int run_attach(const struct record_opts *o, const struct cp_kernel_conf *kc, const char *abs,
		      const char *output)
{
	pid_t pids[MAX_PIDS];
	int n = parse_pids(o->pids, pids);
	if (n < 0)
		return EXIT_USAGE;
	char why[512];
	struct cp_kcollector *k;
	sigset_t mine, old;
	sigemptyset(&mine);
	sigaddset(&mine, SIGINT);
	sigaddset(&mine, SIGTERM);
	sigaddset(&mine, SIGHUP);
	if (o->every_ms)
		sigaddset(&mine, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mine, &old);
	int sfd = signalfd(-1, &mine, SFD_CLOEXEC | SFD_NONBLOCK);
	struct cp_kernel_conf c = *kc;
	char absent[512] = "";
	if (o->off_cpu)
		off_cpu_probe(&c, absent, sizeof absent);
	if (cp_kernel_attach(&k, &c, pids, (size_t)n, why, sizeof why) < 0) {
		fprintf(stderr, "cpuprof %s: cannot record %s: %s\n", cli_cmd, o->pids, why);
		if (sfd >= 0)
			close(sfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return EXIT_USAGE;
	}
	kframes_said(k);
	char shown_cmd[64];
	snprintf(shown_cmd, sizeof shown_cmd, "process %s", o->pids);
	struct record_run run_info = {
		.cmd = shown_cmd,
		.root = pids[0],
		.per_process = o->per_process,
		.mode = "attached",
		.off_cpu = o->off_cpu,
		.off_cpu_absent = absent[0] ? absent : NULL,
		.kframes = o->kframes,
	};
	struct every every;
	every_setup(&every, o, abs, output);
	if (every.ms)
		every_begin(&every, k);
	struct collector live_c = { .kernel = k };
	int64_t end = o->duration ? mono_ms() + (int64_t)o->duration * 1000 : 0;
	const char *stopped = "the processes ended";
	for (;;) {
		int timeout = every_timeout(&every, KERNEL_POLL_MS);
		if (end) {
			int64_t left = end - mono_ms();
			if (left <= 0) {
				stopped = "the time given with -d ran out";
				break;
			}
			if (left < timeout)
				timeout = (int)left;
		}
		struct pollfd p[1 + 256];
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		size_t np = 1 + cp_kernel_pollfds(k, p + 1, 256);
		poll(p, sfd >= 0 ? np : 0, timeout);
		struct signalfd_siginfo si;
		int stop = 0;
		bool cut = false;
		while (sfd >= 0 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
			if (si.ssi_signo == SIGUSR1)
				cut = true;
			else
				stop = (int)si.ssi_signo;
		}
		if (stop) {
			stopped = stop == SIGINT ? "record was interrupted" : "record was told to stop";
			break;
		}
		cp_kernel_poll(k);
		if (cp_kernel_all_ended(k))
			break;
		every_poll(&every);
		if (every.ms && (cut || every_due(&every))) {
			run_info.attached = "the window's end";
			every_cut(&every, k, &run_info, cut ? "SIGUSR1" : every.text);
		}
		if (o->live && live_pass(o, &live_c, NULL, pids[0], 0, NULL)) {
			stopped = "the view was quit";
			break;
		}
	}
	cp_kernel_finish(k);
	if (sfd >= 0)
		close(sfd);
	every_signal_off(&every);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (o->live) {
		live_pass(o, &live_c, NULL, pids[0], 1, stopped);
		cp_kernel_free(k);
		return 0;
	}
	run_info.tree_cpu_ns = cp_kernel_counted_ns(k);
	run_info.attached = stopped;
	run_info.scheduler_ns = cp_kernel_scheduler_ns(k);
	fprintf(stderr, "cpuprof: recorded %s from outside until %s\n", shown_cmd, stopped);
	int rc;
	if (every.ms)
		rc = every_last(&every, k, &run_info, stopped) < 0 ? 1 : 0;
	else
		rc = record_write(cp_kernel_tree(k), abs, output, &run_info) < 0 ? 1 : 0;
	cp_kernel_free(k);
	return rc;
}

/* Whether this kernel's timers are tick-bound: there the task clock fires
 * at ticks too, and the in-process engines' choice (hw, or timers weighed
 * by the thread clock) is better. */
static int tick_bound(void)
{
	struct timespec r;
	return clock_getres(CLOCK_MONOTONIC, &r) == 0 && r.tv_sec * 1000000000l + r.tv_nsec > CP_TICK_BOUND_NS;
}

/* The absolute path of the profile -o names (*abs) and its directory
 * (*dir), both malloc'd, once it is known a file can be written there: a
 * profile that could not be written after the run would be lost.  0, or
 * -1 after saying why not. */
static int output_path(const char *output, char **abs, char **dir)
{
	const char *base;
	struct stat st;
	*abs = *dir = NULL;
	if (output[0] == '/') {
		*abs = strdup(output);
	} else {
		char *cwd = getcwd(NULL, 0);
		if (!cwd || asprintf(abs, "%s/%s", cwd, output) < 0)
			*abs = NULL;
		free(cwd);
	}
	if (!*abs || !(*dir = split_dir(*abs, &base))) {
		fprintf(stderr, "cpuprof %s: %s: cannot make an absolute path\n", cli_cmd, output);
		return -1;
	}
	if (*base == '\0') {
		fprintf(stderr, "cpuprof %s: -o %s: names a directory, not a file\n", cli_cmd, output);
		return -1;
	}
	if (stat(*dir, &st) < 0) {
		fprintf(stderr, "cpuprof %s: -o %s: %s: %s\n", cli_cmd, output, *dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "cpuprof %s: -o %s: %s: not a directory\n", cli_cmd, output, *dir);
		return -1;
	}
	if (stat(*abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "cpuprof %s: -o %s: is a directory\n", cli_cmd, output);
		return -1;
	}
	/* A path that is not a regular file, /dev/null or a FIFO, is written
	 * into. */
	int e = writable_dir(*dir);
	if (e && !(stat(*abs, &st) == 0 && !S_ISREG(st.st_mode) && access(*abs, W_OK) == 0)) {
		fprintf(stderr, "cpuprof %s: -o %s: cannot write in %s: %s\n", cli_cmd, output, *dir, strerror(e));
		return -1;
	}
	return 0;
}

/* The hw engine runs inside each process: where no PMU counts cycles,
 * each would only say so and run unprofiled.  0, or -1 after saying so. */
static int hw_usable(const struct record_opts *o)
{
	char why[512];
	int pmu;
	const char *engine = engine_asked(o);
	if (!engine || strcmp(engine, CP_ENGINE_HW) != 0 || (pmu = cp_kernel_pmu(why, sizeof why)) >= 0)
		return 0;
	fprintf(stderr, "cpuprof %s: --engine hw: %s%s\n", cli_cmd, why,
		pmu == -ENOENT || pmu == -EOPNOTSUPP || pmu == -ENODEV
			? "; the default engine (perf) samples with the task clock instead" : "");
	return -1;
}

/* Makes ready to run CMD with the library preloaded into each process:
 * says why not from outside, finds the library, makes the shared memory
 * and sets the environment.  With --off-cpu, *absent[len] says why there
 * is no off-CPU time.  0, or -1 after saying why not. */
static int preload_setup(const struct record_opts *o, struct collector *c, const char *refusal, char *absent,
			 size_t len, char **lib)
{
	char why[512];
	if (o->off_cpu) {
		/* One line for both: no off-CPU time inside. */
		const char *inside = refusal[0] ? refusal
				     : o->preload ? "--preload runs the profiler inside each process"
				     : tick_bound() ? "this kernel's timers are tick-bound, where the engines inside "
						      "each process sample better"
						    : "the engine asked for runs inside each process";
		snprintf(absent, len, "it is recorded from outside only, and record is not: %s", inside);
		fprintf(stderr, "cpuprof %s: no off-CPU time: %s; profiling CPU inside each process\n", cli_cmd, absent);
	} else if (refusal[0]) {
		fprintf(stderr, "cpuprof %s: not from outside: %s; profiling inside each process instead\n", cli_cmd,
			refusal);
	}
	if (!(*lib = find_library()))
		return -1;
	if (strpbrk(*lib, ": ")) {
		fprintf(stderr, "cpuprof %s: %s: LD_PRELOAD cannot hold a path with ':' or ' '\n", cli_cmd, *lib);
		return -1;
	}
	if (cp_collect_create(&c->shm, SLOTS, RING_CELLS, (uint32_t)o->v[F_DEPTH].n, why, sizeof why) < 0) {
		fprintf(stderr, "cpuprof %s: %s\n", cli_cmd, why);
		return -1;
	}
	if (set_environment(o, *lib, c->shm.path) < 0) {
		fprintf(stderr, "cpuprof %s: cannot set the environment: %s\n", cli_cmd, strerror(errno));
		return -1;
	}
	return 0;
}

/* Records CMD: from outside where the engine asked for is the perf task
 * clock and the kernel lets record open it, else preloaded; writes the
 * profile.  Returns record's exit status. */
static int record_command(const struct record_opts *o, struct cp_kernel_conf *kc, const char *abs,
			  const char *output)
{
	struct collector c;
	struct run_state rs;
	char refusal[512] = "", absent[512] = "", kabsent[512] = "", *lib = NULL;
	int exec_errno, rc = EXIT_USAGE, status = -2;
	const char *engine = engine_asked(o);
	memset(&c, 0, sizeof c);
	c.shm.fd = -1;
	memset(&rs, 0, sizeof rs);
	every_setup(&rs.every, o, abs, output);
	bool outside = !o->preload && (!engine || !strcmp(engine, "auto") || !strcmp(engine, CP_ENGINE_PERF)) &&
		       !tick_bound() && cp_kernel_probe(kc, refusal, sizeof refusal) == 0;
	if (outside && o->off_cpu)
		off_cpu_probe(kc, absent, sizeof absent);
	rs.base = (struct record_run){ .cmd = o->cmd[0], .mode = "outside", .refusal = refusal, .kframes = o->kframes };
	if (outside) {
		status = run(o, kc, &c, &rs, &exec_errno, refusal, sizeof refusal);
		if (status == -2) {
			cp_kernel_free(c.kernel);
			c.kernel = NULL;
			memset(&rs, 0, sizeof rs);
		}
	}
	if (status == -2 && o->every_ms) {
		fprintf(stderr, "cpuprof %s: --every records from outside only, and record cannot here: %s\n", cli_cmd,
			refusal[0] ? refusal : tick_bound() ? "this kernel's timers are tick-bound (docs/vm.md)"
							     : "the kernel refused the events");
		goto out;
	}
	/* Inside each process: the library chooses the engine (and with
	 * --engine perf, where perf is refused, says so and lets the program
	 * run unprofiled). */
	if (status == -2) {
		if (preload_setup(o, &c, refusal, absent, sizeof absent, &lib) < 0)
			goto out;
		if (o->kframes) {
			snprintf(kabsent, sizeof kabsent, "they are recorded from outside only, and record is not: %s",
				 refusal[0] ? refusal : o->preload ? "--preload runs the profiler inside each process"
				 : "the engine asked for runs inside each process");
			fprintf(stderr, "cpuprof %s: no kernel frames: %s; recording user frames only\n", cli_cmd, kabsent);
		}
		status = run(o, NULL, &c, &rs, &exec_errno, NULL, 0);
	}
	if (status < 0) {
		rc = exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
		goto out;
	}
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	struct record_run run_info = {
		.cmd = o->cmd[0],
		.status = status,
		.tree_cpu_ns = rs.tree_cpu_ns,
		.tree_user_ns = rs.tree_user_ns,
		.root = rs.root,
		.per_process = o->per_process,
		.told_to_stop = rs.told_to_stop,
		.mode = c.kernel ? "outside" : "preload",
		.refusal = refusal,
		.off_cpu = o->off_cpu,
		.off_cpu_absent = absent[0] ? absent : NULL,
		.kframes = o->kframes,
		.kframes_absent = !c.kernel && kabsent[0] ? kabsent : NULL,
	};
	if (rs.every.ms)
		every_last(&rs.every, c.kernel, &run_info, "the command ended");
	else if (!o->live)
		record_write(tree_of(&c), abs, output, &run_info);
out:
	if (c.kernel)
		cp_kernel_free(c.kernel);
	else
		cp_collect_free(&c.shm);
	free(lib);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct flags_result fr;
	char *abs = NULL, *dir = NULL;
	int rc = parse_args(argc, argv, &o, &fr);
	if (rc != 0) {
		flags_free(&record_cmd, &fr);
		return rc == FLAGS_HELP ? 0 : EXIT_USAGE;
	}
	rc = EXIT_USAGE;
	/* An earlier profile at FILE stays until this run's replaces it
	 * (written beside it and renamed over it): a command that cannot run
	 * or a refused -p loses nothing. */
	if (output_path(o.output, &abs, &dir) == 0 && hw_usable(&o) == 0) {
		/* The shared symbol tables of files: the tree's processes load
		 * the same libraries. */
		cp_symbols_share_files();
		/* Samples keep their times (profile/times.h) from here. */
		cp_times_begin(cp_mono_ns(), 1000000000u / (unsigned)cp_option_taken(&cp_options[CP_OPT_HZ], o.v[F_HZ].n));
		struct cp_kernel_conf kc = { .hz = (int)o.v[F_HZ].n, .depth = (unsigned)o.v[F_DEPTH].n,
					     .unwind = (int)o.v[F_UNWIND].n, .engine = CP_ENGINE_PERF,
					     .kframes = o.kframes };
		rc = o.pids ? run_attach(&o, &kc, abs, o.output) : record_command(&o, &kc, abs, o.output);
	}
	free(abs);
	free(dir);
	flags_free(&record_cmd, &fr);
	return rc;
}

int record_live_run(const struct record_live *l)
{
	/* record's options as if given on its command line: the settings as
	 * the caller read them, no file. */
	struct flag_value v[F_NFLAGS] = { [F_HZ] = l->hz, [F_DEPTH] = l->depth, [F_UNWIND] = l->unwind };
	struct record_opts o = { .output = "", .pids = l->pids, .grace = l->grace, .duration = l->duration,
				 .v = v, .cmd = l->pids ? NULL : l->cmd, .live = l };
	cp_symbols_share_files();
	struct cp_kernel_conf kc = { .hz = (int)v[F_HZ].n, .depth = (unsigned)v[F_DEPTH].n,
				     .unwind = (int)v[F_UNWIND].n, .engine = CP_ENGINE_PERF };
	return o.pids ? run_attach(&o, &kc, NULL, NULL) : record_command(&o, &kc, NULL, NULL);
}
