#!/bin/sh
# Rebuilds the DWARF test inputs in bin/ and pahole's view of them in golden/, and records the
# tool versions in README.md. Run from anywhere: sh tests/data/dwarf/build.sh
#
# Inputs: layouts.c (layout corner cases), atomics.c (_Atomic members), dup_a.c + dup_b.c + shared.h (two compile units that
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
		for src in layouts.c dup_a.c dup_b.c atomics.c; do
			$cc $CFLAGS $PREFIX -gdwarf-$ver -c "$src" -o "bin/${src%.c}-$tag.o"
		done
		$cxx $CFLAGS $PREFIX -gdwarf-$ver -std=c++17 -c classes.cpp -o "bin/classes-$tag.o"
		$cc $CFLAGS $PREFIX -gdwarf-$ver dup_a.c dup_b.c -o "bin/dup-$tag"
	done
done

# Compressed debug sections: SHF_COMPRESSED with zlib, the older .zdebug_* sections, and
# SHF_COMPRESSED with zstd (objcopy; pahole 1.24 cannot read that one, so it is compared with
# the golden file of the uncompressed object, see SAME_GOLDEN in tests/dwarf_reader.rs).
gcc $CFLAGS $PREFIX -gdwarf-5 -gz=zlib -c layouts.c -o bin/layouts-gcc-dwarf5-gz.o
gcc $CFLAGS $PREFIX -gdwarf-4 -gz=zlib-gnu -c layouts.c -o bin/layouts-gcc-dwarf4-zdebug.o
objcopy --compress-debug-sections=zstd bin/layouts-gcc-dwarf5.o bin/layouts-gcc-dwarf5-zstd.o
# Type units. In a relocatable object every type unit sits in its own COMDAT section (several
# .debug_types, or several .debug_info for DWARF 5); linking merges them. pahole 1.24 reads
# none of these correctly, so their golden file is the one of the same build without type
# units (the layouts are the same): see TYPE_UNIT_GOLDEN in tests/dwarf_reader.rs.
gcc $CFLAGS $PREFIX -gdwarf-4 -fdebug-types-section -c layouts.c -o bin/layouts-gcc-dwarf4-types.o
g++ $CFLAGS $PREFIX -gdwarf-4 -std=c++17 -fdebug-types-section -c classes.cpp -o bin/classes-gcc-dwarf4-types.o
g++ $CFLAGS $PREFIX -gdwarf-4 -std=c++17 -fdebug-types-section -shared -fPIC classes.cpp -o bin/classes-gcc-dwarf4-types.so
clang++ $CFLAGS $PREFIX -gdwarf-5 -std=c++17 -fdebug-types-section -c classes.cpp -o bin/classes-clang-dwarf5-types.o
clang++ $CFLAGS $PREFIX -gdwarf-5 -std=c++17 -fdebug-types-section -shared -fPIC classes.cpp -o bin/classes-clang-dwarf5-types.so
# No debug information at all: lineup must say so.
gcc -O0 -c dup_a.c -o bin/nodebug.o

for f in bin/*; do
	case $f in */nodebug.o | *-types.* | */atomics-* | *-zstd.o) continue ;; esac
	# pahole warns on stderr about tags it does not know (atomic types, template parameters).
	# It prints struct MemberPtrs with sizes from uninitialised memory (a different number
	# every run), so that block is left out; tests/dwarf_reader.rs checks it by hand.
	pahole -F dwarf "$f" 2>/dev/null |
		awk '/^struct MemberPtrs \{/ { skip = 1 } !skip { print } skip && /^}/ { skip = 0 }' \
		> "golden/$(basename "$f").pahole.txt"
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
	echo "| \`bin/<src>-<cc>-dwarf<N>.o\` | \`<cc> $CFLAGS -gdwarf-<N> -c <src>.c\` for layouts.c, dup_a.c, dup_b.c, atomics.c |"
	echo "| \`bin/classes-<cc>-dwarf<N>.o\` | \`g++\`/\`clang++ $CFLAGS -gdwarf-<N> -std=c++17 -c classes.cpp\` |"
	echo "| \`bin/dup-<cc>-dwarf<N>\` | \`<cc> $CFLAGS -gdwarf-<N> dup_a.c dup_b.c\` (two compile units, linked) |"
	echo "| \`bin/layouts-gcc-dwarf5-gz.o\` | gcc \`-gdwarf-5 -gz=zlib\` (SHF_COMPRESSED sections) |"
	echo "| \`bin/layouts-gcc-dwarf4-zdebug.o\` | gcc \`-gdwarf-4 -gz=zlib-gnu\` (\`.zdebug_*\` sections) |"
	echo "| \`bin/layouts-gcc-dwarf5-zstd.o\` | \`objcopy --compress-debug-sections=zstd\` of \`layouts-gcc-dwarf5.o\` |"
	echo "| \`bin/*-types.o\`, \`bin/*-types.so\` | \`-fdebug-types-section\` (type units), as objects and linked \`-shared\` |"
	echo "| \`bin/nodebug.o\` | \`gcc -O0 -c dup_a.c\` (no \`-g\`) |"
	echo
	echo "All compiles also pass \`-ffile-prefix-map=<this dir>=.\`."
	echo
	echo "pahole 1.24 misreads type units and cannot read zstd, so the \`*-types.*\` and \`*-zstd.o\`"
	echo "outputs have no golden file of their own: the test compares them with the golden file of"
	echo "the same compiler and DWARF version without type units or compression. It also cannot print \`_Atomic\` (\`DW_TAG_atomic_type\`, so \`atomics-*.o\` have no golden file), rvalue"
	echo "references or pointers to members, so the test checks \`struct atomics\`, \`Derived::rref\`"
	echo "and \`struct MemberPtrs\` by hand (build.sh drops pahole's \`MemberPtrs\` block, whose sizes are"
	echo "uninitialised memory)."
	echo
	echo "## Tools"
	echo
	echo '```'
	gcc --version | head -n 1
	clang --version | head -n 1
	objcopy --version | head -n 1
	echo "pahole $(pahole --version)"
	uname -m
	echo '```'
} > README.md
