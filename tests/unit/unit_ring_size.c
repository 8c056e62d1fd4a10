/*
 * unit_ring_size.c -- the sample ring is sized by the rate (issue 32): at
 * every rate it holds RING_WINDOW_MS (50 ms) of samples at that rate on
 * every CPU (a CPU clock fires at most HZ times a CPU-second, however many
 * threads share the CPU), up to 2048 cells, and no more than twice that or
 * 256 cells, whichever is more: at 100 Hz on a machine of fewer than 20
 * CPUs, 256 cells (280 KiB), where every profile had 2048 (2.2 MiB).  A
 * record stream, drained only when its reader reads, keeps 2048.
 */
#include <stdio.h>
#include <unistd.h>

#include "../check.h"
#include "cpuprof.h"
#include "sig/sigstate.h"

#define MOST 2048

static size_t cells_at(int hz, int stream)
{
	char dir[] = "/tmp/cpuprof-test-XXXXXX", path[600];
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof path, "%s/ring.pb.gz", dir);
	struct cpuprof_options o = { .engine = "timer", .hz = hz };
	CHECK_EQ(stream ? cpuprof_start_stream(NULL, &o) : cpuprof_start(path, &o), 0);
	size_t cells = cp_sig.ring->cells;
	CHECK_EQ(cpuprof_stop(), 0);
	if (stream) {
		uint64_t w[4096];
		size_t n;
		while (cpuprof_read_stream(w, 4096, &n, 0) == 0)
			;
	}
	unlink(path);
	rmdir(dir);
	return cells;
}

int main(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		cpus = 1;
	static const int rates[] = { 100, 1000, 10000 };
	for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
		size_t need = (size_t)rates[i] * (size_t)cpus * 50 / 1000, cells = cells_at(rates[i], 0);
		printf("%d Hz on %ld CPUs: %zu cells (50 ms of samples: %zu)\n", rates[i], cpus, cells, need);
		CHECK(cells >= (need < MOST ? need : MOST), "%zu cells hold less than 50 ms at %d Hz on %ld CPUs",
		      cells, rates[i], cpus);
		CHECK(cells <= (2 * need > 256 ? 2 * need : 256), "%zu cells at %d Hz on %ld CPUs: more than needed",
		      cells, rates[i], cpus);
	}
	CHECK_EQ(cells_at(100, 1), MOST);
	return 0;
}
