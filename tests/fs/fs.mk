# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-filesystems (root): make ext4, xfs and btrfs loop images,
# an overlayfs, a fuse-overlayfs and a bindfs, and run the protocol and
# interop tests, the short torture and a pidlock(1) mix on each.  One
# that cannot be made is skipped with its reason.  See tests/fs/README.
#   FS_LIST         the file systems (default: all six; also
#                   bindfs-hardremove bindfs-lockfwd fuse-nameino)
#   FS_MIX_SECONDS  the mix's length (8), FS_MIX_PROCS its size (4)
#   FS_PARTS        any of: probe tests torture mix (default: all)
EXTRA_PROGRAMS = tests/fs/fsprobe
tests_fs_fsprobe_SOURCES = tests/fs/fsprobe.c
CLEANFILES += tests/fs/fsprobe
# A FUSE fixture, built only where libfuse3's headers are (libfuse3-dev).
FS_FUSE_CFLAGS = `pkg-config --cflags fuse3 2>/dev/null`
FS_FUSE_LIBS = `pkg-config --libs fuse3 2>/dev/null`
tests/fs/fuse-nameino: $(srcdir)/tests/fs/fuse-nameino.c
	$(AM_V_at)if pkg-config --exists fuse3 2>/dev/null; then \
	  $(MKDIR_P) tests/fs && \
	  $(CC) $(CFLAGS) -Wall $(FS_FUSE_CFLAGS) -o $@ \
	    $(srcdir)/tests/fs/fuse-nameino.c $(FS_FUSE_LIBS); \
	else echo "tests/fs/fuse-nameino: no libfuse3-dev, not built"; fi
CLEANFILES += tests/fs/fuse-nameino
EXTRA_DIST += tests/fs/fuse-nameino.c
EXTRA_DIST += tests/fs/run.sh tests/fs/README

FS_LIST =
.PHONY: check-filesystems
check-filesystems: all tests/fs/fsprobe tests/fs/fuse-nameino $(check_PROGRAMS)
	$(AM_V_at)srcdir='$(srcdir)' WITH_LOCK_EX='$(WITH_LOCK_EX)' \
	  FLOCK='$(FLOCK)' $(SHELL) $(srcdir)/tests/fs/run.sh $(FS_LIST); \
	  rc=$$?; if [ $$rc -eq 77 ]; then \
	    echo "check-filesystems: no file system could be made (skipped)"; \
	    rc=0; fi; exit $$rc
