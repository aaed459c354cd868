/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pidlock(1): run a command under a lock file, or inspect lock files. */
#include "config.h"

#include <sysexits.h>

#include "cli.h"

int main(int argc, char **argv)
{
	struct opts o;
	int r;

	/* getopt_long names the program by argv[0]; installed or run from the
	 * build tree, the messages say "pidlock". */
	argv[0] = program_name;
	if (open_std_fds() < 0)
		return EX_OSERR;
	r = parse_options(argc, argv, &o);

	if (r < 0)
		return -r;
	if (r > 0)
		return finish_stdout();
	switch (o.mode) {
	case MODE_STATUS:
		return cmd_status(&o);
	case MODE_LIST:
		return cmd_list(&o);
	case MODE_REMOVE:
		return cmd_remove(&o);
	case MODE_FD:
		return cmd_fd(&o);
	case MODE_UNLOCK:
		return cmd_unlock(&o);
	case MODE_SIGNAL:
		return cmd_signal(&o);
	case MODE_STOP:
		return cmd_stop(&o);
	case MODE_WAIT_FREE:
		return cmd_wait_free(&o);
	case MODE_RUN:
		break;
	}
	return cmd_run(&o);
}
