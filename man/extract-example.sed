# Print the first .EX/.EE block of the EXAMPLES section of a man(7)
# page as plain C, undoing the roff escapes the pages use.
/^\.SH EXAMPLES/,/^\.SH SEE ALSO/!d
/^\.EX/,/^\.EE/!d
/^\.EE/q
/^\.EX/d
s/\\e/\\/g
s/\\-/-/g
s/\\&//g
p
