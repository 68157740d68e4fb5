#!/usr/bin/env bash
# The layering of the source tree, as the root CMakeLists.txt states it, and the environment
# variables read below launcher/ (docs/design/layers.md). Each top-level folder
# sits on a floor and includes only its own folder and folders on lower floors:
#   6 tools        (of launcher/, only the flag table's headers: job_flags.h, launch_options.h)
#   5 launcher
#   4 elastic
#   3 est
#   2 runtime, coordinator
#   1 dataload, control
#   0 common
# Usage: layering_test.sh SOURCE_DIR. Exit 0 when the rule holds; otherwise lists every offence.
set -u
src=${1:?usage: layering_test.sh SOURCE_DIR}
cd "$src" || exit 2
declare -A floor=([common]=0 [dataload]=1 [control]=1 [runtime]=2 [coordinator]=2 [est]=3
                  [elastic]=4 [launcher]=5 [tools]=6)
bad=0
n=0
for dir in "${!floor[@]}"; do
  [ -d "$dir" ] || { echo "layering: folder $dir/ is missing (renamed? update this table)"; bad=1; continue; }
  while IFS= read -r hit; do
    [ -n "$hit" ] || continue
    target=$(sed -E 's/^[^:]*:[0-9]+:\s*#\s*include\s*"([a-z_]+)\/.*/\1/' <<<"$hit")
    [ "$target" = "$dir" ] && continue
    [ -n "${floor[$target]+x}" ] || continue  # tests/, bench/, cmake/: not source floors
    if [ "$dir" = tools ] && [ "$target" = launcher ]; then
      grep -qE '"launcher/(job_flags|launch_options)\.h"' <<<"$hit" && continue
      echo "layering: tools/ includes launcher/ internals (only job_flags.h and launch_options.h are theirs): $hit"
      bad=1
    elif [ "${floor[$target]}" -ge "${floor[$dir]}" ]; then
      echo "layering: $dir/ (floor ${floor[$dir]}) includes $target/ (floor ${floor[$target]}): $hit"
      bad=1
    fi
  done < <(grep -rnE '^\s*#\s*include\s*"[a-z_]+/' --include='*.h' --include='*.cpp' --include='*.cu' "$dir")
  n=$((n + $(find "$dir" -name '*.cpp' | wc -l)))
done
# Below launcher/, only these environment variables are read (docs/design/layers.md says why each
# is not part of a job's definition); a new one must be added there and here.
allowed_env='TL_RESCALE_STEP_TIMES|TL_JOIN_WARMUP|OMPI_MCA_rmaps_base_oversubscribe|TL_RING_ENCODING|TL_TEST_UPDATE_DELAY_MS|TL_REPLICA_SENDERS|TL_TEST_AGREEMENT_DELAY_MS|TL_HEARTBEAT_DEADLINE|TL_HEARTBEAT_ADDRESS'
env=$(grep -rnE 'getenv\(' --include='*.h' --include='*.cpp' --include='*.cu' \
        common dataload coordinator control runtime est elastic | grep -vE "getenv\(\"($allowed_env)\"\)")
if [ -n "$env" ]; then
  echo "layering: environment read below launcher/ beyond the listed variables (docs/design/layers.md):"
  echo "$env"; bad=1
fi
# The check must have looked at something: a renamed folder would make it vacuous.
if [ "$n" -lt 100 ]; then echo "layering: only $n sources found under the library folders"; bad=1; fi
[ $bad = 0 ] && echo "layering: $n sources on 7 floors, no include points up or sideways"
exit $bad
