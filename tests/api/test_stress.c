/*
 * test_stress.c -- profiles started, stopped, flushed and streamed from
 * several threads at once, for STRESS_SECONDS (default 10; `make stress`
 * runs a minute, `make tsan` runs this under ThreadSanitizer), with every
 * engine, while other threads are born and die burning CPU.  Every call returns one of
 * its documented codes; every stream that starts ends with CPUPROF_EOF
 * and obeys the record format (header first, whole records); every file
 * written is a whole gzip file; and afterwards a plain profile still
 * works and finds the hot function.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(stress_hot)
DEFINE_BURNER(stress_churn)

#define ACTORS 3
#define CAP 4096

static char dir[] = "/tmp/cpuprof-stress-XXXXXX";
static _Atomic int quit;
static _Atomic long files_done, streams_done, stops_other, busy, stray_reads;
/* Each profile samples with one of these, the signal engines' handlers
 * racing the stops as the perf engines' keeper does. */
static const char *const engines[] = { "auto", "timer", "itimer" };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned next_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* The whole time: the itimer engine's signal may cut a sleep short (a
 * process-wide timer whose tick finds a thread being born or dying, which
 * blocks signals, is handed to any other thread, a sleeping one too). */
static void sleep_ms(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* A stop from any thread: 0, or -ESRCH when another got there first. */
static void stop_any(void)
{
	int rc = cpuprof_stop();
	CHECK(rc == 0 || rc == -ESRCH, "stop: %s", cpuprof_strerror(rc));
}

/* Reads a stream to its end, checking every record, and stops the
 * profile itself (unless another thread does) after `ms`. */
static void read_stream_to_eof(unsigned ms)
{
	static _Thread_local uint64_t buf[CAP];
	double stop_at = now_s() + ms / 1e3, give_up = 0;
	int header = 0, stopped = 0;
	for (;;) {
		size_t n;
		int rc = cpuprof_read_stream(buf, CAP, &n, CPUPROF_NONBLOCK);
		if (rc == CPUPROF_EOF)
			break;
		/* Another actor's stream may have ended and a new one begun
		 * (-EINVAL never: CAP is large enough for any depth). */
		CHECK(rc == 0, "read: %s", cpuprof_strerror(rc));
		for (size_t i = 0; i < n;) {
			if (!header && buf[i] == 3 && n - i >= 3 && buf[i + 1] == 0) {
				header = 1;
				i += 3;
				continue;
			}
			CHECK(buf[i] >= 3 && buf[i] <= n - i, "record of %llu words with %zu left",
			      (unsigned long long)buf[i], n - i);
			i += buf[i];
		}
		if (!stopped && now_s() >= stop_at) {
			stop_any();
			stopped = 1;
			give_up = now_s() + 30;
		}
		CHECK(!stopped || now_s() < give_up, "no end of stream 30 s after the stop");
		if (n == 0)
			sleep_ms(1);
	}
	atomic_fetch_add(&streams_done, 1);
}

static int whole_gzip(const char *path)
{
	unsigned char b[2] = { 0 };
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, 2);
	off_t end = lseek(fd, 0, SEEK_END);
	close(fd);
	return n == 2 && b[0] == 0x1f && b[1] == 0x8b && end > 20;
}

static void *actor(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = id * 7919u + 1;
	char path[600];
	while (!atomic_load(&quit)) {
		unsigned op = next_rand(&seed) % 8, ms = next_rand(&seed) % 30;
		struct cpuprof_options opts = { .hz = 2000, .engine = engines[next_rand(&seed) % 3] };
		snprintf(path, sizeof path, "%s/actor%u.pb.gz", dir, id);
		int rc;
		switch (op) {
		case 0: case 1: case 2: /* a file profile */
			rc = cpuprof_start(path, &opts);
			if (rc == -EBUSY) {
				atomic_fetch_add(&busy, 1);
				break;
			}
			CHECK(rc == 0, "start: %s", cpuprof_strerror(rc));
			sleep_ms(ms);
			if (op == 2) {
				rc = cpuprof_flush();
				/* another actor may have stopped it, and even
				 * started a stream */
				CHECK(rc == 0 || rc == -ESRCH || rc == -EINVAL, "flush: %s", cpuprof_strerror(rc));
			}
			rc = cpuprof_stop();
			CHECK(rc == 0 || rc == -ESRCH, "stop: %s", cpuprof_strerror(rc));
			if (rc == -ESRCH)
				atomic_fetch_add(&stops_other, 1);
			atomic_fetch_add(&files_done, 1);
			break;
		case 3: case 4: /* a stream, with or without a file */
			rc = cpuprof_start_stream(op == 3 ? path : NULL, &opts);
			if (rc == -EBUSY) {
				atomic_fetch_add(&busy, 1);
				break;
			}
			CHECK(rc == 0, "start_stream: %s", cpuprof_strerror(rc));
			read_stream_to_eof(ms);
			break;
		case 5: /* a stop or a flush out of the blue */
			rc = (ms & 1) ? cpuprof_stop() : cpuprof_flush();
			CHECK(rc == 0 || rc == -ESRCH || rc == -EINVAL, "stop/flush: %s", cpuprof_strerror(rc));
			break;
		default: /* a read of whatever stream there is */
			{
				uint64_t w[CAP];
				size_t n;
				rc = cpuprof_read_stream(w, CAP, &n, CPUPROF_NONBLOCK);
				CHECK(rc == 0 || rc == CPUPROF_EOF, "stray read: %s", cpuprof_strerror(rc));
				atomic_fetch_add(&stray_reads, 1);
			}
			break;
		}
		if (rc == 0 && op <= 3)
			CHECK(access(path, F_OK) != 0 || whole_gzip(path), "%s is not a whole gzip file", path);
	}
	return NULL;
}

int main(void)
{
	require_pprof();
	CHECK(mkdtemp(dir), "mkdtemp");
	const char *e = getenv("STRESS_SECONDS");
	double seconds = e ? atof(e) : 10;

	pthread_t a[ACTORS];
	struct churn c;
	churn_start(&c, stress_churn, 1, NULL);
	for (unsigned i = 0; i < ACTORS; i++)
		CHECK_EQ(pthread_create(&a[i], NULL, actor, (void *)(uintptr_t)i), 0);
	sleep_ms((unsigned)(seconds * 1000));
	atomic_store(&quit, 1);
	for (unsigned i = 0; i < ACTORS; i++)
		pthread_join(a[i], NULL);
	churn_stop(&c);
	/* An actor may have left a profile running (a stray stop raced its
	 * own): stop it, and read a stream left open to its end. */
	cpuprof_stop();
	uint64_t w[CAP];
	size_t n;
	while (cpuprof_read_stream(w, CAP, &n, CPUPROF_NONBLOCK) == 0)
		;
	fprintf(stderr, "%.0f s: %ld file profiles (%ld stopped by another thread), %ld streams, %ld starts refused "
		"as busy, %ld stray reads\n",
		seconds, atomic_load(&files_done), atomic_load(&stops_other), atomic_load(&streams_done),
		atomic_load(&busy), atomic_load(&stray_reads));
	CHECK(atomic_load(&files_done) >= 3 && atomic_load(&streams_done) >= 3, "too few profiles to have tested much");

	/* What is left works as on the first day. */
	char path[600], name[256];
	snprintf(path, sizeof path, "%s/after.pb.gz", dir);
	CHECK_EQ(cpuprof_start(path, &(struct cpuprof_options){ .hz = 1000 }), 0);
	stress_hot(300);
	CHECK_EQ(cpuprof_stop(), 0);
	CHECK(pprof_top_row(path, 0, name, sizeof name) == 0, "no top function in %s", path);
	CHECK(strcmp(name, "stress_hot") == 0, "top function %s, want stress_hot", name);

	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
	return 0;
}
