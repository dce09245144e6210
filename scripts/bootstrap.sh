#!/usr/bin/env bash
# Install everything the tests need, idempotently; fast when it is already there.
#
#   scripts/bootstrap.sh            python venv (.venv) with the project and its test extras
#   scripts/bootstrap.sh --system   also Debian packages (Prometheus, Alertmanager,
#                                   blackbox_exporter, etcd) and the Kubernetes control-plane
#                                   binaries (built once from Debian's source package, cached)
#
# Environment: RM_VENV (default .venv), RM_CACHE (default ~/.cache/route-monitor),
# RM_DEPS_MAX_AGE (seconds between upgrades of the Python dependencies, default 86400; 0: now).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${RM_VENV:-$here/.venv}
cache=${RM_CACHE:-$HOME/.cache/route-monitor}
kube_version=1.20.2
kube_dir=$cache/kubernetes-$kube_version

log() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=(prometheus prometheus-alertmanager prometheus-blackbox-exporter etcd-server openssl iproute2)
build_packages=(golang-go rsync golang-github-modern-go-reflect2-dev make)

apt_updated=0
apt_install() {
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  log "apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build_kube() {
  if [ -x "$kube_dir/kube-apiserver" ] && [ -x "$kube_dir/kube-controller-manager" ]; then return 0; fi
  log "building kube-apiserver and kube-controller-manager $kube_version from Debian's source (about 8 minutes, once)"
  apt_install "${build_packages[@]}"
  local src=/etc/apt/sources.list.d/debian-src.sources
  if [ ! -f "$src" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | as_root tee "$src" >/dev/null
    as_root apt-get update -qq
  fi
  local work; work=$(mktemp -d)
  ( cd "$work"
    apt-get source --download-only kubernetes >/dev/null
    tar xzf kubernetes_*.orig.tar.gz
    cd kubernetes-$kube_version
    # the vendored reflect2 v1.0.1 crashes under Go >= 1.18: use Debian's 1.0.2
    rm -rf vendor/github.com/modern-go/reflect2
    cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2
    rm -f vendor/github.com/modern-go/reflect2/*_test.go
    env HOME="$work/home" GOPATH="$work/gopath" GOCACHE="$work/gocache" CGO_ENABLED=0 \
      make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >"$work/build.log" 2>&1 \
      || { tail -30 "$work/build.log" >&2; exit 1; }
    mkdir -p "$kube_dir.tmp"
    cp _output/bin/kube-apiserver _output/bin/kube-controller-manager "$kube_dir.tmp/"
  )
  rm -rf "$kube_dir"; mv "$kube_dir.tmp" "$kube_dir"
  rm -rf "$work"
  log "cached in $kube_dir"
}

# The venv holds what a fresh install of pyproject.toml brings today: installed (or upgraded,
# eagerly, so every dependency is the newest pyproject.toml allows) when pyproject.toml changed,
# and upgraded the same way once every RM_DEPS_MAX_AGE seconds (default a day). Without an
# answer from the package index the daily upgrade is skipped with a line saying so, and retried
# on the next run; an install that pyproject.toml needs is not skipped.
pip_upgrade() {
  local before after
  before=$("$venv/bin/python" -m pip freeze --exclude-editable 2>/dev/null || true)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade --upgrade-strategy eager \
    -e "$here[test]" || return 1
  after=$("$venv/bin/python" -m pip freeze --exclude-editable)
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    diff <(echo "$before") <(echo "$after") | sed -n 's/^> /[bootstrap] now: /p' >&2 || true
  fi
  echo "$after" >"$venv/.frozen"
}

python_env() {
  local stamp=$venv/.installed max_age=${RM_DEPS_MAX_AGE:-86400}
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    python3 -m venv "$venv"
  fi
  local wanted; wanted=$(sha256sum "$here/pyproject.toml" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    log "pip install --upgrade --upgrade-strategy eager -e .[test]"
    pip_upgrade
    echo "$wanted" >"$stamp"
  elif [ "$(( $(date +%s) - $(stat -c %Y "$stamp") ))" -ge "$max_age" ]; then
    log "dependencies last checked over ${max_age}s ago: upgrading to the newest pyproject.toml allows"
    if pip_upgrade; then
      echo "$wanted" >"$stamp"
    else
      log "the package index did not answer: testing with the installed versions (checked again next run)"
    fi
  fi
}

system=0
for arg in "$@"; do
  case $arg in
    --system) system=1 ;;
    *) echo "usage: $0 [--system]" >&2; exit 2 ;;
  esac
done
if [ $system = 1 ]; then
  apt_install "${apt_packages[@]}"
  build_kube
fi
python_env
