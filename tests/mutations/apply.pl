#!/usr/bin/perl
# SPDX-License-Identifier: LGPL-2.1-or-later
# The mutation table (mutations.txt) for run.sh:
#   apply.pl TABLE list            ID<TAB>FILE<TAB>EXPECT<TAB>WHAT per mutation
#   apply.pl TABLE apply ID ROOT   apply mutation ID to ROOT/FILE; exit 3 if
#                                  a substitution matches other than once
#   apply.pl TABLE verify ROOT     apply every mutation in memory only; exit 1
#                                  if one no longer applies (a mutation that
#                                  changes nothing proves nothing)
use strict;
use warnings;

my ($table, $cmd, $id, $root) = @ARGV;
$root = $id if $cmd && $cmd eq 'verify';
die "usage: apply.pl TABLE list | apply ID ROOT | verify ROOT\n"
    unless $table && $cmd && ($cmd eq 'list' ||
	($cmd eq 'apply' && $id && $root) || ($cmd eq 'verify' && $root));

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
	my $bad = 0;
	for my $v (@order) {
		my ($src, $why) = mutated($v, $root);
		next if defined $src;
		print STDERR "mutation $v no longer applies: $why\n";
		$bad++;
	}
	print scalar(@order) - $bad, " of ", scalar(@order),
	    " mutations apply\n";
	exit($bad ? 1 : 0);
}

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
