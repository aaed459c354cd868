# SPDX-License-Identifier: LGPL-2.1-or-later
# Packaging, ABI guard and portability builds; included by Makefile.am.
#
#   make update-symbols   regenerate debian/libpidlock<N>.symbols from
#                         lib/libpidlock.sym (make check compares them)
#   make check-symbols    just that comparison (also part of make check)
#   make abi-baseline     record the ABI of the built library in abi/
#                         (on release; see README.md, "Stability")
#   make check-abi        fail on an incompatible change against abi/
#   make check-musl       build and test the release tree with musl-gcc
#   make check-clang      build and test it with clang -Weverything
#   make deb              build the Debian packages from the release tarball
#   make check-packages   ... then lint, install, use and remove them
#                         (root; the scripts in ci/ say what they need)

PKG_DEBIAN_FILES = \
	debian/.gitignore \
	debian/changelog \
	debian/control \
	debian/copyright \
	debian/rules \
	debian/source/format \
	debian/libpidlock0.lintian-overrides \
	debian/libpidlock-dev.lintian-overrides \
	debian/pidlock.lintian-overrides \
	debian/libpidlock0.install \
	debian/libpidlock0.symbols \
	debian/libpidlock-dev.docs \
	debian/libpidlock-dev.examples \
	debian/libpidlock-dev.install \
	debian/pidlock.install \
	debian/tests/control \
	debian/tests/build-smoke

EXTRA_DIST += \
	$(PKG_DEBIAN_FILES) \
	abi/abi.sh \
	abi/constants.txt \
	abi/gen-symbols.sh \
	abi/libpidlock.abi \
	abi/test-symbols.sh \
	ci/packages.sh \
	ci/portability.sh \
	ci/smoke.c

TESTS += abi/test-symbols.sh

# The soname's number, as libtool makes it from -version-info on Linux.
PKG_SOVERSION = $$(( $(LT_CURRENT) - $(LT_AGE) ))
PKG_SHLIB = lib/.libs/libpidlock.so

.PHONY: update-symbols check-symbols abi-baseline check-abi \
	check-musl check-clang deb check-packages

update-symbols: lib/libpidlock.la
	$(AM_V_GEN)n=$(PKG_SOVERSION); \
	out=$(srcdir)/debian/libpidlock$$n.symbols; \
	$(SHELL) $(srcdir)/abi/gen-symbols.sh $(srcdir)/lib/libpidlock.sym \
		libpidlock.so.$$n libpidlock$$n >$$out.tmp && \
	mv $$out.tmp $$out && echo "wrote $$out"

check-symbols: lib/libpidlock.la
	$(AM_V_at)srcdir=$(srcdir) $(SHELL) $(srcdir)/abi/test-symbols.sh

abi-baseline: lib/libpidlock.la
	$(AM_V_at)$(SHELL) $(srcdir)/abi/abi.sh baseline $(PKG_SHLIB) \
		$(srcdir)/include $(srcdir)/abi

check-abi: lib/libpidlock.la
	$(AM_V_at)$(SHELL) $(srcdir)/abi/abi.sh check $(srcdir)/abi \
		$(PKG_SHLIB) $(srcdir)/include

check-musl check-clang:
	$(AM_V_at)MAKE="$(MAKE)" $(SHELL) $(srcdir)/ci/portability.sh $(@:check-%=%)

deb:
	$(AM_V_at)MAKE="$(MAKE)" $(SHELL) $(srcdir)/ci/packages.sh --build-only

check-packages:
	$(AM_V_at)MAKE="$(MAKE)" $(SHELL) $(srcdir)/ci/packages.sh
