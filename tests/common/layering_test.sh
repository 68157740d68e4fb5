#!/usr/bin/env bash
# The layering of the source tree (README "Layout"): no file of a library folder includes
# launcher/ (tl-launch) or tools/ (the programs outside a job), and no tool includes launcher/
# beyond the flag table's library (tl_job_flags: job_flags.h, launch_options.h).
# Usage: layering_test.sh SOURCE_DIR. Exit 0 when the rule holds; otherwise lists every offence.
set -u
src=${1:?usage: layering_test.sh SOURCE_DIR}
cd "$src" || exit 2
bad=0
below=$(grep -rnE '^\s*#\s*include\s*"(launcher|tools)/' --include='*.h' --include='*.cpp' --include='*.cu' \
        common dataload coordinator control runtime est elastic 2>/dev/null)
if [ -n "$below" ]; then
  echo "layering: these library files include launcher/ or tools/:"; echo "$below"; bad=1
fi
tools=$(grep -rnE '^\s*#\s*include\s*"launcher/' --include='*.h' --include='*.cpp' tools 2>/dev/null |
        grep -vE '"launcher/(job_flags|launch_options)\.h"')
if [ -n "$tools" ]; then
  echo "layering: these tools include launcher/ internals (only job_flags.h and launch_options.h are theirs):"
  echo "$tools"; bad=1
fi
# The check must have looked at something: a renamed folder would make it vacuous.
n=$(find common dataload coordinator control runtime est elastic tools -name '*.cpp' | wc -l)
if [ "$n" -lt 100 ]; then echo "layering: only $n sources found under the library folders"; bad=1; fi
[ $bad = 0 ] && echo "layering: $n sources, no include points up"
exit $bad
