# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-filesystems (root): make ext4, xfs and btrfs loop images,
# an overlayfs, a fuse-overlayfs and a bindfs, and run the protocol and
# interop tests, the short torture and a pidlock(1) mix on each.  One
# that cannot be made is skipped with its reason.  See tests/fs/README.
#   FS_LIST         the file systems (default: all six)
#   FS_MIX_SECONDS  the mix's length (8), FS_MIX_PROCS its size (4)
#   FS_PARTS        any of: probe tests torture mix (default: all)
EXTRA_PROGRAMS = tests/fs/fsprobe
tests_fs_fsprobe_SOURCES = tests/fs/fsprobe.c
CLEANFILES += tests/fs/fsprobe
EXTRA_DIST += tests/fs/run.sh tests/fs/README

FS_LIST =
.PHONY: check-filesystems
check-filesystems: all tests/fs/fsprobe $(check_PROGRAMS)
	$(AM_V_at)srcdir='$(srcdir)' WITH_LOCK_EX='$(WITH_LOCK_EX)' \
	  FLOCK='$(FLOCK)' $(SHELL) $(srcdir)/tests/fs/run.sh $(FS_LIST); \
	  rc=$$?; if [ $$rc -eq 77 ]; then \
	    echo "check-filesystems: no file system could be made (skipped)"; \
	    rc=0; fi; exit $$rc
