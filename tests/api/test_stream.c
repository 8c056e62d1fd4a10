/*
 * test_stream.c -- the record stream of a real profiled program, decoded
 * by the rules runtime/pprof's reader follows (header first; every record
 * at least 3 words and no longer than what is left; a record with count 0
 * and one word of stack is a lost-sample count), agrees with the pprof
 * file written from the same samples; end of stream comes only after stop
 * and a full drain, and no new profile starts before it: neither a file
 * nor a stream, however long the reader takes.  Where the profile's engine
 * fires above the tick (perf, which `auto` takes where the machine allows
 * it), each sample stands for about one period: a stream of half as many
 * samples as periods fails.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"

DEFINE_BURNER(stream_hot)
DEFINE_BURNER(stream_warm)

#define CAP 4096

struct decoded {
	uint64_t hz, samples, counts, lost, hot, warm, records;
};

static struct decoded dec;
static int header_seen, eof_seen;

/* Applies runtime/pprof's rules to one read's words. */
static void decode(const uint64_t *w, size_t n)
{
	while (n > 0) {
		if (!header_seen) {
			CHECK(n >= 3 && w[0] == 3 && w[1] == 0 && w[2] > 0, "stream does not open with {3, 0, hz}");
			dec.hz = w[2];
			header_seen = 1;
			w += 3;
			n -= 3;
			continue;
		}
		CHECK(n >= 3 && w[0] >= 3 && w[0] <= n, "truncated or malformed record (len %llu, %zu left)",
		      (unsigned long long)w[0], n);
		uint64_t count = w[2];
		const uint64_t *stk = w + 3;
		size_t nstk = w[0] - 3;
		if (count == 0 && nstk == 1) {
			dec.lost += stk[0];
		} else {
			CHECK(nstk >= 1, "a sample with no stack");
			dec.samples++;
			dec.counts += count;
			Dl_info di;
			if (dladdr((void *)stk[0], &di) && di.dli_sname) {
				if (!strcmp(di.dli_sname, "stream_hot"))
					dec.hot += count;
				else if (!strcmp(di.dli_sname, "stream_warm"))
					dec.warm += count;
			}
		}
		dec.records++;
		n -= w[0];
		w += w[0];
	}
}

static void *reader(void *arg)
{
	static uint64_t buf[CAP];
	for (;;) {
		size_t n;
		int rc = cpuprof_read_stream(buf, CAP, &n, 0);
		CHECK(rc >= 0, "read: %s", cpuprof_strerror(rc));
		if (rc == CPUPROF_EOF) {
			eof_seen = 1;
			return NULL;
		}
		CHECK(n > 0, "a blocking read returned nothing");
		decode(buf, n);
	}
}

static void *worker(void *arg)
{
	stream_hot(300);
	stream_warm(100);
	return NULL;
}

int main(void)
{
	require_pprof();
	char dir[] = "/tmp/cpuprof-test-XXXXXX", path[600], val[64];
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof path, "%s/stream.pb.gz", dir);

	uint64_t small[8];
	size_t n;
	CHECK_EQ(cpuprof_read_stream(small, 8, &n, CPUPROF_NONBLOCK), CPUPROF_EOF); /* no stream */

	struct cpuprof_options o = { .hz = 1000 };
	CHECK_EQ(cpuprof_start_stream(path, &o), 0);
	CHECK_EQ(cpuprof_start(path, &o), -EBUSY);
	CHECK_EQ(cpuprof_read_stream(small, 8, &n, CPUPROF_NONBLOCK), -EINVAL);
	CHECK_EQ(cpuprof_flush(), -EINVAL);

	pthread_t r, w[2];
	CHECK_EQ(pthread_create(&r, NULL, reader, NULL), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&w[i], NULL, worker, NULL), 0);
	stream_hot(300);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	CHECK(!eof_seen, "end of stream before stop");
	CHECK_EQ(cpuprof_stop(), 0);
	pthread_join(r, NULL);
	CHECK(eof_seen, "no end of stream");
	CHECK_EQ(cpuprof_read_stream(small, 8, &n, CPUPROF_NONBLOCK), CPUPROF_EOF);

	CHECK_EQ(dec.hz, 1000);
	CHECK(dec.samples > 100, "only %llu samples", (unsigned long long)dec.samples);
	char engine[64];
	CHECK(pprof_comment(path, "engine", engine, sizeof engine) == 0, "no engine comment");
	CHECK(engine_unavailable("perf") || !strcmp(engine, "perf"), "auto took %s where perf works", engine);
	if (!strcmp(engine, "perf") || !strcmp(engine, "hw"))
		CHECK(dec.samples * 100 >= dec.counts * 85, "%s: %llu samples for %llu periods of CPU", engine,
		      (unsigned long long)dec.samples, (unsigned long long)dec.counts);
	CHECK(dec.hot > 2 * dec.warm, "hot %llu, warm %llu periods", (unsigned long long)dec.hot,
	      (unsigned long long)dec.warm);

	/* The file written from the same samples: same CPU total (the stream
	 * counts whole periods, carrying fractions: at most one period apart)
	 * and the same losses.  The file also has the CPU no sample saw,
	 * which the stream, made of samples, cannot carry. */
	CHECK(pprof_comment(path, "lost", val, sizeof val) == 0, "no lost comment");
	CHECK_EQ(strtoull(val, NULL, 10), dec.lost);
	CHECK(pprof_comment(path, "profile_cpu_ns", val, sizeof val) == 0, "no cpu comment");
	uint64_t file_ns = strtoull(val, NULL, 10), stream_ns = dec.counts * (1000000000 / dec.hz);
	CHECK(pprof_comment(path, "unsampled_cpu_ns", val, sizeof val) == 0, "no unsampled_cpu_ns comment");
	file_ns -= strtoull(val, NULL, 10);
	CHECK(pprof_comment(path, "profiler_cpu_ns", val, sizeof val) == 0, "no profiler_cpu_ns comment");
	file_ns -= strtoull(val, NULL, 10); /* cpuprof's own thread: not in the stream either */
	CHECK(dec.lost > 0 || (file_ns >= stream_ns && file_ns - stream_ns < 1000000000 / dec.hz),
	      "file %llu ns, stream %llu ns", (unsigned long long)file_ns, (unsigned long long)stream_ns);
	char name[256];
	CHECK(pprof_top_row(path, 0, name, sizeof name) == 0 && !strcmp(name, "stream_hot"), "file leads with %s",
	      name);
	fprintf(stderr, "stream: %llu samples, %llu periods, %llu lost; file %llu ns\n",
		(unsigned long long)dec.samples, (unsigned long long)dec.counts, (unsigned long long)dec.lost,
		(unsigned long long)file_ns);

	/* A stream stopped but not read to its end: no profile may start,
	 * of either kind, until it is. */
	struct cpuprof_options quick = { .hz = 1000 };
	CHECK_EQ(cpuprof_start_stream(NULL, &quick), 0);
	stream_warm(30);
	CHECK_EQ(cpuprof_stop(), 0);
	snprintf(path, sizeof path, "%s/early.pb.gz", dir);
	CHECK_EQ(cpuprof_start(path, &quick), -EBUSY);
	CHECK_EQ(cpuprof_start_stream(NULL, &quick), -EBUSY);
	CHECK_EQ(cpuprof_stop(), -ESRCH);
	CHECK(access(path, F_OK) != 0, "a refused start wrote %s", path);
	static uint64_t rest[CAP];
	int rc;
	while ((rc = cpuprof_read_stream(rest, CAP, &n, CPUPROF_NONBLOCK)) == 0)
		;
	CHECK_EQ(rc, CPUPROF_EOF);

	/* The next profile starts clean. */
	snprintf(path, sizeof path, "%s/next.pb.gz", dir);
	CHECK_EQ(cpuprof_start(path, &o), 0);
	stream_warm(50);
	CHECK_EQ(cpuprof_stop(), 0);
	char *top = pprof_run("-top", path);
	CHECK(top && !strstr(top, "stream_hot"), "a sample of the stream reached the next profile");
	free(top);

	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) != 0;
}
