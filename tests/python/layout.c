/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layout of struct pidlock_info as the C compiler makes it: one
 * "name offset size" line per field and "sizeof 0 N" for the whole, which
 * tests/python/test_layout.py compares with the ctypes Structure.
 */
#include <stddef.h>
#include <stdio.h>

#include "pidlock.h"

#define FIELD(f) \
	printf("%s %zu %zu\n", #f, offsetof(struct pidlock_info, f), \
	       sizeof(((struct pidlock_info *)NULL)->f))

int main(void)
{
	FIELD(state);
	FIELD(pid);
	FIELD(pid_alive);
	FIELD(has_timestamp);
	FIELD(timestamp);
	FIELD(kernel_locks);
	FIELD(marker);
	FIELD(kernel_pid);
	FIELD(mtime);
	FIELD(error);
	FIELD(tag);
	FIELD(holder_hidden);
	FIELD(foreign);
	FIELD(reserved);
	printf("sizeof 0 %zu\n", sizeof(struct pidlock_info));
	return fflush(stdout) == 0 ? 0 : 1;
}
