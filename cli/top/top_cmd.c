/*
 * top_cmd.c -- `cpuprof top [OPTIONS] -- CMD [ARGS...]` and `cpuprof top
 * -p PID[,PID...]`: a live view of where CMD (and every process it
 * starts), or processes already running, spend their CPU, drawn again
 * every --interval: the functions by flat and cumulative CPU and the
 * threads by CPU, over the last interval and since the start, with the
 * samples, the samples lost and the coverage (what the samples hold of
 * the CPU the kernel charged the processes).
 *
 * top is record whose tables are read while it runs (record_live.h):
 * the same collector, run and ending.  q (read from stdin where it is a
 * terminal: term.h) ends the view: CMD is ended as record ends it when
 * sent SIGINT (passed the signal, then killed after --grace seconds), and
 * processes attached to run on; when CMD ends by itself, the last view
 * is drawn and top exits with CMD's status, as record does.  The view
 * (screen.h) is drawn over itself on a terminal, and as blocks of plain
 * text in a pipe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/table.h"
#include "commands.h"
#include "flags.h"
#include "profile/options.h"
#include "record/record_live.h"
#include "screen.h"
#include "tally.h"
#include "term.h"

/* top's flags: their order is the usage's. */
enum { T_INTERVAL, T_HZ, T_PID, T_DURATION, T_DEPTH, T_UNWIND, T_GRACE, T_ROWS, T_NFLAGS };

static const struct flag top_flags[T_NFLAGS] = {
	[T_INTERVAL] = { "--interval", 'i', FLAG_REAL, "SECONDS", .lo = 0.1, .hi = 3600, .def = 1,
			 .want = "the seconds between views, a number from 0.1 to 3600",
			 .help = "a view every SECONDS (fractions too), of the last SECONDS and of the time since "
				 "the start" },
	[T_HZ] = { "--hz", 'F', FLAG_SETTING, "HZ", .setting = CP_OPT_HZ },
	[T_PID] = { "--pid", 'p', FLAG_TEXT, "PID[,PID...]", .want = "a list of process IDs",
		    .help = "the running processes to watch, instead of CMD; q leaves them running" },
	[T_DURATION] = { "--duration", 'd', FLAG_INT, "SECONDS", .min = 1, .max = 86400 * 365, .no_def = true,
			 .want = "the seconds to watch, an integer from 1",
			 .help = "with -p: until SECONDS pass (else until q, top is interrupted or they end)" },
	[T_DEPTH] = { "--depth", 0, FLAG_SETTING, "N", .setting = CP_OPT_DEPTH },
	[T_UNWIND] = { "--unwind", 0, FLAG_SETTING, "MODE", .setting = CP_OPT_UNWIND,
		       .help = "auto: .eh_frame tables, frame pointers where there are none" },
	[T_GRACE] = { "--grace", 0, FLAG_INT, "SECONDS", .min = 0, .max = 3600, .def = 5,
		      .want = "the seconds CMD has to end, an integer from 0 to 3600",
		      .help = "q, and SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to top, pass CMD the signal (SIGINT "
			      "for q); it then has SECONDS to end before it is killed" },
	[T_ROWS] = { "--rows", 'n', FLAG_INT, "N", .min = 1, .max = 1000000, .def = 20,
		     .want = "a number of rows, from 1",
		     .help = "in a pipe or a file: the functions, and the threads, each view shows (a terminal "
			     "shows as many as fit)" },
};

static const struct flags top_cmd = {
	.cmd = "top",
	.flag = top_flags,
	.n = T_NFLAGS,
	.command_follows = true,
	.synopsis = "  cpuprof top [OPTIONS] -- CMD [ARGS...]\n"
		    "  cpuprof top -p PID[,PID...] [OPTIONS]\n"
		    "      run CMD, or watch the running processes PID, and show every\n"
		    "      SECONDS the functions (by flat and cumulative CPU) and threads\n"
		    "      that took the CPU over the last SECONDS and since the start.\n"
		    "      q quits: CMD is ended as record ends it, processes PID run on.\n"
		    "      Exits with CMD's status.\n",
	.notes = "      On a terminal the view is drawn over itself, cut to its width;\n"
		 "      in a pipe each view is a block of plain text, one after another.\n",
};

void top_usage(FILE *f)
{
	flags_usage(&top_cmd, f);
}

/* The counts a view is the difference of. */
struct counts {
	int64_t mono_ns;   /* when */
	int64_t cpu_ns;    /* the kernel's count of the tree's CPU */
	int64_t own_ns;    /* top's own CPU */
	uint64_t samples, lost;
};

/* A process's CPU as last read (tree_cpu). */
struct proc_cpu {
	uint64_t key;      /* the pid */
	int64_t ns;
	uint64_t pass;     /* the last pass it was counted in */
};

struct top {
	char title[256];
	int64_t interval_ns;
	int max_rows;
	int tty;             /* stdout is a terminal */
	int attached;        /* -p */
	int started;
	int asked;           /* the run is to end: q, or stdout's reader gone */
	int quit;            /* ... by q */
	int64_t next_ns;     /* the next view's time */
	struct counts first, prev;
	struct tally *tally;
	struct cp_table procs; /* of struct proc_cpu */
	uint64_t pass;
	struct view view;
	int have_view;
	int cols, rows;      /* the terminal's size at the last view */
	char ended[128];
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t own_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
	       ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static uint64_t proc_key(const void *e)
{
	return ((const struct proc_cpu *)e)->key;
}

/* The CPU process pid has used, with its children that it waited for, by
 * the kernel's count (/proc/PID/stat: utime, stime, cutime, cstime).  0,
 * or -1 if it is gone. */
static int proc_stat_cpu(pid_t pid, int64_t *ns)
{
	char path[32], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* After the name, which may hold anything: field 3 on. */
	const char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	unsigned long long v[4];
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3]) != 4)
		return -1;
	static long hz;
	if (!hz)
		hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	*ns = (int64_t)((v[0] + v[1] + v[2] + v[3]) * (1000000000ull / (unsigned long long)hz));
	return 0;
}

/* The tree's CPU so far, by the kernel's counts: what record reaped (the
 * rusage of each, with what it waited for), and each process of the tree
 * that record has not reaped, with what it waited for.  One that is gone
 * without record reaping it keeps the count last read, unless its parent
 * is of the tree: that parent's count has it (attached processes' parents
 * are not). */
static int64_t tree_cpu(struct top *t, const struct record_live_view *v)
{
	const struct cp_tree *tree = v->tree;
	int64_t sum = v->reaped_cpu_ns;
	int made;
	t->pass++;
	for (size_t k = 0; k < tree->nimages; k++) {
		struct proc_cpu *p = cp_table_get(&t->procs, (uint64_t)tree->images[k]->pid, &made);
		if (p && made)
			p->key = (uint64_t)tree->images[k]->pid;
	}
	for (size_t k = 0; k < tree->nimages; k++) {
		const struct cp_image *m = tree->images[k];
		struct proc_cpu *p = cp_table_find(&t->procs, (uint64_t)m->pid);
		if (m->replaced || m->have_status || !p || p->pass == t->pass)
			continue;
		p->pass = t->pass;
		int64_t ns;
		if (proc_stat_cpu(m->pid, &ns) == 0) {
			p->ns = ns;
			sum += ns;
		} else if (m->ppid <= 0 || !cp_table_find(&t->procs, (uint64_t)m->ppid)) {
			sum += p->ns;
		}
	}
	return sum;
}

static struct counts counts_now(struct top *t, const struct record_live_view *v)
{
	struct counts c = { .mono_ns = mono_ns(), .own_ns = own_cpu_ns(), .lost = v->lost };
	c.cpu_ns = tree_cpu(t, v);
	for (size_t k = 0; k < v->tree->nimages; k++)
		c.samples += v->tree->images[k]->samples;
	return c;
}

/* How the run ended, in words, into t->ended. */
static void say_ended(struct top *t, const struct record_live_view *v)
{
	const char *q = t->quit ? "quit, " : "";
	if (t->attached) {
		const char *s = v->stopped ? v->stopped : "it ended";
		if (t->quit)
			snprintf(t->ended, sizeof t->ended, "quit, left running");
		else if (!strncmp(s, "record ", 7))
			snprintf(t->ended, sizeof t->ended, "top %s", s + 7); /* "record was interrupted" */
		else
			snprintf(t->ended, sizeof t->ended, "%s", s);
	} else if (WIFEXITED(v->status)) {
		snprintf(t->ended, sizeof t->ended, "%sexit %d", q, WEXITSTATUS(v->status));
	} else if (WIFSIGNALED(v->status)) {
		snprintf(t->ended, sizeof t->ended, "%skilled by signal %d", q, WTERMSIG(v->status));
	} else {
		snprintf(t->ended, sizeof t->ended, "%sended", q);
	}
}

/* Takes the interval that ends now into t->view. */
static void take_view(struct top *t, const struct record_live_view *v)
{
	struct counts now = counts_now(t, v);
	tally_take(t->tally, v->tree, 0);
	struct view *w = &t->view;
	w->root = t->attached ? 0 : v->root; /* -p: in the title */
	w->title = t->title;
	w->elapsed_s = (double)(now.mono_ns - t->first.mono_ns) / 1e9;
	w->interval_s = (double)(now.mono_ns - t->prev.mono_ns) / 1e9;
	w->cpu_ns = now.cpu_ns - t->prev.cpu_ns;
	w->tcpu_ns = now.cpu_ns - t->first.cpu_ns;
	w->sampled_ns = tally_interval_ns(t->tally);
	w->tsampled_ns = tally_total_ns(t->tally);
	w->samples = now.samples - t->prev.samples;
	w->tsamples = now.samples - t->first.samples;
	w->lost = now.lost - t->prev.lost;
	w->tlost = now.lost - t->first.lost;
	w->own = now.mono_ns > t->prev.mono_ns
			 ? (double)(now.own_ns - t->prev.own_ns) / (double)(now.mono_ns - t->prev.mono_ns) : 0;
	w->town = now.mono_ns > t->first.mono_ns
			  ? (double)(now.own_ns - t->first.own_ns) / (double)(now.mono_ns - t->first.mono_ns) : 0;
	w->total_first = v->final;
	w->nfns = tally_functions(t->tally, v->final, &w->fns);
	w->nthreads = tally_threads(t->tally, v->tree, v->final, &w->threads);
	if (v->final)
		say_ended(t, v);
	w->ended = v->final ? t->ended : NULL;
	t->prev = now;
	t->have_view = 1;
}

/* Draws the view; a write that fails (stdout's reader gone) ends the
 * run. */
static void draw(struct top *t)
{
	int cols = 0, rows = 0;
	if (t->tty && term_size(&cols, &rows) < 0) {
		cols = 80;
		rows = 24;
	}
	/* A terminal of another size may have reflowed the last view, its
	 * lines wrapped: the screen is cleared whole first. */
	if (t->tty && (cols != t->cols || rows != t->rows))
		fputs("\033[2J", stdout);
	t->cols = cols;
	t->rows = rows;
	if (screen_draw(stdout, &t->view, cols, rows, t->max_rows) < 0 || term_broken_pipe())
		t->asked = 1;
}

/* record's pass (record_live.h): keys, and a view when one is due. */
static int on_pass(void *arg, const struct record_live_view *v)
{
	struct top *t = arg;
	int64_t now = mono_ns();
	if (!t->started) {
		t->started = 1;
		/* Attached, the processes' CPU and samples before the first
		 * pass are not the view's; a command's start from nothing. */
		if (t->attached) {
			tally_take(t->tally, v->tree, 1);
			t->first = t->prev = counts_now(t, v);
			t->next_ns = now + t->interval_ns;
		}
	}
	for (int c; (c = term_key()) >= 0;)
		if (c == 'q' || c == 'Q')
			t->asked = t->quit = 1;
	if (v->final || now >= t->next_ns) {
		take_view(t, v);
		draw(t);
		t->next_ns += t->interval_ns;
		if (t->next_ns <= now)
			t->next_ns = now + t->interval_ns;
	} else if (term_redraw_due() && t->have_view) {
		draw(t);
	}
	if (term_broken_pipe())
		t->asked = 1;
	return t->asked;
}

/* What the view's first line calls the run: CMD's name and arguments, or
 * the processes. */
static void make_title(struct top *t, const struct flags_result *fr, const char *pids)
{
	if (pids) {
		snprintf(t->title, sizeof t->title, "-p %s", pids);
		return;
	}
	const char *base = strrchr(fr->operands[0], '/');
	size_t used = (size_t)snprintf(t->title, sizeof t->title, "%s", base ? base + 1 : fr->operands[0]);
	for (size_t i = 1; i < fr->noperands && used < sizeof t->title; i++)
		used += (size_t)snprintf(t->title + used, sizeof t->title - used, " %s", fr->operands[i]);
}

/* Flags that do not go together: 0, or -1 after saying which. */
static int check_fit(const struct flag_value *v, size_t noperands)
{
	if (v[T_PID].set && noperands)
		flags_refuse(&top_cmd, "-p and a command: give one or the other");
	else if (!v[T_PID].set && !noperands)
		flags_refuse(&top_cmd, "no command given (or -p PID)");
	else if (v[T_DURATION].set && !v[T_PID].set)
		flags_refuse(&top_cmd, "-d/--duration goes with -p: a command is watched until it ends");
	else if (v[T_PID].set && v[T_GRACE].set)
		flags_refuse(&top_cmd, "--grace is the time CMD has to end once top passes it a signal; -p "
			     "sends its processes none: it does not apply");
	else
		return 0;
	return -1;
}

int cmd_top(int argc, char **argv)
{
	struct flags_result fr;
	int rc = flags_parse(&top_cmd, argc, argv, &fr);
	if (rc == 0 && check_fit(fr.v, fr.noperands) < 0)
		rc = -1;
	if (rc != 0) {
		flags_free(&top_cmd, &fr);
		return rc == FLAGS_HELP ? 0 : EXIT_USAGE;
	}
	const struct flag_value *v = fr.v;
	struct top t = {
		.interval_ns = (int64_t)(v[T_INTERVAL].x * 1e9 + 0.5),
		.max_rows = (int)v[T_ROWS].n,
		.tty = isatty(STDOUT_FILENO),
		.attached = v[T_PID].set,
		.tally = tally_new(),
		.procs = { .size = sizeof(struct proc_cpu), .key_of = proc_key },
	};
	if (!t.tally) {
		fprintf(stderr, "cpuprof top: out of memory\n");
		flags_free(&top_cmd, &fr);
		return EXIT_USAGE;
	}
	make_title(&t, &fr, v[T_PID].text);
	t.first = t.prev = (struct counts){ .mono_ns = mono_ns(), .own_ns = own_cpu_ns() };
	t.next_ns = t.first.mono_ns + t.interval_ns;
	struct record_live l = {
		.cmd = v[T_PID].set ? NULL : fr.operands,
		.pids = v[T_PID].text,
		.hz = v[T_HZ],
		.depth = v[T_DEPTH],
		.unwind = v[T_UNWIND],
		.grace = v[T_GRACE].n,
		.duration = v[T_DURATION].set ? v[T_DURATION].n : 0,
		.pass = on_pass,
		.arg = &t,
	};
	term_setup();
	/* A view goes out in one write: a terminal never shows half of it. */
	static char out[1 << 16];
	setvbuf(stdout, out, _IOFBF, sizeof out);
	if (t.tty) {
		fputs("\033[H\033[2Jcpuprof top: starting\n", stdout);
		fflush(stdout);
	}
	rc = record_live_run(&l);
	term_restore();
	cp_table_free(&t.procs);
	tally_free(t.tally);
	flags_free(&top_cmd, &fr);
	return rc;
}
