#!/usr/bin/perl
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mutation table (mutations.txt) for run.sh and sample.sh:
#   apply.pl TABLE list            ID<TAB>FILE<TAB>EXPECT<TAB>WHAT per mutation
#   apply.pl TABLE apply ID ROOT   apply mutation ID to ROOT/FILE; exit 3 if
#                                  a substitution matches other than once
#   apply.pl TABLE verify ROOT     apply every mutation in memory only, and
#                                  resolve its expect: line; exit 1 if one
#                                  no longer applies (a mutation that
#                                  changes nothing proves nothing) or names
#                                  a test that is not there
#   apply.pl TABLE tests ID ROOT   the test programs that ID's expect: line
#                                  names, one a line (below, expect_tests)
#   apply.pl TABLE pick SEED N OLD CHANGED
#                                  the sample of make check-mutations-sample,
#                                  ID<TAB>FILE<TAB>WHY a line (below, pick)
use strict;
use warnings;

my ($table, $cmd, @arg) = @ARGV;
my %nargs = (list => 0, apply => 2, verify => 1, tests => 2, pick => 4);
die "usage: apply.pl TABLE list | apply ID ROOT | verify ROOT"
    . " | tests ID ROOT | pick SEED N OLD CHANGED\n"
    unless $table && $cmd && defined $nargs{$cmd} && @arg == $nargs{$cmd};

# The table at $path: (the IDs in order, ID => { file what expect subs }).
sub parse {
	my ($path) = @_;
	my (@order, %m, $cur);
	open(my $t, '<', $path) or die "$path: $!\n";
	while (my $line = <$t>) {
		chomp $line;
		next if $line =~ /^\s*(#|$)/;
		if ($line =~ /^\[(\S+)\]\s+(\S+)\s*$/) {
			$cur = $1;
			die "$path:$.: mutation $cur twice\n" if $m{$cur};
			push @order, $cur;
			$m{$cur} = { file => $2, what => '', expect => '*',
			    subs => [] };
		} elsif (!defined $cur) {
			die "$path:$.: text before the first [ID] FILE line\n";
		} elsif ($line =~ /^what:\s*(.*)$/) {
			$m{$cur}{what} = $1;
		} elsif ($line =~ /^expect:\s*(.*)$/) {
			$m{$cur}{expect} = $1;
		} elsif ($line =~ /^s\{/) {
			die "$path:$.: substitution without /g (needed to count)\n"
			    unless $line =~ /\}[a-z]*g[a-z]*$/;
			push @{$m{$cur}{subs}}, $line;
		} else {
			die "$path:$.: cannot parse: $line\n";
		}
	}
	close($t);
	return (\@order, \%m);
}

my ($order, $m) = parse($table);
my @order = @$order;
my %m = %$m;

if ($cmd eq 'list') {
	print join("\t", $_, $m{$_}{file}, $m{$_}{expect}, $m{$_}{what}), "\n"
	    for @order;
	exit 0;
}

# The source of mutation $id's file under $root, mutated; on a
# substitution that matches other than once, undef and why in $_[2].
sub mutated {
	my ($id, $root) = @_;
	my $mu = $m{$id};
	my $path = "$root/$mu->{file}";
	open(my $in, '<', $path) or return (undef, "$path: $!");
	my $src = do { local $/; <$in> };
	close($in);
	my $n = 0;
	for my $s (@{$mu->{subs}}) {
		$n++;
		my $count = eval "\$src =~ $s";
		return (undef, "substitution $n: $@") if $@;
		$count ||= 0;
		return (undef, "substitution $n matches $count times in "
		    . "$mu->{file}:\n  $s") if $count != 1;
	}
	return ($src, '');
}

if ($cmd eq 'verify') {
	my ($root) = @arg;
	my $bad = 0;
	for my $v (@order) {
		my ($src, $why) = mutated($v, $root);
		# A guard that names no test is run as the file's default
		# list, which may not be what guards the rule.
		my @lost = grep { /^\?/ } expect_tests($v, $root);
		if (@lost) {
			print STDERR "mutation $v: its expect: line names no ",
			    "test: ", join(' ', map { substr($_, 1) } @lost), "\n";
			$bad++;
		}
		next if defined $src;
		print STDERR "mutation $v no longer applies: $why\n";
		$bad++;
	}
	print scalar(@order) - $bad, " of ", scalar(@order),
	    " mutations apply and name their tests\n";
	exit($bad ? 1 : 0);
}

# The Check tests of the tree under $root: name => program.  A test is a
# START_TEST, or a macro made on it (TU_LOCK_TEST, a suite's ASYNC_TEST
# or REFUSED_TEST: a line that opens with NAME_TEST( or NAME_TEST_MADE(),
# of a .c file under tests/; its program is
# the one whose _SOURCES line in a Makemodule.am names that file.
sub check_tests {
	my ($root) = @_;
	my (%canon_of_src, %prog_of_canon);
	for my $mk (glob("$root/tests/Makemodule.am $root/tests/*/Makemodule.am")) {
		open(my $in, '<', $mk) or die "$mk: $!\n";
		my $text = do { local $/; <$in> };
		close($in);
		$text =~ s/\\\n/ /g;
		for my $line (split /\n/, $text) {
			if ($line =~ /^(\w+)_SOURCES\s*\+?=\s*(.*)$/) {
				my $canon = $1;
				$canon_of_src{$_} //= $canon
				    for grep { /\.c$/ } split ' ', $2;
			}
			for my $w (split ' ', $line) {
				next unless $w =~ m{^tests/[\w/-]+$};
				(my $c = $w) =~ s/[^A-Za-z0-9]/_/g;
				$prog_of_canon{$c} //= $w;
			}
		}
	}
	my %prog;
	for my $f (sort keys %canon_of_src) {
		my $p = $prog_of_canon{$canon_of_src{$f}} or next;
		open(my $in, '<', "$root/$f") or next;
		while (<$in>) {
			$prog{$1} //= $p
			    if /^(?:START_TEST|[A-Z][A-Z_]*_TEST(?:_MADE)?)\((\w+)/;
		}
		close($in);
	}
	# A program built from sources is named by its own name too (an
	# expect: line may say pidlock-daemon-unit for
	# tests/daemon/pidlock-daemon-unit).
	my %built = map { $_ => 1 } values %canon_of_src;
	for my $c (sort keys %prog_of_canon) {
		my $p = $prog_of_canon{$c};
		$prog{$1} //= $p if $built{$c} && $p =~ m{/([\w-]+)$};
	}
	return \%prog;
}

# The programs that $id's expect: line names, for run.sh's
# MUTATION_TESTS=expect:
#   *                       "*" (run.sh: every Check program)
#   NAME.sh                 tests/cli/NAME.sh
#   DIR/NAME.sh, tests/...  that script under tests/ (distributed/run.sh)
#   test-NAME               the program of that name under tests/
#   a Check test            the program of tests/ that defines it
#   a Python test_ function tests/python/run.sh
# A word found nowhere comes out as "?WORD": run.sh then runs what it
# runs for the mutation's file by default, and says so.
sub expect_tests {
	my ($id, $root) = @_;
	my $check = check_tests($root);
	my (@out, %seen);
	for my $w (split ' ', $m{$id}{expect}) {
		my $p;
		if ($w eq '*') {
			$p = '*';
		} elsif ($w =~ m{/}) {
			($p) = grep { -f "$root/$_" } ($w =~ m{^tests/}
			    ? ($w) : ("tests/$w", $w));
		} elsif ($w =~ /\.sh$/) {
			$p = "tests/cli/$w" if -f "$root/tests/cli/$w";
		} elsif ($check->{$w}) {
			$p = $check->{$w};
		} elsif ($w =~ /^test-[\w-]+$/) {
			($p) = map { s{^\Q$root\E/}{}r =~ s/\.c$//r }
			    grep { -f } ("$root/tests/$w.c",
			    glob("$root/tests/*/$w.c"));
		} elsif ($w =~ /^test_\w+$/) {
			for my $py (glob("$root/tests/python/*.py")) {
				open(my $in, '<', $py) or next;
				my $text = do { local $/; <$in> };
				close($in);
				$p = 'tests/python/run.sh', last
				    if $text =~ /^\s*(?:async\s+)?def \Q$w\E\b/m;
			}
		}
		$p //= "?$w";
		push @out, $p unless $seen{$p}++;
	}
	return @out;
}

if ($cmd eq 'tests') {
	my ($id, $root) = @arg;
	die "no mutation $id in $table\n" unless $m{$id};
	print "$_\n" for expect_tests($id, $root);
	exit 0;
}

# make check-mutations-sample's choice, in the order to run:
#  1. "changed": every entry whose FILE is among the paths of the file
#     CHANGED (one a line: what changed since the last release), and
#     every entry that is new or other than in OLD (the table of the
#     release), in an order shuffled by SEED (the time budget may cut
#     the end of the list: the entries cut are then a seeded choice);
#  2. "random": N of the others, shuffled by SEED.
# CHANGED "-" means the release is unknown: then the whole table comes
# out "random", shuffled by SEED, and the budget says how many run.
# SEED is any text (a commit id): its hexadecimal digits, else its
# checksum, seed perl's generator, so one commit picks the same on every
# machine.
if ($cmd eq 'pick') {
	my ($seed, $n, $old, $changed) = @arg;
	die "pick: N must be a number\n" unless $n =~ /^\d+$/;
	my $num = $seed =~ /^([0-9a-f]{1,8})/i ? hex($1)
	    : unpack('%32C*', $seed);
	srand($num);
	my $shuffle = sub {
		my @a = @_;
		for (my $i = $#a; $i > 0; $i--) {
			my $j = int(rand($i + 1));
			@a[$i, $j] = @a[$j, $i];
		}
		return @a;
	};
	my (@changed, @rest);
	if ($changed eq '-') {
		@rest = @order;
		$n = scalar @rest;
	} else {
		my %path;
		open(my $c, '<', $changed) or die "$changed: $!\n";
		while (<$c>) { chomp; $path{$_} = 1 if length; }
		close($c);
		# The release's table; none (a release before it, or
		# unreadable) makes every entry new.
		my %was;
		if (-s $old) {
			my $was = eval { (parse($old))[1] };
			%was = %$was if $was;
		}
		my $same = sub {
			my ($a, $b) = @_;
			return $b && $a->{file} eq $b->{file}
			    && $a->{expect} eq $b->{expect}
			    && join("\n", @{$a->{subs}}) eq join("\n", @{$b->{subs}});
		};
		for my $id (@order) {
			if ($path{$m{$id}{file}} || !$same->($m{$id}, $was{$id})) {
				push @changed, $id;
			} else {
				push @rest, $id;
			}
		}
	}
	@changed = $shuffle->(@changed);
	@rest = $shuffle->(@rest);
	$n = @rest if $n > @rest;
	print "$_\t$m{$_}{file}\tchanged\n" for @changed;
	print "$_\t$m{$_}{file}\trandom\n" for @rest[0 .. $n - 1];
	exit 0;
}

my ($id, $root) = @arg;
die "no mutation $id in $table\n" unless $m{$id};
my ($src, $why) = mutated($id, $root);
unless (defined $src) {
	print STDERR "mutation $id no longer applies: $why\n";
	exit 3;
}
my $path = "$root/$m{$id}{file}";
open(my $out, '>', $path) or die "$path: $!\n";
print $out $src;
close($out) or die "$path: $!\n";
exit 0;
