#!/usr/bin/perl
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mutation table (mutations.txt) for run.sh:
#   apply.pl TABLE list            ID<TAB>FILE<TAB>EXPECT<TAB>WHAT per mutation
#   apply.pl TABLE apply ID ROOT   apply mutation ID to ROOT/FILE; exit 3 if
#                                  a substitution matches other than once
use strict;
use warnings;

my ($table, $cmd, $id, $root) = @ARGV;
die "usage: apply.pl TABLE list | apply.pl TABLE apply ID ROOT\n"
    unless $table && $cmd && ($cmd eq 'list' || ($cmd eq 'apply' && $id && $root));

my (@order, %m, $cur);
open(my $t, '<', $table) or die "$table: $!\n";
while (my $line = <$t>) {
	chomp $line;
	next if $line =~ /^\s*(#|$)/;
	if ($line =~ /^\[(\S+)\]\s+(\S+)\s*$/) {
		$cur = $1;
		die "$table:$.: mutation $cur twice\n" if $m{$cur};
		push @order, $cur;
		$m{$cur} = { file => $2, what => '', expect => '*', subs => [] };
	} elsif (!defined $cur) {
		die "$table:$.: text before the first [ID] FILE line\n";
	} elsif ($line =~ /^what:\s*(.*)$/) {
		$m{$cur}{what} = $1;
	} elsif ($line =~ /^expect:\s*(.*)$/) {
		$m{$cur}{expect} = $1;
	} elsif ($line =~ /^s\{/) {
		die "$table:$.: substitution without /g (needed to count)\n"
		    unless $line =~ /\}[a-z]*g[a-z]*$/;
		push @{$m{$cur}{subs}}, $line;
	} else {
		die "$table:$.: cannot parse: $line\n";
	}
}
close($t);

if ($cmd eq 'list') {
	print join("\t", $_, $m{$_}{file}, $m{$_}{expect}, $m{$_}{what}), "\n"
	    for @order;
	exit 0;
}

my $mu = $m{$id} or die "no mutation $id in $table\n";
my $path = "$root/$mu->{file}";
open(my $in, '<', $path) or die "$path: $!\n";
my $src = do { local $/; <$in> };
close($in);
my $n = 0;
for my $s (@{$mu->{subs}}) {
	$n++;
	my $count = eval "\$src =~ $s";
	die "mutation $id, substitution $n: $@" if $@;
	$count ||= 0;
	if ($count != 1) {
		print STDERR "mutation $id no longer applies: substitution $n "
		    . "matches $count times in $mu->{file}:\n  $s\n";
		exit 3;
	}
}
open(my $out, '>', $path) or die "$path: $!\n";
print $out $src;
close($out) or die "$path: $!\n";
exit 0;
