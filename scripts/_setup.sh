# Shared set-up for scripts/test and scripts/demo (sourced, not run). Idempotent and quiet:
# a second run is a few stat calls. Installs only what is missing:
#   - Debian packages: a JRE (17+), maven, redis-server, python3-venv   (apt-get, as root or sudo)
#   - a virtual environment $ADR_VENV (default .venv) with `pip install -e .[dev]`: the sources,
#     pure (an editable install never compiles)
#   - the compiled build: the project's wheel, built by setup.py with mypyc (gcc, headers), in a
#     second environment $ADR_COMPILED_VENV (default $ADR_VENV/compiled) with the runtime
#     dependencies only; rebuilt when the sources change (runtime/compiled.py). `adr_bin` names
#     its `adr`. ADR_COMPILED=0: no compiled build; ADR_COMPILED=1 (.ci/run): the set-up fails
#     unless the wheel builds compiled (unset: it warns and the sources run, pure).
#   - the Kafka broker jars from Maven Central into .cache/kafka/       (mvn, see stack/pom.xml)
#   - for the tests only (adr_test_tools): Prometheus' promtool, taken out of Debian's
#     `prometheus` package into .cache/promtool/ (downloaded, not installed: no service starts)
#   - for the tests only (adr_kustomize_tool): tools/kustomize, the pinned kustomize library that
#     renders deploy/k8s's overlays, built with Go into $ADR_CACHE_DIR/kustomize/ (~35 s once)
#   - for the tests only (adr_cpp_example_libs): the headers examples/cpp builds with
#     (librdkafka-dev, libmsgpack-cxx-dev, nlohmann-json3-dev), when apt-get may install them
# KAFKA_BOOTSTRAP_SERVERS / REDIS_URL set: the matching local server is not needed, not installed.

ADR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ADR_VENV="${ADR_VENV:-$ADR_ROOT/.venv}"
ADR_COMPILED_VENV="${ADR_COMPILED_VENV:-$ADR_VENV/compiled}"
export ADR_COMPILED_VENV  # the tests compare it with the sources
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off PIP_NO_INPUT=1

_log() { printf '[setup] %s\n' "$*" >&2; }
_die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

_python_ok() {  # python >= 3.11?
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

_pick_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && _python_ok "$candidate"; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

_java_ok() {  # a java launcher of release 17 or newer?
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java" version
  command -v "$java" >/dev/null 2>&1 || return 1
  version="$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
  [ -n "$version" ] && [ "$version" -ge 17 ]
}

_have_redis_server() {
  command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || [ -x /usr/sbin/redis-server ]
}

_apt_install() {  # apt-get update && apt-get install -y PACKAGES, as root or with sudo
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      _die "missing $*: install them (apt-get install $*) or run as root"
    fi
  fi
  command -v apt-get >/dev/null 2>&1 || _die "missing $* and no apt-get here: install them by hand"
  _log "installing Debian packages: $*"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq update >/dev/null ||
    _die "apt-get update failed"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends "$@" \
    >/dev/null || _die "apt-get install $* failed"
}

adr_setup() {
  local python packages=() stamp want
  python="$(_pick_python)" || packages+=(python3 python3-venv)
  if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
    _java_ok || packages+=(openjdk-17-jre-headless)
    command -v mvn >/dev/null 2>&1 || packages+=(maven)
  fi
  if [ -z "${REDIS_URL:-}" ]; then
    _have_redis_server || packages+=(redis-server)
  fi
  if [ "${ADR_COMPILED:-1}" != "0" ]; then  # the compiled build (runtime/compiled.py)
    command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || packages+=(gcc)
    if [ -n "$python" ] && ! "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
      packages+=(python3-dev)
    fi
  fi
  if [ -n "$python" ] && [ ! -x "$ADR_VENV/bin/python" ] &&
    ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    packages+=(python3-venv)
  fi
  if [ "${#packages[@]}" -gt 0 ]; then
    _apt_install "${packages[@]}"
    [ -n "$python" ] || python="$(_pick_python)" || _die "no Python 3.11+ found"
  fi

  if [ ! -x "$ADR_VENV/bin/python" ]; then
    _log "creating virtual environment $ADR_VENV ($("$python" --version))"
    "$python" -m venv "$ADR_VENV" || _die "could not create $ADR_VENV"
  fi
  # Reinstall only when the dependency declarations change (the install is editable).
  want="$(cksum "$ADR_ROOT/pyproject.toml" "$ADR_ROOT/setup.py" | cut -d' ' -f1,2 | tr '\n' ' ')"
  if [ -f "$ADR_ROOT/constraints.txt" ]; then
    want="$want $(cksum "$ADR_ROOT/constraints.txt" | cut -d' ' -f1,2)"
  fi
  stamp="$ADR_VENV/.adr-installed"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    _log "installing adr-stream and its dev dependencies into $ADR_VENV"
    local constraints=()
    if [ -f "$ADR_ROOT/constraints.txt" ]; then
      constraints=(-c "$ADR_ROOT/constraints.txt")
    fi
    "$ADR_VENV/bin/python" -m pip install -q --upgrade pip >/dev/null ||
      _die "could not upgrade pip"
    "$ADR_VENV/bin/python" -m pip install -q -e "$ADR_ROOT[dev]" "${constraints[@]}" ||
      _die "pip install -e .[dev] failed"
    printf '%s' "$want" >"$stamp"
  fi

  if [ "${ADR_COMPILED:-1}" != "0" ]; then
    _compiled_venv "$python"
  fi

  if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
    # Resolves the broker jars once (mvn, ~45 MB) and trains the JVM's class-data-sharing archive
    # (one broker start, faster starts ever after); later runs find both in .cache/kafka/.
    "$ADR_VENV/bin/python" -c 'import stack; stack.prepare_kafka()' ||
      _die "could not provision the Kafka broker jars (see above)"
  fi
  export PATH="$ADR_VENV/bin:$PATH"
}

_compiled_venv() {  # the project's wheel, compiled by setup.py, in $ADR_COMPILED_VENV
  local python="$1" constraints=()
  "$ADR_VENV/bin/python" -m runtime.compiled current "$ADR_COMPILED_VENV" >/dev/null 2>&1 &&
    return 0
  _log "building the compiled wheel (mypyc) into $ADR_COMPILED_VENV"
  if [ ! -x "$ADR_COMPILED_VENV/bin/python" ]; then  # no pip of its own: $ADR_VENV's installs
    "$python" -m venv --without-pip "$ADR_COMPILED_VENV" ||
      _die "could not create $ADR_COMPILED_VENV"
  fi
  [ -f "$ADR_ROOT/constraints.txt" ] && constraints=(-c "$ADR_ROOT/constraints.txt")
  # setuptools keeps build/lib between builds: a module deleted since would stay in the wheel.
  rm -rf "$ADR_ROOT/build"
  if ! "$ADR_VENV/bin/python" -m pip --python "$ADR_COMPILED_VENV/bin/python" install -q \
    "$ADR_ROOT" "${constraints[@]}"; then
    _compiled_missing "the compiled wheel did not build (see above)"
    return 0
  fi
  # -P: not the current directory (the source tree) first on sys.path.
  "$ADR_COMPILED_VENV/bin/python" -P -m runtime.compiled status >/dev/null ||
    _compiled_missing "$("$ADR_COMPILED_VENV/bin/python" -P -m runtime.compiled status)"
}

_compiled_missing() {  # fatal with ADR_COMPILED=1, else a warning
  [ "${ADR_COMPILED:-}" = "1" ] && _die "ADR_COMPILED=1 but no compiled build: $1"
  _log "warning: $1; the pure sources run"
}

adr_bin() {  # the `adr` to run: the compiled build's when it is current, else the sources'
  if [ "${ADR_COMPILED:-1}" != "0" ] &&
    "$ADR_VENV/bin/python" -m runtime.compiled current "$ADR_COMPILED_VENV" >/dev/null 2>&1; then
    echo "$ADR_COMPILED_VENV/bin/adr"
  else
    echo "$ADR_VENV/bin/adr"
  fi
}

adr_test_tools() {  # promtool for tests/deploy; best effort: without it that one test is skipped
  local dir="$ADR_ROOT/.cache/promtool" sudo="" tmp
  if ! command -v promtool >/dev/null 2>&1 && [ ! -x "$dir/promtool" ] &&
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    tmp="$(mktemp -d)"
    _log "fetching promtool (Debian package prometheus, ~25 MB; only promtool is kept)"
    if (cd "$tmp" && { apt-get -qq download prometheus >/dev/null 2>&1 ||
      { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq update >/dev/null &&
        apt-get -qq download prometheus >/dev/null; }; } &&
      dpkg-deb -x prometheus_*.deb x && [ -x x/usr/bin/promtool ]); then
      mkdir -p "$dir" && cp "$tmp/x/usr/bin/promtool" "$dir/promtool"
    else
      _log "warning: no promtool (apt-get download prometheus failed); its test will be skipped"
    fi
    rm -rf "$tmp"
  fi
  [ -x "$dir/promtool" ] && export PATH="$dir:$PATH"
  adr_kustomize_tool
  adr_cpp_example_libs
  adr_chromium
  return 0
}

adr_chromium() {  # Debian's Chromium for tests/http_api/test_page.py (the page in a real browser)
  local sudo=""
  command -v chromium >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  _log "installing chromium (Debian package) for the page's browser test"
  if ! { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends \
    chromium >/dev/null 2>&1 || { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq update \
    >/dev/null 2>&1 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y \
    --no-install-recommends chromium >/dev/null 2>&1; }; }; then
    _log "warning: could not install chromium; the page's browser test will fail (CI: must not)"
  fi
  return 0
}

adr_kustomize_tool() {  # tools/kustomize for tests/deploy; rebuilt only when its sources change
  command -v go >/dev/null 2>&1 || return 0  # tests/deploy then renders with kubectl, or fails
  (cd "$ADR_ROOT" && "$ADR_VENV/bin/python" -c \
    'from tests.deploy._render import build_tool; build_tool()') ||
    _log "warning: could not build tools/kustomize (see above); tests/deploy will say why"
}

adr_cpp_example_libs() {  # headers for examples/cpp; best effort: without them its tests skip
  local sudo="" pkgs="librdkafka-dev libmsgpack-cxx-dev nlohmann-json3-dev"
  command -v c++ >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1 || return 0
  command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 || return 0
  # shellcheck disable=SC2086
  dpkg -s $pkgs >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  _log "installing $pkgs (Debian packages) for the C++ example's tests"
  # shellcheck disable=SC2086
  if ! { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends \
    $pkgs >/dev/null 2>&1 || { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq update \
    >/dev/null 2>&1 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y \
    --no-install-recommends $pkgs >/dev/null 2>&1; }; }; then
    _log "warning: could not install $pkgs; the C++ example's tests will be skipped"
  fi
  return 0
}
