/*
 * lib_versioned.c -- a shared library whose function `versioned` has two
 * symbol versions (VERS_1 and the default VERS_2, see lib_versioned.map),
 * so that its .symtab names them "versioned@VERS_1" and
 * "versioned@@VERS_2", as libc's do: unit_pprof checks that profiles name
 * them without the version.
 */
static volatile int sink;

int base_v1(int x)
{
	for (int i = 0; i < x; i++)
		sink += i;
	return sink;
}

int base_v2(int x)
{
	for (int i = 0; i < x; i++)
		sink ^= i;
	return sink;
}

__asm__(".symver base_v1, versioned@VERS_1");
__asm__(".symver base_v2, versioned@@VERS_2");

/* Their addresses, for the test (base_v1 and base_v2 stay local: see the
 * version script). */
int (*const keep_versioned[])(int) __attribute__((used)) = { base_v1, base_v2 };
