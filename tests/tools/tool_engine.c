/*
 * tool_engine.c -- tells the test scripts whether this machine allows a
 * sampling engine, by check.h's engine_unavailable(), which decides without
 * cpuprof (a plain perf_event_open, a PMU that counts): exits 0 if ENGINE
 * must work here, 1 with the reason on stdout if it cannot.  Built for the
 * build's CPU and run as its programs are ($EMU tool_engine), so that it
 * sees what they see.
 *
 * Usage: tool_engine ENGINE
 */
#include "../check.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: tool_engine ENGINE\n");
		return 2;
	}
	const char *why = engine_unavailable(argv[1]);
	if (why) {
		printf("%s\n", why);
		return 1;
	}
	return 0;
}
