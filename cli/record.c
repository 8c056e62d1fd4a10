/*
 * record.c -- `cpuprof record [options] -- CMD [ARGS...]`: runs CMD with
 * libcpuprof.so in LD_PRELOAD and the profiler's settings in CPUPROF_*
 * environment variables, waits for it like time(1) (ignoring SIGINT and
 * SIGQUIT meanwhile), then summarises on stderr what the library wrote:
 * the profile FILE and any FILE.<pid> written by CMD's child processes.
 * Options are validated before anything runs; the exit status is CMD's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "profile.h"

#define DEFAULT_OUTPUT "cpu.pb.gz"
#define LIBNAME "libcpuprof.so"

/* What the command line asked for; NULL fields were not given. */
struct record_opts {
	const char *output;
	const char *hz, *engine, *depth, *signal, *unwind;
	char **cmd; /* NULL-terminated argv of the command */
};

/* An existing FILE.<pid> and its identity, to tell new ones apart. */
struct extra {
	char *name; /* base name */
	unsigned long pid;
	ino_t ino;
	struct timespec mtime;
};

struct extras {
	struct extra *a;
	size_t n, cap;
};

void record_usage(FILE *f)
{
	fputs("  cpuprof record [-o FILE] [-F HZ] [--engine NAME] [--depth N]\n"
	      "                 [--signal N] [--unwind MODE] -- CMD [ARGS...]\n"
	      "      run CMD with the profiler preloaded; write the profile to\n"
	      "      FILE (default " DEFAULT_OUTPUT "; child processes write\n"
	      "      FILE.<pid>).  HZ: samples per CPU second, 1..100000;\n"
	      "      NAME: auto, perf, hw, timer or itimer; N: stack depth 1..1024,\n"
	      "      sampling signal of the timer engines: SIGPROF (27) or a\n"
	      "      real-time signal; MODE: auto (.eh_frame tables, frame\n"
	      "      pointers where there are none), dwarf or fp.  Exits with\n"
	      "      CMD's status.\n",
	      f);
}

/* If argv[*i] is option `shortname` (e.g. "-o", may be NULL) or `longname`
 * (e.g. "--output") in any of the forms "-o V", "-oV", "--output V" and
 * "--output=V", stores V in *val (NULL if it is missing), advances *i past
 * it and returns true. */
static bool match_opt(int argc, char **argv, int *i, const char *shortname,
		      const char *longname, const char **val)
{
	const char *a = argv[*i];
	size_t sl = shortname ? strlen(shortname) : 0, ll = strlen(longname);
	if ((shortname && strcmp(a, shortname) == 0) || strcmp(a, longname) == 0) {
		*val = *i + 1 < argc ? argv[++*i] : NULL;
		if (!*val)
			++*i;
		return true;
	}
	if (strncmp(a, longname, ll) == 0 && a[ll] == '=') {
		*val = a + ll + 1;
		return true;
	}
	if (shortname && strncmp(a, shortname, sl) == 0) {
		*val = a + sl;
		return true;
	}
	return false;
}

/* Parses argv (argv[0] is "record") into *o.  Prints a message and
 * returns -1 for anything wrong, 1 for --help, 0 otherwise. */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	int i;
	long v;
	memset(o, 0, sizeof *o);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *name = a;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break; /* the command starts here */
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return 1;
		if (match_opt(argc, argv, &i, "-o", "--output", &val))
			o->output = val;
		else if (match_opt(argc, argv, &i, "-F", "--hz", &val))
			o->hz = val;
		else if (match_opt(argc, argv, &i, NULL, "--engine", &val))
			o->engine = val;
		else if (match_opt(argc, argv, &i, NULL, "--depth", &val))
			o->depth = val;
		else if (match_opt(argc, argv, &i, NULL, "--signal", &val))
			o->signal = val;
		else if (match_opt(argc, argv, &i, NULL, "--unwind", &val))
			o->unwind = val;
		else {
			fprintf(stderr, "cpuprof record: unknown option '%s'\n",
				a);
			return -1;
		}
		if (!val) {
			fprintf(stderr, "cpuprof record: option '%s' needs a "
				"value\n", name);
			return -1;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "cpuprof record: no command given\n");
		return -1;
	}
	o->cmd = argv + i;

	if (o->output && o->output[0] == '\0') {
		fprintf(stderr, "cpuprof record: -o/--output: empty file name\n");
		return -1;
	}
	/* Each setting checked by the library's own table (src/options.h),
	 * which the profiled program reads it with. */
	const struct {
		const char *val;
		enum cp_option_id id;
	} checks[] = {
		{ o->hz, CP_OPT_HZ },
		{ o->engine, CP_OPT_ENGINE },
		{ o->depth, CP_OPT_DEPTH },
		{ o->signal, CP_OPT_SIGNAL },
		{ o->unwind, CP_OPT_UNWIND },
	};
	for (size_t k = 0; k < sizeof checks / sizeof checks[0]; k++) {
		const struct cp_option *opt = &cp_options[checks[k].id];
		char why[256];
		if (checks[k].val && cp_option_parse(opt, checks[k].val, &v, why, sizeof why) < 0) {
			fprintf(stderr, "cpuprof record: %s %s: %s\n", opt->flag, checks[k].val, why);
			return -1;
		}
	}
	return 0;
}

/* The canonical path of `path` if it names a readable regular file, else
 * NULL.  The result is malloc'd. */
static char *usable_file(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    access(path, R_OK) < 0)
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
			fprintf(stderr, "cpuprof record: CPUPROF_LIB=%s: not a "
				"readable file\n", env);
		return p;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0 || (size_t)n >= sizeof exe - 1) {
		fprintf(stderr, "cpuprof record: cannot find " LIBNAME ": "
			"/proc/self/exe is unreadable; set CPUPROF_LIB\n");
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
		fprintf(stderr, "cpuprof record: cannot find " LIBNAME " in %s "
			"or %s/../lib; set CPUPROF_LIB to its path\n", exe, exe);
	free(cand[0]);
	free(cand[1]);
	return found;
}

/* If `name` is base.<digits>, returns true and the number in *pid. */
static bool is_extra_name(const char *name, const char *base,
			  unsigned long *pid)
{
	size_t bl = strlen(base);
	if (strncmp(name, base, bl) != 0 || name[bl] != '.')
		return false;
	const char *d = name + bl + 1;
	if (*d < '0' || *d > '9' || strlen(d) > 10)
		return false;
	for (const char *q = d; *q; q++)
		if (*q < '0' || *q > '9')
			return false;
	*pid = strtoul(d, NULL, 10);
	return true;
}

/* Lists the files dir/base.<digits> into *x (sorted by pid). */
static void scan_extras(const char *dir, const char *base, struct extras *x)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		unsigned long pid;
		struct stat st;
		if (!is_extra_name(e->d_name, base, &pid) ||
		    fstatat(dirfd(d), e->d_name, &st, 0) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (x->n == x->cap) {
			size_t cap = x->cap ? 2 * x->cap : 16;
			struct extra *a = realloc(x->a, cap * sizeof *a);
			if (!a)
				break;
			x->a = a;
			x->cap = cap;
		}
		char *name = strdup(e->d_name);
		if (!name)
			break;
		x->a[x->n++] = (struct extra){ name, pid, st.st_ino, st.st_mtim };
	}
	closedir(d);
}

/* qsort order of extras: by pid. */
static int extra_cmp(const void *a, const void *b)
{
	const struct extra *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Frees the list's names and array. */
static void extras_free(struct extras *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->a[i].name);
	free(x->a);
}

/* True if `e` is not in `before` with the same inode and mtime, i.e. it
 * was created or rewritten since. */
static bool extra_is_new(const struct extra *e, const struct extras *before)
{
	for (size_t i = 0; i < before->n; i++) {
		const struct extra *b = &before->a[i];
		if (strcmp(b->name, e->name) == 0)
			return b->ino != e->ino ||
			       b->mtime.tv_sec != e->mtime.tv_sec ||
			       b->mtime.tv_nsec != e->mtime.tv_nsec;
	}
	return true;
}

/* Prints the one-line summary of the profile at `path` (shown as `shown`),
 * or why there is none. */
static void summarise(const char *path, const char *shown, const char *cmd,
		      int status)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "cpuprof: no profile written (%s killed "
				"by signal %d, %s)\n", cmd, WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		else
			fprintf(stderr, "cpuprof: no profile written (%s exited "
				"before the profiler wrote, or the profiler was "
				"disabled: see its warning above)\n", cmd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		/* /dev/null, a FIFO: written into, nothing to read back. */
		fprintf(stderr, "cpuprof: %s is not a regular file: no summary\n", shown);
		return;
	}
	struct profile *p;
	char err[512];
	if (profile_read_file(path, &p, err, sizeof err) < 0) {
		fprintf(stderr, "cpuprof: wrote %s, but it is not a valid "
			"profile: %s\n", shown, err);
		return;
	}
	const char *samples = profile_comment(p, "samples");
	const char *engine = profile_comment(p, "engine");
	const char *coverage = profile_comment(p, "coverage");
	const char *attributed = profile_comment(p, "attributed");
	char nbuf[32];
	if (!samples) {
		snprintf(nbuf, sizeof nbuf, "%zu", p->nsamples);
		samples = nbuf;
	}
	fprintf(stderr, "cpuprof: wrote %s: %s samples, engine=%s, "
		"coverage=%s%s%s\n", shown, samples, engine ? engine : "unknown",
		coverage ? coverage : "unknown",
		attributed ? ", attributed=" : "", attributed ? attributed : "");
	profile_free(p);
}

/* Runs o->cmd and waits for it; returns its wait status, or -1 if it could
 * not be started (after printing why; *exec_errno is then its errno, or 0
 * if fork itself failed). */
static int run(const struct record_opts *o, int *exec_errno)
{
	struct sigaction ign, old_int, old_quit;
	int pfd[2], status;

	*exec_errno = 0;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		perror("cpuprof record: pipe");
		return -1;
	}
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		close(pfd[0]);
		execvp(o->cmd[0], o->cmd);
		int e = errno;
		ssize_t w = write(pfd[1], &e, sizeof e);
		(void)w;
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		perror("cpuprof record: fork");
		close(pfd[0]);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		return -1;
	}
	int e = 0;
	ssize_t n;
	do
		n = read(pfd[0], &e, sizeof e);
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (n == (ssize_t)sizeof e) {
		*exec_errno = e ? e : ENOEXEC;
		fprintf(stderr, "cpuprof record: %s: %s\n", o->cmd[0],
			strerror(*exec_errno));
		return -1;
	}
	return status;
}

/* Sets the environment CMD runs in: LD_PRELOAD with lib first, CPUPROF=abs
 * and CPUPROF_* for the options given.  Returns -1 if out of memory. */
static int set_environment(const struct record_opts *o, const char *lib,
			   const char *abs)
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
	if (rc < 0 || setenv("CPUPROF", abs, 1) < 0 ||
	    (o->hz && setenv("CPUPROF_HZ", o->hz, 1) < 0) ||
	    (o->engine && setenv("CPUPROF_ENGINE", o->engine, 1) < 0) ||
	    (o->depth && setenv("CPUPROF_DEPTH", o->depth, 1) < 0) ||
	    (o->signal && setenv("CPUPROF_SIGNAL", o->signal, 1) < 0) ||
	    (o->unwind && setenv("CPUPROF_UNWIND", o->unwind, 1) < 0))
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

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct extras before = { 0 }, after = { 0 };
	char *lib = NULL, *abs = NULL, *dir = NULL;
	const char *base;
	int rc = EXIT_USAGE, status, exec_errno;
	struct stat st;

	int pr = parse_args(argc, argv, &o);
	if (pr > 0) {
		fputs("usage:\n", stdout);
		record_usage(stdout);
		return 0;
	}
	if (pr < 0) {
		fputs("usage:\n", stderr);
		record_usage(stderr);
		return EXIT_USAGE;
	}
	const char *output = o.output ? o.output : DEFAULT_OUTPUT;
	if (!(lib = find_library()))
		goto out;
	if (strpbrk(lib, ": ")) {
		fprintf(stderr, "cpuprof record: %s: LD_PRELOAD cannot hold a "
			"path with ':' or ' '\n", lib);
		goto out;
	}
	if (output[0] == '/') {
		abs = strdup(output);
	} else {
		char *cwd = getcwd(NULL, 0);
		if (!cwd || asprintf(&abs, "%s/%s", cwd, output) < 0)
			abs = NULL;
		free(cwd);
	}
	if (!abs || !(dir = split_dir(abs, &base))) {
		fprintf(stderr, "cpuprof record: %s: cannot make an absolute "
			"path\n", output);
		goto out;
	}
	if (*base == '\0') {
		fprintf(stderr, "cpuprof record: -o %s: names a directory, not "
			"a file\n", output);
		goto out;
	}
	if (stat(dir, &st) < 0) {
		fprintf(stderr, "cpuprof record: -o %s: %s: %s\n", output, dir,
			strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "cpuprof record: -o %s: %s: not a directory\n",
			output, dir);
		goto out;
	}
	if (stat(abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "cpuprof record: -o %s: is a directory\n",
			output);
		goto out;
	}
	/* Only a regular file is removed: -o /dev/null (or a FIFO) is
	 * written into, never replaced. */
	if (stat(abs, &st) == 0 && S_ISREG(st.st_mode) && unlink(abs) < 0) {
		fprintf(stderr, "cpuprof record: cannot remove the old %s: %s\n",
			output, strerror(errno));
		goto out;
	}
	if (set_environment(&o, lib, abs) < 0) {
		fprintf(stderr, "cpuprof record: cannot set the environment: "
			"%s\n", strerror(errno));
		goto out;
	}
	scan_extras(dir, base, &before);

	status = run(&o, &exec_errno);
	if (status < 0) {
		rc = exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
		goto out;
	}
	rc = WIFEXITED(status) ? WEXITSTATUS(status)
	     : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

	summarise(abs, output, o.cmd[0], status);
	scan_extras(dir, base, &after);
	if (after.n > 1)
		qsort(after.a, after.n, sizeof *after.a, extra_cmp);
	for (size_t i = 0; i < after.n; i++)
		if (extra_is_new(&after.a[i], &before))
			fprintf(stderr, "cpuprof: also wrote %s%s\n", output,
				after.a[i].name + strlen(base));
out:
	extras_free(&before);
	extras_free(&after);
	free(lib);
	free(abs);
	free(dir);
	return rc;
}
