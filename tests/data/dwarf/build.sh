#!/bin/sh
# Rebuilds the DWARF test inputs in bin/ and pahole's view of them in golden/, and records the
# tool versions in README.md. Run from anywhere: sh tests/data/dwarf/build.sh
#
# Inputs: layouts.c (layout corner cases), dup_a.c + dup_b.c + shared.h (two compile units that
# define `struct dup` differently and share `struct shared_hdr`), classes.cpp (C++).
# Each source is compiled as a relocatable object (-g -O0 -c) by gcc and clang at
# -gdwarf-4 and -gdwarf-5; dup_a.c + dup_b.c are also linked into one executable per
# compiler and DWARF version. A few variants cover compressed sections (-gz), DWARF 4 type
# units (-fdebug-types-section) and an object without debug info.
# Oracle: golden/<output>.pahole.txt is `pahole -F dwarf bin/<output>`.
set -eu
cd "$(dirname "$0")"
rm -rf bin golden
mkdir -p bin golden

CFLAGS="-g -O0 -fno-eliminate-unused-debug-types"
# Relative paths in DW_AT_name and no absolute build directory, so rebuilds are reproducible.
PREFIX="-ffile-prefix-map=$(pwd)=."

for ver in 4 5; do
	for cc in gcc clang; do
		case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
		tag="$cc-dwarf$ver"
		for src in layouts.c dup_a.c dup_b.c; do
			$cc $CFLAGS $PREFIX -gdwarf-$ver -c "$src" -o "bin/${src%.c}-$tag.o"
		done
		$cxx $CFLAGS $PREFIX -gdwarf-$ver -std=c++17 -c classes.cpp -o "bin/classes-$tag.o"
		$cc $CFLAGS $PREFIX -gdwarf-$ver dup_a.c dup_b.c -o "bin/dup-$tag"
	done
done

# Compressed debug sections (SHF_COMPRESSED, zlib).
gcc $CFLAGS $PREFIX -gdwarf-5 -gz=zlib -c layouts.c -o bin/layouts-gcc-dwarf5-gz.o
# DWARF 4 type units in .debug_types, referenced with DW_FORM_ref_sig8.
gcc $CFLAGS $PREFIX -gdwarf-4 -fdebug-types-section -c layouts.c -o bin/layouts-gcc-dwarf4-types.o
# DWARF 5 type units in .debug_info.
clang $CFLAGS $PREFIX -gdwarf-5 -fdebug-types-section -c layouts.c -o bin/layouts-clang-dwarf5-types.o
# No debug information at all: lineup must say so.
gcc -O0 -c dup_a.c -o bin/nodebug.o

for f in bin/*; do
	case $f in */nodebug.o) continue ;; esac
	pahole -F dwarf "$f" > "golden/$(basename "$f").pahole.txt"
done

{
	echo "# DWARF test inputs"
	echo
	echo "Made by \`sh tests/data/dwarf/build.sh\`, which compiles the sources here into \`bin/\` and"
	echo "writes pahole's view of every output to \`golden/<output>.pahole.txt\`"
	echo "(\`pahole -F dwarf bin/<output>\`). \`tests/dwarf_reader.rs\` checks lineup's DWARF reader"
	echo "against those files."
	echo
	echo "| output | made from |"
	echo "|---|---|"
	echo "| \`bin/<src>-<cc>-dwarf<N>.o\` | \`<cc> $CFLAGS -gdwarf-<N> -c <src>.c\` for layouts.c, dup_a.c, dup_b.c |"
	echo "| \`bin/classes-<cc>-dwarf<N>.o\` | \`g++\`/\`clang++ $CFLAGS -gdwarf-<N> -std=c++17 -c classes.cpp\` |"
	echo "| \`bin/dup-<cc>-dwarf<N>\` | \`<cc> $CFLAGS -gdwarf-<N> dup_a.c dup_b.c\` (two compile units, linked) |"
	echo "| \`bin/layouts-gcc-dwarf5-gz.o\` | as above with \`-gz=zlib\` (compressed sections) |"
	echo "| \`bin/layouts-gcc-dwarf4-types.o\` | gcc \`-gdwarf-4 -fdebug-types-section\` (\`.debug_types\`) |"
	echo "| \`bin/layouts-clang-dwarf5-types.o\` | clang \`-gdwarf-5 -fdebug-types-section\` (type units in \`.debug_info\`) |"
	echo "| \`bin/nodebug.o\` | \`gcc -O0 -c dup_a.c\` (no \`-g\`) |"
	echo
	echo "All compiles also pass \`-ffile-prefix-map=<this dir>=.\`."
	echo
	echo "## Tools"
	echo
	echo '```'
	gcc --version | head -n 1
	clang --version | head -n 1
	echo "pahole $(pahole --version)"
	uname -m
	echo '```'
} > README.md
