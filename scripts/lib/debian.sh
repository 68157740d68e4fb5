# Sourced by scripts/setup.sh and scripts/install_test_packages.sh: which Debian release this is,
# and installing the packages of a table that are missing (idempotent).
#   tl_debian_release TAG    sets TL_RELEASE to 12 or 13 from /etc/os-release, or exits 2 with
#                            one line naming the release found and the supported ones.
#   Overrides: TL_DEBIAN_RELEASE=12|13 uses that table whatever the system is;
#              TL_DEBIAN_TRY_NEAREST=1 uses the nearest table on another release (e.g. Debian
#              14 or testing: 13; Debian 11 or Ubuntu: the table nearest by version, at your risk).
#   tl_install_missing TAG PACKAGE...   installs those not installed; a package the apt sources
#                            do not have is named in one line (exit 2).

TL_SUPPORTED_RELEASES="Debian 12 (bookworm), Debian 13 (trixie)"

tl_debian_release() {
  local tag=$1 id="" version_id="" codename="" pretty=""
  if [ -n "${TL_DEBIAN_RELEASE:-}" ]; then
    case "$TL_DEBIAN_RELEASE" in
      12 | 13) TL_RELEASE=$TL_DEBIAN_RELEASE; return 0 ;;
      *) echo "[$tag] error: TL_DEBIAN_RELEASE='$TL_DEBIAN_RELEASE' is not a release with a" \
              "package table (supported: 12, 13)" >&2
         exit 2 ;;
    esac
  fi
  if [ ! -r /etc/os-release ]; then
    echo "[$tag] error: /etc/os-release is missing, so the release is unknown; supported:" \
         "$TL_SUPPORTED_RELEASES (TL_DEBIAN_RELEASE=12|13 picks a table)" >&2
    exit 2
  fi
  # In a subshell: os-release's variables stay out of this script.
  id=$(. /etc/os-release && echo "${ID:-}")
  version_id=$(. /etc/os-release && echo "${VERSION_ID:-}")
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  pretty=$(. /etc/os-release && echo "${PRETTY_NAME:-${ID:-unknown}}")
  if [ "$id" = debian ]; then
    case "$version_id:$codename" in
      12:* | *:bookworm) TL_RELEASE=12; return 0 ;;
      13:* | *:trixie) TL_RELEASE=13; return 0 ;;
    esac
  fi
  if [ "${TL_DEBIAN_TRY_NEAREST:-0}" = 1 ]; then
    local major=${version_id%%.*}
    if [ "$id" = debian ] && [[ "$major" =~ ^[0-9]+$ ]] && ((major <= 12)); then
      TL_RELEASE=12
    elif [ "$id" = debian ]; then
      TL_RELEASE=13  # newer Debian, testing or sid (no VERSION_ID)
    elif [[ "$major" =~ ^[0-9]+$ ]] && [ "$id" = ubuntu ] && ((major < 24)); then
      TL_RELEASE=12
    else
      TL_RELEASE=13
    fi
    echo "[$tag] warning: $pretty has no package table; TL_DEBIAN_TRY_NEAREST=1: trying" \
         "Debian $TL_RELEASE's" >&2
    return 0
  fi
  echo "[$tag] error: $pretty (ID=$id VERSION_ID=${version_id:-none}) has no package table;" \
       "supported: $TL_SUPPORTED_RELEASES; TL_DEBIAN_TRY_NEAREST=1 tries the nearest one" >&2
  exit 2
}

tl_install_missing() {
  local tag=$1 p sudo="" candidate
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    echo "[$tag] all Debian packages present (Debian $TL_RELEASE table)"
    return 0
  fi
  echo "[$tag] installing (Debian $TL_RELEASE table): ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "[$tag] error: packages missing (${missing[*]}) and not root, and there is no sudo" >&2
      exit 2
    fi
    sudo="sudo"
  fi
  $sudo apt-get update -q
  for p in "${missing[@]}"; do
    candidate=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
      echo "[$tag] error: package $p (Debian $TL_RELEASE table) is not in this system's apt" \
           "sources; add the release's main component or install it otherwise" >&2
      exit 2
    fi
  done
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}
