#!/usr/bin/env bash
# gpu_bundle.sh: the Debian 12 packages that tl's build and mpirun need and a GPU machine with
# only pip's PyTorch lacks, unpacked, trimmed and packed into one archive for bench/gpu_check.sh
# (issue 38; docs/guide/gpu.md). Run here, on Debian 12 (bookworm) with apt; the GPU machine
# downloads nothing.
#
#   scripts/gpu_bundle.sh [OUT_DIR]      (default: gpu-bundle, git-ignored, carried to the machine)
#
# OUT_DIR gets tl-gpu-bundle.tar.xz (a tree rooted at usr/) and MANIFEST.txt (packages and
# versions, what was trimmed and how, the highest GLIBC_/GLIBCXX_ versions the binaries need).
# The .deb files are cached in .cache/gpu-bundle-debs (git-ignored). Checks, and fails naming the
# file, that every bundled ELF file's NEEDED libraries are in the bundle or in BASE_LIBS (glibc,
# libstdc++, libgcc_s: what any machine that runs pip's PyTorch has).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${1:-gpu-bundle}
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
CACHE="$ROOT/.cache/gpu-bundle-debs"
STAGE=$(mktemp -d /tmp/tl-gpu-bundle.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
TREE="$STAGE/tree"
ARCH=x86_64-linux-gnu
LIMIT_MIB=40

die() { echo "gpu_bundle.sh: $*" >&2; exit 1; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "needs apt-get and dpkg-deb (Debian 12)"
grep -q 'VERSION_CODENAME=bookworm' /etc/os-release || die "this is not Debian 12 (bookworm): the bundle must hold bookworm's packages"

PACKAGES=(
  # Open MPI 4.1 (mpirun, orted, libmpi, its MCA components, headers and compiler wrappers) and
  # the libraries it and its components load: external PMIx, hwloc, libevent, munge (PMIx's
  # psec), udev (hwloc), zlib.
  openmpi-bin libopenmpi3 libopenmpi-dev openmpi-common libpmix2 libhwloc15
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libmunge2 libudev1 zlib1g zlib1g-dev
  # Boost.Fiber/Context (+ Filesystem, which boost_fiber's CMake config asks for) and the Boost
  # headers, trimmed below to what tl's sources include.
  libboost1.74-dev libboost-fiber1.74-dev libboost-fiber1.74.0 libboost-context1.74-dev
  libboost-context1.74.0 libboost-filesystem1.74-dev libboost-filesystem1.74.0
  libboost-atomic1.74-dev libboost-atomic1.74.0
  # logging, command lines, JSON, JPEG, libcrypto
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev
  libjpeg62-turbo-dev libjpeg62-turbo libssl-dev libssl3
)
# What a bare machine with pip's PyTorch is assumed to have (the closure check's allowance).
BASE_LIBS="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2
           ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1"

mkdir -p "$CACHE" "$TREE" "$OUT"
echo "== downloading ${#PACKAGES[@]} packages into ${CACHE#"$ROOT"/}"
(cd "$CACHE" && for p in "${PACKAGES[@]}"; do
  v=$(apt-cache policy "$p" | awk '/Candidate:/{print $2}')
  [ -n "$v" ] && [ "$v" != "(none)" ] || die "package $p has no candidate version (apt-get update?)"
  f=$(printf '%s_%s_*.deb' "$p" "${v//:/%3a}")
  # shellcheck disable=SC2086
  ls $f >/dev/null 2>&1 || apt-get download -q "$p=$v" >/dev/null || die "apt-get download $p=$v failed"
done)

echo "== unpacking"
: > "$STAGE/versions"
for p in "${PACKAGES[@]}"; do
  v=$(apt-cache policy "$p" | awk '/Candidate:/{print $2}')
  deb=$(ls "$CACHE"/"${p}_${v//:/%3a}"_*.deb)
  dpkg-deb -x "$deb" "$TREE"
  printf '%-32s %-28s %s\n' "$p" "$v" "$(du -k "$deb" | cut -f1) KiB .deb" >> "$STAGE/versions"
done

# Some of Debian 12's packages (zlib1g) still ship under /lib: one tree under usr/ (the archive
# holds usr/ and etc/ only), and every absolute link made relative within the bundle, since an
# absolute one (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) would name the machine's own file,
# which a newer distribution does not have.
if [ -d "$TREE/lib" ]; then
  cp -a "$TREE/lib/." "$TREE/usr/lib/"
  rm -rf "${TREE:?}/lib"
fi
while read -r l; do
  t=$(readlink "$l")
  case "$t" in /*) ;; *) continue ;; esac
  for cand in "$TREE$t" "$TREE/usr$t"; do
    if [ -e "$cand" ]; then
      ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$cand")" "$l"
      continue 2
    fi
  done
  die "${l#"$TREE"/} links to $t, which is not in the bundle"
done < <(find "$TREE" -type l)

echo "== trimming"
# Documentation, manuals, translations, static libraries, Fortran and Java bindings, lintian.
rm -rf "$TREE"/usr/share/{doc,man,locale,lintian,bug} "$TREE"/usr/share/openmpi/*.mod "$TREE"/etc/default
find "$TREE" -name '*.a' -delete
find "$TREE" \( -name '*mpifh*' -o -name '*usempi*' -o -name 'mpi_java*' -o -name '*.mod' \
  -o -name 'mpif*.h' -o -name 'mpi.jar' -o -name 'libmpi_java*' -o -name 'libmca_common_ofi*' \) -exec rm -rf {} +
# The Boost headers: only those that tl's sources include, transitively. The preprocessor lists
# them (g++ -M over every source or header of this tree that includes a Boost header, against the
# bundle's headers, in C++17 and C++20, with and without NDEBUG); boost/config, boost/predef and
# the libraries' own config headers are kept whole so that another compiler's branches find
# theirs.
BOOST_INC="$TREE/usr/include"
mapfile -t BOOST_USERS < <(grep -rlE '#\s*include\s*[<"]boost/' --include='*.cpp' --include='*.h' --include='*.hpp' \
  common dataload coordinator control runtime est elastic launcher tools bench tests examples 2>/dev/null || true)
[ ${#BOOST_USERS[@]} -gt 0 ] || die "no source includes a Boost header: nothing to trim against"
: > "$STAGE/boost.list"
for src in "${BOOST_USERS[@]}"; do
  for std in c++17 c++20; do
    for nd in "" -DNDEBUG; do
      g++ -std=$std $nd -M -MG -x c++ -isystem "$BOOST_INC" -I "$ROOT" "$src" 2>"$STAGE/m.err" |
        tr ' \\' '\n\n' | grep -F "$BOOST_INC/boost/" >> "$STAGE/boost.list" ||
        { cat "$STAGE/m.err" >&2; die "g++ -M $src found no Boost header under the bundle (see above)"; }
    done
  done
done
(cd "$BOOST_INC" && find boost/config boost/predef boost/fiber/detail/config.hpp boost/context/detail/config.hpp \
  boost/config.hpp boost/version.hpp boost/cstdint.hpp -type f 2>/dev/null) | sed "s|^|$BOOST_INC/|" >> "$STAGE/boost.list"
sort -u "$STAGE/boost.list" | sed "s|^$BOOST_INC/||" > "$STAGE/boost.keep"
mv "$BOOST_INC/boost" "$STAGE/boost-full"
BOOST_FULL_KIB=$(du -sk "$STAGE/boost-full" | cut -f1)
(cd "$STAGE/boost-full/.." && while read -r h; do
  mkdir -p "$BOOST_INC/$(dirname "$h")"
  cp "boost-full/${h#boost/}" "$BOOST_INC/$h"
done < "$STAGE/boost.keep")
BOOST_KEPT=$(wc -l < "$STAGE/boost.keep")
BOOST_KEPT_KIB=$(du -sk "$BOOST_INC/boost" | cut -f1)
# Arch-specific headers (openssl/opensslconf.h, jconfig.h, ...) next to the others, so that one
# include folder serves on a machine whose compiler knows no x86_64-linux-gnu multiarch folder.
if [ -d "$TREE/usr/include/$ARCH" ]; then
  cp -a "$TREE/usr/include/$ARCH/." "$TREE/usr/include/"
  rm -rf "${TREE:?}/usr/include/$ARCH"
fi

# The names Debian's alternatives give Open MPI's programs (mpirun, mpicxx, ...) are links made at
# install time, not files of the packages: made here, relative.
for t in mpirun mpiexec mpicc mpicxx mpic++ mpiCC; do
  [ -e "$TREE/usr/bin/$t.openmpi" ] && ln -sf "$t.openmpi" "$TREE/usr/bin/$t"
done
# OpenSSL 3.0's libcrypto/libssl in a folder of their own (lib/x86_64-linux-gnu/tl-openssl): the
# main library folder goes on LD_LIBRARY_PATH for mpirun, and there they would stand in for a
# newer system libssl.so.3/libcrypto.so.3 that the machine's Python loads. tl's binaries find
# them through their build RPATH.
mkdir -p "$TREE/usr/lib/$ARCH/tl-openssl"
for f in "$TREE/usr/lib/$ARCH"/libssl.so* "$TREE/usr/lib/$ARCH"/libcrypto.so*; do
  mv "$f" "$TREE/usr/lib/$ARCH/tl-openssl/"
done
# Engines and providers load by Debian's absolute path, and tl's SHA-256/HMAC need neither.
rm -rf "$TREE/usr/lib/$ARCH/engines-3" "$TREE/usr/lib/$ARCH/ossl-modules"
# Open MPI's MCA components, hwloc/PMIx plugins whose libraries (verbs, UCX, libfabric, PSM, CUDA,
# Slurm/PBS libraries, ...) are not in the bundle are dropped: one machine, shared memory and TCP.
echo "== checking the NEEDED closure of every ELF file"
elf_files() {  # every ELF file of the bundle, into $STAGE/elf
  find "$TREE" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \; > "$STAGE/elf"
}
# Passes until nothing more is dropped: a component may need a common library dropped before.
DROPPED=""
while :; do
  declare -A HAVE=()
  for b in $BASE_LIBS; do HAVE[$b]=base; done
  while read -r f; do HAVE[$(basename "$f")]=bundle; done < <(find "$TREE" \( -type f -o -type l \) -name '*.so*')
  elf_files
  changed=0
  while read -r f; do
    missing=""
    for n in $(objdump -p "$f" | awk '/NEEDED/{print $2}'); do [ -n "${HAVE[$n]:-}" ] || missing="$missing $n"; done
    [ -z "$missing" ] && continue
    case "$f" in
      */openmpi3/mca_*|*/pmix/pmix_mca_*|*/hwloc/hwloc_*|*/libmca_common_*)
        DROPPED="$DROPPED ${f##*/}(needs${missing// /,})"; rm -f "$f"; changed=1 ;;
      *) die "${f#"$TREE"/} needs${missing}, which neither the bundle nor the base system (BASE_LIBS) has" ;;
    esac
  done < "$STAGE/elf"
  unset HAVE
  [ $changed -eq 1 ] || break
  find "$TREE" -xtype l -delete
done
# Dangling symlinks (to removed files) go too.
find "$TREE" -xtype l -delete

# The highest symbol versions the bundled binaries ask of glibc and libstdc++.
elf_files
read -r GLIBC_MAX GLIBCXX_MAX < <(xargs objdump < "$STAGE/elf" -T 2>/dev/null | python3 -c '
import re, sys
best = {"GLIBC": (0,), "GLIBCXX": (0,)}
for line in sys.stdin:
    for tag, ver in re.findall(r"\b(GLIBC|GLIBCXX)_([0-9][0-9.]*)\b", line):
        v = tuple(int(x) for x in ver.split("."))
        if v > best[tag]: best[tag] = v
print(".".join(map(str, best["GLIBC"])), ".".join(map(str, best["GLIBCXX"])))')

echo "== packing"
rm -f "$OUT/tl-gpu-bundle.tar.xz"
tar -C "$TREE" --owner=0 --group=0 --sort=name -cJf "$OUT/tl-gpu-bundle.tar.xz" usr etc 2>/dev/null ||
  tar -C "$TREE" --owner=0 --group=0 --sort=name -cJf "$OUT/tl-gpu-bundle.tar.xz" usr
SIZE=$(stat -c %s "$OUT/tl-gpu-bundle.tar.xz")
UNPACKED_KIB=$(du -sk "$TREE" | cut -f1)
{
  echo "tl GPU bundle (scripts/gpu_bundle.sh, $(date -u +%Y-%m-%dT%H:%MZ), Debian 12 bookworm, amd64)"
  echo "archive: tl-gpu-bundle.tar.xz, $SIZE bytes; unpacked $UNPACKED_KIB KiB"
  echo "glibc_max: GLIBC_$GLIBC_MAX"
  echo "glibcxx_max: GLIBCXX_$GLIBCXX_MAX"
  echo
  echo "packages (name, version, .deb size):"
  cat "$STAGE/versions"
  echo
  echo "Boost headers: $BOOST_KEPT of the $(find "$STAGE/boost-full" -type f | wc -l) files of libboost1.74-dev kept"
  echo "  ($BOOST_KEPT_KIB of $BOOST_FULL_KIB KiB): the union of 'g++ -M -MG' (C++17 and C++20, with and"
  echo "  without -DNDEBUG) over the sources that include Boost (${BOOST_USERS[*]}),"
  echo "  against the bundle's headers, plus boost/config, boost/predef and the Fiber/Context config headers whole."
  echo
  echo "trimmed: docs, manuals, translations, static libraries, Fortran/Java MPI bindings;"
  echo "arch headers (usr/include/$ARCH) merged into usr/include; libssl/libcrypto moved to"
  echo "usr/lib/$ARCH/tl-openssl, off the LD_LIBRARY_PATH that mpirun gets; OpenSSL engines/providers dropped."
  echo "MCA components and plugins dropped for libraries not in the bundle:"
  for d in $DROPPED; do echo "  $d"; done
  echo
  echo "closure: every ELF file's NEEDED is in the bundle or in: $(echo $BASE_LIBS)"
} > "$OUT/MANIFEST.txt"
echo "== $OUT/tl-gpu-bundle.tar.xz: $((SIZE / 1024)) KiB (limit $LIMIT_MIB MiB); GLIBC_$GLIBC_MAX, GLIBCXX_$GLIBCXX_MAX"
[ "$SIZE" -le $((LIMIT_MIB * 1024 * 1024)) ] || die "the bundle is $SIZE bytes, over $LIMIT_MIB MiB"
